"""TER against sacrebleu 2.6 (the oracle): reference vectors, WMT22 with random settings, None refs."""

from __future__ import annotations

import itertools
import random

import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

from evalab.errors import InputError
from evalab.metrics.ter import TER

sacrebleu = pytest.importorskip("sacrebleu")
from sacrebleu.metrics import TER as SacreTER  # noqa: E402

#: sacrebleu's names, which TER accepts as peer names (of remove_punctuation, lowercase)
SETTINGS = ("normalized", "no_punct", "asian_support", "case_sensitive")
#: (pair, reference IDs) of WMT22; the second reference where a pair has one
PAIRS = {
    "cs-en": ["B", "C"],
    "de-en": ["A", "B"],
    "de-fr": ["A"],
    "en-cs": ["B", "C"],
    "en-de": ["A", "B"],
    "en-ru": ["A"],
    "en-uk": ["A"],
    "en-zh": ["A", "B"],
    "fr-de": ["A"],
    "ru-en": ["A"],
    "uk-en": ["A"],
}

# sacrebleu's own TER test vectors (mjpost/sacrebleu, test/test_ter.py): hypotheses,
# reference, expected TER as a fraction (sacrebleu checks to 1e-3 on the 0-100 scale)
SACREBLEU_VECTORS = [
    (["aaaa bbbb cccc dddd"], ["aaaa bbbb cccc dddd"], 0.0),
    (["dddd eeee ffff"], ["aaaa bbbb cccc"], 1.0),
    ([""], ["a"], 1.0),
    (["d e f g h a b c"], ["a b c d e f g h"], 1 / 8),
    (
        [
            'wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , damit das Bild ungefähr dieselbe Größe aufweist wie die andere Größe .',
            'wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "',
            'klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie Werte für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " ein .',
            "Sie können beispielsweise ein Dokument erstellen , das ein Auto über die Bühne enthält .",
            'wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "',
        ],
        [
            'wählen Sie " Bild neu berechnen , " um beim Ändern der Bildgröße Pixel hinzuzufügen oder zu entfernen , damit die Darstellung des Bildes in einer anderen Größe beibehalten wird .',
            'wenn Sie alle Aufgaben im aktuellen Dokument aktualisieren möchten , wählen Sie im Menü des Aufgabenbedienfelds die Option " Alle Aufgaben aktualisieren . "',
            'klicken Sie auf der Registerkarte " Optionen " auf die Schaltfläche " Benutzerdefiniert " und geben Sie für " Fehlerkorrektur-Level " und " Y / X-Verhältnis " niedrigere Werte ein .',
            "Sie können beispielsweise ein Dokument erstellen , das ein Auto enthalt , das sich über die Bühne bewegt .",
            'wählen Sie im Dialogfeld " Neu aus Vorlage " eine Vorlage aus und klicken Sie auf " Neu . "',
        ],
        0.136,
    ),
]


def assert_same(ours, theirs) -> None:
    """Identical score, edits and reference length (no tolerance)."""
    assert (ours.score, ours.num_edits, ours.ref_length) == (
        theirs.score,
        theirs.num_edits,
        theirs.ref_length,
    )


@pytest.mark.parametrize(("hyps", "refs", "expected"), SACREBLEU_VECTORS)
def test_sacrebleu_vectors(hyps, refs, expected, edit_backend) -> None:
    score = TER().corpus_score(hyps, [refs])
    assert abs(score.score - 100 * expected) < 1e-3
    assert_same(score, SacreTER().corpus_score(hyps, [refs]))


def test_signature_fields_like_sacrebleu() -> None:
    for flags in itertools.product([False, True], repeat=4):
        kwargs = dict(zip(SETTINGS, flags, strict=True))
        theirs = SacreTER(**kwargs)
        theirs.corpus_score(["a b"], [["a c"]])
        ours = TER(**kwargs).corpus_score(["a b"], [["a c"]])
        assert (
            ours.signature.split("|", 1)[1].rsplit("|", 1)[0]
            == str(theirs.get_signature()).rsplit("|", 1)[0]
        )


def wmt_inputs(pair: str, system: str, nrefs: int) -> tuple[list[str], list[list[str]]]:
    refs = [read_lines(wmt_file("ref", pair, r)) for r in PAIRS[pair][:nrefs]]
    return read_lines(wmt_file("hyp", pair, system)), refs


