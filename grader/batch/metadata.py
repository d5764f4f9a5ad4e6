"""The submitters and submission times in Gradescope's export metadata (`submission_metadata.yml`).

The file is YAML that Gradescope writes, but its names and emails are the students' own text,
so it is read as data only and with bounds: a size limit before parsing; PyYAML's safe
constructors (no Python objects), with Ruby's object tags read as the plain mappings they
tag and merge keys (`<<`, whose nested merges grow exponentially) refused; parsing in a
limited child (`grader.intake.bounded`: time, memory), because libyaml's composer recurses once per
nesting level in C; and only the fields it needs, of the types it expects, taken from the
result. A file that fails any of these gives no metadata and a warning: students are then
named by their submissions' keys.
"""

from __future__ import annotations

import faulthandler
import logging
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from grader.intake.bounded import run_bounded
from grader.intake.safetext import clean_name
from grader.results.model import MAX_NAME_CHARS

log = logging.getLogger(__name__)

METADATA_FILE = "submission_metadata.yml"
# A class of a thousand with every test's output in :results: stays well below this.
MAX_METADATA_BYTES = 32 << 20
METADATA_SECONDS = 60.0
METADATA_MEMORY_BYTES = 2 << 30
# Members of one submission's group that are read; Gradescope groups are far smaller.
MAX_SUBMITTERS = 50
_MERGE_TAG = "tag:yaml.org,2002:merge"


@dataclass(frozen=True)
class Submitter:
    """A person named in Gradescope's metadata; every field is the student's own text."""

    name: str
    email: str = ""
    sid: str = ""

    def __post_init__(self) -> None:
        for name in ("name", "email", "sid"):
            object.__setattr__(self, name, clean_name(getattr(self, name), MAX_NAME_CHARS))


@dataclass(frozen=True)
class ExportEntry:
    """One submission in the export: who made it, and when (ISO 8601 text, "" if not given)."""

    submitters: tuple[Submitter, ...]
    created_at: str = ""


def read_gradescope_metadata(path: Path) -> dict[str, tuple[Submitter, ...]]:
    """Submission folder -> its submitters; {} (with a warning) if the file cannot be read."""
    return {folder: entry.submitters for folder, entry in read_export_metadata(path).items()}


def read_export_metadata(path: Path) -> dict[str, ExportEntry]:
    """Submission folder -> its entry; {} (with a warning) if the file cannot be read."""
    try:
        size = path.stat().st_size
    except OSError as error:
        log.warning("%s cannot be read (%s); students are named by their submissions", path, error)
        return {}
    if size > MAX_METADATA_BYTES:
        log.warning(
            "%s is %d bytes, over the %d read; students are named by their submissions",
            path,
            size,
            MAX_METADATA_BYTES,
        )
        return {}
    [outcome] = run_bounded(
        [lambda: _submitters_as_data(path)],
        seconds=METADATA_SECONDS,
        memory_bytes=METADATA_MEMORY_BYTES,
    )
    if outcome.failure or not isinstance(outcome.value, dict):
        reason = outcome.failure or str(outcome.value)
        log.warning(
            "%s is not metadata this grader can read (%s); students are named by their submissions",
            path,
            reason,
        )
        return {}
    return {
        folder: ExportEntry(
            submitters=tuple(Submitter(*person) for person in entry["submitters"]),
            created_at=entry["created_at"],
        )
        for folder, entry in outcome.value.items()
    }


def _submitters_as_data(path: Path) -> dict[str, dict[str, Any]] | str:
    """Folder -> {"submitters": [name, email, sid] per submitter, "created_at": ISO text}, or
    why the file is not YAML we read.

    Runs in the bounded child; its result travels back as JSON.
    """
    # A nesting too deep for libyaml's composer crashes this child, which is the bound
    # working: no traceback dump for it (pytest turns the dump on).
    faulthandler.disable()
    with path.open("rb") as handle:
        raw = handle.read(MAX_METADATA_BYTES + 1)
    if len(raw) > MAX_METADATA_BYTES:
        return "the file grew past the size limit"
    try:
        data = _load_yaml(raw.decode("utf-8", errors="replace"))
    except Exception as error:  # malformed YAML, refused tags, ints too long to convert...
        return f"{type(error).__name__}: {str(error)[:200]}"
    if not isinstance(data, dict):
        return "its top level is not a mapping of submissions"
    people: dict[str, dict[str, Any]] = {}
    for folder, entry in data.items():
        # Aliases let one small node appear many times: each lookup here is O(1) and each
        # list is cut, so the work stays linear in the file whatever it repeats.
        submitters = _field(entry, "submitters")
        if not isinstance(folder, str | int) or not isinstance(submitters, list):
            continue
        found = []
        for person in submitters[:MAX_SUBMITTERS]:
            if isinstance(person, dict):
                found.append([_text(_field(person, key)) for key in ("name", "email", "sid")])
        people[str(folder)] = {
            "submitters": found,
            "created_at": _time(_field(entry, "created_at")),
        }
    return people


def _load_yaml(text: str) -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class MetadataLoader(base):  # type: ignore[misc, valid-type]
        """The safe loader, reading Ruby's object tags as plain data and refusing merges."""

        def flatten_mapping(self, node: Any) -> None:
            for key, _ in node.value:
                if key.tag == _MERGE_TAG:
                    raise yaml.constructor.ConstructorError(
                        None, None, "merge keys (<<) are not read", key.start_mark
                    )

    def plain(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node)
        return loader.construct_scalar(node)

    MetadataLoader.add_multi_constructor("!", plain)
    return yaml.load(text, Loader=MetadataLoader)


def _field(mapping: object, name: str) -> object:
    """A mapping's `:name` (Ruby's symbol keys, as Gradescope writes them) or `name`."""
    if not isinstance(mapping, dict):
        return None
    value = mapping.get(f":{name}")
    return mapping.get(name) if value is None else value


def _time(value: object) -> str:
    """A submission time as ISO 8601 text ("" if absent or of another type).

    Gradescope writes Ruby's `ActiveSupport::TimeWithZone`, a mapping whose `utc` YAML reads
    as a time; a plain YAML time or text is taken as it is (checked where a policy reads it).
    """
    if isinstance(value, dict):
        value = value.get("utc")
    if isinstance(value, datetime):
        return value.isoformat()
    return _text(value) if isinstance(value, str) else ""


def _text(value: object) -> str:
    """A scalar as text, cut before it is cleaned; anything else (a list, a mapping) is ""."""
    if isinstance(value, str):
        return value[: MAX_NAME_CHARS * 4].strip()
    if isinstance(value, int | float):
        return str(value)
    return ""
