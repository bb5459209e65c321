"""The expected directions, checked against a finished study with CIs over seeds.

An earlier run of the same task found, on one seed: one head is clearly worse than four or eight; dropout
0.3 is clearly worse than none (fresh data every step leaves nothing to overfit); and no
positional encoding is not worse than sinusoids. Each claim is a comparison of two rows on
the primary metric; "clearly worse" means the 95% CI of the difference lies below zero,
"not worse" that its upper end reaches zero or above. Between two trained rows the CI is
Welch's (unpaired); between an evaluation-time row and the trained row it evaluates it is
the paired t CI over seeds (the same trained model evaluated twice).

The evaluation-time claim: the trained base model relies on its
heads: keeping 1 of its 4 heads at evaluation lowers seq_acc (while (A) shows what a model
trained with one head reaches).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

#: (claim, row, other row, kind): kind "worse" needs the CI of row - other below 0,
#: "not_worse" needs its upper end >= 0
CLAIMS: tuple[tuple[str, str, str, str], ...] = (
    ("1 head is worse than 4 heads", "(A) h=1", "base", "worse"),
    ("1 head is worse than 8 heads", "(A) h=1", "(A) h=8", "worse"),
    ("dropout 0.3 is worse than no dropout", "(D) P_drop=0.3", "(D) P_drop=0", "worse"),
    ("no positional encoding is not worse than sinusoids", "(E) none", "base", "not_worse"),
    (
        "masking 3 of 4 heads at evaluation lowers seq_acc",
        "(A') 1 of 4 heads at eval",
        "base",
        "worse",
    ),
)


@dataclass(frozen=True)
class Direction:
    """One claim checked: the difference ``row - other`` of ``metric`` with its Welch CI."""

    claim: str
    row: str
    other: str
    metric: str
    delta: float
    low: float
    high: float
    holds: bool
    kind: str = "worse"
    paired: bool = False

    def line(self) -> str:
        """One line for the terminal and the reports."""
        verdict = "holds" if self.holds else "does NOT hold"
        if self.kind == "not_worse" and self.holds and self.low < 0:
            # "not worse" is the absence of evidence, not an equivalence: say how much worse
            # the data still allow
            verdict += f" (not shown worse; the CI still allows {-self.low:.1f} worse)"
        how = "paired" if self.paired else "Welch"
        return (
            f"{self.claim}: {self.metric}({self.row}) - {self.metric}({self.other}) = "
            f"{self.delta:+.1f}, 95% {how} CI [{self.low:+.1f}, {self.high:+.1f}]: {verdict}"
        )


def check_directions(analysis: Any, metric: str | None = None) -> list[Direction]:
    """Check :data:`CLAIMS` on ``analysis`` (a StudyAnalysis); claims whose rows are missing
    or have fewer than two finished seeds are left out."""
    from evalab.stats.seed_stats import welch

    metric = metric or analysis.primary
    labels = {r.label: r for r in analysis.rows}
    out: list[Direction] = []
    for claim, row, other, kind in CLAIMS:
        if row not in labels or other not in labels:
            continue
        m = labels[row].metrics[metric]
        paired = bool(getattr(m, "paired", False)) and getattr(m, "vs", "") == other
        if paired:  # the analysis already paired the row with its trained row by seed
            if m.n < 2 or m.delta_low is None or not math.isfinite(m.delta_low):
                continue
            delta, low, high = m.delta, m.delta_low, m.delta_high
        else:
            a, b = m.values, labels[other].metrics[metric].values
            if len(a) < 2 or len(b) < 2:
                continue
            w = welch(a, b)
            delta, low, high = w.delta, w.low, w.high
        holds = high < 0 if kind == "worse" else high >= 0
        out.append(
            Direction(claim, row, other, metric, delta, low, high, bool(holds), kind, paired)
        )
    return out
