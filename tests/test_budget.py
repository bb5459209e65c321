"""The test budget's drivers, counted rather than timed (``make test`` ≤ 8 minutes on 2
cores; docs/development.md): what this session built or started once per key stays once.

Some read the run's ledger (``tests/budget_ledger.py``: one file for the run, every xdist
worker's starts in it), so they run after the expensive fixtures' tests (``tests/conftest.py``
puts this file last); where those tests were not selected, the ledger is empty and there is
nothing to check. Under xdist the other worker may still be running when these run: the
first process checks the whole ledger again at the end of the run (``pytest_sessionfinish``
in ``tests/conftest.py``), and the Ray fixture refuses a second start for its module.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.conftest import ONCE_PER_KEY, RAY_GROUP, REPO, one_worker_group

import budget_ledger
from docs.examples import parse_blocks, variables_before
from docs.test_examples import IN_PROCESS, PAGES, in_process_argv
from metrics import comet_oracle

#: the docs' console commands that need bash (pipes, redirections, globs, `python`, `sed`,
#: page variables): each is a process of its own, which costs a second or more where it
#: imports torch; show a plain `evalab ...` where the shell is not the point (74 at the
#: last count)
BASH_COMMANDS_AT_MOST = 80


#: `make test` spreads the suite over this many xdist workers (the machine has 2 cores);
#: each worker pays the session fixtures and the imports of torch once
XDIST_WORKERS = 2


def test_the_comet_oracle_is_cached_outside_the_checkout():
    # a fresh clone (CI) finds the venv, the checkpoints and the oracle's answers built
    assert not comet_oracle.CACHE.resolve().is_relative_to(REPO)
    assert comet_oracle.VENV.parent == comet_oracle.CACHE
    assert comet_oracle.VENV_KEY in comet_oracle.VENV.name


def test_the_comet_oracle_built_and_ran_at_most_once_per_key_this_run():
    # every worker's builds (the ledger), and this process's own count agrees with its share
    for event in ("venv", "checkpoints", "predict"):
        twice = {k: n for k, n in budget_ledger.counts(event).items() if n > 1}
        assert not twice, f"{event} built again under the same key: {twice}"
    assert sum(budget_ledger.counts("venv").values()) <= 1
    mine = {(ev, key) for ev, key in comet_oracle.BUILDS}
    assert mine <= {(str(e["event"]), str(e["key"])) for e in budget_ledger.entries()}


def test_one_local_ray_instance_per_module_that_asks():
    starts = budget_ledger.counts("ray")
    assert all(n == 1 for n in starts.values()), starts
    # the two modules with in-process Ray (the 20-metric family shares one actor pool:
    # its fixture asserts it); a third is a budget question
    assert len(starts) <= 2, starts


def test_docs_commands_run_in_this_process_unless_they_need_bash():
    bash = []
    for page in PAGES:
        blocks = parse_blocks(page)
        for block in blocks:
            if block.modes & {"skip", "slow"}:
                continue
            for c in block.commands:
                if in_process_argv(c.script, [*variables_before(blocks, c)]) is None:
                    bash.append(f"{page.name}:{c.line}")
    assert len(bash) <= BASH_COMMANDS_AT_MOST, (
        f"{len(bash)} docs commands run in a shell of their own "
        f"(budget {BASH_COMMANDS_AT_MOST}): {bash}"
    )
    # and the run ran the others in process (when the docs tests ran; every worker's)
    docs = budget_ledger.counts("docs")
    assert not docs or docs["in process"] > docs["bash"], docs
    assert not IN_PROCESS or IN_PROCESS["in process"] > IN_PROCESS["bash"], IN_PROCESS


def test_make_test_and_test_slow_run_on_two_xdist_workers_grouped_by_shared_fixture():
    # the README's test command is `make test`; its target spreads the suite over the
    # cores with the groups of tests/conftest.py (`--dist loadgroup`)
    makefile = (REPO / "Makefile").read_text(encoding="utf-8")
    for name in ("test", "test-slow"):  # CI runs both (.ci/run)
        target = re.search(rf"^{name}: .*\n((?:\t.*\n)+)", makefile, re.MULTILINE)
        assert target, f"no `{name}` target in the Makefile"
        recipe = target[1]
        assert f"-n {XDIST_WORKERS}" in recipe and "--dist loadgroup" in recipe, recipe
    assert "make test" in (REPO / "README.md").read_text(encoding="utf-8")
    extra = (REPO / "pyproject.toml").read_text(encoding="utf-8")
    assert re.search(r'"pytest-xdist[>=<~]', extra), "pytest-xdist is not in the test extra"


def test_tests_sharing_a_module_fixture_share_a_worker(request):
    # every test that starts Ray (marked `ray`: its module's instance, or a cluster of its
    # own) is in one xdist group: a module's instance starts once however the tests are
    # spread (the fixture also refuses a second), and never two instances run at once
    ray_tests = [
        item
        for item in request.session.items
        if "ray_instance" in item.fixturenames or item.get_closest_marker("ray")
    ]
    for item in ray_tests:
        assert item.get_closest_marker("ray") is not None, item.nodeid
        assert one_worker_group(item) == RAY_GROUP, item.nodeid
        # the mark the scheduler reads (tests/conftest.py: pytest_xdist_make_scheduler)
        assert [m.args[0] for m in item.iter_markers("xdist_group")] == [RAY_GROUP]
    # a test of function-scoped fixtures only goes to whichever worker is free
    assert one_worker_group(request.node) is None


def test_the_run_checks_its_whole_ledger_at_the_end():
    # with xdist this file may run while the other worker still starts things: the first
    # process reads the whole ledger after every worker is done (tests/conftest.py)
    assert set(ONCE_PER_KEY) == {"ray", "venv", "checkpoints", "predict"} | {
        "metricx-checkpoints",
        "metricx-predict",
        "metricx-tiny",
    }
    assert budget_ledger.path() is not None


def test_the_ledger_sums_every_process_of_the_run(tmp_path, monkeypatch):
    # a start in this process and one in another (an xdist worker) are two starts of the key
    monkeypatch.setenv(budget_ledger.ENV, str(tmp_path / "ledger.jsonl"))
    budget_ledger.record("ray", "ray:some_module")
    tests = str(Path(budget_ledger.__file__).parent)
    script = "import budget_ledger; budget_ledger.record('ray', 'ray:some_module')"
    env = {**os.environ, "PYTHONPATH": tests}
    subprocess.run([sys.executable, "-c", script], check=True, env=env)
    assert budget_ledger.counts("ray") == {"ray:some_module": 2}
    assert len(budget_ledger.processes("ray")) == 2
