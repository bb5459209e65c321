"""evalab.metrics.parallel: statistics of many systems and metrics on threads and processes."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import evalab
from evalab.errors import InputError, SettingsError
from evalab.metrics.base import Metric, Stats
from evalab.metrics.parallel import shard_bounds, stats_table

REF = [[f"the cat {i} sat on the mat number {i % 7}" for i in range(300)]]
SYSTEMS = {
    "copy": list(REF[0]),
    "shuffled": [" ".join(reversed(r.split())) for r in REF[0]],
    "short": [r.split(" sat")[0] for r in REF[0]],
}


def expected(metrics: dict[str, Metric]) -> dict[str, dict[str, Stats]]:
    return {
        n: {s: type(m)(m.settings).stats(h, REF) for s, h in SYSTEMS.items()}
        for n, m in metrics.items()
    }


@pytest.mark.parametrize("jobs", [1, 2])
def test_table_equals_one_stats_call_per_pair(jobs) -> None:
    metrics = {n: evalab.metric(n) for n in ("bleu", "chrf", "rougeL", "exact_match")}
    table = stats_table(metrics, SYSTEMS, REF, jobs=jobs)
    want = expected(metrics)
    assert list(table) == list(metrics)
    for name in metrics:
        assert list(table[name]) == list(SYSTEMS)
        for system in SYSTEMS:
            got, one = table[name][system], want[name][system]
            assert np.array_equal(got.rows, one.rows) and got.signature == one.signature


def test_gil_free_metrics_run_on_their_own_threads(monkeypatch) -> None:
    seen: dict[str, str] = {}
    original = Metric.stats_many

    def spy(self, systems, references):
        seen[self.name] = threading.current_thread().name
        return original(self, systems, references)

    monkeypatch.setattr(Metric, "stats_many", spy)
    metrics = {n: evalab.metric(n) for n in ("bleu", "rougeL", "chrf")}
    assert [m.releases_gil for m in metrics.values()] == [True, False, True]
    stats_table(metrics, SYSTEMS, REF)
    main = threading.main_thread().name
    assert seen["rougeL"] == main  # the rest stays on the calling thread
    assert main != seen["bleu"] != seen["chrf"] != main
    seen.clear()
    stats_table({n: evalab.metric(n) for n in ("bleu", "chrf")}, SYSTEMS, REF)
    assert seen["bleu"] == main != seen["chrf"]  # all GIL-free: the caller takes the first
    seen.clear()
    stats_table({"bleu": evalab.metric("bleu")}, SYSTEMS, REF)  # one metric: no thread
    assert seen == {"bleu": main}


def test_errors_come_from_the_first_failing_metric_in_order() -> None:
    metrics = {n: evalab.metric(n) for n in ("bleu", "rougeL", "chrf")}
    bad = {"ok": SYSTEMS["copy"], "bad": [*SYSTEMS["copy"][:-1], 42]}
    with pytest.raises(InputError, match=r"^bleu: hypothesis 299 is int"):
        stats_table(metrics, bad, REF)
    with pytest.raises(SettingsError, match="jobs must be at least 1"):
        stats_table(metrics, SYSTEMS, REF, jobs=0)


def test_shard_bounds_cover_the_range() -> None:
    assert shard_bounds(10, 3) == [(0, 3), (3, 7), (7, 10)]
    assert shard_bounds(2, 5) == [(0, 1), (1, 2)]


def test_shardable_metrics() -> None:
    """Additive metrics without a model or bound sources may be cut into contiguous parts."""
    from evalab.metrics.parallel import shardable

    assert shardable(evalab.metric("bleu")) and shardable(evalab.metric("chrf"))
    ter = evalab.metric("ter")
    assert shardable(ter)
    ter.parallel_safe = False  # type: ignore[attr-defined]  # as a torch model's metric says
    assert not shardable(ter)
