"""The Ray executor on a real cluster of nodes bound to 127.0.0.1, without a shared folder.

The worker nodes keep their runs in folders of their own (``EVALAB_NODE_RUNS``), which the
driver never reads: everything the store and the report need must travel through Ray.
Faults: a node killed mid-run (the run is retried on another node and stored once), a
wrong address (one line within ``--ray-timeout``), a driver killed mid-run (the next
command reclaims its leases), and a cluster with token authentication.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from tests.conftest import wmt_file
from tests.ray_cluster import cluster, ray_env

from evalab.ablation import RunStore, analyze, load_study, run_study

pytestmark = pytest.mark.ray
ray = pytest.importorskip("ray")

PAIR, SYSTEMS, N = "de-en", ("JDExploreAcademy", "Online-A"), 40

ENTRY = """
import json, os, time

def _log(line):
    with open("calls.log", "a", encoding="utf-8") as fh:
        fh.write(line + "\\n")

def _hold():
    if os.environ.get("EVALAB_TEST_HOLD") == "1" or os.path.exists("hold"):
        open(os.environ["EVALAB_TEST_MARK"], "w").close()
        time.sleep(600)

def _write(out_dir, system, drop, seed):
    with open(os.path.join("hyps", system), encoding="utf-8") as fh:
        lines = fh.read().split("\\n")
    for i in range(seed, len(lines), 7):
        lines[i] = " ".join(lines[i].split()[: max(0, len(lines[i].split()) - drop)])
    with open(os.path.join(out_dir, "hyp.txt"), "w", encoding="utf-8") as fh:
        fh.write("\\n".join(lines))
    return lines

def run(config, seed, out_dir):
    _log(f"train {seed} {out_dir}")
    _hold()
    lines = _write(out_dir, config["system"], 0, seed)
    with open(os.path.join(out_dir, "model.pt"), "wb") as fh:
        fh.write(json.dumps({"system": config["system"], "seed": seed}).encode() + bytes(200_000))
    kept = [float(len(l.split()) % 3 == 0) for l in lines]
    return {"acc": 100.0 * sum(kept) / len(kept), "per_example": {"acc": [100.0 * k for k in kept]}}

def evaluate(config, seed, checkpoint_dir):
    _log(f"eval {seed} {checkpoint_dir}")
    with open(os.path.join(checkpoint_dir, "model.pt"), "rb") as fh:
        ckpt = json.loads(fh.read().rstrip(bytes(1)))
    assert ckpt["seed"] == seed
    lines = _write(os.environ["EVALAB_RUN_DIR"], ckpt["system"], config["drop"], seed)
    kept = [float(len(l.split()) % 3 == 0) for l in lines]
    return {"acc": 100.0 * sum(kept) / len(kept), "per_example": {"acc": [100.0 * k for k in kept]}}
"""


def write_cluster_study(folder: Path, *, seeds=(0, 1), retries=0, extra="") -> Path:
    """A study with a trained row, a variant, an eval row, per-example values and chrF
    computed from each run's outputs against WMT22 references."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "hyps").mkdir(exist_ok=True)
    for system in SYSTEMS:
        lines = wmt_file("hyp", PAIR, system).read_text(encoding="utf-8").split("\n")[:N]
        (folder / "hyps" / system).write_text("\n".join(lines), encoding="utf-8")
    refs = wmt_file("ref", PAIR, "A").read_text(encoding="utf-8").split("\n")[:N]
    (folder / "refs.txt").write_text("\n".join(refs), encoding="utf-8")
    (folder / "cl_entry.py").write_text(ENTRY, encoding="utf-8")
    study = f"""
[study]
name = "cl"
entry = "cl_entry:run"
evaluate = "cl_entry:evaluate"
seeds = {list(seeds)}
metrics = ["acc"]
primary = "chrf"
bounds = {{ acc = [0, 100] }}
timeout = 300
retries = {retries}
resources = {{ cpus = 1, gpus = 0 }}
{extra}

[metrics.chrf]
metric = "chrf"
outputs = "hyp.txt"
references = ["refs.txt"]

[base]
system = "{SYSTEMS[0]}"

[evaluation]
drop = 0

[[variant]]
label = "(B)"
set = {{ system = "{SYSTEMS[1]}" }}

[[variant]]
label = "(C)"
stage = "eval"
set = {{ drop = 2 }}
"""
    path = folder / "study.toml"
    path.write_text(study, encoding="utf-8")
    return path


