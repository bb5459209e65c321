"""Checks on the segments a scoring command read, before any metric runs.

* A NUL character: a text file has none. A UTF-16 file without a byte-order mark decodes
  as valid UTF-8 with a NUL after every ASCII letter, and would be scored as garbage.
* A resampling statistic on one segment: every resample is the corpus itself, so an
  interval of width 0 and a p-value of 1 would be printed as if they were findings.
* Segment pairs too long for a metric: TER, WER and CER fill a table of hypothesis ×
  reference tokens per segment, so a 10 MB single line would run for hours (WER, CER) or
  exhaust memory (TER). Each metric declares its bound (:attr:`Metric.pair_work`, in the
  tokens it counts itself: TER's after normalisation and CJK splitting) and checks it in
  every :meth:`Metric.stats` call; the CLI checks it once more before any metric runs, so
  the refusal names the system and comes before minutes of other metrics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalab.cli.options import MetricSelection
from evalab.errors import InputError
from evalab.metrics.base import Metric, PairTooLarge

__all__ = ["bounded_metrics", "check_no_nul", "check_pair_work", "check_resamplable"]


def check_no_nul(path: str, segments: Sequence[str]) -> None:
    """Refuse a file with a NUL character, naming its first line."""
    for no, segment in enumerate(segments, start=1):
        if "\x00" in segment:
            raise InputError(
                f"{path}: line {no} contains a NUL byte, which no text file has (a UTF-16 file without "
                "byte-order mark? convert it with e.g. `iconv -f UTF-16LE -t UTF-8`)"
            )


def bounded_metrics(names: Sequence[str], set_items: Sequence[str]) -> dict[str, Metric]:
    """The selected metrics that refuse a pair beyond their work bound, built with their settings."""
    selected = MetricSelection.parse(names, set_items)
    return {
        name: cls(**selected.settings[name])
        for name, cls in selected.classes.items()
        if (work := cls.pair_work) is not None and work.refuse
    }


def check_pair_work(
    metrics: Mapping[str, Metric],
    systems: Mapping[str, Sequence[str]],
    refs: Sequence[Sequence[str | None]],
) -> None:
    """Refuse a segment pair beyond a metric's work bound, naming the system and the line."""
    for metric in metrics.values():
        if metric.pair_work is None or not metric.pair_work.refuse:
            continue  # a warning comes from the metric itself when it runs
        for system, hyps in systems.items():
            try:
                metric.check_pair_work(*metric.pair_sizes(hyps, refs))
            except PairTooLarge as exc:
                raise InputError(*exc.at(f"{system}: line {exc.segment + 1}")) from None


def check_resamplable(n_segments: int, what: str, reference: str) -> None:
    """Refuse a bootstrap or randomization (``what``) over fewer than 2 segments."""
    if n_segments < 2:
        raise InputError(
            f"{reference}: {what} needs at least 2 segments, got {n_segments}: every resample of one "
            "segment is the corpus itself, so its interval and p-value would say nothing"
        )
