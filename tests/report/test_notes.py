"""The words of the ablation notes: every note code has a sentence that cites its numbers,
every format prints the same sentences, and the JSON carries each note's code and numbers
beside them."""

from __future__ import annotations

import json
import typing

import pytest

from evalab.ablation.analysis import note_kinds as n
from evalab.ablation.analysis.curve_bands import StudyCurves
from evalab.ablation.contract.curves import CurveSettings
from evalab.ablation.store import example_refusals as r
from evalab.report import render_json, render_latex, render_markdown
from evalab.report.notes import note_lines, sentence

#: one note of every kind, with the words its sentence must contain
SAMPLES: list[tuple[n.Note, tuple[str, ...]]] = [
    (n.SeedsNote(5, 0.9), ("5 seeds per row", "90% CI")),
    (n.DeltaNote(False, True, 0.95, 999, True, 4), ("base (trained rows) with a Welch 95% CI", "999 random", "Holm-adjusted", "the 4 rows")),
    (n.DeltaNote(True, False, 0.99, 10, False, 1), ("PAIRED by seed", "99% CI", "not adjusted for the 1 rows")),
    (n.FewSeedsNote(0.01, 0.9, True), ("p(t) ≥ 0.01", "paired t-test", "power = 0.9")),
    (n.OneSeedNote(("(C)", "(D)")), ("One seed (rows (C); (D))",)),
    (n.NoSeedSpreadNote(("base",)), ("No seed spread (rows base)",)),
    (n.EvalRowsNote(("(A')", "(B')"), 0.9), ("Stage 'eval' rows ((A'), (B'))", "90% CI")),
    (n.AsoNote(0.1), ("α = 0.1",)),
    (n.GridNote(), ("Grid effects: removal",)),
    (n.MissingRunsNote(2, 3), ("2 failed, 3 not run",)),
    (n.CodeVersionNote("abc123", True), ("Code version abc123 (written in the study file)",)),
    (n.RunsUsedNote((n.Commit("0123456789abcdef", True, 4),)), ("4 at git 0123456789 with uncommitted changes",)),
    (n.StaleRunsNote(7), ("7 stored run(s)",)),
    (n.TestSetNote((200, 500), 0.95, 321), ("200, 500 test examples", "321 bootstrap resamples")),
    (n.TwoLevelNote(0.8), ("80% CI = Δ ± t(ν)·se",)),
    (n.BoundsNote((n.MetricBounds("acc", 0.0, 100.0),)), ("Declared bounds: acc in [0, 100].",)),
    (n.NegligibleNote((n.MinEffect("acc", 0.5), n.MinEffect("bleu", 1.0))), ("(acc ±0.5, bleu ±1)",)),
    (n.HolmNote(), ("p(Holm) = Holm's step-down",)),
    (r.UnreadableExamples("(A)", 2, "examples.json: not found"), ("No test-set interval for run (A) seed 2: examples.json: not found.",)),
    (r.ExampleMismatch("acc", "(A)", 1, 0.123456789, 0.5), ("acc, run (A) seed 1: its per-example data scores 0.123457, its stored value is 0.5",)),
    (r.ExampleGap("acc", "(C)", "base", True, 3, (1, 2)), ("row base (the row Δ is taken to) has usable per-example data on 1 of its 3 finished runs (none for seed 1, 2)",)),
    (r.SizeMismatch("acc", "(D)", (700, 800)), ("row (D): runs were scored on test sets of different sizes ([700, 800] examples)",)),
    (n.CurvesNote(StudyCurves(CurveSettings(), (), (), 0)), ()),
]  # fmt: skip


def test_every_note_kind_has_a_sentence_citing_its_numbers():
    assert {type(x) for x, _ in SAMPLES} == set(typing.get_args(n.Note))
    for note, words in SAMPLES:
        text = sentence(note)
        assert isinstance(text, str)
        for w in words:
            assert w in text, (note, w, text)


@pytest.mark.parametrize("note", [x for x, _ in SAMPLES], ids=lambda x: x.code)
def test_a_notes_json_form_is_its_code_and_numbers(note):
    d = n.note_dict(note)
    assert d["code"] == note.code and json.loads(json.dumps(d))["code"] == note.code


def test_every_format_prints_the_notes_sentences_and_the_json_their_codes(analysis):
    lines = note_lines(analysis)
    assert len(lines) == len(analysis.notes) > 4
    data = json.loads(render_json(analysis))
    assert data["notes"] == lines and all(x in data["report"]["notes"] for x in lines)
    assert [v["code"] for v in data["note_values"]] == [x.code for x in analysis.notes]
    md, tex = render_markdown(analysis), render_latex(analysis)
    assert n.MissingRunsNote(3, 0) in analysis.notes
    assert "seeds per row;" in md and "Missing runs: 3 failed, 0 not run" in md
    assert "seeds per row" in tex and "Missing runs" in tex  # (LaTeX escapes and breaks lines)
