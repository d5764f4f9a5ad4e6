"""The submitted notebook as staff see it: one inert HTML page, outputs and images kept.

The notebook is student bytes, so the whole rendering (reading it, out of a zip where it
came in one, nbformat, nbconvert) runs in a bounded child (`grader.intake.bounded.run_bounded`):
a notebook that is huge, deeply nested or slow to convert costs that child's time and
memory, and the page then says why it is missing. Outputs larger than `MAX_OUTPUT_BYTES`
each, or past `MAX_OUTPUTS_BYTES` in all, are replaced by a line saying how large they were.

What makes the page inert: nbconvert's HTMLExporter with `sanitize_html=True` cleans the
HTML of markdown cells and of outputs (scripts, event handlers, `javascript:` links and
unknown markup removed or escaped; JavaScript outputs are left out), and a Content Security
Policy in the page's head forbids every script, the exporter's own included, and every
request outside the page (images must be inline `data:` URLs, as notebook outputs are).
"""

from __future__ import annotations

import json
import logging
import zipfile
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any

from grader.intake.bounded import run_bounded
from grader.results.atomic import write_text_atomic

# A notebook read for the page: larger than the 20 MiB graded, so that a notebook with one
# huge output is still shown (that output cut).
MAX_PAGE_NOTEBOOK_BYTES = 64 << 20
MAX_OUTPUT_BYTES = 2 << 20
MAX_OUTPUTS_BYTES = 16 << 20
RENDER_SECONDS = 60.0
RENDER_MEMORY_BYTES = 3 << 30
CONTENT_SECURITY_POLICY = (
    "default-src 'none'; script-src 'none'; img-src data:; style-src 'unsafe-inline'; "
    "font-src data:; base-uri 'none'; form-action 'none'"
)
# What markdown renders to, besides bleach's inline tags.
_MARKDOWN_TAGS = (
    *("h1", "h2", "h3", "h4", "h5", "h6", "p", "br", "hr", "div", "span", "pre", "img"),
    *("table", "thead", "tbody", "tr", "th", "td", "del", "sub", "sup", "dl", "dt", "dd"),
)
_CSP_META = f'<meta http-equiv="Content-Security-Policy" content="{CONTENT_SECURITY_POLICY}">'


def write_notebook_page(submission: Path, notebook_name: str, page: Path) -> str | None:
    """Write `page` from the notebook in `submission` (a notebook, a folder or a zip).

    Returns a note for staff (what was cut, or why the page only says the notebook could not
    be shown), or None when the submission holds no notebook and no page was written.
    """
    return write_notebook_pages([(submission, page)], notebook_name)[page]


def write_notebook_pages(
    pages: list[tuple[Path, Path]], notebook_name: str
) -> dict[Path, str | None]:
    """`write_notebook_page` for each (submission, page), in one bounded child: nbconvert is
    imported once for a whole class (0.6 s a notebook otherwise), and a notebook that
    overruns the bounds costs only its own page."""
    outcomes = run_bounded(
        [_render_task(submission, notebook_name) for submission, _ in pages],
        seconds=RENDER_SECONDS,
        memory_bytes=RENDER_MEMORY_BYTES,
    )
    return {
        page: _write_page(page, outcome.failure, outcome.value)
        for (_, page), outcome in zip(pages, outcomes, strict=True)
    }


def _write_page(page: Path, failure: str, value: Any) -> str | None:
    if failure:
        why = {"timeout": f"took over {RENDER_SECONDS:g} s", "memory": "needed too much memory"}
        note = f"the notebook could not be shown: rendering it {why.get(failure, 'failed')}."
        write_text_atomic(page, _message_page(note))
        return note
    if not isinstance(value, dict) or value.get("absent"):
        return None
    if "html" not in value:
        note = f"the notebook could not be shown: {value.get('problem', 'it failed to render')}"
        write_text_atomic(page, _message_page(note))
        return note
    write_text_atomic(page, value["html"])
    return "; ".join(value["notes"]) or ""


def _render_task(submission: Path, notebook_name: str) -> Callable[[], dict[str, Any]]:
    return lambda: render_notebook(submission, notebook_name)


