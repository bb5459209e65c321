"""The study file: TOML in, a validated, frozen :class:`Study` out.

Everything is checked *before anything runs*; each problem raises
:class:`~evalab.errors.SettingsError` with the file, the key (and its line when it can be
found) and what would be right. The format::

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

import copy
import dataclasses
import json
import math
import re
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from evalab.ablation.study import keys
from evalab.ablation.study.codeversion import (
    CodeVersion,
    DigestCache,
    declared_inputs,
    derive_code_version,
)
from evalab.ablation.study.computed import ComputedMetric, parse_tables
from evalab.ablation.study.curves import CurveSettings, parse_settings
from evalab.ablation.study.display import Display, check_rows, parse_display
from evalab.ablation.study.grid import BASE_LABEL, grid_cells
from evalab.ablation.study.keys import is_number
from evalab.ablation.study.template import (
    ARGS_STYLES,
    CommandTemplate,
    TemplateError,
    flat_keys,
    parse_template,
)
from evalab.errors import InputError, SettingsError
from evalab.io import decode_utf8

#: [study] key -> what it means (the "missing" refusals show it)
STUDY_KEYS = keys.helps("study")
#: keys of a run's result (artifacts, per_example) and columns of `ablate import` (row,
#: config, seed, outputs): a metric under one of these names would be taken for them
RESERVED_METRIC_NAMES = frozenset({"artifacts", "per_example", "row", "config", "seed", "outputs"})
TOP_KEYS = keys.names("")
VARIANT_KEYS = keys.names("variant")
STAGES = keys.keys_of("variant")["stage"].allowed
RESOURCE_KEYS = keys.names("study.resources")


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


class _Where:
    """Builds error messages that name the file and, when found, the line of a key."""

    def __init__(self, path: Path, text: str) -> None:
        self.path = path
        self.lines = text.splitlines()

    def line_of(self, key: str, after: str | None = None) -> int | None:
        start = 0
        if after is not None:
            pat = re.compile(r"^\s*\[+\s*" + re.escape(after) + r"\s*\]+")
            hits = [i for i, ln in enumerate(self.lines) if pat.match(ln)]
            if hits:
                start = hits[0]
        pat = re.compile(
            r"^\s*[\"']?"
            + re.escape(key)
            + r"[\"']?\s*=|[{,]\s*[\"']?"
            + re.escape(key)
            + r"[\"']?\s*="
        )
        for i in range(start, len(self.lines)):
            if pat.search(self.lines[i]):
                return i + 1
        return None

    def error(
        self, where: str, message: str, key: str | None = None, section: str | None = None
    ) -> SettingsError:
        line = self.line_of(key, section) if key else None
        loc = f"{self.path}:{line}" if line else str(self.path)
        return SettingsError(f"{loc}: {where}: {message}")


def _stage_versions(
    directory: Path,
    given: dict[str, Any],
    module_files: list[str | None],
    declared: list[Path],
    computed: dict[str, ComputedMetric],
    curves: CurveSettings,
    cache: DigestCache,
) -> dict[str, str]:
    """Each stage's own code version (training: what ``entry`` imports, evaluation: what
    ``evaluate`` imports), so evaluation edits redo evaluation only."""
    out = {}
    for stage, point, files in (
        ("train", given["entry"], module_files[:1]),
        ("eval", given["evaluate"], module_files[1:]),
    ):
        part = derive_code_version(
            directory,
            point,
            given["command"] if stage == "train" else None,
            [f for f in files if f],
            inputs=declared,
            cache=cache,
        )
        out[stage] = _with_curves(_with_outputs(part.version, computed), curves)
    return out


def _section(data: dict[str, Any], name: str) -> Any:
    """A top-level section of the study file, or its declared default (a copy)."""
    return data[name] if name in data else copy.copy(keys.keys_of("")[name].default)


def load_study(path: str | Path, *, check_entry: bool = True) -> Study:
    """Read and validate a study file; raise :class:`SettingsError` on the first problem.

    ``check_entry`` imports the entry point in a subprocess (with the study's folder on
    ``sys.path``) so a typo fails here rather than in every run.
    """
    p = Path(path)
    if not p.exists():
        raise SettingsError(f"{p}: no such study file")
    if p.is_dir():
        raise SettingsError(f"{p}: is a directory, expected a study .toml file")
    text = _read_utf8(p)
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SettingsError(f"{p}: not valid TOML: {exc}") from exc
    where = _Where(p.resolve(), text)
    return _build(p.resolve(), data, where, check_entry)


def _read_utf8(p: Path) -> str:
    try:
        # a byte-order mark (which some editors write) is not TOML: it is dropped
        return decode_utf8(
            p.read_bytes(), str(p), expected="a study file is UTF-8 TOML"
        ).removeprefix("\ufeff")
    except InputError as exc:
        raise SettingsError(str(exc)) from exc


def _study_table(data: dict[str, Any], w: _Where) -> dict[str, Any]:
    """The sections checked against the key table, and every ``[study]`` key's value (or
    default), each checked on its own; exactly one of ``entry`` and ``command``."""
    for key in data:
        if key not in TOP_KEYS:
            raise w.error(
                f"top-level key {key!r}",
                f"unknown; expected sections {', '.join('[' + k + ']' for k in TOP_KEYS)}",
                key,
            )
    if "study" not in data or not isinstance(data["study"], dict):
        raise w.error(
            "[study]",
            "missing; a study file needs a [study] table (name, entry or command, seeds, metrics)",
        )
    st = data["study"]
    for key in st:
        if key not in STUDY_KEYS:
            known = ", ".join(STUDY_KEYS)
            raise w.error(f"[study] key {key!r}", f"unknown; known keys: {known}", key, "study")
    given = keys.checked_values(
        "study",
        st,
        lambda key, why, missing: w.error(
            f"[study] {key.name}", why, None if missing else key.name, None if missing else "study"
        ),
    )
    if (given["entry"] is None) == (given["command"] is None):
        raise w.error(
            "[study]",
            "give exactly one of entry = 'module:function' or command = '... {config} {seed} {out}'",
        )
    return given


@dataclass(frozen=True)
class _Rows:
    """The sections that define the rows: base, evaluation keys, variants, grid, reference, display."""

    base: dict[str, Any]
    evaluation: dict[str, Any]
    variants: list[Variant]
    grid: dict[str, list[Any]]
    template: CommandTemplate | None
    reference: dict[str, dict[str, float]]
    display: Display


def _rows(path: Path, data: dict[str, Any], given: dict[str, Any], w: _Where) -> _Rows:
    base = data.get("base")
    if not isinstance(base, dict) or not base:
        raise w.error(
            "[base]",
            "missing or empty; [base] holds the full configuration every variant starts from",
        )
    _check_plain(base, "[base]", w)
    evaluation = _evaluation(_section(data, "evaluation"), base, w)
    variants = _variants(_section(data, "variant"), base, evaluation, w)
    grid = _grid(_section(data, "grid"), base, w)
    _check_eval_rows(variants, given["evaluate"], grid_cells(base, grid), w)
    # a base alone (no variants, no grid) is still a study: seed variance
    template = _template(data["study"], given["command"], _trained_configs(base, variants, grid), w)
    labels = [BASE_LABEL, *(v.label for v in variants)]
    reference = _reference(_section(data, "reference"), labels, grid, base, w)
    display = parse_display(
        _section(data, "display"),
        [*base, *evaluation],
        lambda where, msg, key: w.error(where, msg, key, "display"),
    )
    _check_display_rows(display, path, base, evaluation, variants, grid, w)
    return _Rows(base, evaluation, variants, grid, template, reference, display)


@dataclass(frozen=True)
class _Code:
    """What the code version is derived from, and the versions it yields."""

    code: CodeVersion
    curves: CurveSettings
    stage_versions: dict[str, str]


def _code(
    path: Path,
    given: dict[str, Any],
    data: dict[str, Any],
    computed: dict[str, ComputedMetric],
    cache: DigestCache,
    w: _Where,
    check_entry: bool,
) -> _Code:
    entry, evaluate, code_version = given["entry"], given["evaluate"], given["code_version"]
    if check_entry:
        for key, point in (("entry", entry), ("evaluate", evaluate)):
            if point is not None:
                check_entry_imports(point, path.parent, w, key)
    # found without importing, so `status` and `report` (which skip the import check)
    # derive the same code version as `run`; it covers both entry points' code
    module_files = [find_module_file(p, path.parent) for p in (entry, evaluate) if p is not None]
    declared = _inputs(given["inputs"], path.parent, w)
    code = derive_code_version(
        path.parent,
        entry,
        given["command"],
        [f for f in module_files if f],
        pinned=code_version,
        inputs=declared,
        cache=cache,
    )
    curves = _curves(_section(data, "curves"), entry, w)
    stage_versions = (
        _stage_versions(path.parent, given, module_files, declared, computed, curves, cache)
        if evaluate is not None and code_version is None
        else {}
    )
    return _Code(code, curves, stage_versions)


def _build(path: Path, data: dict[str, Any], w: _Where, check_entry: bool) -> Study:
    given = _study_table(data, w)
    st = data["study"]
    cache = DigestCache()
    metrics, computed = _metrics(st, _section(data, "metrics"), path.parent, w, cache)
    primary = given["primary"] if "primary" in st else metrics[0]
    if primary not in metrics:
        raise w.error(
            "[study] primary", f"{primary!r} is not one of metrics {metrics!r}", "primary", "study"
        )
    hib = _directions(given["higher_is_better"], metrics, computed, w)
    bounds, min_effect = _study_options(given, metrics, primary, computed, w)
    definitions = _definitions(given["definitions"], metrics, computed, w)
    resources = _resources(given["resources"], w)
    rows = _rows(path, data, given, w)
    code = _code(path, given, data, computed, cache, w, check_entry)
    cache.save()
    timeout = given["timeout"]
    return Study(
        curves=code.curves,
        computed=computed,
        paired_seeds=given["paired_seeds"],
        shared_folder=given["shared_folder"],
        transfer_limit_mb=float(given["transfer_limit_mb"]),
        bounds=bounds,
        min_effect=min_effect,
        path=path,
        name=given["name"],
        seeds=tuple(given["seeds"]),
        metrics=tuple(metrics),
        primary=primary,
        higher_is_better=hib,
        base=dict(rows.base),
        entry=given["entry"],
        command=given["command"],
        template=rows.template,
        description=given["description"],
        timeout=float(timeout) if timeout is not None else None,
        retries=given["retries"],
        resources=resources,
        code_version=_with_curves(_with_outputs(code.code.version, computed), code.curves),
        code=code.code,
        variants=tuple(rows.variants),
        grid=rows.grid,
        reference=rows.reference,
        evaluate=given["evaluate"],
        evaluation=dict(rows.evaluation),
        display=rows.display,
        definitions=definitions,
        stage_versions=code.stage_versions,
    )


def _definitions(
    raw: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: _Where
) -> dict[str, str]:
    """``[study] definitions``: metric -> what it measures (a computed metric has its signature)."""
    if not isinstance(raw, dict) or not all(isinstance(v, str) and v.strip() for v in raw.values()):
        raise w.error(
            "[study] definitions",
            'must be a table such as { acc = "share of exact matches, in %" }',
            "definitions",
            "study",
        )
    for m in raw:
        if m not in metrics or m in computed:
            why = (
                "is computed by evalab: its signature defines it"
                if m in computed
                else f"is not in metrics {metrics!r}"
            )
            raise w.error(
                "[study] definitions", f"names {m!r}, which {why}", "definitions", "study"
            )
    return dict(raw)


def _check_display_rows(
    display: Display,
    path: Path,
    base: dict[str, Any],
    evaluation: dict[str, Any],
    variants: list[Variant],
    grid: dict[str, list[Any]],
    w: _Where,
) -> None:
    """Derived columns and value labels against each row's configuration as the report shows it."""
    if not display.derived and not display.values:
        return
    check_rows(
        display,
        _shown_configs(base, evaluation, variants, grid),
        lambda where, msg, key: w.error(where, msg, key, "display"),
    )


