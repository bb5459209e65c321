"""Fixtures shared by the metric tests."""

from __future__ import annotations

import importlib.util

import pytest
from tests.conftest import kernel_or_fallback


@pytest.fixture(scope="module")
def one_torch_thread():
    """One torch thread (for modules that run COMET): on a loaded machine, OpenMP threads
    waiting on each other cost the oracle 5x and the contract test's small batches 15x
    (measured). Without torch there is nothing to set."""
    if importlib.util.find_spec("torch") is None:
        yield
        return
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(params=["kernel", "python"])
def edit_backend(request, monkeypatch) -> str:
    """Run a test with the edit-distance C kernel and with its pure-Python fallback."""
    return kernel_or_fallback(request, monkeypatch, "ed")
