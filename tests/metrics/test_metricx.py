"""MetricX (``metricx``): parity with Google's ``metricx23``/``metricx24`` ``predict`` (the
input texts, the token ids and every segment's score within 1e-5), both versions, every
mode, two sizes, inputs past the length limit; and the refusals.

The oracle runs in a virtual environment of its own (``metricx_oracle``), on tiny random
checkpoints built there with its own ``MT5ForRegression`` (cached in
``~/.cache/evalab-tests``, as its predictions are).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalab.metrics.metricx import MetricX
from metrics import metricx_oracle

pytest.importorskip("torch")
pytest.importorskip("sentencepiece")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import make_tiny_metricx

#: (version, d_model, layers): both versions, two sizes
SPECS = [
    metricx_oracle.tiny_spec(24, seed=1, d_model=32, layers=1),
    metricx_oracle.tiny_spec(24, seed=2, d_model=64, layers=2),
    metricx_oracle.tiny_spec(23, seed=3, d_model=32, layers=1),
    metricx_oracle.tiny_spec(23, seed=4, d_model=64, layers=2),
]
MODES = {24: ("hybrid", "ref", "qe"), 23: ("ref", "qe")}
#: segment scores of Google's code and ours: float32 in batches of other shapes
TOLERANCE = 1e-5
#: random cases in the default suite (one oracle process scores them all, cached)
N_CASES = 5
SLOW_CASES = 30
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def checkpoints() -> list[Path]:
    try:
        return metricx_oracle.make_checkpoints(SPECS)
    except metricx_oracle.OracleUnavailable as exc:
        pytest.skip(f"MetricX oracle venv cannot be built (offline?): {exc}")


def _segment(rng: random.Random, longest: int) -> str:
    text = make_tiny_metricx.words(rng, rng.randint(0, longest))
    odd = ["", "  two  spaces ", "naïve café – ok", "tab\there", "<extra_id_3> x", "日本語です。"]
    return rng.choice(odd) if rng.random() < 0.1 else text


def _case(seed: int) -> dict[str, Any]:
    """A random setting: checkpoint, mode, 1-4 systems sharing sources and references,
    segments, a length limit that many inputs reach (sometimes the version's default),
    batch sizes."""
    rng = random.Random(seed)
    model = seed % len(SPECS)
    version = SPECS[model]["version"]
    n = rng.randint(3, 16)
    src = [_segment(rng, 40) for _ in range(n)]
    ref = [_segment(rng, 40) for _ in range(n)]
    systems = [[_segment(rng, 40) for _ in range(n)] for _ in range(rng.randint(1, 4))]
    systems[0][0] = make_tiny_metricx.words(rng, 400)  # past every limit
    if len(systems) > 1:
        systems[1][1] = systems[0][1]  # the same input twice: scored once
    return {
        "model": model,
        "version": version,
        "mode": rng.choice(MODES[version]),
        "src": src,
        "ref": ref,
        "systems": systems,
        "max_input_length": rng.choice([None, 24, 48, 96]),
        "batch_size": rng.choice([1, 3, 8, 64]),
    }


def _oracle_job(case: dict[str, Any], checkpoint: Path) -> dict[str, Any]:
    mode, version = case["mode"], case["version"]
    # Google's predict reads a source field always (MetricX-24 without one: the empty string)
    src = case["src"] if mode != "ref" else [""] * len(case["src"])
    return {
        "checkpoint": str(checkpoint),
        "version": version,
        "qe": mode == "qe",
        "max_input_length": case["max_input_length"] or {23: 1024, 24: 1536}[version],
        "batch_size": 1,  # its Trainer stacks unpadded inputs: batch 1 (its README's)
        "systems": [
            [
                {"source": s, "hypothesis": h, "reference": r}
                for s, h, r in zip(src, hyps, case["ref"], strict=True)
            ]
            for hyps in case["systems"]
        ],
    }


def _ours(case: dict[str, Any], checkpoint: Path) -> MetricX:
    metric = MetricX(
        model=str(checkpoint),
        version=case["version"],
        mode=case["mode"],
        max_input_length=case["max_input_length"],
        batch_size=case["batch_size"],
        progress=False,
    )
    return metric.with_sources(case["src"]) if metric.uses_source else metric


def _runs(seeds: range, checkpoints: list[Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    cases = [_case(seed) for seed in seeds]
    jobs = [_oracle_job(c, checkpoints[c["model"]]) for c in cases]
    return list(zip(cases, metricx_oracle.predict(jobs), strict=True))


@pytest.fixture(scope="session")
def parity_runs(checkpoints: list[Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return _runs(range(N_CASES), checkpoints)


def _check_parity(case: dict[str, Any], theirs: dict[str, Any], checkpoints: list[Path]) -> None:
    metric = _ours(case, checkpoints[case["model"]])
    refs = [case["ref"]] if metric.uses_references else []
    stats = metric.stats_many(case["systems"], refs)
    limit = metric.max_input_length
    for hyps, rows, oracle in zip(case["systems"], stats, theirs["systems"], strict=True):
        texts = metric.input_texts(hyps, refs)
        assert texts == oracle["inputs"]
        assert metric.model().token_ids(texts, limit) == oracle["input_ids"]
        ours = rows.rows[:, 0]
        np.testing.assert_allclose(ours, oracle["predictions"], rtol=0, atol=TOLERANCE)
        assert rows.rows[:, 1].tolist() == [1.0] * len(hyps)
    if case["max_input_length"] is not None:  # the long hypothesis reached the limit
        assert len(theirs["systems"][0]["input_ids"][0]) == limit - 1


@pytest.mark.parametrize("k", range(N_CASES))
def test_parity_with_google_metricx(k: int, parity_runs, checkpoints) -> None:
    _check_parity(*parity_runs[k], checkpoints)


@pytest.mark.slow
def test_parity_sweep(checkpoints) -> None:
    """Every version, mode and size, many more segments and systems."""
    runs = _runs(range(100, 100 + SLOW_CASES), checkpoints)
    assert {(c["model"], c["mode"]) for c, _ in runs} >= {
        (m, mode) for m, s in enumerate(SPECS) for mode in MODES[s["version"]]
    }
    for case, theirs in runs:
        _check_parity(case, theirs, checkpoints)


def test_the_tiny_checkpoints_spread_their_scores(parity_runs) -> None:
    """The fitted score row keeps most scores inside (0, 25): parity is not 0 == 0."""
    scores = np.concatenate(
        [s["predictions"] for _, theirs in parity_runs for s in theirs["systems"]]
    )
    inside = (scores > 0) & (scores < 25)
    assert inside.mean() > 0.5, scores
    assert len(np.unique(scores[inside])) > 10