@pytest.fixture(autouse=True)
def _no_token_auth(monkeypatch):
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")


def _calls(folder: Path) -> list[list[str]]:
    log = folder / "calls.log"
    return [ln.split(" ") for ln in log.read_text(encoding="utf-8").splitlines()]


def _analysis_text(study, db: Path) -> str:
    return repr(analyze(study, db)).replace(str(db), "DB")


@pytest.mark.slow
def test_two_nodes_without_a_shared_folder_store_what_the_local_executor_stores(tmp_path):
    path = write_cluster_study(tmp_path / "study")
    study = load_study(path)
    local = run_study(study, tmp_path / "local.db", jobs=2, progress=False)
    node_runs = tmp_path / "worker-node-runs"
    with cluster() as c:  # the head runs no task: every run is the worker node's
        c.start_node(
            cpus=2, resources='{"evalab_worker": 1}', env={"EVALAB_NODE_RUNS": str(node_runs)}
        )
        c.wait_for_nodes(2)
        os.remove(path.parent / "calls.log")
        remote = run_study(
            study, tmp_path / "ray.db", executor="ray", ray_address=c.address, progress=False
        )
    assert (local.ok, local.failed) == (remote.ok, remote.failed) == (6, 0), remote.failures
    assert remote.moved > 6 * 200_000  # the checkpoints travelled (and came back)
    # every run ran in the worker node's private folders, which are gone once they travelled
    calls = _calls(path.parent)
    assert len(calls) == 6 and all(c[2].startswith(str(node_runs)) for c in calls)
    assert not any(p.is_file() for p in node_runs.rglob("*"))
    with RunStore(tmp_path / "local.db") as a, RunStore(tmp_path / "ray.db") as b:
        ra, rb = a.runs("cl"), b.runs("cl")
        root = b.runs_root
    assert set(ra) == set(rb)
    for key, run in rb.items():
        assert run.metrics == ra[key].metrics and run.status == "ok"
        folder = root / "cl" / key
        assert run.artifacts.dir == str(folder)
        assert (folder / "examples.npz").is_file() and (folder / "hyp.txt").is_file()
        if run.artifacts.checkpoint_dir:  # the eval row: its trained run's folder on the driver
            assert Path(run.artifacts.checkpoint_dir).parent == root / "cl"
        else:
            assert (folder / "model.pt").stat().st_size > 200_000
    # the report's every number and interval, bit for bit
    assert _analysis_text(study, tmp_path / "ray.db") == _analysis_text(
        study, tmp_path / "local.db"
    )


@contextlib.contextmanager
def _driver(argv: tuple[str, ...], env: dict[str, str]) -> Iterator[subprocess.Popen[str]]:
    """``evalab ARGV`` in the background (its standard error piped); killed on leaving the
    block where it still runs, so a failed test leaves no driver behind."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "evalab", *argv],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.communicate()


def _wait_for(mark: Path, what: str, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not mark.exists() and time.monotonic() < deadline:
        time.sleep(0.5)
    assert mark.exists(), what


@pytest.mark.slow
def test_a_lost_node_is_retried_on_another_node_in_the_same_invocation(tmp_path):
    path = write_cluster_study(tmp_path / "study", seeds=(0,), retries=1)
    mark = tmp_path / "started"
    runs_a, runs_b = tmp_path / "node-a", tmp_path / "node-b"
    held = {"EVALAB_TEST_HOLD": "1", "EVALAB_TEST_MARK": str(mark), "EVALAB_NODE_RUNS": str(runs_a)}
    with cluster() as c:
        node_a = c.start_node(cpus=1, env=held)
        c.wait_for_nodes(2)
        argv = ("ablate", "run", str(path), "--executor", "ray", "--ray-address", c.address, "-q",
                "--db", str(tmp_path / "s.db"))  # fmt: skip
        with _driver(argv, ray_env()) as driver:
            _wait_for(mark, "the first run did not start")
            c.start_node(cpus=1, env={"EVALAB_NODE_RUNS": str(runs_b)})
            node_a.kill()  # the machine is gone, mid-run
            _, err = driver.communicate(timeout=400)
    assert driver.returncode == 0, err
    assert "0 already finished, 3 ok, 0 failed" in err
    with RunStore(tmp_path / "s.db") as store:
        runs = store.runs("cl")
    assert len(runs) == 3 and all(r.status == "ok" for r in runs.values())
    assert sorted(r.attempts for r in runs.values()) == [1, 1, 2]
    trained = [c for c in _calls(path.parent) if c[0] == "train"]
    assert [c[2].startswith(str(runs_a)) for c in trained[:1]] == [True]
    assert all(c[2].startswith(str(runs_b)) for c in trained[1:])


def _cli(*args: str, env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "evalab", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def _cli_start_s(env: dict[str, str]) -> float:
    """Seconds a no-op CLI start takes now, with Ray imported as ``--executor ray`` does: the
    start-up a refusal cannot beat, on this machine at its present load."""
    noop = "import ray, runpy; runpy.run_module('evalab', run_name='__main__')"
    t0 = time.monotonic()
    out = subprocess.run(
        [sys.executable, "-c", noop, "ablate", "run", "--help"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stderr
    return time.monotonic() - t0


@contextlib.contextmanager
def _wrong_address(kind: str) -> Iterator[str]:
    """An address on 127.0.0.1 held for the block, so no other process (another test's Ray
    node) can take its port: ``closed`` refuses connections, ``silent`` accepts them and
    never answers (what an address that is not a Ray head looks like to Ray)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        if kind == "silent":
            s.listen(64)
        yield f"127.0.0.1:{s.getsockname()[1]}"


