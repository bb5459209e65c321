"""Shared fixtures: the CLI runner and the WMT22 data beside the repository."""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

import budget_ledger

REPO = Path(__file__).resolve().parents[1]
#: scripts that run inside the COMET oracle's own virtual environment (they import comet and
#: pytorch_lightning, which evalab's environment does not have): not collected here, where
#: --doctest-modules would import every module under tests/
collect_ignore = ["metrics/comet_oracle/make_checkpoint.py", "metrics/comet_oracle/predict.py"]
#: the shared data folder (``../shared`` beside the repository, or $EVALAB_SHARED: a worktree
#: elsewhere points it at the data)
SHARED = Path(os.environ.get("EVALAB_SHARED", REPO.parent / "shared"))
WMT22 = Path(os.environ.get("EVALAB_WMT22", SHARED / "wmt22"))


@dataclass
class CliResult:
    exit_code: int
    stdout: str
    stderr: str


@pytest.fixture
def run_cli(capsys, monkeypatch):
    """Run ``evalab ARGS...`` in-process; returns exit code, stdout and stderr."""
    from evalab.cli import main

    def run(*args: str, stdin: str | None = None) -> CliResult:
        if stdin is not None:
            raw = stdin.encode("utf-8")
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(raw), encoding="utf-8"))
        capsys.readouterr()
        code = main([str(a) for a in args])
        captured = capsys.readouterr()
        return CliResult(code, captured.out, captured.err)

    return run


@pytest.fixture(scope="module")
def ray_instance(request: pytest.FixtureRequest) -> Iterator[ModuleType]:
    """A local Ray instance in this process (2 CPUs, no dashboard, loopback only) for the
    tests of one module, shut down after them: one per module that asks, in the run's ledger
    (:mod:`budget_ledger`; a second start for the same module, on another xdist worker or
    after a teardown, is an error here and in tests/test_budget.py). Not one per session: while this process has joined Ray, evalab uses
    that instance for every command, whatever ``--ray-address`` says, so the modules in
    between must run without one."""
    ray = pytest.importorskip("ray")
    key = f"ray:{request.module.__name__}"
    if budget_ledger.counts("ray")[key]:
        pytest.fail(f"a second Ray instance for {key} this run (its tests must share a worker)")
    with pytest.MonkeyPatch.context() as mp:
        # a ~/.ray/auth_token turns token auth on; Ray rewrites 127.0.0.1 unless the ip is given
        mp.setenv("RAY_AUTH_MODE", "disabled")
        ray.init(
            num_cpus=2, include_dashboard=False, _node_ip_address="127.0.0.1", log_to_driver=False
        )
        budget_ledger.record("ray", key)
        try:
            yield ray
        finally:
            ray.shutdown()


def kernel_or_fallback(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, kernel: str
) -> str:
    """For a fixture parametrized ``["kernel", "python"]``: ``python`` runs the test on the
    pure-Python fallback (``evalab._kernel.<kernel>`` set to None), ``kernel`` on the
    compiled one (skipped where it is not built)."""
    from evalab import _kernel

    if request.param == "python":
        monkeypatch.setattr(_kernel, kernel, None)
    elif getattr(_kernel, kernel) is None:
        pytest.skip(f"evalab's {kernel} kernel is not built")
    return str(request.param)


@pytest.fixture(scope="session")
def wmt22() -> Path:
    """The WMT22 folder (``../shared/wmt22`` beside the repo, or $EVALAB_WMT22)."""
    if not (WMT22 / "official-scores.tsv").exists():
        pytest.skip(f"WMT22 data not found at {WMT22}")
    return WMT22


def wmt_file(kind: str, pair: str, name: str) -> Path:
    """Path of a WMT22 file: kind is 'src', 'ref' or 'hyp'; name the ref ID or system."""
    tgt = pair.split("-")[1]
    if kind == "src":
        return WMT22 / "sources" / f"generaltest2022.{pair}.src.{pair.split('-')[0]}"
    folder = "references" if kind == "ref" else "system-outputs"
    return WMT22 / folder / f"generaltest2022.{pair}.{kind}.{name}.{tgt}"


