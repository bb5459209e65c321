"""Reading human scores: the MQM average-score format, the plain TSV, and their errors."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.cli.app import option_of
from evalab.errors import InputError
from evalab.metaeval.human import read_human_scores


def write(tmp_path, text, name="h.tsv"):
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return str(path)


def test_mqm_format_with_mixed_whitespace_and_none(tmp_path):
    path = write(
        tmp_path, "system mqm_avg_score seg_id\nA\t-5.000000 1\nA\tNone 2\nB\t-0.000000 2\n"
    )
    h = read_human_scores(path, 3)
    assert h.system_names() == ["A", "B"]
    assert h.scores["A"][0] == -5.0 and np.isnan(h.scores["A"][1]) and np.isnan(h.scores["A"][2])
    assert h.scores["B"][1] == 0.0


def test_tsv_with_and_without_header(tmp_path):
    body = "A\t1\t0.5\nA\t2\tNone\nB\t1\t0.25\n"
    for text in (body, "system\tsegment\tscore\n" + body):
        h = read_human_scores(write(tmp_path, text), 2)
        assert h.scores["A"][0] == 0.5 and np.isnan(h.scores["A"][1]) and h.scores["B"][0] == 0.25


def test_shared_mqm_file(mqm):
    h = read_human_scores(str(mqm / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"), 1002)
    assert len(h.scores) == 17
    assert sum(int(np.isfinite(v).sum()) for v in h.scores.values()) == 8959  # README: 8 959 rated


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("A\t3\t0.5\n", "segment 3 is out of range"),
        ("A\t0\t0.5\n", "segment 0 is out of range"),
        ("A\tx\t0.5\n", "segment id 'x' is not a whole number"),
        # int() reads these as 10 and 1; as segment ids they are typos
        ("A\t1_0\t0.5\n", "segment id '1_0' is not a whole number"),
        ("A\t+1\t0.5\n", r"segment id '\+1' is not a whole number"),
        ("A\t1\t1_0\n", "score '1_0' is not a number"),
        ("A\t1\tgood\n", "score 'good' is not a number"),
        ("A\t1\tnan\n", "is not finite"),
        ("A\t1\t0.5\nA\t1\t0.7\n", "second score for segment 1"),
        ("A\t1\t0.5\t9\n", "expected 3 columns"),
        ("system mqm_avg_score seg_id\nA -1 1 extra\n", "expected 3 columns"),
    ],
)
def test_bad_lines_are_named(tmp_path, text, message):
    path = write(tmp_path, text)
    with pytest.raises(InputError, match=message) as err:
        read_human_scores(path, 2)
    assert path in str(err.value)


def test_a_tsv_header_read_as_mqm_is_refused_with_the_right_format(tmp_path):
    # the columns used to be read the wrong way round: "segment id '-0.5' is not a whole number"
    path = write(tmp_path, "system\tsegment\tscore\nA\t1\t-0.5\n")
    with pytest.raises(InputError, match="this is the TSV header: use human_format tsv") as err:
        read_human_scores(path, 2, "mqm")
    assert err.value.worded(option_of).endswith("(this is the TSV header: use --human-format tsv)")