# 4.5 s: Ray's core logs a failed connection 5 s after it began, as the command ends
@pytest.mark.parametrize(("kind", "timeout"), [("closed", 3), ("silent", 4.5)])
def test_a_wrong_address_is_one_line_within_the_timeout(tmp_path, kind, timeout):
    path = write_cluster_study(tmp_path / "study", seeds=(0,))
    env = ray_env()
    start = _cli_start_s(env)
    with _wrong_address(kind) as address:
        t0 = time.monotonic()
        out = _cli("ablate", "run", str(path), "--executor", "ray", "--ray-address", address,
                   "--ray-timeout", str(timeout), "-q", "--db", str(tmp_path / "s.db"), env=env)  # fmt: skip
        elapsed = time.monotonic() - t0
    assert out.returncode == 2 and out.stdout == "", out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out.stderr, out.stderr
    assert (
        f"--ray-address {address}: no Ray cluster answered within {timeout:g} s (--ray-timeout)"
        in lines[0]
    )
    # a closed port is known at once; a silent one is waited for, --ray-timeout and no longer:
    # the bound is the start-up measured around the command (the load may change while it
    # runs), twice over, plus a few seconds, so it holds on a loaded machine too
    start = max(start, _cli_start_s(env))
    waited = timeout if kind == "silent" else 0
    assert waited <= elapsed < waited + 2 * start + 10, (elapsed, start)
    assert not (path.parent / "calls.log").exists()
    # nothing is created: Ray is joined before the database is opened
    assert sorted(p.name for p in tmp_path.iterdir()) == ["study"]


@pytest.mark.parametrize(
    ("extra", "needle"),
    [
        (["--executor", "ray", "--ray-timeout", "0"], "--ray-timeout must be a positive number of seconds, got 0"),
        (["--ray-address", "127.0.0.1:1"], "--ray-address applies to --executor ray only"),
        (["--ray-timeout", "5"], "--ray-timeout applies to --executor ray only"),
        (["--executor", "spark"], "--executor must be local or ray, got 'spark'"),
    ],
)  # fmt: skip
def test_bad_ray_options_are_refused(tmp_path, run_cli, extra, needle):
    path = write_cluster_study(tmp_path / "study", seeds=(0,))
    r = run_cli("ablate", "run", str(path), *extra, "--db", str(tmp_path / "s.db"))
    assert r.exit_code == 2 and needle in r.stderr, r.stderr
    assert not (tmp_path / "s.db").exists() and not (path.parent / "calls.log").exists()


