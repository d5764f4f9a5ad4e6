"""The HTML shell shared by the staff pages: one offline style, escaped tables, page links."""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import quote

STUDENTS_DIR = "students"


_CSS = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 1.5rem auto; max-width: 76rem;
       padding: 0 1rem; color: #1d1d1f; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.15rem; margin-top: 2rem; }
table { border-collapse: collapse; width: 100%; margin: .5rem 0; table-layout: auto; }
th, td { text-align: left; padding: .25rem .4rem; border-bottom: 1px solid #ddd;
         vertical-align: top; overflow-wrap: anywhere; }
th { background: #f4f4f6; font-weight: 600; overflow-wrap: normal; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
td.num, td.id { white-space: nowrap; overflow-wrap: normal; }
.meta { color: #555; } .msg { font-family: ui-monospace, monospace;
     font-size: .85rem; white-space: pre-wrap; }
pre { white-space: pre-wrap; overflow-wrap: anywhere; background: #f7f7f9; padding: .5rem; }
svg.hist { max-width: 100%; height: auto; }
.pass { color: #1a7f37; } .fail { color: #b42318; } .wait { color: #9a6700; }
.side { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; }
.side pre { font-size: .8rem; } mark { background: #ffe08a; }
"""


@dataclass(frozen=True)
class Link:
    """A table cell that links to another page of the summary."""

    text: str
    href: str


Cell = str | Link


def student_file(key: str) -> str:
    """The per-student page's path relative to summary.html (keys are safe file names)."""
    return f"{STUDENTS_DIR}/{key}.html"


def notebook_file(key: str) -> str:
    """The page of the notebook a student submitted, beside their page (relative to
    summary.html)."""
    return f"{STUDENTS_DIR}/{key}.notebook.html"


def student_href(key: str) -> str:
    """The link to `student_file(key)`: a key may hold spaces, `#`, `%` or `?`."""
    return quote(student_file(key), safe="/")


def _render_cell(value: Cell) -> str:
    if isinstance(value, Link):
        return f'<a href="{html.escape(value.href)}">{html.escape(value.text)}</a>'
    return html.escape(value)


def html_table(
    header: Sequence[str], rows: Iterable[Sequence[Cell]], classes: dict[int, str]
) -> str:
    """An HTML table; `classes` styles columns by index. Every cell is escaped."""

    def cell(tag: str, index: int, value: Cell) -> str:
        style = f' class="{classes[index]}"' if index in classes else ""
        text = _render_cell(value)
        if tag == "th":  # long part ids may break after an underscore, not mid-word
            text = text.replace("_", "_<wbr>")
        return f"<{tag}{style}>{text}</{tag}>"

    head = "".join(cell("th", i, h) for i, h in enumerate(header))
    body = "".join(
        "<tr>" + "".join(cell("td", i, c) for i, c in enumerate(row)) + "</tr>" for row in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def submission_name(key: str, name: str) -> str:
    """A submission as staff read it: its student's name with its key, or the key alone."""
    return f"{name} ({key})" if name and name != key else key


def submission_label(key: str, names: Mapping[str, str]) -> str:
    """`submission_name` from `names` (key -> student), HTML-escaped: names come from the
    submissions' metadata."""
    return html.escape(submission_name(key, names.get(key, "")))


def page_html(title: str, body: str) -> str:
    return (
        "<!doctype html>\n<html lang=en><head><meta charset=utf-8>"
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>"
        f"<h1>{html.escape(title)}</h1>{body}</body></html>\n"
    )
