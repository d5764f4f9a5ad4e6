"""Check `batch`'s summary.html in a real headless browser: every gradebook column on screen.

    python bench/check_summary_html.py [OUT_DIR]   # a batch's --out; default: a synthetic class

Needs Chromium (Debian: `apt-get install -y chromium`). Loads a copy of the page with a
probe script added (the page itself has none) at a 1280 px wide window, reports any gradebook
header cell whose right edge falls outside the window or any table wider than the page, and
writes a screenshot (summary-1280.png beside the page copy) to look at. Not part of
`make test`: it needs a browser.
"""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from grader.batch.discovery import BatchItem  # noqa: E402
from grader.batch.gradebook import gradebook_rows  # noqa: E402
from grader.batch.metadata import Submitter  # noqa: E402
from grader.batch.stats import summarize  # noqa: E402
from grader.batch.summary import summary_html  # noqa: E402
from grader.course.manifest import load_assignment  # noqa: E402
from grader.results.report import Report, report_from_dict  # noqa: E402

WIDTH, HEIGHT = 1280, 900
SCREENSHOT_HEIGHT = 2600
PROBE = """
<script>
addEventListener('load', () => {
  const width = document.documentElement.clientWidth;
  const problems = [];
  for (const table of document.querySelectorAll('table')) {
    if (table.getBoundingClientRect().right > width + 0.5) problems.push('table wider than page');
  }
  const book = [...document.querySelectorAll('h2')].find(h => h.textContent === 'Gradebook');
  const table = book && book.nextElementSibling;
  for (const cell of table ? table.querySelectorAll('th') : []) {
    const box = cell.getBoundingClientRect();
    const hidden = box.right > width + 0.5 || box.width < 8;
    if (hidden) problems.push('hidden column ' + cell.textContent);
  }
  const result = {width, columns: table ? table.querySelectorAll('th').length : 0, problems};
  document.body.setAttribute('data-probe', JSON.stringify(result));
});
</script>
"""


def synthetic_page() -> str:
    """A class of 40 with long names and emails and every status, as staff would see it."""
    assignment = load_assignment("pytorch_basics")
    items: list[BatchItem] = []
    reports: dict[str, Report | None] = {}
    for index in range(40):
        key = f"submission_{1000 + index}"
        person = Submitter(
            f"Maximiliana Wolfeschlegelsteinhausen-{index}",
            f"maximiliana.wolfeschlegelsteinhausen{index}@students.example.edu",
            str(2024000 + index),
        )
        items.append(BatchItem(key, Path(key), (person,)))
        parts = {
            part.id: {"score": part.points * ((index + i) % 7) / 6.0, "max_score": part.points}
            for i, part in enumerate(assignment.parts)
        }
        reports[key] = report_from_dict(
            {
                "assignment": assignment.id,
                "score": sum(float(p["score"]) for p in parts.values()),
                "max_score": assignment.max_score,
                "parts": parts,
                "tests": [],
                "seed": 1,
                "submission": {"sha256": "", "files": ["x.py"]},
                "grader_error": "worker died" if index == 3 else None,
            }
        )
    summary = summarize(assignment, items, reports)
    rows = gradebook_rows(items, reports, assignment)
    return summary_html(summary, rows, links=[f"students/{i.key}.html" for i in items])


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise SystemExit("no Chromium found: apt-get install -y chromium")


def run(browser: str, page: Path, *args: str, height: int = HEIGHT) -> str:
    command = [
        browser,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        f"--window-size={WIDTH},{height}",
        *args,
        page.as_uri(),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    return done.stdout


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", type=Path, help="a batch's --out folder")
    args = parser.parse_args()
    text = (args.out / "summary.html").read_text() if args.out else synthetic_page()
    browser = chromium()
    folder = Path(tempfile.mkdtemp(prefix="summary-check-"))
    page = folder / "summary.html"
    page.write_text(text.replace("</body>", PROBE + "</body>"))
    dom = run(browser, page, "--dump-dom")
    match = re.search(r'data-probe="([^"]*)"', dom)
    if not match:
        print("the probe did not run; Chromium said:\n" + dom[-2000:])
        return 1
    result: dict[str, Any] = json.loads(match.group(1).replace("&quot;", '"'))
    screenshot = folder / "summary-1280.png"
    # Tall enough to show the gradebook too; the width is what is being checked.
    run(browser, page, f"--screenshot={screenshot}", height=SCREENSHOT_HEIGHT)
    print(
        f"{result['columns']} gradebook columns at {result['width']} px; "
        f"problems: {result['problems'] or 'none'}; screenshot: {screenshot}"
    )
    return 1 if result["problems"] else 0


if __name__ == "__main__":
    raise SystemExit(main())
