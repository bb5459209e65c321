"""The Ray executor: the same runs as Ray tasks on a local cluster give the same metrics."""

from __future__ import annotations

import pytest

from evalab.ablation import RunStore, load_study, run_study

from ..synth import write_study

pytestmark = pytest.mark.ray


def test_ray_and_local_store_the_same_metrics(tmp_path, request):
    path = write_study(
        tmp_path,
        seeds=[0, 1, 2],
        variants=[("(C)", "shift", {"shift": -3.0})],
        extra_study="resources = { cpus = 1, gpus = 0 }",
    )
    study = load_study(path)
    local = run_study(study, tmp_path / "local.db", jobs=2, progress=False)
    # the shared local instance (tests/conftest.py), started after the local runs
    request.getfixturevalue("ray_instance")
    remote = run_study(study, tmp_path / "ray.db", executor="ray", progress=False)
    assert (local.ok, remote.ok, remote.failed) == (6, 6, 0)
    with RunStore(tmp_path / "local.db") as a, RunStore(tmp_path / "ray.db") as b:
        ra, rb = a.runs("synth"), b.runs("synth")
        assert b.integrity_check() == "ok"
        roots = (a.runs_root, b.runs_root)
    # two databases in one folder: each store's runs live in its own run folders
    assert roots[0] != roots[1] and roots[0].parent == roots[1].parent == tmp_path / "runs"
    for runs, root in zip((ra, rb), roots, strict=True):
        assert {r.artifacts.dir for r in runs.values()} == {str(root / "synth" / k) for k in runs}
    assert set(ra) == set(rb)
    for key in ra:
        assert ra[key].metrics == rb[key].metrics
        assert ra[key].seed == rb[key].seed and ra[key].config == rb[key].config
