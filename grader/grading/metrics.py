"""Scores from metrics: linear partial credit between a declared low and high threshold.

A hidden test that grades what a model learned (held-out accuracy, a final loss) computes
the metric on the trusted side and calls the plugin's `metric` fixture, which earns the test
`metric_credit(value, low=..., high=...)` of its points; hidden tests import `metric_credit`
and `MetricScore` from `grader.testing`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# Credit is rounded so that the same value always gives the same points (and a printed
# figure); a thousandth of a test's points is below what any gradebook shows.
CREDIT_DIGITS = 3


def metric_credit(value: float, *, low: float, high: float) -> float:
    """The fraction of a test's points `value` earns: 0 at `low` or worse, 1 at `high` or better.

    Linear in between. `high < low` declares a metric where lower is better (a loss). A value
    that is not a finite number earns 0.
    """
    if not (math.isfinite(low) and math.isfinite(high)) or low == high:
        raise ValueError(f"thresholds must be two different finite numbers, not {low}, {high}")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return 0.0
    fraction = (value - low) / (high - low)
    return round(min(1.0, max(0.0, fraction)), CREDIT_DIGITS)


@dataclass(frozen=True)
class MetricScore:
    """A metric a test reported, with its thresholds and the credit they give."""

    name: str
    value: float
    low: float
    high: float
    credit: float

    @classmethod
    def of(cls, name: str, value: float, *, low: float, high: float) -> MetricScore:
        return cls(name, value, low, high, metric_credit(value, low=low, high=high))

    def feedback(self) -> str:
        """The value, the thresholds and the credit, in words a student reads."""
        better = "higher" if self.high > self.low else "lower"
        shown = f"{self.value:.4g}" if isinstance(self.value, int | float) else repr(self.value)
        return (
            f"{self.name}: {shown}. Credit is linear from {self.low:.4g} (none) to "
            f"{self.high:.4g} (full; {better} is better): {self.credit:.0%} of this test's points."
        )