def wmt_systems(pair: str) -> list[str]:
    """System names of a pair, sorted."""
    tgt = pair.split("-")[1]
    prefix = f"generaltest2022.{pair}.hyp."
    return sorted(
        p.name[len(prefix) : -len(tgt) - 1]
        for p in (WMT22 / "system-outputs").glob(f"{prefix}*.{tgt}")
    )


def read_lines(path: Path) -> list[str]:
    """Lines of a UTF-8 file split on \\n only (as evalab reads them)."""
    from evalab.io import read_segments

    return read_segments(path)


def write_wmt_subset(
    folder: Path, pair: str, systems: list[str], n: int, ref: str = "A"
) -> tuple[str, list[str]]:
    """The first ``n`` segments of a WMT22 reference and systems, written into ``folder``:
    ``(reference path, system paths)`` in the order given."""
    tgt = pair.split("-")[1]

    def write(name: str, kind: str, which: str) -> str:
        path = folder / f"{name}.{tgt}"
        path.write_text(
            "\n".join(read_lines(wmt_file(kind, pair, which))[:n]) + "\n", encoding="utf-8"
        )
        return str(path)

    return write("ref", "ref", ref), [write(s, "hyp", s) for s in systems]


ALPACA = Path(os.environ.get("EVALAB_ALPACA_EVAL", REPO.parent / "shared" / "alpaca-eval"))


