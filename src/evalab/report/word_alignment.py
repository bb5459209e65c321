"""WER/CER alignments and error counts in words: jiwer's text layout (``jiwer --align``,
``visualize_alignment``), the error-count table (``visualize_error_counts``, as one
:class:`~evalab.report.table.Table` for every format), their JSON data, and their part of
the compare page (``compare -f html``: the alignment of the selected segment).

>>> from evalab.metrics.wer import WER
>>> (a,) = WER().alignments(["quite bit of an even longest sentence here"],
...                         [["quite a bit of longer sentence"]], [0])
>>> print("\\n".join(alignment_lines(a, spaced=True)))
REF: quite a bit of ** ****  longer sentence ****
HYP: quite * bit of an even longest sentence here
           D         I    I       S             I
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from evalab.metrics._editdistance import Edit
from evalab.metrics.base import Metric
from evalab.metrics.wer import WER, ErrorCount, ErrorCounts, SegmentAlignment
from evalab.report.numbers import number
from evalab.report.page import segment_rows
from evalab.report.table import NumberText, Table, TableCell

__all__ = [
    "ALIGNED_METRICS",
    "EDIT_CSS",
    "AlignedSegments",
    "EditAlignments",
    "SystemErrors",
    "aligned_metric",
    "alignment_data",
    "alignment_lines",
    "alignment_text",
    "edit_page_data",
    "edit_page_script",
    "error_table",
    "errors_data",
    "page_edits",
]

#: the metrics whose alignments ``--align`` and ``--errors`` show (jiwer's two)
ALIGNED_METRICS = ("wer", "cer")

#: jiwer's names of the steps (``AlignmentChunk.type``) and the mark under each
EDIT_NAMES = {
    Edit.EQUAL: "equal",
    Edit.SUBSTITUTE: "substitute",
    Edit.DELETE: "delete",
    Edit.INSERT: "insert",
}
_MARKS = {Edit.EQUAL: " ", Edit.SUBSTITUTE: "S", Edit.DELETE: "D", Edit.INSERT: "I"}


@dataclass(frozen=True)
class AlignedSegments:
    """The alignments ``--align`` shows for one system and metric, worst first, with each
    segment's score."""

    system: str
    metric: str
    alignments: Sequence[SegmentAlignment]
    scores: Sequence[float]
    #: whether tokens are words (set apart by spaces) rather than characters
    spaced: bool


@dataclass(frozen=True)
class SystemErrors:
    """The ``--errors`` counts of one system and metric."""

    system: str
    metric: str
    errors: ErrorCounts


def _columns(a: SegmentAlignment) -> list[tuple[str, str, str]]:
    """(reference, hypothesis, mark) per step, a missing side as ``*``."""
    out = []
    for c in a.chunks:
        refs, hyps = a.reference[c.ref_start : c.ref_end], a.hypothesis[c.hyp_start : c.hyp_end]
        if c.edit == Edit.DELETE:
            out += [(r, "*", "D") for r in refs]
        elif c.edit == Edit.INSERT:
            out += [("*", h, "I") for h in hyps]
        else:
            out += [(r, h, _MARKS[c.edit]) for r, h in zip(refs, hyps, strict=True)]
    return out


def alignment_lines(a: SegmentAlignment, *, spaced: bool) -> list[str]:
    """The ``REF:``, ``HYP:`` and marks lines of one segment, as jiwer lays them out: every
    step right-aligned in the width of its longer side, ``S``, ``D`` or ``I`` under each
    error, a star side (a missing token, or a token ``*``) as stars over the width (the
    reference's first), words one space apart and characters side by side."""
    lines: list[list[str]] = [["REF:"], ["HYP:"], ["    "]]
    for ref, hyp, mark in _columns(a):
        width = max(len(ref), len(hyp), 1)
        if ref == "*":
            ref = "*" * width
        elif hyp == "*":
            hyp = "*" * width
        for line, text in zip(lines, (ref, hyp, mark), strict=True):
            line.append(text.rjust(width))
    if spaced:
        return [" ".join(line) for line in lines]
    return [f"{line[0]} {''.join(line[1:])}" for line in lines]


def alignment_text(shown: Sequence[AlignedSegments], decimals: int = 4) -> str:
    """Every system's and metric's alignments: a heading, then per segment jiwer's
    ``=== SENTENCE k ===`` block (``k`` the line number) with the segment's score."""
    parts = []
    for s in shown:
        if not s.alignments:
            parts.append(f"{s.metric} alignments of {s.system}: no segment has an error\n\n")
            continue
        worst = f"the {len(s.alignments)} worst segment{'s' * (len(s.alignments) != 1)}"
        parts.append(f"{s.metric} alignments of {s.system}: {worst} with an error\n\n")
        for a, score in zip(s.alignments, s.scores, strict=True):
            head = f"=== SENTENCE {a.segment + 1} === {s.metric} {number(score, decimals)}\n\n"
            parts.append(
                head + "".join(line + "\n" for line in alignment_lines(a, spaced=s.spaced))
            )
            parts.append("\n")
    return "".join(parts)


