"""The submitted notebook's page for staff (grader/notebook/page.py): outputs kept, inert."""

from __future__ import annotations

import zipfile
from html.parser import HTMLParser
from pathlib import Path

import nbformat
import pytest

from grader.notebook.page import write_notebook_page
from tests.support import ASSIGNMENT_DIR, grade_to_report

# A 1x1 PNG, as matplotlib's inline backend stores a figure.
PIXEL = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)
HOSTILE_HTML = (
    '<div onclick="alert(1)"><script>alert(2)</script><a href="javascript:alert(3)">a</a>'
    '<a href=" JaVaScRiPt:alert(4)">b</a><img src="x" onerror="alert(5)">'
    '<svg onload="alert(6)"><script>alert(7)</script></svg><iframe src="javascript:alert(8)">'
    '</iframe><form action="javascript:alert(9)"><button formaction="javascript:1">c</button>'
    '</form><object data="javascript:alert(10)"></object></div>'
)


class Tags(HTMLParser):
    """Every start tag's name and attributes, and each script's source and text."""

    def __init__(self) -> None:
        super().__init__()
        self.attributes: list[tuple[str, str, str]] = []
        self.scripts: list[str] = []
        self.in_script = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            self.attributes.append((tag, name, value or ""))
        if tag == "script":
            self.in_script = True
            self.scripts.append(dict(attrs).get("src") or "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "script":
            self.in_script = False

    def handle_data(self, data: str) -> None:
        if self.in_script:
            self.scripts[-1] += data


def parse(page: Path) -> Tags:
    tags = Tags()
    tags.feed(page.read_text(encoding="utf-8"))
    return tags


def write_notebook(path: Path, cells: list[nbformat.NotebookNode]) -> Path:
    nbformat.write(nbformat.v4.new_notebook(cells=cells), path)
    return path


def hostile_notebook(path: Path) -> Path:
    markdown = nbformat.v4.new_markdown_cell(
        "# Plot\n<script>alert(11)</script>\n<img src=x onerror=alert(12)>\n"
        "[click](javascript:alert(13))\n" + HOSTILE_HTML
    )
    code = nbformat.v4.new_code_cell("# part: manual_backprop\nplot()")
    code.outputs = [
        nbformat.v4.new_output("stream", name="stdout", text="<script>alert(14)</script>\n"),
        nbformat.v4.new_output("display_data", data={"text/html": HOSTILE_HTML}),
        nbformat.v4.new_output("display_data", data={"application/javascript": "alert(15)"}),
        nbformat.v4.new_output("display_data", data={"image/svg+xml": HOSTILE_HTML}),
        nbformat.v4.new_output("execute_result", data={"image/png": PIXEL}, execution_count=1),
        nbformat.v4.new_output(
            "error", ename="E", evalue="<img src=x onerror=alert(16)>", traceback=["<script>"]
        ),
    ]
    raw = nbformat.v4.new_raw_cell("<script>alert(17)</script>")
    raw.metadata["format"] = "text/html"
    return write_notebook(path, [markdown, code, raw])


def test_hostile_markup_in_cells_and_outputs_stays_inert(tmp_path: Path) -> None:
    empty = write_notebook(tmp_path / "empty.ipynb", [])
    assert write_notebook_page(empty, "walkthrough.ipynb", tmp_path / "empty.html") == ""
    exporters_own = parse(tmp_path / "empty.html").scripts

    notebook = hostile_notebook(tmp_path / "walkthrough.ipynb")
    page = tmp_path / "page.html"
    assert write_notebook_page(notebook, "walkthrough.ipynb", page) == ""
    tags = parse(page)
    assert tags.scripts == exporters_own  # the template's, which the policy stops too
    assert not [a for a in tags.attributes if a[1].startswith("on")]
    assert not [a for a in tags.attributes if "javascript:" in "".join(a[2].split()).lower()]
    assert not {tag for tag, _, _ in tags.attributes} & {"iframe", "object", "embed", "form"}
    policies = [v for _, name, v in tags.attributes if name == "content" and "script-src" in v]
    assert policies and "script-src 'none'" in policies[0]
    # The student's work is there: the markdown's heading, the code, the image.
    text = page.read_text(encoding="utf-8")
    assert '<h1 id="Plot">Plot' in text and "plot" in text
    assert ("img", "src", f"data:image/png;base64,{PIXEL}") in tags.attributes


def test_a_50_mb_output_is_cut_with_a_note(tmp_path: Path) -> None:
    code = nbformat.v4.new_code_cell("print(data)")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="x" * (50 << 20))]
    small = nbformat.v4.new_code_cell("print(1)")
    small.outputs = [nbformat.v4.new_output("stream", name="stdout", text="the small output\n")]
    notebook = write_notebook(tmp_path / "walkthrough.ipynb", [code, small])
    page = tmp_path / "page.html"
    note = write_notebook_page(notebook, "walkthrough.ipynb", page)
    assert note == "cell 1: an output of 50.0 MiB cut"
    text = page.read_text(encoding="utf-8")
    assert "[an output of 50.0 MiB was cut" in text and "the small output" in text
    assert page.stat().st_size < 2 << 20


def test_a_submission_without_a_notebook_gets_no_page(tmp_path: Path) -> None:
    folder = tmp_path / "files"
    folder.mkdir()
    (folder / "manual_backprop.py").write_text("x = 1\n")
    assert write_notebook_page(folder, "walkthrough.ipynb", tmp_path / "page.html") is None
    assert not (tmp_path / "page.html").exists()


def test_a_damaged_notebook_page_says_why(tmp_path: Path) -> None:
    (tmp_path / "walkthrough.ipynb").write_bytes(b"{not json")
    page = tmp_path / "page.html"
    note = write_notebook_page(tmp_path / "walkthrough.ipynb", "walkthrough.ipynb", page)
    assert note == "the notebook could not be shown: it is not a readable notebook (NotJSONError)."
    assert "not a readable notebook" in page.read_text(encoding="utf-8")


@pytest.mark.slow
def test_grade_report_links_the_rendered_notebook_of_a_zip(tmp_path: Path) -> None:
    notebook = hostile_notebook(tmp_path / "walkthrough.ipynb")
    submission = tmp_path / "submission.zip"
    with zipfile.ZipFile(submission, "w") as archive:
        archive.write(notebook, "walkthrough.ipynb")
        for path in sorted(ASSIGNMENT_DIR.glob("*.py")):
            archive.write(path, path.name)
    process, _, _ = grade_to_report(submission, tmp_path)
    assert process.returncode == 0, process.stderr[-2000:]
    page = tmp_path / "report.notebook.html"
    assert f"wrote {page}" in " ".join(process.stdout.split())
    assert ("img", "src", f"data:image/png;base64,{PIXEL}") in parse(page).attributes
