"""Error spans in the ``--segments`` table and in the compare page's data."""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass

from evalab.report.delimited import delimited_table
from evalab.report.error_spans import PageSpans, page_spans_data, segments_table, spans_script


@dataclass(frozen=True)
class Span:
    text: str
    severity: str
    confidence: float
    start: int
    end: int


def _record(system: str, segment: int, score: float, spans=None) -> dict:
    row = {"system": system, "metric": "comet", "segment": segment, "score": score}
    row["signature"] = "comet|class:xcomet"
    return {**row, **({"error_spans": spans} if spans is not None else {})}


def test_the_table_keeps_every_digit_and_the_spans_as_json() -> None:
    spans = [{"text": 'a "b", c', "severity": "major", "confidence": 0.5, "start": 0, "end": 7}]
    records = [_record("s1", 1, 0.1 + 0.2, spans), _record("s1", 2, float("nan"), [])]
    table = segments_table(records)
    assert table.header == ["system", "metric", "segment", "score", "error_spans"]
    text = delimited_table(table, ",")
    body, _, footer = text.partition("\r\n\r\n")
    rows = list(csv.DictReader(body.splitlines()))
    assert float(rows[0]["score"]) == 0.1 + 0.2  # repr: no digit lost
    assert json.loads(rows[0]["error_spans"]) == spans
    assert rows[1]["score"] == "" and json.loads(rows[1]["error_spans"]) == []
    assert footer.strip() == "# comet|class:xcomet"


def test_a_metric_without_spans_has_no_spans_column() -> None:
    table = segments_table([_record("s1", 1, 0.5)])
    assert table.header == ["system", "metric", "segment", "score"]


def test_page_data_is_flat_per_segment_in_the_page_order() -> None:
    page = PageSpans(
        "comet",
        {
            "B": [[Span("x", "minor", 0.12345, 2, 3)], []],
            "A": [[], [Span("y", "critical", 0.9, 0, 1), Span("z", "major", 0.5, 4, 6)]],
        },
    )
    data = page_spans_data(page, ["A", "B"])
    assert data["metric"] == "comet"
    assert data["severities"] == ["critical", "major", "minor"]
    assert data["sys"] == [[[], [0, 1, 0, 0.9, 4, 6, 1, 0.5]], [[2, 3, 2, 0.123], []]]


def test_the_script_registers_a_segment_view_and_sets_text_only() -> None:
    script = spans_script()
    assert script.startswith('"use strict";')
    assert "evalabSegmentViews" in script
    assert "innerHTML" not in script and "insertAdjacentHTML" not in script
