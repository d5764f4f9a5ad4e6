"""`python -m grader submit`, driven through the command line in a copy of the starter kit."""

from __future__ import annotations

import shutil
import zipfile
from pathlib import Path

import pytest

from grader.results.atomic import ZipEntry, write_zip
from grader.student.submit import unimplemented_functions
from tests.support import PART_FILES, SOLUTIONS_DIR, notebook_with_part_code, run_kit_cli

KIT_ASSIGNMENT = Path("assignments") / "pytorch_basics"
ZIP_NAME = "pytorch_basics_submission.zip"
NOTEBOOK = "walkthrough.ipynb"


def flat(text: str) -> str:
    """Output with rich's line wrapping undone, for phrase matching."""
    return " ".join(text.split())


@pytest.mark.slow
def test_stubs_still_give_a_zip_with_a_warning_per_part(starter_kit: Path) -> None:
    stale = starter_kit / ZIP_NAME
    stale.write_bytes(b"an older, broken zip")
    process = run_kit_cli("submit", cwd=starter_kit)
    assert process.returncode == 0, process.stderr
    output = flat(process.stdout)
    with zipfile.ZipFile(stale) as archive:  # replaced, not appended to
        assert sorted(archive.namelist()) == sorted([*PART_FILES, NOTEBOOK])
        folder = starter_kit / KIT_ASSIGNMENT
        for name in archive.namelist():
            assert archive.read(name) == (folder / name).read_bytes()
    assert "warning: still not implemented" in output
    for stub in ("manual_backprop: forward_backward, train_manual", "TwoLayerNet.__init__"):
        assert stub in output
    assert "upload pytorch_basics_submission.zip" in output and "Gradescope" in output
    assert "not implemented yet" in output  # the public tests' summary table
    assert not list(starter_kit.glob(".*.zip")), "the temporary zip was left behind"


@pytest.mark.slow
def test_reference_zip_holds_exactly_the_part_files_and_notebook(
    starter_kit: Path, tmp_path: Path
) -> None:
    folder = starter_kit / KIT_ASSIGNMENT
    for name in PART_FILES:
        shutil.copy(SOLUTIONS_DIR / name, folder / name)
    (folder / "helpers.py").write_text("x = 1\n", encoding="utf-8")  # never submitted
    target = tmp_path / "out" / "mine.zip"
    target.parent.mkdir()
    process = run_kit_cli("submit", "-o", target, cwd=starter_kit)
    assert process.returncode == 0, process.stderr
    output = flat(process.stdout)
    assert "not implemented" not in output
    assert f"wrote {target}" in output
    with zipfile.ZipFile(target) as archive:
        assert sorted(archive.namelist()) == sorted([*PART_FILES, NOTEBOOK])
        for name in PART_FILES:
            size = f"{archive.getinfo(name).file_size / 1024:.1f} KiB"
            assert f"{name} │ {size}" in output  # the listing with sizes


def test_zip_depends_on_the_files_alone(tmp_path: Path) -> None:
    files = [ZipEntry(name, SOLUTIONS_DIR / name) for name in PART_FILES]
    archives = []
    for attempt in range(2):
        path = tmp_path / f"{attempt}.zip"
        write_zip(path, files)
        archives.append(path.read_bytes())
    assert archives[0] == archives[1]


def test_missing_file_is_an_error_and_writes_no_zip(starter_kit: Path) -> None:
    folder = starter_kit / KIT_ASSIGNMENT
    (folder / "two_layer_net.py").unlink()
    (folder / "device_benchmark.py").unlink()
    process = run_kit_cli("submit", cwd=starter_kit)
    assert process.returncode == 1
    assert "two_layer_net.py, device_benchmark.py" in process.stderr
    assert "No zip was written" in process.stderr
    assert not list(starter_kit.glob("*.zip")) and not list(starter_kit.glob(".*.zip"))


def test_file_that_does_not_compile_is_an_error_and_writes_no_zip(starter_kit: Path) -> None:
    (starter_kit / KIT_ASSIGNMENT / "autograd_loop.py").write_text("def f(:\n", encoding="utf-8")
    process = run_kit_cli("submit", cwd=starter_kit)
    assert process.returncode == 1
    assert "autograd_loop.py has a syntax error on line 1" in process.stderr
    assert not list(starter_kit.glob("*.zip"))


