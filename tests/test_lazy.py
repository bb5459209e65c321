"""The lazy re-exports every package facade uses (``evalab._lazy``)."""

from __future__ import annotations

import importlib

import pytest


@pytest.mark.parametrize("package", ["evalab", "evalab.stats", "evalab.report", "evalab.ablation"])
def test_an_unknown_name_is_an_attribute_error_naming_the_package(package: str) -> None:
    module = importlib.import_module(package)
    with pytest.raises(AttributeError, match=rf"module '{package}' has no attribute 'nope'"):
        module.nope  # noqa: B018


def test_a_name_is_imported_once_and_kept_in_the_package() -> None:
    stats = importlib.import_module("evalab.stats")
    from evalab.stats.paired import paired_test

    assert stats.paired_test is paired_test
    assert vars(stats)["paired_test"] is paired_test  # later look-ups skip __getattr__
