"""None references (a variable number per segment) are identical to sacrebleu for BLEU, chrF, TER."""

from __future__ import annotations

import random

import pytest
from tests.conftest import read_lines, wmt_file

import evalab
from evalab.errors import InputError
from evalab.metrics.base import reference_digest
from evalab.metrics.missing_refs import reference_count
from evalab.metrics.stats_value import Stats

sacrebleu = pytest.importorskip("sacrebleu")

HYPS = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
REFS = [
    [None, "It was not unexpected.", "The man bit him first."],
    ["The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."],
]


def test_sacrebleu_readme_example_gives_29_44() -> None:
    """sacrebleu's README, 'Variable Number of References': BLEU = 29.44, nrefs:var."""
    score = evalab.metric("bleu").corpus_score(HYPS, REFS)
    assert f"{score.score:.2f}" == "29.44"
    assert score.signature.split("|", 1)[1].startswith("nrefs:var|")


@pytest.mark.parametrize("name", ["bleu", "chrf", "chrf++", "ter"])
def test_wmt22_random_missing_like_sacrebleu(wmt22, name) -> None:
    rng = random.Random(name)
    hyps = read_lines(wmt_file("hyp", "de-en", "Online-A"))[:300]
    refs = [read_lines(wmt_file("ref", "de-en", r))[:300] for r in ("A", "B")]
    for i in range(300):  # a third of the segments lose one of their two references
        if rng.random() < 1 / 3:
            refs[rng.randrange(2)][i] = None
    theirs = {
        "bleu": sacrebleu.metrics.BLEU(),
        "chrf": sacrebleu.metrics.CHRF(),
        "chrf++": sacrebleu.metrics.CHRF(word_order=2),
        "ter": sacrebleu.metrics.TER(),
    }[name]
    expected = theirs.corpus_score(hyps, refs)
    ours = evalab.metric(name).corpus_score(hyps, refs)
    assert ours.score == expected.score
    assert (
        ours.signature.split("|", 1)[1].rsplit("|", 1)[0]
        == str(theirs.get_signature()).rsplit("|", 1)[0]
    )


def test_reference_count() -> None:
    assert reference_count([["a", "b"], ["c", "d"]]) == 2
    assert reference_count([["a", "b"], [None, None]]) == 1
    assert reference_count([["a", "b"], [None, "d"]]) == "var"


def test_stats_many_with_missing_equals_stats() -> None:
    bleu = evalab.metric("bleu")
    many = bleu.stats_many([HYPS, HYPS[::-1]], REFS)
    assert [m.rows.tolist() for m in many] == [
        bleu.stats(HYPS, REFS).rows.tolist(),
        bleu.stats(HYPS[::-1], REFS).rows.tolist(),
    ]
    assert [m.signature for m in many] == [bleu.stats(HYPS, REFS).signature] * 2


@pytest.mark.parametrize("name", ["bleu", "chrf", "ter", "wer", "rougeL"])
def test_var_is_carried_by_the_stats_value(name) -> None:
    """nrefs 'var' lives in the Stats value: the signature of every score made from it says so."""
    m = evalab.metric(name)
    value = m.stats(HYPS, REFS)
    assert value.nrefs == "var" and value.signature == m.signature_for("var")
    assert "nrefs:var" in m.aggregate(value).signature
    assert all("nrefs:var" in s.signature for s in m.segment_scores(HYPS, REFS))
    # an earlier call with another count changes nothing (no hidden call state)
    m.stats(HYPS, [REFS[1]])
    assert m.aggregate(value).signature == value.signature


def test_var_and_counted_stats_do_not_concatenate() -> None:
    """A shard with a count and one with 'var' are refused: the whole would be 'var', and
    only the metric knows that signature; relabelled with make_stats they concatenate."""
    ter = evalab.metric("ter")
    counted = ter.stats(HYPS[1:], [r[1:] for r in REFS])
    var = ter.stats(HYPS, [[None, *REFS[0][1:2], None], REFS[1]])
    assert (counted.nrefs, var.nrefs) == (2, "var")
    with pytest.raises(InputError, match=r"different numbers of references \(2 and var\)"):
        Stats.concat([counted, var])
    joined = Stats.concat([ter.make_stats(counted.rows, "var"), var])
    assert joined.nrefs == "var" and ter.aggregate(joined).signature.startswith("ter|nrefs:var|")
    with pytest.raises(InputError, match="nrefs must be a count, 'var' or None"):
        ter.make_stats(counted.rows, "variable")


def test_a_missing_reference_has_its_own_digest() -> None:
    """Corpus-level context (IDF) is per group of present references: None is not ''."""
    assert reference_digest([["a", None]]) != reference_digest([["a", ""]])
    assert reference_digest([["a", None]]) == reference_digest([["a", None]])


def test_other_types_are_still_refused() -> None:
    with pytest.raises(InputError, match="or None for a missing reference"):
        evalab.metric("bleu").corpus_score(["a"], [[3]])
