"""The protocol between a command and its grading workers: every message, and the result codec.

A local worker is `python -c "from grader.workers.process import serve_worker; ..."`, started
by `local.LocalExecutor` with the coordinator's pid as its one argument and an environment
made of `process.WORKER_ENVIRONMENT` only. Every message is one JSON object on one line:

- coordinator -> worker, on its stdin: a `WorkerConfig` once (`to_json`), then a `Job` per
  submission; closing stdin tells an idle worker to close its sandbox and exit;
- worker -> coordinator, on its stdout: `Ready` once it has started (or `Failed`, and it
  exits), then one `Done` per job, in the order of the jobs. A `Done` carries the
  submission's whole `GradingResult` (`encode_result`), which the coordinator reads back
  checked (`decode_result`) as the same dataclasses: nothing of it is dropped on the way or
  patched back in afterwards. `error` stands in for it when the grader raised instead.

The worker's stderr is its log. A Ray task (`ray_executor.py`) takes the same config as JSON
and returns the same encoded result. Workers are the grader's own processes (student code runs
only in their sandboxes): student text reaches a reply only inside the result's fields,
cleaned and capped where the results model took it in.
"""

from __future__ import annotations

import dataclasses
import json
import types
from dataclasses import dataclass
from typing import Any, Literal, TypedDict, get_args, get_origin, get_type_hints

from grader.course.manifest import Assignment
from grader.results.model import GradingResult
from grader.results.report import MAX_REPORT_BYTES

# The scratch folders of workers (and of the coordinator that holds theirs) start so.
SCRATCH_PREFIX = "grader-batch-"
# A reply carries one result: bounded as reading a report.json back is, far above a real one.
MAX_REPLY_BYTES = MAX_REPORT_BYTES


@dataclass(frozen=True)
class WorkerConfig:
    """What every worker needs to grade as `grade` does: the first line on its stdin."""

    assignment: str
    # The course folder (the one holding assignments/) the assignment is loaded from.
    course: str
    device: str
    seed: int
    # Paths student code must not see, besides the solutions (results, the batch's folders).
    hide: tuple[str, ...] = ()
    # Where workers make their scratch folders ("" = the system's); the coordinator removes
    # it at the end, so even a killed worker leaves nothing behind.
    scratch: str = ""

    @classmethod
    def for_assignment(
        cls,
        assignment: Assignment,
        *,
        device: str,
        seed: int,
        hide: tuple[str, ...] = (),
        scratch: str = "",
    ) -> WorkerConfig:
        """The config that grades `assignment` from the course folder it was loaded from."""
        course = assignment.directory.parent.parent  # <course>/assignments/<id>
        return cls(assignment.id, str(course), device, seed, hide, scratch)

    def to_json(self) -> str:
        return json.dumps(dataclasses.asdict(self))

    @classmethod
    def from_json(cls, text: str) -> WorkerConfig:
        config = _decode(WorkerConfig, json.loads(text), "the worker config")
        assert isinstance(config, WorkerConfig)
        return config


class Job(TypedDict):
    """Grade the submission at `path` (a folder, a zip or a notebook)."""

    key: str
    path: str


class Ready(TypedDict):
    """The worker imported torch, forked its sandbox's zygote and loaded the assignment."""

    event: Literal["ready"]


class Failed(TypedDict):
    """The worker could not start (the reason, one line); it exits after saying so."""

    event: Literal["failed"]
    message: str


class _DoneRequired(TypedDict):
    event: Literal["done"]
    # The job's key.
    key: str


class Done(_DoneRequired, total=False):
    """One job's end: its result, or the grader's own error when it raised instead."""

    result: dict[str, Any]
    error: str


class ProtocolError(ValueError):
    """A message that does not hold what the protocol says (names the first wrong field)."""


def encode_result(result: GradingResult) -> dict[str, Any]:
    """The result as JSON data, every field of every dataclass in it."""
    return dataclasses.asdict(result)


def decode_result(data: object) -> GradingResult:
    """`encode_result`'s data back as the dataclasses, each field checked for its type."""
    result = _decode(GradingResult, data, "the result")
    assert isinstance(result, GradingResult)
    return result


def _decode(hint: Any, value: object, where: str) -> Any:
    """`value` (decoded JSON) as the type `hint` names, or ProtocolError saying where not."""
    if isinstance(hint, type) and dataclasses.is_dataclass(hint):
        return _decode_dataclass(hint, value, where)
    origin, args = get_origin(hint), get_args(hint)
    if origin is types.UnionType and len(args) == 2 and type(None) in args:  # X | None
        if value is None:
            return None
        (kind,) = (arg for arg in args if arg is not type(None))
        return _decode(kind, value, where)
    if origin is tuple:  # tuple[X, ...]: a list in JSON
        if not isinstance(value, list):
            raise ProtocolError(f"{where} is not a list")
        return tuple(_decode(args[0], item, f"{where}[{i}]") for i, item in enumerate(value))
    if origin is Literal:
        if value not in args:
            raise ProtocolError(f"{where} is {value!r}, not one of {args}")
        return value
    if origin is dict:
        if not isinstance(value, dict):
            raise ProtocolError(f"{where} is not an object")
        return value
    if hint is float and isinstance(value, int | float) and not isinstance(value, bool):
        return float(value)
    if hint in (str, int, bool) and type(value) is hint:
        return value
    raise ProtocolError(f"{where} is {type(value).__name__}, not {getattr(hint, '__name__', hint)}")


def _decode_dataclass(hint: type[Any], value: object, where: str) -> Any:
    if not isinstance(value, dict):
        raise ProtocolError(f"{where} is not an object")
    names = {field.name for field in dataclasses.fields(hint)}
    if set(value) != names:
        raise ProtocolError(f"{where} has other fields than {hint.__name__}'s")
    hints = get_type_hints(hint)
    return hint(**{name: _decode(hints[name], value[name], f"{where}.{name}") for name in names})
