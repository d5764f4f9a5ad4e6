"""Student text made safe where it enters (grader/intake/safetext.py), and the results model."""

from __future__ import annotations

import io
import json
import os

from rich.console import Console

from grader.intake.safetext import (
    REPLACEMENT,
    cap_text,
    clean_data,
    clean_name,
    clean_text,
    entry_key,
    fit_texts,
)
from grader.results.gradescope import MAX_TOTAL_TEST_OUTPUT, results_dict
from grader.results.model import (
    MAX_MESSAGE_CHARS,
    MAX_OUTPUT_CHARS,
    GradingResult,
    PartResult,
    SubmissionInfo,
    TestResult,
)
from grader.results.report import MAX_REPORT_TEXT_CHARS, report_dict
from grader.results.table import MAX_LINE_CHARS, print_result

GIANT = "\ud800\x1b[2J\r" + "A" * 15_000_000


def test_cap_text_keeps_head_and_tail_and_says_how_much_was_cut() -> None:
    text = "head " + "x" * 10_000 + " tail"
    capped = cap_text(text, 1000)
    assert len(capped) <= 1000
    assert capped.startswith("head ") and capped.endswith(" tail")
    kept = len(capped) - len(capped.split("\n[... ")[1].split("]\n")[0]) - len("\n[... ]\n")
    cut = int(capped.split("[... ")[1].split(" characters cut")[0])
    assert kept + cut == len(text)
    assert cap_text("short", 1000) == "short"


def test_clean_text_leaves_nothing_an_encoder_or_a_terminal_chokes_on() -> None:
    text = clean_text("ok\ud800 \udce9 \x1b[31mred\x07\r\nline\rover \u202eevil\ttab\x9b", 100)
    text.encode("utf-8")
    assert text == (
        f"ok{REPLACEMENT} {REPLACEMENT} {REPLACEMENT}[31mred{REPLACEMENT}\nline\nover "
        f"{REPLACEMENT}evil\ttab{REPLACEMENT}"
    )
    assert clean_name("a\nb\tc") == f"a{REPLACEMENT}b{REPLACEMENT}c"


def test_a_cut_name_is_one_readable_line() -> None:
    # The summary shows a failing test's most common message cut with clean_name: the cut
    # marker must not turn into replacement characters around "[... N characters cut ...]".
    text = "head " + "x" * 1000 + " tail"
    name = clean_name(text, 120)
    assert len(name) <= 120 and "\n" not in name and REPLACEMENT not in name
    head, rest = name.split(" [... ", 1)
    count, tail = rest.split(" characters cut ...] ", 1)
    assert head.startswith("head ") and tail.endswith(" tail")
    assert len(head) + int(count) + len(tail) == len(text)


def test_clean_text_is_bounded_by_its_limit_whatever_the_input() -> None:
    text = clean_text(GIANT, 4096)
    assert len(text) <= 4096 and "characters cut ...]" in text
    text.encode("utf-8")


def test_entry_keys_are_safe_file_names_and_keep_safe_names() -> None:
    for name in ("alice", "r.zip", "José García.ipynb", "submission_101"):
        assert entry_key(name) == name
    for raw in (b"Jos\xe9.zip", b"a/b", b"..", b".hidden", b"x\x1b[2J", b"n" * 400):
        key = entry_key(os.fsdecode(raw))
        key.encode("utf-8")
        assert "/" not in key and not key.startswith(".") and "~" in key, key
        assert len(key.encode()) <= 160
    assert entry_key(os.fsdecode(b"Jos\xe9")) != entry_key(os.fsdecode(b"Jos\xe8"))


def test_fit_texts_cuts_the_longest_first_to_a_common_length() -> None:
    texts = ["a" * 10, "b" * 1000, "c" * 5000]
    fitted = fit_texts(texts, 2000)
    assert fitted[0] == texts[0]
    assert sum(map(len, fitted)) <= 2000
    assert fit_texts(texts, 10_000) == texts


def test_clean_data_cleans_keys_and_values_at_any_depth() -> None:
    data = clean_data({"k\ud800": [{"m": "x\x1b"}, 3, None]}, 100)
    assert json.dumps(data, ensure_ascii=False).encode("utf-8")
    assert data == {f"k{REPLACEMENT}": [{"m": f"x{REPLACEMENT}"}, 3, None]}


def _result(tests: tuple[TestResult, ...], notes: tuple[str, ...] = ()) -> GradingResult:
    return GradingResult(
        assignment="pytorch_basics",
        score=0.0,
        max_score=20.0,
        parts=(PartResult("manual_backprop", "manual_backprop.py", 0.0, 20.0, problem=GIANT),),
        tests=tests,
        seed=1,
        device="cpu",
        submission=SubmissionInfo("abc", ("manual_backprop.py",), notes),
        duration_s=1.0,
    )


def test_results_model_caps_and_cleans_every_student_string() -> None:
    test = TestResult(
        name="t\x1b",
        part="manual_backprop",
        outcome="failed",
        weight=1.0,
        message=GIANT,
        output=GIANT,
        detail=GIANT,
    )
    assert len(test.message) <= MAX_MESSAGE_CHARS and len(test.output) <= MAX_OUTPUT_CHARS
    assert test.name == f"t{REPLACEMENT}"
    result = _result((test,), notes=("n\ud800",) * 100)
    assert len(result.parts[0].problem) <= MAX_MESSAGE_CHARS
    assert len(result.submission.notes) == 51 and result.submission.notes[0] == f"n{REPLACEMENT}"
    for data in (report_dict(result), results_dict(result)):
        json.dumps(data, ensure_ascii=False).encode("utf-8")


def test_report_and_results_bound_the_text_of_many_tests() -> None:
    tests = tuple(
        TestResult(
            name=f"t{i}",
            part="manual_backprop",
            outcome="failed",
            weight=1.0,
            message=GIANT[:100_000],
            output=GIANT[:100_000],
            detail=GIANT[:100_000],
        )
        for i in range(300)
    )
    result = _result(tests)
    report = json.dumps(report_dict(result), ensure_ascii=False)
    assert len(report) < MAX_REPORT_TEXT_CHARS + 300 * 1000
    results = json.dumps(results_dict(result), ensure_ascii=False)
    assert len(results) < MAX_TOTAL_TEST_OUTPUT + 300 * 1000


def test_the_terminal_table_shows_a_bounded_amount_of_a_giant_message() -> None:
    test = TestResult(name="t", part="manual_backprop", outcome="failed", weight=1.0, message=GIANT)
    buffer = io.StringIO()
    print_result(_result((test,)), Console(file=buffer, width=100))
    shown = buffer.getvalue()
    assert len(shown) < 20 * MAX_LINE_CHARS
    assert "\x1b[2J" not in shown and "\ud800" not in shown
