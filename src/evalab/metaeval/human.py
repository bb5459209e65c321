"""Reading human segment scores: the MQM average-score files and a plain TSV.

* ``mqm``: the format of Google's ``wmt-mqm-human-evaluation`` average scores
  (``mqm_newstest2021_ende.avg_seg_scores.tsv``): a header ``system mqm_avg_score
  seg_id``, then ``SYSTEM SCORE SEG_ID`` per line, columns separated by any whitespace
  (the file mixes tabs and spaces). ``SEG_ID`` counts from 1; ``None`` = not rated.
* ``tsv``: ``system<TAB>segment<TAB>score`` per line, an optional header
  ``system segment score``; segments count from 1, ``None`` (or an empty score) = not rated.

Higher must be better (MQM files store the negated penalty). Unrated cells are NaN in the
returned matrix and are left out of every statistic pairwise.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

import numpy as np

from evalab import numbers
from evalab.errors import InputError, Setting
from evalab.io import read_segments

__all__ = ["FORMATS", "HumanScores", "parse_segment_id", "read_human_scores", "score_value"]

FORMATS = ("auto", "mqm", "tsv")
_MQM_HEADER = ["system", "mqm_avg_score", "seg_id"]
_TSV_HEADER = ["system", "segment", "score"]
_UNRATED = ("none", "")
_DIGITS = re.compile("[0-9]+")


@dataclass(frozen=True)
class HumanScores:
    """Segment scores per system: ``scores[system]`` is a float array, NaN = not rated."""

    path: str
    scores: dict[str, np.ndarray]

    def system_names(self) -> list[str]:
        """The systems in the file, in order of first appearance."""
        return list(self.scores)


def _detect(first: list[str]) -> str:
    return "mqm" if [t.lower() for t in first] == _MQM_HEADER else "tsv"


def score_value(raw: str, where: str, hint: str = "") -> float:
    """A score as written in a file, read by :mod:`evalab.numbers` (``1_0`` is a typo of
    ``1.0``?, not ten), or :class:`InputError` naming ``where`` (``hint``: what else is allowed)."""
    try:
        return numbers.parse_float(raw)
    except numbers.NumberError as exc:
        what = {"syntax": "is not a number", "not-finite": "is not finite"}.get(exc.reason)
        if what is None:
            raise InputError(f"{where}: score {exc}") from None
        raise InputError(f"{where}: score {numbers.shown(raw)} {what}{hint}") from None


def parse_segment_id(
    raw: str, where: str, n_segments: int, hint: str = "segments count from 1"
) -> int:
    """A 1-based segment id (ASCII digits only) -> its 0-based index, checked in range.

    ``int`` also takes ``+1``, `` 1`` and ``1_0``; ``01`` and ``1`` must be one segment, so
    the id is its value, never its spelling.
    """
    if not _DIGITS.fullmatch(raw):
        raise InputError(f"{where}: segment id {raw!r} is not a whole number ({hint})")
    seg = int(raw)
    if not 1 <= seg <= n_segments:
        raise InputError(
            f"{where}: segment {seg} is out of range; the references have {n_segments} segments "
            f"(ids 1-{n_segments})"
        )
    return seg - 1


def _parse_score(raw: str, where: str) -> float:
    if raw.lower() in _UNRATED:
        return math.nan
    return score_value(raw, where, " (use None for an unrated segment)")


def _fields(line: str, fmt: str) -> list[str]:
    if fmt == "mqm":
        return line.split()
    parts = line.split("\t")
    return parts if len(parts) == 3 else line.split()


def read_human_scores(path: str, n_segments: int, fmt: str = "auto") -> HumanScores:
    """Read a human-score file for a test set of ``n_segments`` segments.

    Raises :class:`InputError` naming the file and line for a malformed line, a segment
    id outside ``1..n_segments``, a system scored twice on one segment, or no rated score.
    """
    if fmt not in FORMATS:
        raise InputError(
            f"unknown human-score format {fmt!r}; expected one of {', '.join(FORMATS)}"
        )
    lines = read_segments(path)
    # a byte-order mark (spreadsheet exports write one) would stick to the first field
    lines[0] = lines[0].removeprefix("\ufeff")
    first = lines[0].split()
    kind = _detect(first) if fmt == "auto" else fmt
    header = [t.lower() for t in first] in (_MQM_HEADER, _TSV_HEADER)
    if kind == "mqm" and [t.lower() for t in first] != _MQM_HEADER:
        # a TSV header would have the segment and score columns read the wrong way round
        raise InputError(
            f"{path}: line 1 should be the MQM header 'system mqm_avg_score seg_id'",
            *(
                (" (this is the TSV header: use ", Setting("human_format"), " tsv)")
                if header
                else ()
            ),
        )
    # MQM columns are (system, score, seg_id); the TSV's are (system, segment, score)
    score_col, seg_col = (1, 2) if kind == "mqm" else (2, 1)
    scores: dict[str, np.ndarray] = {}
    seen: set[tuple[str, int]] = set()  # (system, segment): None rows count as scored too
    for no, line in enumerate(lines[1:] if header else lines, start=2 if header else 1):
        if not line.strip():
            continue
        where = f"{path}:{no}"
        parts = _fields(line, kind)
        if len(parts) == 2 and kind == "tsv":
            parts.append("")  # an empty score column: not rated
        if len(parts) != 3:
            expected = "SYSTEM SCORE SEG_ID" if kind == "mqm" else "SYSTEM<TAB>SEGMENT<TAB>SCORE"
            raise InputError(f"{where}: expected 3 columns ({expected}), got {len(parts)}")
        system = parts[0]
        seg = parse_segment_id(parts[seg_col], where, n_segments)
        value = _parse_score(parts[score_col], where)
        if (system, seg) in seen:
            raise InputError(f"{where}: system {system!r} has a second score for segment {seg + 1}")
        seen.add((system, seg))
        scores.setdefault(system, np.full(n_segments, np.nan))[seg] = value
    if not scores:
        raise InputError(f"{path}: no scores found")
    return HumanScores(path, scores)
