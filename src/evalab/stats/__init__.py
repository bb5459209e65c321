"""Uncertainty for any corpus metric: bootstrap CIs, paired tests, multiple-test correction.

Everything works on the per-segment stats rows of the Metric contract (``metric.stats``),
so a resample is a matrix product over rows and no metric is recomputed from text.

>>> import numpy as np
>>> from evalab.stats import bootstrap_ci
>>> rows = np.array([[1.0, 1], [0, 1], [1, 1], [1, 1]])
>>> bootstrap_ci(lambda s: s[..., 0] / s[..., 1], rows, n_samples=100, seed=0).score
0.75
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from evalab._lazy import lazy_exports

if TYPE_CHECKING:
    from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, percentile_interval
    from evalab.stats.multiple import holm_bonferroni
    from evalab.stats.paired import (
        DEFAULT_TRIALS,
        PairedTestResult,
        SystemResult,
        paired_approximate_randomization,
        paired_bootstrap,
        paired_test,
    )
    from evalab.stats.resampling import DEFAULT_SEED

#: the package's names and their modules, imported on first use: a command that needs one
#: module of the layer (``evalab score`` the bootstrap) does not start by loading them all
_MODULES = {
    "bootstrap": ("ConfidenceInterval", "bootstrap_ci", "percentile_interval"),
    "multiple": ("holm_bonferroni",),
    "paired": (
        "DEFAULT_TRIALS",
        "PairedTestResult",
        "SystemResult",
        "paired_approximate_randomization",
        "paired_bootstrap",
        "paired_test",
    ),
    "resampling": ("DEFAULT_SEED",),
}

__all__ = [
    "DEFAULT_SEED",
    "DEFAULT_TRIALS",
    "ConfidenceInterval",
    "PairedTestResult",
    "SystemResult",
    "bootstrap_ci",
    "holm_bonferroni",
    "paired_approximate_randomization",
    "paired_bootstrap",
    "paired_test",
    "percentile_interval",
]


__getattr__ = lazy_exports(__name__, _MODULES)


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