def _shown_configs(
    base: dict[str, Any],
    evaluation: dict[str, Any],
    variants: list[Variant],
    grid: dict[str, list[Any]],
) -> list[tuple[str, dict[str, Any]]]:
    """Each row's configuration as the report shows it ([evaluation] defaults included), built
    here rather than by ``plan.study_rows``: plan imports this module, so importing it back
    would be a cycle. ``tests/ablation/study/test_display.py`` checks both agree."""
    cells = grid_cells(base, grid)
    trained = {BASE_LABEL: dict(base), **{c.label: dict(c.config) for c in cells}}
    trained.update({v.label: {**base, **v.settings} for v in variants if v.stage == "train"})
    rows = [(BASE_LABEL, {**evaluation, **base})]
    for v in variants:
        parent = trained[v.label] if v.stage == "train" else trained[v.parent]
        rows.append(
            (
                v.label,
                {**evaluation, **parent}
                if v.stage == "train"
                else {**parent, **evaluation, **v.settings},
            )
        )
    return rows + [(c.label, {**evaluation, **c.config}) for c in cells]


def _metrics(
    st: dict[str, Any], tables: Any, directory: Path, w: _Where, cache: DigestCache
) -> tuple[list[str], dict[str, ComputedMetric]]:
    """The study's metrics: those runs return (``[study] metrics``), then those evalab
    computes from the runs' output files (``[metrics.NAME]`` tables)."""
    computed = parse_tables(tables, directory, w.error, cache)
    returned = st.get("metrics", [] if computed else None)
    if returned is None:
        raise w.error(
            "[study] metrics",
            "missing (list of metric names the run returns; or declare [metrics.NAME] "
            "tables that evalab computes from each run's output file)",
        )
    if (
        not isinstance(returned, list)
        or not all(isinstance(m, str) and m for m in returned)
        or not (returned or computed)
    ):
        raise w.error(
            "[study] metrics", "must be a non-empty list of metric names", "metrics", "study"
        )
    if len(set(returned)) != len(returned):
        raise w.error("[study] metrics", f"has duplicates: {returned!r}", "metrics", "study")
    for m in [*returned, *computed]:
        where, key = ("[study] metrics", "metrics") if m in returned else (f"[metrics.{m!r}]", None)
        if not m.strip() or m != m.strip() or not m.isprintable():
            # it names a column of every report and a field of status lines and CSV headers
            raise w.error(
                where,
                f"{m!r} is no metric name: give printable text without leading or trailing spaces "
                "(e.g. bleu)",
                key,
                "study",
            )
        if m in RESERVED_METRIC_NAMES or m.startswith("config."):
            raise w.error(
                where,
                f"{m!r} cannot name a metric: a run's result and an imported record use it for "
                f"something else ({', '.join(sorted(RESERVED_METRIC_NAMES))}, config.KEY); rename it",
                key,
                "study",
            )
    both = [m for m in returned if m in computed]
    if both:
        raise w.error(
            "[study] metrics",
            f"{both[0]!r} is also a [metrics.{both[0]}] table; a metric is either returned "
            "by the run (listed here) or computed by evalab from its outputs (the table), not both",
            "metrics",
            "study",
        )
    return [*returned, *computed], computed