def render_notebook(submission: Path, notebook_name: str) -> dict[str, Any]:
    """{"html", "notes"}, {"absent": True} or {"problem"}; run it in a bounded child."""
    data = _notebook_bytes(submission, notebook_name)
    if data is None:
        return {"absent": True}
    if len(data) > MAX_PAGE_NOTEBOOK_BYTES:
        return {"problem": f"it is over {MAX_PAGE_NOTEBOOK_BYTES >> 20} MiB."}
    import nbformat
    from nbconvert import HTMLExporter

    try:
        text = data.decode("utf-8-sig", errors="replace")
        notebook = nbformat.reads(text, as_version=4)  # type: ignore[no-untyped-call]
    except Exception as error:  # nbformat raises many kinds for a damaged notebook
        return {"problem": f"it is not a readable notebook ({type(error).__name__})."}
    notes = _cut_large_outputs(notebook)
    exporter = HTMLExporter(template_name="lab", sanitize_html=True)  # type: ignore[no-untyped-call]
    exporter.register_filter("clean_html", _clean_html)  # type: ignore[no-untyped-call]
    exporter.log.setLevel(logging.ERROR)  # its warnings (an image without alt text) are noise
    try:
        body, _ = exporter.from_notebook_node(notebook)
    except Exception as error:  # nbconvert's failure on odd content: say so, keep grading
        return {"problem": f"nbconvert could not render it ({type(error).__name__})."}
    return {"html": body.replace("<head>", f"<head>\n{_CSP_META}", 1), "notes": notes}


def _clean_html(element: str | bytes) -> str:
    """nbconvert's `clean_html` (bleach) with the markup of ordinary markdown also allowed.

    nbconvert's own keeps only bleach's few inline tags, so headings, paragraphs and tables
    of every markdown cell showed as escaped text. Links may only be http(s) or mailto,
    images only inline data; attributes beyond these are dropped, so no handler survives.
    """
    import bleach

    text = element.decode() if isinstance(element, bytes) else str(element)
    cleaned: str = bleach.clean(
        text,
        tags=[*bleach.ALLOWED_TAGS, *_MARKDOWN_TAGS],
        attributes={
            **bleach.ALLOWED_ATTRIBUTES,
            "*": ["class", "id"],
            "img": ["src", "alt", "width", "height"],
            "td": ["align"],
            "th": ["align"],
        },
        protocols=["http", "https", "mailto", "data"],
    )
    return cleaned


def _notebook_bytes(submission: Path, notebook_name: str) -> bytes | None:
    """The notebook's bytes (at most the cap plus one), or None when there is none."""
    if submission.is_dir():
        candidates = [submission / notebook_name, *sorted(submission.glob("*.ipynb"))]
        path = next((p for p in candidates if p.is_file() and not p.is_symlink()), None)
        return _read_capped(path) if path is not None else None
    if submission.suffix.lower() == ".ipynb":
        return _read_capped(submission)
    if submission.suffix.lower() != ".zip":
        return None
    with zipfile.ZipFile(submission) as archive:
        members = [
            info
            for info in archive.infolist()
            if not info.is_dir() and info.filename.lower().endswith(".ipynb")
        ]
        named = [i for i in members if PurePosixPath(i.filename).name == notebook_name]
        chosen = (named or members)[:1]
        if not chosen:
            return None
        with archive.open(chosen[0]) as member:
            return member.read(MAX_PAGE_NOTEBOOK_BYTES + 1)


def _read_capped(path: Path) -> bytes:
    with path.open("rb") as stream:
        return stream.read(MAX_PAGE_NOTEBOOK_BYTES + 1)


def _cut_large_outputs(notebook: Any) -> list[str]:
    """Replace outputs over the caps by a line saying so; the notes say what was cut."""
    shown = 0
    cut: list[str] = []
    for number, cell in enumerate(notebook.cells, start=1):
        outputs = cell.get("outputs") if cell.get("cell_type") == "code" else None
        if not isinstance(outputs, list):
            continue
        for index, output in enumerate(outputs):
            size = len(json.dumps(output))
            if size <= MAX_OUTPUT_BYTES and shown + size <= MAX_OUTPUTS_BYTES:
                shown += size
                continue
            megabytes = f"{size / (1 << 20):.1f} MiB"
            outputs[index] = {
                "output_type": "stream",
                "name": "stdout",
                "text": f"[an output of {megabytes} was cut: the page shows outputs up to "
                f"{MAX_OUTPUT_BYTES >> 20} MiB each, {MAX_OUTPUTS_BYTES >> 20} MiB in all]",
            }
            cut.append(f"cell {number}: an output of {megabytes} cut")
    return cut


def _message_page(note: str) -> str:
    import html

    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        f"{_CSP_META}<title>submitted notebook</title></head>"
        f"<body><p>{html.escape(note)}</p></body></html>\n"
    )
