"""Decoding the result the student side wrote: JSON and raw tensor bytes, never an unpickler.

The format is the server's `_encode_result` (described in `protocol.py`). Everything in it is
checked on the way in, because student code could have written the file itself.
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path
from typing import Any

from grader.sandbox.protocol import (
    MAX_RESULT_HEADER_BYTES,
    WIRE_DTYPES,
    WIRE_VERSION,
    header_too_long,
)

MAX_RESULT_BYTES = 256 * 1024 * 1024
# Bounds on the result's wire format (written by server.py's `_encode_result`).
MAX_RESULT_DEPTH = 64
# Bound on the header's commas and opening brackets, which bound its JSON values (every value
# but the first of a list or dict follows a comma): decoding, rebuilding and fingerprinting
# cost per value, so a header of tiny dicts within the byte cap would cost seconds and
# hundreds of MB. Probes return far fewer (their tensors travel as raw bytes, not values).
MAX_RESULT_VALUES = 100_000
MAX_TENSOR_DIMS = 16


def decode_result(path: Path, *, max_bytes: int = MAX_RESULT_BYTES) -> Any:
    """Read a result the student side wrote: JSON and raw tensor bytes, never an unpickler.

    The format is `_encode_result`'s in server.py. Everything in it is checked: the
    sizes against the file and the cap, the tags, the dtypes (an allow-list), shapes against
    byte counts, devices against a pattern; the values built are exactly the plain types,
    so no subclass can lie to a comparison.
    """
    size = path.stat().st_size
    if size > max_bytes:
        raise ValueError(
            f"the result is {size / 2**20:.0f} MiB, over the {max_bytes >> 20} MiB cap"
        )
    data = path.read_bytes()
    header_size = int.from_bytes(data[:4], "little")
    if len(data) < 4 or header_size > len(data) - 4:
        raise ValueError("the result is not in the sandbox's format")
    if header_size > MAX_RESULT_HEADER_BYTES:
        raise ValueError(header_too_long(header_size))
    header_bytes = data[4 : 4 + header_size]
    if _value_bound(header_bytes) > MAX_RESULT_VALUES:
        raise ValueError(
            f"the result holds more than {MAX_RESULT_VALUES:,} values (numbers, strings, "
            "lists, dicts); return only what the function's contract asks for"
        )
    try:
        header = json.loads(header_bytes)
    except (ValueError, RecursionError) as error:
        raise ValueError(f"the result's header is not JSON: {short_message(error)}") from None
    if type(header) is not dict or header.get("version") != WIRE_VERSION or "value" not in header:
        raise ValueError("the result's header is not in the sandbox's format")
    return _decode_value(header["value"], _Blob(memoryview(data)[4 + header_size :]), depth=0)


def _value_bound(header: bytes) -> int:
    """An upper bound on the JSON values in `header`, counted in linear time before parsing.

    Each value but the first of a container follows a comma, and each container opens with a
    bracket, so commas plus opening brackets bound the values (brackets and commas inside
    strings only raise the bound).
    """
    return header.count(b",") + header.count(b"[") + header.count(b"{")


class _Blob:
    """The result's tensor bytes, handed out in order: each byte belongs to one tensor at most.

    The student side writes its tensors' bytes one after another in the header's order, so
    each tensor must start at or after the end of the one before. Without this, a small file
    whose header names the same bytes thousands of times would make the grader allocate
    gigabytes, a copy per mention.
    """

    def __init__(self, data: memoryview) -> None:
        self.data = data
        self.end = 0

    def take(self, offset: int, nbytes: int) -> memoryview:
        if not self.end <= offset <= offset + nbytes <= len(self.data):
            raise ValueError("the result's tensors overlap or lie outside its data")
        self.end = offset + nbytes
        return self.data[offset : offset + nbytes]


def _decode_value(node: Any, blob: _Blob, *, depth: int) -> Any:
    if depth > MAX_RESULT_DEPTH:
        raise ValueError(f"the result is nested more than {MAX_RESULT_DEPTH} levels deep")
    if node is None or type(node) in (bool, int, float, str):
        return node
    if type(node) is dict and len(node) == 1:
        ((tag, body),) = node.items()
        if tag in ("list", "tuple") and type(body) is list:
            items = [_decode_value(item, blob, depth=depth + 1) for item in body]
            return items if tag == "list" else tuple(items)
        if tag == "dict" and type(body) is dict:
            return {key: _decode_value(item, blob, depth=depth + 1) for key, item in body.items()}
        if tag == "tensor" and type(body) is dict:
            return _decode_tensor(body, blob)
    raise ValueError("the result's header holds something that is not plain data")


def _decode_tensor(spec: dict[str, Any], blob: _Blob) -> Any:
    import torch

    name = spec.get("dtype")
    dtype = getattr(torch, name) if type(name) is str and name in WIRE_DTYPES else None
    shape, device = spec.get("shape"), spec.get("device")
    offset, nbytes = spec.get("offset"), spec.get("nbytes")
    if (
        not isinstance(dtype, torch.dtype)
        or type(shape) is not list
        or len(shape) > MAX_TENSOR_DIMS
        or not all(type(n) is int and 0 <= n <= MAX_RESULT_BYTES for n in shape)
        or type(offset) is not int
        or type(nbytes) is not int
        or not 0 <= offset <= offset + nbytes <= len(blob.data)
        or math.prod(shape) * dtype.itemsize != nbytes
        or type(device) is not str
        or not re.fullmatch(r"cpu|cuda(:[0-9]{1,3})?", device)
    ):
        raise ValueError(f"the result holds a malformed tensor: {str(spec)[:200]}")
    raw = bytearray(blob.take(offset, nbytes))  # writable, and owned by the tensor
    if nbytes == 0:
        tensor = torch.empty(shape, dtype=dtype)
    elif dtype is torch.bool:  # any byte but 0 and 1 would be an invalid bool
        tensor = torch.frombuffer(raw, dtype=torch.uint8).ne(0).reshape(shape)
    else:
        tensor = torch.frombuffer(raw, dtype=dtype).reshape(shape)
    return tensor if device == "cpu" else tensor.to(device)


def short_message(error: BaseException, limit: int = 300) -> str:
    text = str(error).splitlines()[0] if str(error) else type(error).__name__
    return text[:limit]
