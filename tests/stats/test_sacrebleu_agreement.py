"""Agreement with sacrebleu 2.6.0's paired tests on WMT22 en-de (9 systems, BLEU and chrF).

Same seed (12345), same index/selector matrices, same p-value statistic
(``p_value="sacrebleu"`` for the bootstrap): scores and p-values are identical. The
bootstrap mean and half-width differ below 1e-5 because sacrebleu scores its resamples
from float32 statistics (``np.array(stats, dtype='float32')`` in ``_paired_bs_test``, and
numpy 2 keeps float32 through ``100. * correct / total``), evalab from float64.

The fast tests use the first 400 segments; the ``slow`` ones the whole test set with
sacrebleu's defaults (1000 resamples; AR with 1000 of its 10000 trials to stay bounded).
"""

from __future__ import annotations

import numpy as np
import pytest
from tests.conftest import read_lines, wmt_file, wmt_systems

from evalab.metrics.bleu import BLEU
from evalab.metrics.chrf import CHRF
from evalab.stats import paired_test

PAIR = "en-de"
# sacrebleu's float32 resample scores vs our float64 ones (observed max: 4e-7)
FLOAT32_TOL = 1e-5


def load(limit: int | None, blank_every: int = 0):
    refs = [read_lines(wmt_file("ref", PAIR, "A"))[:limit]]
    systems = {s: read_lines(wmt_file("hyp", PAIR, s))[:limit] for s in wmt_systems(PAIR)}
    if blank_every:
        # a system with empty lines: every k-th output of the last system is blank
        last = list(systems)[-1]
        systems[last] = ["" if i % blank_every == 0 else h for i, h in enumerate(systems[last])]
    return refs, systems


def run_sacrebleu(refs, systems, test, n, monkeypatch):
    from sacrebleu.metrics import BLEU as SBLEU
    from sacrebleu.metrics import CHRF as SCHRF
    from sacrebleu.significance import PairedTest

    monkeypatch.delenv("SACREBLEU_SEED", raising=False)  # its default seed is 12345
    metrics = {"BLEU": SBLEU(references=refs), "chrF2": SCHRF(references=refs)}
    sigs, scores = PairedTest(list(systems.items()), metrics, None, test_type=test, n_samples=n)()
    for sig in sigs.values():
        assert "seed:12345" in str(sig) and f"{test}:{n}" in str(sig)
    return {"bleu": scores["BLEU"], "chrf": scores["chrF2"]}


def run_evalab(refs, systems, test, n):
    metrics = {"bleu": BLEU(), "chrf": CHRF()}
    stats = {
        m: {s: metric.stats(h, refs) for s, h in systems.items()} for m, metric in metrics.items()
    }
    return paired_test(
        test, metrics, stats, n_samples=n, seed=12345, p_value="sacrebleu", ci_samples=0
    )


def check_identical(ours, theirs, with_ci: bool):
    for metric in ("bleu", "chrf"):
        for mine, ref in zip(ours[metric].systems, theirs[metric], strict=True):
            assert mine.score == pytest.approx(ref.score, abs=1e-9), (metric, mine.system)
            assert mine.p_value == ref.p_value, (metric, mine.system)  # identical, not close
            if with_ci:
                assert mine.ci.mean == pytest.approx(float(ref.mean), abs=FLOAT32_TOL)
                assert mine.ci.half_width == pytest.approx(float(ref.ci), abs=FLOAT32_TOL)


def test_paired_bs_subset_identical(wmt22, monkeypatch):
    refs, systems = load(400, blank_every=5)
    theirs = run_sacrebleu(refs, systems, "bs", 300, monkeypatch)
    ours = run_evalab(refs, systems, "bs", 300)
    check_identical(ours, theirs, with_ci=True)
    # the comparison is not vacuous: some systems differ significantly, some do not
    p = [r.p_value for m in ours.values() for r in m.systems[1:]]
    assert min(p) < 0.01 and max(p) > 0.05


def test_paired_ar_subset_identical(wmt22, monkeypatch):
    refs, systems = load(400)
    theirs = run_sacrebleu(refs, systems, "ar", 500, monkeypatch)
    ours = run_evalab(refs, systems, "ar", 500)
    check_identical(ours, theirs, with_ci=False)


@pytest.mark.slow
def test_paired_bs_full_identical(wmt22, monkeypatch):
    refs, systems = load(None)
    theirs = run_sacrebleu(refs, systems, "bs", 1000, monkeypatch)
    ours = run_evalab(refs, systems, "bs", 1000)
    check_identical(ours, theirs, with_ci=True)


@pytest.mark.slow
def test_paired_ar_full_identical(wmt22, monkeypatch):
    refs, systems = load(None)
    theirs = run_sacrebleu(refs, systems, "ar", 1000, monkeypatch)
    ours = run_evalab(refs, systems, "ar", 1000)
    check_identical(ours, theirs, with_ci=False)


def test_single_system_confidence_identical(wmt22, monkeypatch):
    """``sacrebleu --confidence``: one system, 1000 resamples, mean ± half-width."""
    from sacrebleu.metrics import BLEU as SBLEU

    from evalab.stats import bootstrap_ci

    monkeypatch.delenv("SACREBLEU_SEED", raising=False)
    refs, systems = load(600)
    hyps = systems["Online-B"]
    theirs = SBLEU().corpus_score(hyps, refs, n_bootstrap=1000)
    ci = bootstrap_ci(BLEU(), BLEU().stats(hyps, refs), 1000, seed=12345)
    assert ci.score == pytest.approx(theirs.score, abs=1e-9)
    assert ci.mean == pytest.approx(theirs._mean, abs=FLOAT32_TOL)
    assert ci.half_width == pytest.approx(theirs._ci, abs=FLOAT32_TOL)
    assert np.isfinite(ci.low) and ci.low < ci.score < ci.high
