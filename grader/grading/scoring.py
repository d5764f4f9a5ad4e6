"""Turn raw test outcomes into points: every part scores out of its manifest points."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping

from grader.course.manifest import Assignment
from grader.results.model import PartResult, TestResult

GATED_NOTE = (
    "(This check counts once a test of this part that compares your values with the "
    "reference's on hidden inputs passes.)"
)
GATED_ALL_NOTE = (
    "(This check counts once every test of this part that compares your values with the "
    "reference's on hidden inputs has passed at least once.)"
)
# What a gated pass of a part whose code looks names up at run time waits for.
NEVER_WHILE_LOOKING_UP = (
    "the part's code to write out the names it builds at run time and leave libraries' "
    "functions unreplaced"
)
# What a gated pass waits for when no test of its part can open its gate on this grade.
WAITS_FOR_ANY_OPENER = "a test of this part that compares with the reference on hidden inputs"
GATED_AFTER_NOTE = (
    "(This check counts once a test it waits for, which compares your values with the "
    "reference's on hidden inputs, passes.)"
)


def score_tests(
    assignment: Assignment,
    tests: Iterable[TestResult],
    *,
    sources: dict[str, str],
    problems: dict[str, str],
    unverifiable: Mapping[str, str] | None = None,
) -> tuple[tuple[PartResult, ...], tuple[TestResult, ...]]:
    """Share each part's points among its tests by weight; skipped tests carry no weight.

    A gated test (a source rule, a verdict the student side reports, or any test that did
    not compare with the reference on seeded inputs; the plugin decides) never earns points
    on its own, so a stub, or a submission that forges every verdict its own process
    reports, scores exactly 0. A gated test that names tests (`counts_after`) counts once
    one of those passed ungated: forged checks of a function count only once that
    function's own comparison passes. One that names none is about a function no seeded
    test can check (or its author did not say which): it counts once every test function
    of its part that can open the gate passed ungated at least once, so implementing one
    function of a part never unlocks forged checks of another. A passed metric test earns its
    `credit`'s share of its points, gated like any other test, and a gated test's leaderboard
    entries are kept only where its gate opened. (A `cuda_only` test skipped
    on a CPU grade is not waited for; a test that skipped itself is; a self-reported one,
    marked or not, never is.) In a part of `unverifiable` (part id -> why, for students: its
    code looks names up at run time, which can rewrite checks made in its process) the tests
    judged in the student's process never count.
    """
    unverifiable = unverifiable or {}
    by_part: dict[str, list[TestResult]] = {part.id: [] for part in assignment.parts}
    for test in tests:
        by_part[test.part].append(test)
    parts: list[PartResult] = []
    scored: list[TestResult] = []
    for part in assignment.parts:
        part_tests = by_part[part.id]
        openers = [t for t in part_tests if t.outcome == "passed" and not t.gated]
        missing = _missing_openers(part_tests, openers)
        total_weight = sum(t.weight for t in part_tests if t.outcome != "skipped")
        earned_weight = 0.0
        for test in part_tests:
            if test.outcome == "skipped" or total_weight <= 0:
                scored.append(dataclasses.replace(test, score=0.0, max_score=0.0))
                continue
            max_score = round(part.points * test.weight / total_weight, 6)
            never = unverifiable.get(part.id, "") if test.judged_in_process else ""
            verified = not test.gated or (not never and _opened(test, openers, missing))
            earned = test.outcome == "passed" and verified
            message, waits_for = test.message, ""
            if never and test.outcome == "passed" and max_score > 0:
                message = f"{message}\n({never})".strip()
                waits_for = NEVER_WHILE_LOOKING_UP
            elif test.gated and test.outcome == "passed" and not earned:
                message = f"{message}\n{_gated_note(test, part_tests, missing)}".strip()
                # A test worth nothing (a warning) has nothing to wait for.
                waits_for = _waits_for(test, part_tests, missing) if max_score > 0 else ""
            # A metric test earns its credit's share (grader/grading/metrics.py); others 1 or 0.
            credit = test.credit if earned else 0.0
            score = round(max_score * credit, 6)
            earned_weight += test.weight * credit
            scored.append(
                dataclasses.replace(
                    test,
                    score=score,
                    max_score=max_score,
                    message=message,
                    waits_for=waits_for,
                    # A figure of work no seeded comparison verified is not ranked either.
                    leaderboard=test.leaderboard if verified else (),
                )
            )
        parts.append(
            PartResult(
                id=part.id,
                file=part.file,
                # From the weights, not the rounded test scores, so full marks are exact.
                score=round(part.points * earned_weight / total_weight, 6) if total_weight else 0.0,
                max_score=part.points,
                source=sources.get(part.id, "missing"),
                problem=problems.get(part.id, ""),
            )
        )
    return tuple(parts), tuple(scored)


def _opened(test: TestResult, openers: list[TestResult], missing: list[str]) -> bool:
    """Whether the passing gate-opening tests open `test`'s gate (`missing`: the part's
    possible gate-openers that have not passed, `_missing_openers`)."""
    if test.counts_after:
        return any(opener.function in test.counts_after for opener in openers)
    # Which functions must have passed is read from what the tests are (`never_opens_gate`),
    # not from whether they got to compare: a seeded test that never did (its part stopped
    # after two timeouts) still counts as one that has not passed.
    return bool(openers) and not missing


def _missing_openers(part_tests: list[TestResult], openers: list[TestResult]) -> list[str]:
    """The part's possible gate-opening test functions that have not passed ungated yet."""
    passed = {opener.function for opener in openers}
    missing = {
        t.function: t.name
        for t in part_tests
        if not t.never_opens_gate and not t.skipped_for_device
    }
    return sorted(name for function, name in missing.items() if function not in passed)


def _needed(test: TestResult, part_tests: list[TestResult]) -> list[str]:
    """The names of the gate-opening tests `test` names (`counts_after`), any of which opens it."""
    return sorted({t.name for t in part_tests if not t.gated and t.function in test.counts_after})


def _waits_for(test: TestResult, part_tests: list[TestResult], missing: list[str]) -> str:
    """What a gated pass waits for, in words: `TestResult.waits_for`."""
    names, several = (
        (_needed(test, part_tests), "one of") if test.counts_after else (missing, "all of")
    )
    if not names:
        return WAITS_FOR_ANY_OPENER
    quoted = "; ".join(f"'{name}'" for name in names)
    return quoted if len(names) == 1 else f"{several} {quoted}"


def _gated_note(test: TestResult, part_tests: list[TestResult], missing: list[str]) -> str:
    """Why `test` does not count yet. Which tests it waits for is `waits_for`, which every
    output shows beside the message (`TestResult.outcome_text`), so the note does not
    name them again."""
    if test.counts_after:
        return GATED_AFTER_NOTE if _needed(test, part_tests) else GATED_NOTE
    return GATED_ALL_NOTE if missing else GATED_NOTE
