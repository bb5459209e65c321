"""Error spans (xCOMET's word-level tags) in the ``score --segments`` table and on the
``compare -f html`` page.

A span is a run of hypothesis characters ``[start, end)`` the model tags with a severity
(``minor``, ``major``, ``critical``) and a confidence (the mean probability of the tag
over its tokens), as :class:`evalab.models.comet_unified.ErrorSpan` holds it. In the
delimited ``--segments`` file they are one cell per segment, the spans as a JSON list (the
JSON Lines file carries the same list as typed data); on the page, the selected segment's
two outputs are shown with their spans marked (the script ``error_spans.js``, hooked into
the page's segment view).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from evalab.report.table import Table, TableCell

__all__ = ["PageSpans", "SpanLike", "page_spans_data", "segments_table", "spans_script"]

#: the columns of every ``--segments`` record a delimited table keeps, in order
SEGMENT_COLUMNS = ("system", "metric", "segment", "score")


class SpanLike(Protocol):
    """What the page reads of a span (:class:`~evalab.models.comet_unified.ErrorSpan`)."""

    @property
    def severity(self) -> str: ...

    @property
    def confidence(self) -> float: ...

    @property
    def start(self) -> int: ...

    @property
    def end(self) -> int: ...


def segments_table(records: Sequence[Mapping[str, Any]]) -> Table:
    """``--segments`` records as one table: system, metric, segment, score (every digit, as
    ``repr`` writes it) and, when a metric tags words, ``error_spans`` (a JSON list of
    ``{text, severity, confidence, start, end}``); the signatures as the footer."""
    spans = any("error_spans" in r for r in records)
    header = [*SEGMENT_COLUMNS, *(["error_spans"] if spans else [])]
    body: list[list[TableCell]] = []
    for r in records:
        row: list[TableCell] = [str(r["system"]), str(r["metric"]), str(r["segment"]), _number(r)]
        if spans:
            row.append(_spans_cell(r.get("error_spans")))
        body.append(row)
    signatures = list(dict.fromkeys(str(r["signature"]) for r in records))
    return Table(header, body, signatures)


def _number(record: Mapping[str, Any]) -> str:
    score = record["score"]
    return "" if score is None or score != score else repr(float(score))


def _spans_cell(spans: Any) -> str:
    """The record's spans (dicts, as the JSON Lines file has them) as one JSON list."""
    return "" if spans is None else json.dumps(spans, ensure_ascii=False)


@dataclass(frozen=True)
class PageSpans:
    """The error spans the compare page marks: those of one metric, every segment of every
    system."""

    metric: str
    #: system (table name) -> one list of spans per segment
    spans: Mapping[str, Sequence[Sequence[SpanLike]]]


def page_spans_data(page: PageSpans, systems: Sequence[str]) -> dict[str, Any]:
    """The page's compact form: the severities once, then per system (in ``systems``
    order) per segment a flat ``[start, end, severity index, confidence (3 decimals), ...]``."""
    severities = sorted({s.severity for per in page.spans.values() for seg in per for s in seg})
    index = {name: k for k, name in enumerate(severities)}
    return {
        "metric": page.metric,
        "severities": severities,
        "sys": [
            [
                [
                    v
                    for s in seg
                    for v in (s.start, s.end, index[s.severity], round(s.confidence, 3))
                ]
                for seg in page.spans[name]
            ]
            for name in systems
        ],
    }


def spans_script() -> str:
    """The page script's error-span view (registered in the page's segment views)."""
    from importlib import resources  # 4 ms of every `evalab score` start (tempfile, random)

    return resources.files("evalab.report").joinpath("error_spans.js").read_text(encoding="utf-8")