def test_wmt22_random_sample(wmt22, edit_backend) -> None:
    """Random pairs, systems, segments and settings; the full sweep is test_wmt22_every_system."""
    rng = random.Random(18)
    for _ in range(4 if edit_backend == "kernel" else 2):
        pair = rng.choice(sorted(PAIRS))
        system = rng.choice(wmt_systems(pair))
        hyps, refs = wmt_inputs(pair, system, rng.choice([1, 2]))
        idx = sorted(rng.sample(range(len(hyps)), 120 if edit_backend == "kernel" else 25))
        hyps, refs = [hyps[i] for i in idx], [[s[i] for i in idx] for s in refs]
        kwargs = {k: rng.random() < 0.5 for k in SETTINGS}
        assert_same(
            TER(**kwargs).corpus_score(hyps, refs), SacreTER(**kwargs).corpus_score(hyps, refs)
        )


def test_cjk_every_system_random_settings(wmt22, edit_backend) -> None:
    """en-zh (CJK targets: one or two words a line, or single characters with
    normalized + asian_support): every system in one call, random segments and settings,
    asian_support on every other draw."""
    rng = random.Random(47)
    systems = wmt_systems("en-zh") if edit_backend == "kernel" else wmt_systems("en-zh")[:3]
    every = [wmt_inputs("en-zh", name, 1)[0] for name in systems]
    streams = wmt_inputs("en-zh", systems[0], 2)[1]
    for draw in range(4):
        idx = sorted(rng.sample(range(len(every[0])), 12 if edit_backend == "kernel" else 5))
        refs = [[s[i] for i in idx] for s in streams]
        outputs = [[hyps[i] for i in idx] for hyps in every]
        kwargs = {k: rng.random() < 0.5 for k in SETTINGS} | {"asian_support": draw % 2 == 0}
        ours = TER(**kwargs)
        for hyps, stats in zip(outputs, ours.stats_many(outputs, refs), strict=True):
            assert_same(ours.aggregate(stats), SacreTER(**kwargs).corpus_score(hyps, refs))


@pytest.mark.slow
@pytest.mark.full
@pytest.mark.timeout(7200)
@pytest.mark.parametrize(
    "settings", [{}, {"normalized": True}, {"no_punct": True, "asian_support": True}]
)
def test_cjk_every_system_every_segment(wmt22, settings) -> None:
    """en-zh, all 13 systems, every segment, as bench_ter.py times it (sacrebleu takes
    minutes; normalized + asian_support, about an hour, is left to the random draws)."""
    refs = [read_lines(wmt_file("ref", "en-zh", "A"))]
    outputs = [read_lines(wmt_file("hyp", "en-zh", name)) for name in wmt_systems("en-zh")]
    ours = TER(**settings)
    for hyps, stats in zip(outputs, ours.stats_many(outputs, refs), strict=True):
        assert_same(ours.aggregate(stats), SacreTER(**settings).corpus_score(hyps, refs))


# `full` (make test-full), not CI: sacrebleu's pure-Python TER takes 5-15 minutes per pair
# on 2 cores; the default suite checks random systems and settings of every pair
@pytest.mark.slow
@pytest.mark.full
@pytest.mark.timeout(7200)
@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_wmt22_every_system(wmt22, pair) -> None:
    """Every system of every pair, with one and (where there is one) two references."""
    rng = random.Random(pair)
    for system in wmt_systems(pair):
        for nrefs in range(1, len(PAIRS[pair]) + 1):
            hyps, refs = wmt_inputs(pair, system, nrefs)
            assert_same(TER().corpus_score(hyps, refs), SacreTER().corpus_score(hyps, refs))
            kwargs = {k: rng.random() < 0.5 for k in SETTINGS}
            assert_same(
                TER(**kwargs).corpus_score(hyps, refs), SacreTER(**kwargs).corpus_score(hyps, refs)
            )


def test_none_references_like_sacrebleu() -> None:
    hyps = ["The dog bit the man.", "It wasn't surprising.", "The man had just bitten him."]
    refs = [
        ["The dog bit the man.", "It was not unexpected.", "The man bit him first."],
        ["The dog had bit the man.", None, None],
    ]
    ours, theirs = TER().corpus_score(hyps, refs), SacreTER()
    assert_same(ours, theirs.corpus_score(hyps, refs))
    assert ours.signature.startswith("ter|nrefs:var|")
    assert str(theirs.get_signature()).startswith("nrefs:var|")


