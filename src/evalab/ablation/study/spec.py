"""The study file's format and the validated, frozen :class:`Study` it becomes.

:func:`~evalab.ablation.study.load.load_study` reads it, each section checked by its own
module (``metric_keys``, ``variants``, ``command``, ``versions``, ``entry``) before
anything runs. The format::

    [study]
    name = "toy"
    entry = "toy_entry:run"          # or: command = "python train.py {args} seed={seed} out={out}"
    args_style = "hydra"             # command studies: {args} as key=value ("argparse": --key value)
    seeds = [0, 1, 2, 3]
    metrics = ["acc", "loss"]
    primary = "acc"
    higher_is_better = { acc = true, loss = false }
    timeout = 600                    # seconds per run (the run's process group is killed)
    retries = 1                      # extra attempts after a failure
    resources = { cpus = 1, gpus = 0 }   # per run, used by the Ray executor
    code_version = "v1"              # optional; default: hash of the code the entry imports
    evaluate = "toy_entry:evaluate"  # optional: evaluate(config, seed, checkpoint_dir) -> metrics
    definitions = { acc = "share of exact matches, in %" }   # optional: printed under "Metrics"

    [base]                           # the full configuration
    heads = 8
    dropout = 0.1

    [[variant]]
    label = "(A)"
    description = "1 head"
    set = { heads = 1 }
    component = "heads"              # optional: shown beside the eval row with the same component

    [evaluation]                     # evaluation-only keys and their defaults (never in training configs)
    eval_heads = 0

    [[variant]]
    label = "(A') 1 head at eval"
    stage = "eval"                   # no retraining: evaluate the checkpoints of the `from` row
    from = "base"                    # default "base"; any trained row (base, variant, grid cell)
    set = { eval_heads = 1 }         # keys of [evaluation] only
    component = "heads"

    [grid]                           # optional full factorial over keys of [base]
    dropout = [0.0, 0.1]
    heads = [1, 8]

    [reference."BLEU (paper)"]       # optional side-by-side columns, keyed by row label
    base = 25.8
    "(A)" = 24.9
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalab.ablation.contract.codeversion import (
    CodeVersion,
)
from evalab.ablation.contract.computed import ComputedMetric
from evalab.ablation.contract.curves import CurveSettings
from evalab.ablation.contract.template import (
    CommandTemplate,
)
from evalab.ablation.study.display import Display


@dataclass(frozen=True)
class Resources:
    """Per-run resources requested from Ray (the local executor runs one run per slot)."""

    cpus: float = 1.0
    gpus: float = 0.0


@dataclass(frozen=True)
class Variant:
    """One ``[[variant]]`` row: a label, a description and the keys it changes.

    A ``stage = "eval"`` row changes only ``[evaluation]`` keys and is not trained: it
    evaluates the checkpoints of its ``parent`` row (the ``from`` key), seed by seed.
    """

    label: str
    description: str
    settings: dict[str, Any]
    stage: str = "train"
    parent: str = ""  # the trained row an eval row evaluates ("" for a trained row)
    component: str = ""  # links a retrained row and an eval row that remove the same component


@dataclass(frozen=True)
class Study:
    """A validated study file. ``base`` is the full configuration of the base row."""

    path: Path
    name: str
    seeds: tuple[int, ...]
    metrics: tuple[str, ...]
    primary: str
    higher_is_better: dict[str, bool]
    base: dict[str, Any]
    entry: str | None = None
    command: str | None = None
    template: CommandTemplate | None = None  # the parsed command (args_style included)
    description: str = ""
    timeout: float | None = None
    retries: int = 0
    resources: Resources = field(default_factory=Resources)
    code_version: str = ""
    code: CodeVersion | None = None  # the file map and git state behind code_version
    evaluate: str | None = None  # entry point of stage = "eval" rows
    evaluation: dict[str, Any] = field(default_factory=dict)  # evaluation-only keys, defaults
    variants: tuple[Variant, ...] = ()
    grid: dict[str, list[Any]] = field(default_factory=dict)
    reference: dict[str, dict[str, float]] = field(default_factory=dict)
    computed: dict[str, ComputedMetric] = field(default_factory=dict)  # [metrics.NAME] tables
    paired_seeds: bool = False
    shared_folder: bool = False  # Ray nodes see the run folders (else they travel through Ray)
    transfer_limit_mb: float = 1024.0  # the largest run folder that travels through Ray
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    min_effect: dict[str, float] = field(default_factory=dict)
    display: Display = field(default_factory=Display)  # [display]: how the report shows config keys
    curves: CurveSettings = field(
        default_factory=CurveSettings
    )  # [curves]: select and stop_when rules
    definitions: dict[str, str] = field(
        default_factory=dict
    )  # metric -> what it measures ([study] definitions)
    # per stage ("train", "eval"): the code version its runs are keyed and stored with, where
    # the two entry points' code differs (no pinned code_version); else code_version for both
    stage_versions: dict[str, str] = field(default_factory=dict)

    def stage_version(self, stage: str) -> str:
        """The code version runs of ``stage`` are keyed and stored with: training runs hash
        the training entry's imports, eval runs the evaluate entry's (their key also holds
        their trained run's key), so an edit of evaluation code redoes evaluation only."""
        return self.stage_versions.get(stage, self.code_version)

    @property
    def code_versions(self) -> tuple[str, ...]:
        """The code versions of the study's current runs (one, or one per stage)."""
        return tuple(dict.fromkeys([self.stage_version("train"), self.stage_version("eval")]))

    @property
    def returned(self) -> tuple[str, ...]:
        """The metrics each run returns itself (every metric that is not computed by evalab)."""
        return tuple(m for m in self.metrics if m not in self.computed)

    @property
    def directory(self) -> Path:
        """The study file's folder: on the import path (and the cwd) of every run."""
        return self.path.parent

    def better(self, metric: str) -> bool:
        """Whether higher values of ``metric`` are better (default True)."""
        return self.higher_is_better.get(metric, True)