def alignment_data(s: AlignedSegments) -> list[dict[str, Any]]:
    """JSON of one system's and metric's alignments: per segment its line number, score,
    tokens and jiwer's chunks (``type`` and the index ranges of ``AlignmentChunk``)."""
    return [
        {
            "segment": a.segment + 1,
            "score": score,
            "reference": list(a.reference),
            "hypothesis": list(a.hypothesis),
            "chunks": [
                {
                    "type": EDIT_NAMES[c.edit],
                    "ref_start_idx": c.ref_start,
                    "ref_end_idx": c.ref_end,
                    "hyp_start_idx": c.hyp_start,
                    "hyp_end_idx": c.hyp_end,
                }
                for c in a.chunks
            ],
        }
        for a, score in zip(s.alignments, s.scores, strict=True)
    ]


def errors_data(errors: ErrorCounts) -> dict[str, list[dict[str, Any]]]:
    """JSON of the error counts: substitutions (reference, hypothesis, count), insertions
    (hypothesis, count) and deletions (reference, count), most frequent first."""

    def rows(items: Sequence[ErrorCount], keys: Sequence[str]) -> list[dict[str, Any]]:
        return [{**{k: getattr(e, k) for k in keys}, "count": e.count} for e in items]

    return {
        "substitutions": rows(errors.substitutions, ("reference", "hypothesis")),
        "insertions": rows(errors.insertions, ("hypothesis",)),
        "deletions": rows(errors.deletions, ("reference",)),
    }


#: the kinds of error in the table, in jiwer's order
_KINDS: tuple[tuple[str, Callable[[ErrorCounts], Sequence[ErrorCount]]], ...] = (
    ("substitution", lambda e: e.substitutions),
    ("insertion", lambda e: e.insertions),
    ("deletion", lambda e: e.deletions),
)


def error_table(found: Sequence[SystemErrors], k: int) -> Table:
    """The ``k`` most frequent substitutions, insertions and deletions of every system and
    metric, one row each (``-`` where an error has no side; ``none`` where a kind has no
    error), most frequent first as jiwer's ``visualize_error_counts`` lists them."""
    body: list[list[TableCell]] = []
    for s in found:
        for kind, items in _KINDS:
            shown = items(s.errors)
            if not shown:
                body.append([s.system, s.metric, kind, "none", "", ""])
            for e in shown:
                ref, hyp = e.reference or "-", e.hypothesis or "-"
                body.append([s.system, s.metric, kind, ref, hyp, NumberText(str(e.count))])
    footer = [f"The {k} most frequent errors of each kind first (jiwer's error counts)."]
    return Table(["system", "metric", "error", "reference", "hypothesis", "count"], body, footer)


@dataclass(frozen=True)
class EditAlignments:
    """The WER/CER alignments the compare page embeds: ``metric``'s, per system (its table
    name) segment index -> alignment, for the segments of ``alignment_segments`` (``limit``
    per pair of systems)."""

    metric: str
    limit: int
    #: whether tokens are words (set apart by spaces) rather than characters
    spaced: bool
    per_system: Mapping[str, Mapping[int, SegmentAlignment]]


def aligned_metric(metrics: Mapping[str, Metric], names: Sequence[str]) -> tuple[str, WER] | None:
    """The first of ``names`` that is a WER/CER metric, with the metric (the page shows its
    alignments)."""
    for name in names:
        metric = metrics[name]
        if name in ALIGNED_METRICS and isinstance(metric, WER):
            return name, metric
    return None


def page_edits(
    name: str,
    metric: WER,
    chosen: Mapping[str, Sequence[int]],
    outputs: Mapping[str, Sequence[str]],
    references: Sequence[Sequence[str | None]],
    limit: int,
) -> EditAlignments:
    """The page's alignments of ``metric``: per system (table name) its ``chosen`` segments
    of ``outputs[system]`` against the references."""
    per = {
        s: dict(zip(segs, metric.alignments(outputs[s], references, segs), strict=True))
        for s, segs in chosen.items()
    }
    return EditAlignments(name, limit, metric.separator == " ", per)


def edit_page_data(
    edits: EditAlignments, systems: Sequence[str], ref: Callable[[str], int]
) -> dict[str, Any]:
    """The page's data for the view: per system, segment -> ``[reference tokens, hypothesis
    tokens, chunks]``, tokens as string-table indices, chunks as flat ``[type, ref start,
    ref end, hyp start, hyp end, ...]`` lists (type: :class:`Edit`'s value)."""
    return {
        "metric": edits.metric,
        "limit": edits.limit,
        "spaced": edits.spaced,
        "sys": segment_rows(
            systems,
            edits.per_system,
            lambda a: [
                [ref(t) for t in a.reference],
                [ref(t) for t in a.hypothesis],
                [int(v) for c in a.chunks for v in c],
            ],
        ),
    }


#: the view's styles on the compare page
EDIT_CSS = """
pre.edits{font-size:.85em;overflow-x:auto;margin:.3em 0}pre.edits span.sub{background:#fff1c2}
pre.edits span.del{background:#fde2e1}pre.edits span.ins{background:#dcf3e0}
"""


def edit_page_script() -> str:
    """The page's script for the WER/CER alignment view: it listens for the segment the
    compare page's script selects, so it runs first (both in the page's one script)."""
    return (
        resources.files("evalab.report").joinpath("word_alignment.js").read_text(encoding="utf-8")
    )