def _directions(
    hib: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: _Where
) -> dict[str, bool]:
    """``higher_is_better`` per metric: as given, else the registry metric's own direction
    for a computed metric (TER, WER: lower is better), else True."""
    if isinstance(hib, bool):
        hib = dict.fromkeys(metrics, hib)
    if not isinstance(hib, dict):
        raise w.error(
            "[study] higher_is_better",
            "must be a table such as { acc = true, loss = false }",
            "higher_is_better",
            "study",
        )
    for m, v in hib.items():
        if m not in metrics:
            raise w.error(
                "[study] higher_is_better",
                f"names {m!r}, which is not in metrics {metrics!r}",
                "higher_is_better",
                "study",
            )
        if not isinstance(v, bool):
            raise w.error(
                "[study] higher_is_better",
                f"{m} must be true or false, got {v!r}",
                "higher_is_better",
                "study",
            )
    out = {}
    for m in metrics:
        default = (
            bool(getattr(computed[m].build(), "higher_is_better", True)) if m in computed else True
        )
        out[m] = bool(hib.get(m, default))
        if m in computed and out[m] != default:
            # a computed metric's direction is its registry metric's: the other one would
            # call every worse row better
            raise w.error(
                "[study] higher_is_better",
                f"makes {m} ({computed[m].metric}) "
                f"{'higher' if out[m] else 'lower'}-is-better, but {computed[m].metric} is "
                f"{'higher' if default else 'lower'}-is-better; leave computed metrics out of it (a table "
                "such as { acc = true } names the returned ones)",
                "higher_is_better",
                "study",
            )
    return out


