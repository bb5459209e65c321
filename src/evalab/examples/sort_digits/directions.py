"""The seed's three findings, checked against a finished study with Welch CIs over seeds.

Seed 000 (part 4) found, on one seed: one head is clearly worse than four or eight; dropout
0.3 is clearly worse than none (fresh data every step leaves nothing to overfit); and no
positional encoding is not worse than sinusoids. Each claim is a comparison of two rows on
the primary metric; "clearly worse" means the 95% Welch CI of the difference lies below
zero, "not worse" that its upper end reaches zero or above.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: (claim, row, other row, kind): kind "worse" needs the CI of row - other below 0,
#: "not_worse" needs its upper end >= 0
CLAIMS: tuple[tuple[str, str, str, str], ...] = (
    ("1 head is worse than 4 heads", "(A) h=1", "base", "worse"),
    ("1 head is worse than 8 heads", "(A) h=1", "(A) h=8", "worse"),
    ("dropout 0.3 is worse than no dropout", "(D) P_drop=0.3", "(D) P_drop=0", "worse"),
    ("no positional encoding is not worse than sinusoids", "(E) none", "base", "not_worse"),
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

    def line(self) -> str:
        """One line for the terminal and the reports."""
        verdict = "holds" if self.holds else "does NOT hold"
        if self.kind == "not_worse" and self.holds and self.low < 0:
            # "not worse" is the absence of evidence, not an equivalence: say how much worse
            # the data still allow
            verdict += f" (not shown worse; the CI still allows {-self.low:.1f} worse)"
        return (
            f"{self.claim}: {self.metric}({self.row}) - {self.metric}({self.other}) = "
            f"{self.delta:+.1f}, 95% CI [{self.low:+.1f}, {self.high:+.1f}]: {verdict}"
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
        a, b = labels[row].metrics[metric].values, labels[other].metrics[metric].values
        if len(a) < 2 or len(b) < 2:
            continue
        w = welch(a, b)
        holds = w.high < 0 if kind == "worse" else w.high >= 0
        out.append(Direction(claim, row, other, metric, w.delta, w.low, w.high, bool(holds), kind))
    return out