@pytest.mark.slow
def test_notebook_code_is_submitted_and_the_rule_is_printed(starter_kit: Path) -> None:
    notebook = starter_kit / KIT_ASSIGNMENT / NOTEBOOK
    reference = (SOLUTIONS_DIR / "autograd_loop.py").read_text(encoding="utf-8")
    # The manual_backprop cell keeps its import and adds a line: the .py file still counts.
    kept_import = "from manual_backprop import forward_backward, train_manual\nLR = 1e-6\n"
    codes = {"autograd_loop": reference, "manual_backprop": kept_import}
    notebook_with_part_code(notebook, codes, notebook)
    process = run_kit_cli("submit", cwd=starter_kit)
    assert process.returncode == 0, process.stderr
    output = flat(process.stdout)
    assert (
        "autograd_loop will be graded from the cell marked part:autograd_loop in "
        "walkthrough.ipynb, not from autograd_loop.py (notebook code wins" in output
    )
    assert "manual_backprop will be graded from the cell" not in output
    assert (
        "note: manual_backprop: graded manual_backprop.py followed by the definitions in the "
        "notebook cell marked part:manual_backprop" in output
    )
    warnings = output.split("warning: still not implemented")[1]
    assert "autograd_loop" not in warnings and "manual_backprop" in warnings
    with zipfile.ZipFile(starter_kit / ZIP_NAME) as archive:
        assert archive.read(NOTEBOOK) == notebook.read_bytes()


def test_missing_output_folder_is_an_error(starter_kit: Path, tmp_path: Path) -> None:
    process = run_kit_cli("submit", "-o", tmp_path / "nowhere" / "x.zip", cwd=starter_kit)
    assert process.returncode == 1
    assert "nowhere is not a folder" in process.stderr


STUB_CASES = {
    "docstring then raise": (
        'def f():\n    """Doc."""\n    raise NotImplementedError("f")\n',
        ["f"],
    ),
    "bare raise of the class": ("def f():\n    raise NotImplementedError\n", ["f"]),
    "setup before the raise": (
        "class M:\n    def __init__(self):\n        super().__init__()\n"
        "        raise NotImplementedError('M')\n",
        ["M.__init__"],
    ),
    "a way out before the raise": (
        "def f(x):\n    if x:\n        return 1\n    raise NotImplementedError\n",
        [],
    ),
    "raise only in a branch": ("def f(x):\n    if x:\n        raise NotImplementedError\n", []),
    "implemented": ("def f():\n    return 1\n", []),
    "another exception": ("def f():\n    raise ValueError('no')\n", []),
    "nested return does not count": (
        "def f():\n    def g():\n        return 1\n    raise NotImplementedError\n",
        ["f"],
    ),
    "syntax error": ("def f(:\n", []),
}


@pytest.mark.parametrize(("source", "expected"), STUB_CASES.values(), ids=STUB_CASES.keys())
def test_unimplemented_functions(source: str, expected: list[str]) -> None:
    assert unimplemented_functions(source) == expected


def test_every_stub_function_of_the_kit_is_detected() -> None:
    source = (Path(__file__).parents[1] / KIT_ASSIGNMENT / "two_layer_net.py").read_text()
    assert set(unimplemented_functions(source)) == {
        "TwoLayerNet.__init__",
        "TwoLayerNet.forward",
        "ParallelBlock.__init__",
        "ParallelBlock.forward",
        "train_two_layer_net",
    }


def test_check_accepts_the_zip_it_would_upload(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import grader.student.check

    tested: list[Path] = []

    def fake_run(student_dir: Path, *args: object, **kwargs: object) -> tuple[list[object], str]:
        tested.extend(sorted(student_dir.iterdir()))
        return [], ""

    monkeypatch.setattr(grader.student.check, "run_public_tests", fake_run)
    archive = tmp_path / ZIP_NAME
    write_zip(archive, [ZipEntry(name, SOLUTIONS_DIR / name) for name in PART_FILES])
    result = grader.student.check.check_command(archive, None)
    assert result.directory == archive
    assert [path.name for path in tested] == sorted(PART_FILES)
    assert {part.source for part in result.parts} == {"file"}


def test_a_near_miss_name_is_an_error_that_says_what_to_rename(starter_kit: Path) -> None:
    folder = starter_kit / KIT_ASSIGNMENT
    (folder / "manual_backprop.py").rename(folder / "manual_backprop.py.txt")
    process = run_kit_cli("submit", cwd=starter_kit)
    assert process.returncode == 1
    error = flat(process.stderr)
    assert "missing manual_backprop.py" in error
    assert "rename manual_backprop.py.txt to manual_backprop.py" in error
    assert "No zip was written" in error
    assert not list(starter_kit.glob("*.zip"))