def own_bounds(spec: ComputedMetric | None) -> tuple[float, float] | None:
    """The interval every score of a computed metric lies in (its registry metric's)."""
    if spec is None:
        return None
    from evalab.metrics.registry import metric_class

    cls = metric_class(spec.metric)
    return cls.bounds if cls.bounds is not None else (0.0, float(cls.scale))


def _study_options(
    st: dict[str, Any],
    metrics: list[str],
    primary: str,
    computed: dict[str, ComputedMetric],
    w: _Where,
) -> tuple[dict[str, tuple[float, float]], dict[str, float]]:
    """``bounds`` and ``min_effect`` (a bare number is the primary's) of the [study] values."""
    return _bounds(st["bounds"], metrics, computed, w), _min_effect(
        st["min_effect"], metrics, primary, w
    )


def _metric_name(m: str, metrics: list[str], key: str, w: _Where) -> None:
    if m not in metrics:
        raise w.error(
            f"[study] {key}", f"names {m!r}, which is not in metrics {metrics!r}", key, "study"
        )


def _bounds(
    raw: Any, metrics: list[str], computed: dict[str, ComputedMetric], w: _Where
) -> dict[str, tuple[float, float]]:
    if not isinstance(raw, dict):
        raise w.error(
            "[study] bounds", "must be a table such as { acc = [0, 100] }", "bounds", "study"
        )
    bounds: dict[str, tuple[float, float]] = {}
    for m, b in raw.items():
        _metric_name(m, metrics, "bounds", w)
        ok = (
            isinstance(b, list)
            and len(b) == 2
            and all(is_number(x) and math.isfinite(x) for x in b)
        )
        if not ok or not b[0] < b[1]:
            raise w.error(
                "[study] bounds",
                f"{m} must be [low, high] with finite numbers low < high, got {b!r}",
                "bounds",
                "study",
            )
        bounds[m] = (float(b[0]), float(b[1]))
        own = own_bounds(computed.get(m))
        if own is not None and not (b[0] <= own[0] and own[1] <= b[1]):
            # every run would be trained, then fail the bounds check with its real score
            raise w.error(
                "[study] bounds",
                f"{m} must contain [{own[0]:g}, {own[1]:g}], where every "
                f"{computed[m].metric} score lies; got {b!r} (leave it out: its intervals stay there anyway)",
                "bounds",
                "study",
            )
    return bounds


def _min_effect(raw: Any, metrics: list[str], primary: str, w: _Where) -> dict[str, float]:
    if is_number(raw):
        raw = {primary: raw}
    if not isinstance(raw, dict):
        raise w.error(
            "[study] min_effect",
            "must be a number (for the primary metric) or a table such as { acc = 0.5 }",
            "min_effect",
            "study",
        )
    min_effect: dict[str, float] = {}
    for m, x in raw.items():
        _metric_name(m, metrics, "min_effect", w)
        if not is_number(x) or not math.isfinite(x) or x <= 0:
            raise w.error(
                "[study] min_effect",
                f"{m} must be a positive number (on the metric's scale), got {x!r}",
                "min_effect",
                "study",
            )
        min_effect[m] = float(x)
    return min_effect


