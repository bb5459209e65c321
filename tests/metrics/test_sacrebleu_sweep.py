"""Slow sweep: BLEU, chrF and chrF++ equal sacrebleu 2.6.0 exactly on every WMT22 system.

Every system of every pair in ``../shared/wmt22``, against its first reference and against
all of its references, with the tokenizer WMT uses for the target language. ``==`` on the
floats: the corpus score goes through sacrebleu's own scalar arithmetic
(``evalab.metrics.bleu.bleu_score``, ``evalab.metrics.chrf.chrf_score``). Run with
``pytest -m slow -k official_sweep``.
"""

from __future__ import annotations

import pytest
from tests.conftest import WMT22, read_lines, wmt_systems

from evalab.metrics.bleu import BLEU
from evalab.metrics.chrf import CHRF, CHRFPlusPlus

sacrebleu = pytest.importorskip("sacrebleu")

PAIRS = sorted({p.name.split(".")[1] for p in (WMT22 / "system-outputs").glob("generaltest2022.*")})
#: the pairs `make test-slow` (and so CI) sweeps; the others are marked `full` (`make
#: test-full`): the whole sweep runs sacrebleu on every system, which takes longer than CI has
CI_PAIRS = {"en-de", "en-zh"}
TOKENIZER = {"zh": "zh", "ja": "ja-mecab"}


def references(pair: str) -> list[list[str]]:
    tgt = pair.split("-")[1]
    paths = sorted((WMT22 / "references").glob(f"generaltest2022.{pair}.ref.*.{tgt}"))
    return [read_lines(p) for p in paths]


@pytest.mark.slow
@pytest.mark.parametrize(
    "pair", [p if p in CI_PAIRS else pytest.param(p, marks=pytest.mark.full) for p in PAIRS]
)
def test_official_sweep_every_system_equals_sacrebleu(wmt22, pair: str) -> None:
    from sacrebleu.metrics import BLEU as SacreBLEU
    from sacrebleu.metrics import CHRF as SacreCHRF

    tgt = pair.split("-")[1]
    tok = TOKENIZER.get(tgt, "13a")
    if tok == "ja-mecab":
        pytest.importorskip("MeCab")
    refs_all = references(pair)
    ours = {"bleu": BLEU(tokenize=tok), "chrf": CHRF(), "chrf++": CHRFPlusPlus()}
    theirs = {
        "bleu": SacreBLEU(tokenize=tok),
        "chrf": SacreCHRF(),
        "chrf++": SacreCHRF(word_order=2),
    }
    checked = 0
    for system in wmt_systems(pair):
        hyps = read_lines(wmt22 / "system-outputs" / f"generaltest2022.{pair}.hyp.{system}.{tgt}")
        for refs in (refs_all[:1], refs_all) if len(refs_all) > 1 else (refs_all,):
            for name, metric in ours.items():
                a = metric.corpus_score(hyps, refs)
                b = theirs[name].corpus_score(hyps, refs)
                assert a.score == b.score, (pair, system, name, len(refs), a.score, b.score)
                checked += 1
    assert checked >= 3