@pytest.fixture(scope="session")
def alpaca_annotations(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """AlpacaEval 2.0's annotation files (``../shared/alpaca-eval``), unpacked once a session."""
    import tarfile

    archive = ALPACA / "annotations.tar.xz"
    if not archive.exists():
        pytest.skip(f"AlpacaEval data not found at {ALPACA}")
    folder = tmp_path_factory.mktemp("alpaca-eval")
    with tarfile.open(archive) as tar:
        tar.extractall(folder, filter="data")
    return folder / "annotations"


def pytest_configure(config: pytest.Config) -> None:
    """The run's ledger (:mod:`budget_ledger`), named by its first process before xdist
    starts the workers, which inherit the variable."""
    if not hasattr(config, "workerinput"):
        folder = tempfile.mkdtemp(prefix="evalab-test-ledger-")
        os.environ[budget_ledger.ENV] = os.path.join(folder, "ledger.jsonl")


#: the xdist group of every test that starts a Ray instance
RAY_GROUP = "ray"


def one_worker_group(item: pytest.Item) -> str | None:
    """The xdist group of a test that shares a costly fixture, so that ``--dist loadgroup``
    builds it once: a fixture of module (class, package) scope, or of session scope defined
    in a test module, puts the test with the rest of its module. Session fixtures of a
    conftest are built at most once per worker; tests of no such fixture go anywhere.
    The tests marked ``ray`` (they start Ray instances) are one group, ``"ray"``, whatever
    their module: two instances on one machine at once contend (a driver timed out joining
    its cluster while the other worker's instance ran, in a CI rehearsal)."""
    if item.get_closest_marker("ray") is not None:
        return RAY_GROUP
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return None
    for name in info.names_closure:
        for fixturedef in info.name2fixturedefs.get(name, ()):
            if fixturedef.scope in ("module", "class", "package") or (
                fixturedef.scope == "session" and fixturedef.baseid.endswith(".py")
            ):
                return item.nodeid.split("::")[0]
    return None


def pytest_itemcollected(item: pytest.Item) -> None:
    """Mark the tests that share a costly fixture (:func:`one_worker_group`)."""
    group = one_worker_group(item)
    if group is not None:
        item.add_marker(pytest.mark.xdist_group(group))


def _groups_file() -> Path | None:
    ledger = budget_ledger.path()
    return None if ledger is None else ledger.with_name("xdist-groups.json")


def pytest_xdist_make_scheduler(config: pytest.Config, log: object) -> object:
    """``--dist loadgroup`` that works with pytest 9: xdist 3.8 marks a group by appending
    ``@group`` to a test's ``_nodeid``, which pytest 9 no longer reads (its node ids are
    structured), so every test went anywhere and a module's Ray instance started on both
    workers (measured: the ledger counted two). Here the workers write the groups they
    collected beside the run's ledger and the first process schedules by them: a group is
    one unit of work, every other test a unit of its own (as ``--dist load``)."""
    if config.getvalue("dist") != "loadgroup":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class GroupScheduling(LoadScopeScheduling):
        groups: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self.groups is None:  # read once every worker has collected
                path = _groups_file()
                self.groups = json.loads(path.read_text()) if path and path.is_file() else {}
            return self.groups.get(nodeid, nodeid)

    return GroupScheduling(config, log)  # type: ignore[arg-type]


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """tests/test_budget.py runs last, when the run's ledger is complete in this process;
    an xdist worker writes the groups of what it collected for the first process's
    scheduler (every worker collects the same tests)."""
    items.sort(key=lambda item: item.nodeid.startswith("tests/test_budget.py"))
    path = _groups_file()
    if hasattr(config, "workerinput") and path is not None:
        groups = {
            item.nodeid: f"@{mark.args[0]}"
            for item in items
            for mark in item.iter_markers("xdist_group")
        }
        aside = path.with_suffix(f".{os.getpid()}.tmp")
        aside.write_text(json.dumps(groups))
        aside.replace(path)


#: what one run may start at most once per key (the ledger's events: Ray instances per
#: module; the oracles' venvs; the COMET and MetricX oracles' checkpoints and answers and
#: the tiny MetricX checkpoints, per key)
ONCE_PER_KEY = (
    "ray",
    "venv",
    "checkpoints",
    "predict",
    "metricx-checkpoints",
    "metricx-predict",
    "metricx-tiny",
)


def twice_this_run() -> dict[str, int]:
    """The ledger's keys started more than once this run (every worker's), by event:key."""
    return {
        f"{event}:{key}": n
        for event in ONCE_PER_KEY
        for key, n in budget_ledger.counts(event).items()
        if n > 1
    }


def pytest_sessionfinish(session: pytest.Session) -> None:
    """The first process checks the whole run's ledger once every worker is done (with
    xdist, tests/test_budget.py may run before the other worker's last test): a start
    twice under one key fails the run."""
    if hasattr(session.config, "workerinput") or budget_ledger.path() is None:
        return
    twice = twice_this_run()
    session.config.stash[_TWICE] = twice
    if twice and session.exitstatus == pytest.ExitCode.OK:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_TWICE = pytest.StashKey[dict[str, int]]()


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """One line of what the run started (the budget's drivers), and what it started twice."""
    if hasattr(config, "workerinput") or budget_ledger.path() is None:
        return
    events = sorted({str(e["event"]) for e in budget_ledger.entries()})
    started = ", ".join(f"{ev} {sum(budget_ledger.counts(ev).values())}" for ev in events)
    workers = getattr(config.option, "numprocesses", None) or 0
    terminalreporter.write_line(
        f"test budget: {started or 'nothing started'}; xdist workers {workers}"
    )
    twice = config.stash.get(_TWICE, {})
    if twice:
        terminalreporter.write_line(
            f"test budget FAILED: started twice this run: {twice}", red=True
        )


def pytest_unconfigure(config: pytest.Config) -> None:
    """The first process removes the run's ledger once the run is reported."""
    ledger = budget_ledger.path()
    if hasattr(config, "workerinput") or ledger is None:
        return
    ledger.unlink(missing_ok=True)
    with contextlib.suppress(OSError):
        ledger.parent.rmdir()