def _with_outputs(version: str, computed: dict[str, ComputedMetric]) -> str:
    """The code version, extended by the computed metrics' definitions and reference
    contents when there are any: changing a metric's settings or its references then
    supersedes the stored runs instead of mixing scores of two definitions."""
    if not computed:
        return version
    import hashlib

    digest = hashlib.sha256(
        "|".join(f"{n}:{c.digest}" for n, c in sorted(computed.items())).encode()
    ).hexdigest()
    return f"{version}+m{digest[:8]}"


def _curves(table: Any, entry: str | None, w: _Where) -> CurveSettings:
    """The ``[curves]`` table (``stop_when`` only for entry points: ``log()`` applies it)."""
    try:
        settings = parse_settings(table)
    except ValueError as exc:
        key, message = exc.args
        raise w.error(f"[curves] {key}".rstrip(), message, key or None, "curves") from None
    if settings.stop_when and entry is None:
        raise w.error(
            "[curves] stop_when",
            "applies to entry points (evalab.ablation.log returns True when it "
            "holds); a command stops itself",
            "stop_when",
            "curves",
        )
    return settings


def _with_curves(version: str, curves: CurveSettings) -> str:
    """The code version, extended by the ``[curves]`` rules when declared: they decide which
    values a run stores (``select``) and when it stops (``stop_when``)."""
    if not curves.select and not curves.stop_when:
        return version
    import hashlib

    digest = hashlib.sha256(f"{curves.select}|{curves.stop_when}".encode()).hexdigest()
    return f"{version}+c{digest[:8]}"


def _inputs(raw: Any, directory: Path, w: _Where) -> list[Path]:
    """The files ``[study] inputs`` names (part of the code version: a changed data file
    supersedes the runs that read it)."""
    if not isinstance(raw, list) or not all(
        isinstance(p, str) and p.strip() and "\0" not in p for p in raw
    ):
        raise w.error(
            "[study] inputs",
            f'must be a list of file names or glob patterns, e.g. ["data/*"]; got {raw!r}',
            "inputs",
            "study",
        )
    try:
        return declared_inputs(directory, raw)
    except ValueError as exc:
        raise w.error("[study] inputs", str(exc), "inputs", "study") from None


def _check_plain(value: Any, where: str, w: _Where, key: str | None = None) -> None:
    """Configurations are hashed and stored as JSON: TOML dates and times are not allowed."""
    if isinstance(value, dict):
        for k, v in value.items():
            _check_plain(v, f"{where}.{k}" if key else f"{where} {k}", w, k)
    elif isinstance(value, list):
        for v in value:
            _check_plain(v, where, w, key)
    elif not isinstance(value, str | int | float | bool):
        raise w.error(
            where,
            f"{value!r} is a TOML {type(value).__name__}; use a string (configurations are stored as JSON)",
            key,
        )


def _template(
    st: dict[str, Any], command: Any, configs: list[dict[str, Any]], w: _Where
) -> CommandTemplate | None:
    """The parsed command template, checked against every trained row's configuration:
    each placeholder names a key, and each row's value can be written where it stands."""
    style = st.get("args_style", "hydra")
    if style not in ARGS_STYLES:
        raise w.error(
            "[study] args_style",
            f'is {style!r}; expected "hydra" (key=value) or "argparse" (--key value)',
            "args_style",
            "study",
        )
    if command is None:
        if "args_style" in st:
            raise w.error(
                "[study] args_style",
                "is for command templates ({args}); this study has an entry point",
                "args_style",
                "study",
            )
        return None
    if not isinstance(command, str) or not command.strip():
        raise w.error("[study] command", "must be a non-empty string", "command", "study")
    try:
        template = parse_template(command, style)
        template.check_keys(configs[0])
        for config in configs:
            template.render(config, 0, "config.json", "metrics.json")
    except TemplateError as exc:
        raise _template_error(command, exc, w) from None
    if "out" not in template.names():
        raise w.error(
            "[study] command",
            "must contain {out}: the path of the JSON metrics file the command writes",
            "command",
            "study",
        )
    return template


def _template_error(command: str, exc: TemplateError, w: _Where) -> SettingsError:
    """The template's problem at the line of the study file it stands on."""
    line = w.line_of("command", "study")
    if line is not None:
        # a multi-line string whose first line break follows the opening quotes is trimmed by TOML
        trimmed = w.lines[line - 1].split("=", 1)[-1].strip() in ("'''", '"""')
        line += command.count("\n", 0, max(exc.offset, 0)) + trimmed
    loc = f"{w.path}:{line}" if line else str(w.path)
    return SettingsError(f"{loc}: [study] command: {exc}")


def _trained_configs(
    base: dict[str, Any], variants: list[Variant], grid: dict[str, list[Any]]
) -> list[dict[str, Any]]:
    """The configurations a command runs with: the base's, each trained variant's, each grid cell's."""
    return [
        dict(base),
        *({**base, **v.settings} for v in variants if v.stage == "train"),
        *(dict(c.config) for c in grid_cells(base, grid)),
    ]


