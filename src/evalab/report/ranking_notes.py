"""The words of a ranking's notes: a cluster that more resamples could split
(:class:`evalab.stats.ranking.UnsettledBoundary`), as every format prints it."""

from __future__ import annotations

from evalab.report.numbers import p_value
from evalab.stats.ranking import UnsettledBoundary

__all__ = ["unsettled_sentence"]


def unsettled_sentence(
    metric: str, note: UnsettledBoundary, above: str, below: str, *, test: str, correction: str
) -> str:
    """The note in words, with the resamples to try (ten times as many).

    >>> print(unsettled_sentence("bleu", UnsettledBoundary(1, 0, 1, 0.062, 0.011, 1000),
    ...     "Online-B", "JDExploreAcademy", test="bs", correction="holm"))
    bleu: more resamples could split cluster 1 between Online-B and JDExploreAcademy (Holm-adjusted p 0.062 ± 0.011, the Monte Carlo error of 1000 resamples); try -n 10000
    """
    what = "resamples" if test == "bs" else "trials"
    which = "Holm-adjusted p" if correction == "holm" else "p"
    return (
        f"{metric}: more {what} could split cluster {note.cluster} between {above} and {below} "
        f"({which} {p_value(note.p_adjusted, 3)} ± {note.mc_error:.3f}, the Monte Carlo error "
        f"of {note.n_samples} {what}); try -n {10 * note.n_samples}"
    )