@pytest.mark.slow
def test_a_killed_driver_leaves_leases_the_next_command_reclaims(tmp_path):
    path = write_cluster_study(tmp_path / "study")
    mark = tmp_path / "started"
    (path.parent / "hold").touch()
    with cluster() as c:
        c.start_node(
            cpus=2, env={"EVALAB_NODE_RUNS": str(tmp_path / "node"), "EVALAB_TEST_MARK": str(mark)}
        )
        c.wait_for_nodes(2)
        env = ray_env()
        argv = ("ablate", "run", str(path), "--executor", "ray", "--ray-address", c.address, "-q",
                "--db", str(tmp_path / "s.db"))  # fmt: skip
        with _driver(argv, env) as driver:
            _wait_for(mark, "no run started")
            driver.kill()
        with RunStore(tmp_path / "s.db") as store:
            assert store.runs("cl") == {}  # nothing stored for the runs in flight
        (path.parent / "hold").unlink()
        again = _cli(*argv, env=env)
    assert again.returncode == 0, again.stderr
    assert "0 already finished, 6 ok, 0 failed" in again.stderr
    with RunStore(tmp_path / "s.db") as store:
        runs = store.runs("cl")
    assert len(runs) == 6 and all(r.status == "ok" and r.attempts == 1 for r in runs.values())


@pytest.mark.slow
def test_token_authentication_settings_are_passed_through(tmp_path):
    path = write_cluster_study(tmp_path / "study", seeds=(0,))
    token = "0123456789abcdef0123456789abcdef"
    secured = ray_env("token", RAY_AUTH_TOKEN=token)
    with cluster(
        head_cpus=2, env=secured, head_env={"EVALAB_NODE_RUNS": str(tmp_path / "head")}
    ) as c:
        c.wait_for_nodes(1)
        argv = ("ablate", "run", str(path), "--executor", "ray", "--ray-address", c.address, "-q",
                "--ray-timeout", "20", "--db", str(tmp_path / "s.db"))  # fmt: skip
        ok = _cli(*argv, env=secured)
    assert ok.returncode == 0, ok.stderr
    assert "3 ok, 0 failed" in ok.stderr


@pytest.mark.slow
def test_a_driver_without_the_clusters_token_is_one_line_naming_what_to_set(tmp_path):
    """Token authentication on the cluster; the driver has no token, a wrong one, or auth
    off: one line saying which variable to set, exit 2, nothing created, no wait."""
    path = write_cluster_study(tmp_path / "study", seeds=(0,))
    home = tmp_path / "home"  # no ~/.ray/auth_token to fall back on
    home.mkdir()
    secured = ray_env("token", RAY_AUTH_TOKEN="0123456789abcdef0123456789abcdef")
    missing = {k: v for k, v in ray_env("token", HOME=str(home)).items() if k != "RAY_AUTH_TOKEN"}
    drivers = {
        "no token": (missing, "token authentication is on (RAY_AUTH_MODE=token) and this driver has no token; set RAY_AUTH_TOKEN"),
        "wrong token": (ray_env("token", HOME=str(home), RAY_AUTH_TOKEN="f" * 32), "the cluster refused this driver's token; set RAY_AUTH_TOKEN"),
        "auth off": (ray_env("disabled", HOME=str(home)), "requires token authentication and this driver has it off; set RAY_AUTH_MODE=token and RAY_AUTH_TOKEN"),
    }  # fmt: skip
    ref = wmt_file("ref", PAIR, "A")
    with cluster(head_cpus=2, env=secured) as c:
        c.wait_for_nodes(1)
        for name, (env, needle) in drivers.items():
            db = tmp_path / "s.db"
            commands = (
                ("ablate", "run", str(path), "--executor", "ray", "--ray-address", c.address, "-q", "--db", str(db)),
                ("score", "-r", str(ref), "-i", str(ref), "-q", "-j", "2", "--executor", "ray", "--ray-address", c.address),
            )  # fmt: skip
            for argv in commands:
                t0 = time.monotonic()
                out = _cli(*argv, "--ray-timeout", "60", env=env)
                lines = out.stderr.strip().splitlines()
                assert out.returncode == 2 and out.stdout == "", (name, out.stderr)
                assert len(lines) == 1 and needle in lines[0], (name, argv[0], out.stderr)
                assert f"--ray-address {c.address}: " in lines[0]
                assert time.monotonic() - t0 < 45, (name, argv[0])  # known before --ray-timeout
                assert sorted(p.name for p in tmp_path.iterdir()) == ["home", "study"]