def _resources(res: Any, w: _Where) -> Resources:
    if not isinstance(res, dict):
        raise w.error(
            "[study] resources",
            "must be a table such as { cpus = 1, gpus = 0 }",
            "resources",
            "study",
        )
    for k, v in res.items():
        if k not in RESOURCE_KEYS:
            raise w.error(
                "[study] resources",
                f"unknown key {k!r}; known: {', '.join(RESOURCE_KEYS)}",
                "resources",
                "study",
            )
        if not is_number(v) or v < 0:
            raise w.error(
                "[study] resources", f"{k} must be a number >= 0, got {v!r}", "resources", "study"
            )
    given = {k.name: res.get(k.name, k.default) for k in keys.keys_of("study.resources").values()}
    return Resources(cpus=float(given["cpus"]), gpus=float(given["gpus"]))


def _evaluation(raw: Any, base: dict[str, Any], w: _Where) -> dict[str, Any]:
    """``[evaluation]``: the evaluation-only keys with their defaults. They are declared
    apart from ``[base]`` so they can never reach a training configuration."""
    if not isinstance(raw, dict):
        raise w.error("[evaluation]", "must be a table of evaluation-only key = default value")
    _check_plain(raw, "[evaluation]", w)
    for key in raw:
        if key in base:
            raise w.error(
                f"[evaluation] {key}",
                "is also a key of [base]; an evaluation-only key must not be a "
                f"training setting: rename it (e.g. eval_{key})",
                key,
                "evaluation",
            )
    return dict(raw)


def _variant_stage(v: dict[str, Any], label: str, w: _Where) -> tuple[str, str]:
    stage = v.get("stage", "train")
    if stage not in STAGES:
        raise w.error(
            f"[[variant]] {label!r} stage",
            f'is {stage!r}; expected "train" (retrained, the default) or '
            '"eval" (suppressed at evaluation of a trained row\'s checkpoints)',
            "stage",
            "variant",
        )
    parent = v.get("from")
    if stage == "train" and parent is not None:
        raise w.error(
            f"[[variant]] {label!r} from",
            'is only for stage = "eval" rows (a trained row starts from [base])',
            "from",
            "variant",
        )
    if stage == "eval" and parent is None:
        parent = BASE_LABEL
    if stage == "eval" and not isinstance(parent, str):
        raise w.error(
            f"[[variant]] {label!r} from",
            f"must be the label of a trained row, got {parent!r}",
            "from",
            "variant",
        )
    return stage, parent or ""


def _check_setting(
    label: str,
    key: str,
    value: Any,
    stage: str,
    base: dict[str, Any],
    evaluation: dict[str, Any],
    w: _Where,
) -> None:
    where = f"[[variant]] {label!r} set.{key}"
    if stage == "eval":
        if key not in evaluation:
            hint = (
                " (it is a training setting of [base]: an eval row cannot retrain)"
                if key in base
                else ""
            )
            raise w.error(
                where,
                f'[evaluation] has no key {key!r}{hint}; a stage = "eval" row may only change keys of '
                f"[evaluation] (known: {', '.join(evaluation) or 'none: add an [evaluation] table'})",
                key,
                "variant",
            )
        _check_same_kind(evaluation[key], value, where, key, w)
        return
    if key in evaluation:
        raise w.error(
            where,
            f"{key!r} is an evaluation-only key ([evaluation]); it cannot change training: "
            'give this row stage = "eval" (and from = the trained row it evaluates)',
            key,
            "variant",
        )
    if key not in base:
        raise w.error(
            where,
            f"[base] has no key {key!r}; a variant may only change keys of [base] (known: {', '.join(base)})",
            key,
            "variant",
        )
    _check_same_kind(base[key], value, where, key, w)


def _check_eval_rows(
    variants: list[Variant], evaluate: str | None, cells: list[Any], w: _Where
) -> None:
    """Every eval row needs the ``evaluate`` entry and a trained row to evaluate."""
    trained = [
        BASE_LABEL,
        *(v.label for v in variants if v.stage == "train"),
        *(c.label for c in cells),
    ]
    for v in variants:
        if v.stage != "eval":
            continue
        if evaluate is None:
            raise w.error(
                "[study] evaluate",
                f'missing: row {v.label!r} has stage = "eval", which calls '
                "evaluate = 'module:function' as function(config, seed, checkpoint_dir)",
            )
        if v.parent not in trained:
            what = (
                "an eval row (eval rows evaluate trained rows only)"
                if v.parent in {x.label for x in variants}
                else "no row"
            )
            raise w.error(
                f"[[variant]] {v.label!r} from",
                f"{v.parent!r} is {what}; trained rows: {', '.join(trained)}",
                "from",
                "variant",
            )


