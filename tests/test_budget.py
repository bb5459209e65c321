"""The test budget's drivers, counted rather than timed (``make test`` ≤ 8 minutes on 2
cores; docs/development.md): what this session built or started once per key stays once.

Some read counters the expensive fixtures keep, so they run after those fixtures' tests
(pytest collects ``tests/ablation``, ``tests/docs`` and ``tests/metrics`` before this file);
where those tests were not selected, the counters are empty and there is nothing to check.
The counters are read from the modules as pytest imported them (``conftest``,
``docs.test_examples``, ``metrics.comet_oracle``: ``tests/`` is their root), not from
second copies under ``tests.``.
"""

from __future__ import annotations

import sys

from tests.conftest import REPO

from docs.examples import parse_blocks, variables_before
from docs.test_examples import IN_PROCESS, PAGES, in_process_argv
from metrics import comet_oracle

#: the docs' console commands that need bash (pipes, redirections, globs, `python`, `sed`,
#: page variables): each is a process of its own, which costs a second or more where it
#: imports torch; show a plain `evalab ...` where the shell is not the point (74 at the
#: last count)
BASH_COMMANDS_AT_MOST = 80


def _starts() -> dict[str, int]:
    return dict(sys.modules["conftest"].STARTS)


def test_the_comet_oracle_is_cached_outside_the_checkout():
    # a fresh clone (CI) finds the venv, the checkpoints and the oracle's answers built
    assert not comet_oracle.CACHE.resolve().is_relative_to(REPO)
    assert comet_oracle.VENV.parent == comet_oracle.CACHE
    assert comet_oracle.VENV_KEY in comet_oracle.VENV.name


def test_the_comet_oracle_built_and_ran_at_most_once_per_key_this_session():
    twice = {k: n for k, n in comet_oracle.BUILDS.items() if n > 1}
    assert not twice, f"built again under the same key: {twice}"
    assert sum(1 for event, _ in comet_oracle.BUILDS if event == "venv") <= 1


def test_one_local_ray_instance_per_module_that_asks():
    starts = _starts()
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
    # and the session ran the others in process (when the docs tests ran)
    assert not IN_PROCESS or IN_PROCESS["in process"] > IN_PROCESS["bash"], IN_PROCESS