def test_empty_reference_and_hypothesis_edges() -> None:
    for hyps, refs in [([""], [""]), (["a b"], [""]), ([""], ["a b"]), (["", "x"], ["", ""])]:
        assert_same(TER().corpus_score(hyps, [refs]), SacreTER().corpus_score(hyps, [refs]))


def test_lower_is_better_and_stats_additive() -> None:
    ter = TER()
    rows = ter.stats(["a b c", "d e"], [["a b d", "d e"]])
    assert ter.higher_is_better is False
    assert rows.rows.tolist() == [[1.0, 3.0], [0.0, 2.0]]
    assert ter.scores_from_sums(rows.sums()) == pytest.approx(20.0)


def test_segment_without_any_reference_is_refused() -> None:
    with pytest.raises(InputError, match="segment 1 has no reference"):
        TER().corpus_score(["a", "b"], [["a", None]])


def test_jobs_and_pickle_give_the_same_rows(wmt22) -> None:
    import pickle

    from evalab.metrics.parallel import parallel_stats
    from evalab.metrics.wer import WER

    hyps, refs = wmt_inputs("de-en", "Online-B", 2)
    hyps, refs = hyps[:200], [r[:200] for r in refs]
    # the second shard has lost its second references: it alone counts 1, the corpus 'var'
    missing = [refs[0], [*refs[1][:100], *[None] * 100]]
    for metric in (TER(normalized=True), WER(lowercase=True)):
        for references in (refs, missing):
            whole = metric.stats(hyps, references)
            sharded = parallel_stats(metric, hyps, references, 2)
            assert (sharded.rows == whole.rows).all() and sharded.signature == whole.signature
            again = pickle.loads(pickle.dumps(metric)).stats(hyps, references)
            assert (again.rows == whole.rows).all()
        assert whole.nrefs == "var" and whole.signature.startswith(f"{whole.metric}|nrefs:var|")


def test_normaliser_fallback_gives_the_same_rows(wmt22, monkeypatch) -> None:
    """The compiled normaliser (ids straight from its own table) and the pure-Python one
    (tokens interned in a TokenTable) give the same rows, systems and references together,
    in every setting."""
    from evalab import _kernel

    if _kernel.mt is None:
        pytest.skip("evalab._mtkernel is not built")
    outputs = [
        read_lines(wmt_file("hyp", "en-zh", name))[:150] for name in wmt_systems("en-zh")[:3]
    ]
    refs = [read_lines(wmt_file("ref", "en-zh", r))[:150] for r in PAIRS["en-zh"]]
    outputs.append(read_lines(wmt_file("hyp", "en-de", wmt_systems("en-de")[0]))[:150])
    for flags in itertools.product([False, True], repeat=4):
        metric = TER(**dict(zip(SETTINGS, flags, strict=True)))
        compiled = metric.stats_many(outputs, refs)
        with monkeypatch.context() as patch:
            patch.setattr(_kernel, "mt", None)
            fallback = metric.stats_many(outputs, refs)
        assert all((a.rows == b.rows).all() for a, b in zip(compiled, fallback, strict=True))


def test_chunked_packing_gives_the_same_rows(wmt22, monkeypatch) -> None:
    """Without the kernel (which maps tokens to ids with no token lists) segments are
    tokenised PACK_CHUNK at a time; chunks of 7 give the rows of one chunk, for several
    systems and references, and a pair refused in a later chunk is named by its segment in
    the whole corpus."""
    from evalab import _kernel

    monkeypatch.setattr(_kernel, "mt", None)

    hyps, refs = wmt_inputs("de-en", "Online-B", 2)
    hyps, refs = hyps[:100], [r[:100] for r in refs]
    other = list(reversed(hyps))
    with_none = [refs[0], [*refs[1][:50], *[None] * 50]]
    whole = [s.rows for s in TER(normalized=True).stats_many([hyps, other], refs)]
    sizes = TER(normalized=True).pair_sizes(hyps, with_none)
    monkeypatch.setattr(_kernel, "PACK_CHUNK", 7)
    chunked = [s.rows for s in TER(normalized=True).stats_many([hyps, other], refs)]
    assert all((a == b).all() for a, b in zip(whole, chunked, strict=True))
    assert TER(normalized=True).pair_sizes(hyps, with_none) == sizes
    long = " ".join(["w"] * 6000)
    with pytest.raises(InputError, match="segment 10 has 6,000"):
        TER().stats([*hyps[:9], long], [[*refs[0][:9], long]])