def _variants(
    raw: Any, base: dict[str, Any], evaluation: dict[str, Any], w: _Where
) -> list[Variant]:
    if not isinstance(raw, list):
        raise w.error(
            "[[variant]]",
            "must be an array of tables: write [[variant]] (double brackets)",
            "variant",
        )
    out: list[Variant] = []
    seen: set[str] = {BASE_LABEL}
    for i, v in enumerate(raw, start=1):
        if not isinstance(v, dict):
            raise w.error(f"[[variant]] #{i}", "must be a table")
        for key in v:
            if key not in VARIANT_KEYS:
                raise w.error(
                    f"[[variant]] #{i} key {key!r}",
                    f"unknown; known keys: {', '.join(VARIANT_KEYS)}",
                    key,
                    "variant",
                )
        label = v.get("label")
        if not isinstance(label, str) or not label.strip():
            raise w.error(f"[[variant]] #{i}", "needs label = '...' (e.g. '(A)')")
        if label in seen:
            raise w.error(
                f"[[variant]] #{i} label {label!r}",
                "is used twice (or is the reserved 'base'); labels must be unique",
                "label",
                "variant",
            )
        seen.add(label)
        stage, parent = _variant_stage(v, label, w)
        settings = v.get("set", {})
        _check_plain(settings, f"[[variant]] {label!r} set", w)
        if not isinstance(settings, dict) or not settings:
            table = "[evaluation]" if stage == "eval" else "[base]"
            raise w.error(
                f"[[variant]] {label!r} set",
                f"must be a non-empty table of the {table} keys this row changes",
            )
        for key, value in settings.items():
            _check_setting(label, key, value, stage, base, evaluation, w)
        description = v.get("description", "")
        if not isinstance(description, str):
            raise w.error(f"[[variant]] {label!r} description", "must be a string")
        component = v.get("component", "")
        if not isinstance(component, str):
            raise w.error(
                f"[[variant]] {label!r} component",
                f"must be a string naming the component, got {component!r}",
                "component",
                "variant",
            )
        out.append(
            Variant(
                label=label,
                description=description,
                settings=dict(settings),
                stage=stage,
                parent=parent,
                component=component,
            )
        )
    return out


def _check_same_kind(base_value: Any, value: Any, where: str, key: str, w: _Where) -> None:
    """A value replacing a base value must be of a compatible type (int and float mix)."""

    def kind(x: Any) -> str:
        if isinstance(x, bool):
            return "bool"
        if is_number(x):
            return "number"
        return type(x).__name__

    if kind(base_value) != kind(value):
        raise w.error(
            where,
            f"is {value!r} ({kind(value)}) but [base] {key} is {base_value!r} ({kind(base_value)})",
            key,
        )


def _grid(raw: Any, base: dict[str, Any], w: _Where) -> dict[str, list[Any]]:
    if not isinstance(raw, dict):
        raise w.error("[grid]", "must be a table of key = [levels]")
    grid: dict[str, list[Any]] = {}
    for key, levels in raw.items():
        if key not in base:
            raise w.error(
                f"[grid] {key}",
                f"[base] has no key {key!r}; grid factors must be keys of [base]",
                key,
                "grid",
            )
        if not isinstance(levels, list) or len(levels) < 2:
            raise w.error(
                f"[grid] {key}", f"needs a list of at least two levels, got {levels!r}", key, "grid"
            )
        if len({json.dumps(x, sort_keys=True) for x in levels}) != len(levels):
            raise w.error(f"[grid] {key}", f"has duplicate levels: {levels!r}", key, "grid")
        for x in levels:
            _check_same_kind(base[key], x, f"[grid] {key} level {x!r}", key, w)
        grid[key] = list(levels)
    return grid


def _reference(
    raw: Any, labels: list[str], grid: dict[str, list[Any]], base: dict[str, Any], w: _Where
) -> dict[str, dict[str, float]]:
    if not isinstance(raw, dict):
        raise w.error(
            "[reference]",
            'must hold one table per column: [reference."BLEU (paper)"] with row label = value',
        )
    allowed = set(labels) | {c.label for c in grid_cells(base, grid)}
    out: dict[str, dict[str, float]] = {}
    for column, rows in raw.items():
        if not isinstance(rows, dict):
            raise w.error(
                f"[reference] {column!r}",
                'must be a table of row label = number, e.g. [reference."BLEU (paper)"] base = 25.8',
                column,
                "reference",
            )
        col: dict[str, float] = {}
        for label, value in rows.items():
            if label not in allowed:
                raise w.error(
                    f"[reference.{column!r}] {label!r}",
                    f"is not a row of this study; rows: {', '.join(sorted(allowed))}",
                    label,
                    "reference",
                )
            if not is_number(value):
                raise w.error(
                    f"[reference.{column!r}] {label!r}",
                    f"must be a number, got {value!r}",
                    label,
                    "reference",
                )
            col[label] = float(value)
        out[column] = col
    return out


