"""`validate`'s check of metric thresholds: the reference clears `high`, a weak model gets nothing.

A metric test (one scored through the `metric` fixture) gives linear credit between a low and
a high threshold, so its thresholds decide what correct work earns. The reference is graded
on every seed of VALIDATION_SEEDS and must land beyond `high` by a margin on each, or a
correct training that draws a less lucky seed loses points; and a known-weak model (the
author's `solutions/<id>/weak/<part file>`, graded with the reference's other files) must
earn nothing from the test on each seed, or the low threshold does not bite. The seeds are
grading seeds (as `grade --seed` takes), fixed so that every run of `validate` judges the same
trainings; each test's own seed is derived from them as in any grade.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from grader.authoring.validation_grades import ValidationGrader
from grader.course.manifest import Assignment
from grader.results.model import GradingResult, TestResult

# Grading seeds the reference and the weak model are graded on; the first is also the one
# the full-marks check grades, so its grade is shared.
VALIDATION_SEEDS = (1, 2, 3)
# How far beyond `high` the reference must land on every seed, as a share of the distance
# between the thresholds: 3 points of accuracy for thresholds 0.5 and 0.9.
MARGIN_SHARE = 0.075
# The folder of solutions/<id>/ that holds the weak model: part files that replace the
# reference's for the weak grade.
WEAK_FOLDER = "weak"


@dataclass(frozen=True)
class MetricFigures:
    """What one metric test gave the reference and the weak model, seed by seed."""

    test: str
    part: str
    metric: str
    low: float
    high: float
    # Grading seed -> the metric's value (None where the test reported none).
    reference: dict[int, float | None]
    weak: dict[int, float | None] = field(default_factory=dict)

    @property
    def margin(self) -> float:
        return MARGIN_SHARE * abs(self.high - self.low)

    @property
    def spread(self) -> float | None:
        """The reference's run-to-run spread over the seeds (largest less smallest value)."""
        values = [value for value in self.reference.values() if value is not None]
        return max(values) - min(values) if len(values) == len(self.reference) else None

    def as_data(self) -> dict[str, Any]:
        """As JSON data (validate --report; docs/report-json.md)."""
        return {
            "test": self.test,
            "part": self.part,
            "metric": self.metric,
            "low": self.low,
            "high": self.high,
            "margin": round(self.margin, 6),
            "reference": {str(seed): value for seed, value in self.reference.items()},
            "spread": self.spread,
            "weak": {str(seed): value for seed, value in self.weak.items()},
        }

    def summary(self) -> str:
        """One line for validate's output."""
        seeds = ", ".join(str(seed) for seed in self.reference)
        spread = "unknown" if self.spread is None else f"{self.spread:.4g}"
        weak = f"weak model {_figures(self.weak)}" if self.weak else "no weak model"
        return (
            f"metric '{self.metric}' of '{self.test}' on seeds {seeds}: reference "
            f"{_figures(self.reference)} (spread {spread}; full credit from {self.high:g}, "
            f"margin {self.margin:.3g}); {weak} (no credit from {self.low:g})"
        )


@dataclass
class ThresholdCheck:
    """The problems found, and each metric test's figures."""

    problems: list[str] = field(default_factory=list)
    figures: list[MetricFigures] = field(default_factory=list)


def threshold_check(assignment: Assignment, grader: ValidationGrader) -> ThresholdCheck:
    """Grade the reference and the weak model on VALIDATION_SEEDS; check every metric test."""
    check = ThresholdCheck()
    reference_files = grader.part_files(assignment.solutions_dir)
    references = {
        seed: grader.grade("the reference", reference_files, seed=seed)
        for seed in VALIDATION_SEEDS[:1]
    }
    metric_tests = [test for test in references[VALIDATION_SEEDS[0]].tests if test.metric]
    if not metric_tests:
        return check
    for seed in VALIDATION_SEEDS[1:]:
        references[seed] = grader.grade("the reference", reference_files, seed=seed)
    weak_dir = assignment.solutions_dir / WEAK_FOLDER
    weak_files = {
        part.file: weak_dir / part.file
        for part in assignment.parts
        if (weak_dir / part.file).is_file()
    }
    weak_parts = {part.id for part in assignment.parts if part.file in weak_files}
    weak = (
        {
            seed: grader.grade("the weak model", {**reference_files, **weak_files}, seed=seed)
            for seed in VALIDATION_SEEDS
        }
        if weak_files
        else {}
    )
    files = {part.id: part.file for part in assignment.parts}
    for first in metric_tests:
        assert first.metric is not None
        figures = MetricFigures(
            test=first.name,
            part=first.part,
            metric=first.metric.name,
            low=first.metric.low,
            high=first.metric.high,
            reference={seed: _value(_same(result, first)) for seed, result in references.items()},
            weak={
                seed: _value(_same(result, first))
                for seed, result in weak.items()
                if first.part in weak_parts
            },
        )
        check.figures.append(figures)
        check.problems += _reference_problems(figures, references, first)
        if first.part not in weak_parts:
            check.problems.append(
                f"metric test '{first.name}': no weak model shows that its low threshold "
                f"bites: put a weak version of {files[first.part]} (one that should earn "
                f"nothing, such as the reference without its optimizer step) in "
                f"solutions/{assignment.id}/{WEAK_FOLDER}/"
            )
        else:
            check.problems += _weak_problems(
                figures, weak, first, f"{WEAK_FOLDER}/{files[first.part]}"
            )
    return check


def _same(result: GradingResult, test: TestResult) -> TestResult | None:
    """The test of `result` that is `test` (same part and name), if it ran."""
    return next((t for t in result.tests if (t.part, t.name) == (test.part, test.name)), None)


def _value(test: TestResult | None) -> float | None:
    if test is None or test.metric is None or not math.isfinite(test.metric.value):
        return None
    return test.metric.value


def _reference_problems(
    figures: MetricFigures, references: dict[int, GradingResult], first: TestResult
) -> Iterator[str]:
    better = 1.0 if figures.high > figures.low else -1.0
    for seed, value in figures.reference.items():
        name = f"metric test '{figures.test}': on seed {seed}"
        if value is None:
            test = _same(references[seed], first)
            why = _first_line(test.message) if test else "it did not run"
            yield f"{name} the reference reported no {figures.metric}: {why}"
        elif (value - figures.high) * better < figures.margin:
            side = "above" if better > 0 else "below"
            yield (
                f"{name} the reference's {figures.metric} is {value:.4g}, not {side} the high "
                f"threshold {figures.high:g} by the margin {figures.margin:.3g}: a correct "
                "training that draws a less lucky seed would lose points; move the "
                "threshold, or make the reference's training better"
            )


def _weak_problems(
    figures: MetricFigures, weak: dict[int, GradingResult], first: TestResult, file: str
) -> Iterator[str]:
    for seed, result in weak.items():
        test = _same(result, first)
        if test is None or test.outcome != "passed" or test.credit <= 0:
            continue  # it earned nothing: the low threshold (or the test itself) bites
        value = figures.weak[seed]
        shown = "its" if value is None else f"{figures.metric} {value:.4g},"
        yield (
            f"metric test '{figures.test}': on seed {seed} the weak model ({file}) earns "
            f"{test.credit:.0%} of its points with {shown} beyond the low threshold "
            f"{figures.low:g}: move the low threshold toward the reference's figures, or "
            "make the weak model one that should earn nothing"
        )


def _figures(values: dict[int, float | None]) -> str:
    return " / ".join("no figure" if value is None else f"{value:.4g}" for value in values.values())


def _first_line(text: str) -> str:
    return (text.strip().splitlines() or ["(no message)"])[0][:200]
