"""The runnable examples in the docstrings of the ablation and seed-statistics modules."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "evalab.ablation.plan", "evalab.ablation.grid", "evalab.ablation.store", "evalab.ablation.attempt",
    "evalab.ablation.spec", "evalab.ablation.codeversion", "evalab.ablation.leases",
    "evalab.ablation.progress", "evalab.ablation.status",
    "evalab.stats.seed_stats", "evalab.stats.effects", "evalab.report.plots",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