_IMPORT_CHECK = r"""
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
mod_name, fn_name = sys.argv[2].split(":")
try:
    mod = importlib.import_module(mod_name)
except BaseException as exc:
    print(json.dumps({"error": f"cannot import module {mod_name!r}: {type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
fn = getattr(mod, fn_name, None)
if fn is None or not callable(fn):
    print(json.dumps({"error": f"module {mod_name!r} has no function {fn_name!r}"}))
else:
    print(json.dumps({"file": getattr(mod, "__file__", None)}))
"""


def check_entry_imports(entry: str, directory: Path, w: _Where, key: str = "entry") -> str | None:
    """Import ``entry`` in a fresh interpreter (study folder on sys.path); return its file."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _IMPORT_CHECK, str(directory), entry],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as exc:
        raise w.error(
            f"[study] {key}", f"importing {entry!r} took over 120 s", key, "study"
        ) from exc
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise w.error(f"[study] {key}", f"importing {entry!r} failed: {tail}", key, "study")
    result = json.loads(lines[-1])
    if "error" in result:
        raise w.error(
            f"[study] {key}",
            f"{result['error']} (study folder {directory} is on sys.path)",
            key,
            "study",
        )
    file: str | None = result.get("file")
    return file


def find_module_file(entry: str, directory: Path) -> str | None:
    """The source file of the entry's module, located without executing any code."""
    from importlib.machinery import PathFinder

    search: list[str] | None = [str(directory), *sys.path]
    spec = None
    for part in entry.split(":")[0].split("."):
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    return (
        spec.origin
        if spec is not None and spec.origin not in (None, "built-in", "frozen")
        else None
    )


def with_overrides(study: Study, assignments: list[str]) -> Study:
    """The study with one more row: ``[base]`` with the ``key=value`` assignments
    (``ablate run --set``). Each key must be a key of ``[base]`` (``optim.lr`` inside a
    table); each value is read as the type of the base's value. The row is labelled
    ``set key=value, ...``; every other row stays as the study file has it.
    """
    settings: dict[str, Any] = {}
    shown = []
    for text in assignments:
        key, sep, raw = text.partition("=")
        key = key.strip()
        if not sep or not key:
            raise SettingsError(f"--set {text!r}: expected key=value, e.g. --set hidden=16")
        path = key.split(".") if key not in study.base else [key]
        old = _base_value(study, key, path, text)
        value = _typed_like(old, raw, text)
        _set_path(settings, study.base, path, value)
        shown.append(f"{key}={raw}")
    label = "set " + ", ".join(shown)
    labels = {
        BASE_LABEL,
        *(v.label for v in study.variants),
        *(c.label for c in grid_cells(study.base, study.grid)),
    }
    if label in labels:
        raise SettingsError(f"--set: the study already has a row labelled {label!r}")
    variant = Variant(label=label, description="from the command line (--set)", settings=settings)
    if study.template is not None:
        try:
            study.template.render({**study.base, **settings}, 0, "config.json", "metrics.json")
        except TemplateError as exc:
            raise SettingsError(f"--set {', '.join(assignments)}: [study] command: {exc}") from None
    return dataclasses.replace(study, variants=(*study.variants, variant))


def _base_value(study: Study, key: str, path: list[str], text: str) -> Any:
    node: Any = study.base
    for part in path:
        if not isinstance(node, dict) or part not in node:
            what = (
                f"{key!r} is an [evaluation] key"
                if key in study.evaluation
                else f"[base] has no key {key!r}"
            )
            raise SettingsError(
                f"--set {text!r}: {what}; --set takes keys of [base]: {', '.join(flat_keys(study.base))}"
            )
        node = node[part]
    if isinstance(node, dict):
        raise SettingsError(
            f"--set {text!r}: {key!r} is a table; set one of its keys: "
            f"{', '.join(flat_keys(node, key))}"
        )
    return node


def _typed_like(old: Any, raw: str, text: str) -> Any:
    """``raw`` read as the type of the base's value ``old``."""
    if isinstance(old, str):
        return raw
    if isinstance(old, bool):
        if raw not in ("true", "false"):
            raise SettingsError(
                f"--set {text!r}: the base value is {str(old).lower()} (true/false); give true or false"
            )
        return raw == "true"
    if isinstance(old, list):
        try:
            value = tomllib.loads(f"v = {raw}")["v"]
        except tomllib.TOMLDecodeError:
            value = None
        if not isinstance(value, list):
            raise SettingsError(
                f"--set {text!r}: the base value is {old!r}; give a list (e.g. [1, 2])"
            )
        return value
    kind, what = (float, "a number") if isinstance(old, float) else (int, "an integer")
    try:
        return kind(raw)
    except ValueError:
        raise SettingsError(f"--set {text!r}: the base value is {old!r}; give {what}") from None


def _set_path(settings: dict[str, Any], base: dict[str, Any], path: list[str], value: Any) -> None:
    """Set ``path`` in ``settings`` (a variant's top-level changes), copying nested tables
    from the base so their other keys are kept."""
    if len(path) == 1:
        settings[path[0]] = value
        return
    top = settings.setdefault(path[0], json.loads(json.dumps(base[path[0]])))
    node = top
    for part in path[1:-1]:
        node = node[part]
    node[path[-1]] = value
