"""``evalab compare --scores A B C ...``: per-item results of several models, compared.

Every file is read (lm-evaluation-harness sample logs, inspect-ai logs, plain CSV/JSONL,
``evalab score --segments`` output; see :mod:`evalab.items`), the items are aligned by id
per metric, and :func:`evalab.stats.items.compare_items` gives every model's mean with its
naive (CLT or Wilson) and clustered intervals and every model's paired difference to the
baseline (the first model) with its test; this module turns them into rows and words.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from evalab.cli.names import display_names, split_named
from evalab.cli.output import (
    DEFAULT_VIEW,
    TableView,
    check_out,
    emit_view,
    ordered_row,
)
from evalab.errors import InputError, SettingsError
from evalab.items import Aligned, Columns, align, read_scores
from evalab.items.table import ScoreSet
from evalab.report.notes import stats_sentence
from evalab.report.numbers import NO_VALUE
from evalab.report.table import Interval as IntervalCell
from evalab.report.table import Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, wide_table
from evalab.stats.bootstrap import check_confidence
from evalab.stats.items import (
    Estimate,
    Interval,
    ItemComparison,
    ItemMeans,
    cluster_codes,
    compare_items,
    item_means,
)
from evalab.stats.ranking import Ranking, rank_systems
from evalab.stats.resampling import check_n_samples, check_seed

__all__ = [
    "ScoreOptions",
    "aligned_inputs",
    "check_mode",
    "compare_scores",
    "means_of",
    "read_named",
]


@dataclass(frozen=True)
class ScoreOptions:
    """The settings of a per-item comparison, as the command line gave them."""

    columns: Columns
    common_items: bool
    confidence: float
    #: None: holm with ``rank``/``all_pairs`` (every pair), none otherwise
    correct: str | None
    alpha: float
    n_samples: int
    seed: int
    fmt: str
    width: int | None
    out: str | None
    #: significance clusters (``--rank``) and every pair (``--all-pairs``) instead of the baseline's
    rank: bool = False
    all_pairs: bool = False
    #: ``--layout`` and the LaTeX layout
    view: TableView = DEFAULT_VIEW

    @property
    def correction(self) -> str:
        """The correction in effect."""
        if self.correct is not None:
            return self.correct
        return "holm" if self.rank or self.all_pairs else "none"


def check_mode(per_item: bool, text_given: list[str], items_given: list[str]) -> None:
    """Refuse an option of the other mode of ``compare`` (``-r``/``-i`` texts or ``--scores``
    files; ``*_given``: the options of each mode given): it would be ignored."""
    given = text_given if per_item else items_given
    if given and per_item:
        raise SettingsError(
            f"{given[0]} applies to -r/-i system outputs, not to --scores per-item files"
        )
    if given:
        raise SettingsError(f"{given[0]} applies to --scores per-item files only")


def _check(files: list[str], opts: ScoreOptions) -> None:
    check_out(opts.out, [("--scores", f) for f in files])  # -f: checked with the view
    check_confidence(opts.confidence)
    check_seed(opts.seed)
    if opts.n_samples:
        check_n_samples(opts.n_samples)
    if opts.correction not in ("none", "holm"):
        raise SettingsError(f"--correct must be one of none, holm, got {opts.correct!r}")
    if not 0.0 < opts.alpha < 1.0:
        raise SettingsError(f"--alpha must be strictly between 0 and 1, got {opts.alpha}")
    if opts.width is not None and not 0 <= opts.width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {opts.width}")


def read_named(files: list[str], columns: Columns) -> list[ScoreSet]:
    """The score sets of every ``--scores`` item (``PATH`` or ``NAME=PATH``), each model
    called ``NAME``, else what its log says (inspect's ``eval.model``, lm-eval's model),
    else its path; two files whose logs name one model are called by their paths."""
    named = [split_named(f, "--scores") for f in files]
    if sum(path == "-" for _, path in named) > 1:
        raise SettingsError("stdin ('-') can be used for only one file")
    read = [(name, path, read_scores(path, columns)) for name, path in named]
    logged: dict[str, set[str]] = {}
    for name, path, sets in read:
        for s in sets:
            if name is None:
                logged.setdefault(s.model, set()).add(path)
    out: list[ScoreSet] = []
    for name, path, sets in read:
        for s in sets:
            model = name or (s.model if len(logged[s.model]) == 1 else path)
            out.append(s if model == s.model else dataclasses.replace(s, model=model))
    return out


def aligned_inputs(
    files: list[str], columns: Columns, common: bool, minimum: int = 2
) -> list[Aligned]:
    """Read every file and align its score sets by metric (at least ``minimum`` models)."""
    sets = read_named(files, columns)
    models = list(dict.fromkeys(s.model for s in sets))
    if len(models) < minimum:
        raise SettingsError(
            f"--scores needs at least {minimum} models, got {len(models)} ({', '.join(models)})"
        )
    twice = {
        (s.model, s.metric)
        for s in sets
        if sum(t.model == s.model and t.metric == s.metric for t in sets) > 1
    }
    if twice:
        model, metric = sorted(twice)[0]
        raise InputError(f"{model}: {metric} given twice; give each model once")
    return align(sets, common=common)


def means_of(group: Aligned) -> list[ItemMeans]:
    """Each model's per-item means on the aligned items."""
    return [item_means(s.values, s.item, len(group.ids)) for s in group.sets]


def _ci(iv: Interval | None, d: int, marker: str = "") -> IntervalCell:
    return IntervalCell(None if iv is None else iv.low, None if iv is None else iv.high, d, marker)


def _est(e: Estimate | None) -> dict[str, Any]:
    if e is None:
        return {"se": None, "ci_low": None, "ci_high": None, "df": None}
    return {"se": e.se, "ci_low": e.ci.low, "ci_high": e.ci.high, "df": e.df}


def _prefixed(prefix: str, fields: dict[str, Any]) -> dict[str, Any]:
    return {f"{prefix}_{k}": v for k, v in fields.items()}


def result_rows(
    group: Aligned, res: ItemComparison, alpha: float, ranking: Ranking | None
) -> list[dict[str, Any]]:
    """One JSON-ready dict per model (baseline first) for one metric, with its comparison to
    the baseline (and its significance cluster when ranked)."""
    base = res.models[0].model
    pairs = {p.model: p for p in res.pairs if p.baseline == base}
    rows = []
    for k, m in enumerate(res.models):
        p = pairs.get(m.model)
        row: dict[str, Any] = {
            "system": m.model,
            "metric": group.metric,
            "score": m.mean,
            "n_items": m.n_items,
            "cluster": ranking.clusters[k] if ranking else None,
            "dropped_items": group.dropped,
            **_prefixed("naive", _est(m.naive)),
            "wilson_low": m.wilson.low if m.wilson else None,
            "wilson_high": m.wilson.high if m.wilson else None,
            **_prefixed("clustered", _est(m.clustered)),
            "n_clusters": m.n_clusters,
            "design_effect": m.design_effect,
            "samples_per_item": m.samples_per_item,
            "within_item_var": m.within_var,
            "n_eff": m.n_eff,
            "bootstrap_low": res.bootstrap[k].low if res.bootstrap else None,
            "bootstrap_high": res.bootstrap[k].high if res.bootstrap else None,
            "baseline": p is None,
            "delta": p.delta if p else 0.0,
            "unpaired_se": p.unpaired_se if p else None,
            "unpaired_clustered_se": p.unpaired_clustered_se if p else None,
            **_prefixed("paired", _est(p.paired if p else None)),
            **_prefixed("paired_clustered", _est(p.clustered if p else None)),
            "paired_bootstrap_low": p.bootstrap.low if p and p.bootstrap else None,
            "paired_bootstrap_high": p.bootstrap.high if p and p.bootstrap else None,
            "correlation": p.correlation if p else None,
            "p_value": p.p_value if p else None,
            "p_adjusted": p.p_adjusted if p else None,
            "correction": res.correction,
            "significant": None if p is None else p.p_adjusted < alpha,
            "alpha": alpha,
            "confidence": res.confidence,
            "n_samples": res.n_samples,
            "seed": res.seed,
        }
        rows.append(ordered_row(row))
    return rows


@dataclass(frozen=True)
class _Layout:
    """Which optional column groups the table has."""

    clustered: bool
    sampled: bool
    boot: bool
    holm: bool
    ranked: bool

    @classmethod
    def of(cls, rows: list[dict[str, Any]]) -> _Layout:
        return cls(
            any(r["n_clusters"] for r in rows),
            any(r["samples_per_item"] for r in rows),
            rows[0]["n_samples"] > 0,
            rows[0]["correction"] == "holm",
            rows[0]["cluster"] is not None,
        )


def _model_cells(r: dict[str, Any], d: int, lay: _Layout) -> list[TableCell]:
    """The model's mean and its intervals."""
    wilson = r["wilson_low"] is not None
    naive = (
        Interval(r["wilson_low"], r["wilson_high"])
        if wilson
        else Interval(r["naive_ci_low"], r["naive_ci_high"])
    )
    line: list[TableCell] = [
        Number(r["n_items"], 0),
        Number(r["score"], d),
        Number(r["naive_se"], d),
        _ci(naive, d, " W" if wilson else ""),
    ]
    if lay.clustered:
        line += (
            [NO_VALUE] * 3
            if r["n_clusters"] is None
            else [
                Number(r["n_clusters"], 0),
                Number(r["clustered_se"], d),
                _ci(Interval(r["clustered_ci_low"], r["clustered_ci_high"]), d),
            ]
        )
    if lay.boot:
        line.append(_ci(Interval(r["bootstrap_low"], r["bootstrap_high"]), d))
    if lay.sampled:
        line += (
            [NO_VALUE] * 2
            if r["samples_per_item"] is None
            else [f"{r['samples_per_item']:g}", Number(r["n_eff"], 0)]
        )
    return line


def _pair_cells(r: dict[str, Any], d: int, lay: _Layout) -> list[TableCell]:
    """The paired comparison with the baseline (dashes for the baseline itself)."""
    width = 6 + lay.boot + lay.holm
    if r["baseline"]:
        return ["baseline", *[NO_VALUE] * (width - 1)]
    mark = " *" if r["significant"] else ""
    key = "paired" if r["paired_clustered_se"] is None else "paired_clustered"
    unpaired = (
        r["unpaired_se"] if r["unpaired_clustered_se"] is None else r["unpaired_clustered_se"]
    )
    line: list[TableCell] = [
        Number(r["delta"], d, signed=True),
        Number(unpaired, d),
        Number(r[key + "_se"], d),
        _ci(Interval(r[key + "_ci_low"], r[key + "_ci_high"]), d),
    ]
    if lay.boot:
        line.append(_ci(Interval(r["paired_bootstrap_low"], r["paired_bootstrap_high"]), d))
    line += [
        Number(r["correlation"], 2),
        Number(r["p_value"], 5, p=True, marker="" if lay.holm else mark),
    ]
    return line + ([Number(r["p_adjusted"], 5, p=True, marker=mark)] if lay.holm else [])


def _table(
    rows: list[dict[str, Any]], width: int | None
) -> tuple[list[str], list[list[TableCell]], list[str]]:
    lay = _Layout.of(rows)
    conf = f"{rows[0]['confidence'] * 100:g}% CI"
    header = ["model", "metric", *(["rank"] if lay.ranked else []), "items", "mean", "SE", conf]
    header += ["clusters", "SE clust.", f"{conf} clust."] if lay.clustered else []
    header += [f"{conf} boot."] if lay.boot else []
    header += ["k", "n_eff"] if lay.sampled else []
    paired = "paired clust." if lay.clustered else "paired"
    header += [
        "Δ baseline",
        "SE unpaired clust." if lay.clustered else "SE unpaired",
        f"SE {paired}",
        f"{conf} {paired}",
    ]
    header += [f"{conf} paired boot."] if lay.boot else []
    header += ["corr", "p-value"] + (["p (Holm)"] if lay.holm else [])
    short = display_names(list(dict.fromkeys(r["system"] for r in rows)))
    decimals = _decimals(rows, width)
    body = [
        [
            short[r["system"]],
            r["metric"],
            *([Number(r["cluster"], 0)] if lay.ranked else []),
            *_model_cells(r, decimals[r["metric"]], lay),
            *_pair_cells(r, decimals[r["metric"]], lay),
        ]
        for r in rows
    ]
    return header, body, _footer(rows, lay)


def _footer(rows: list[dict[str, Any]], lay: _Layout) -> list[str]:
    lines = [
        f"{r['metric']}: items common to every model; {r['dropped_items']} left out"
        for r in rows
        if r["baseline"] and r["dropped_items"]
    ]
    lines.append(
        "CI: Student t on the CLT standard error (W: Wilson, for 0/1 scores)"
        + (
            "; clust.: cluster-robust (CR1) standard error, t with clusters - 1 df"
            if lay.clustered
            else ""
        )
    )
    if lay.boot:
        lines.append(
            f"boot.: percentile bootstrap, {rows[0]['n_samples']} resamples of "
            + ("whole clusters" if lay.clustered else "items")
            + f", seed {rows[0]['seed']}"
        )
    if lay.sampled:
        lines.append(
            "k: samples per item; n_eff: single-sample items giving the same standard error"
        )
    lines.append(
        "paired: on the per-item differences to the baseline"
        + (", cluster-robust" if lay.clustered else "")
        + "; p-value: paired t test on that standard error"
    )
    if lay.ranked:
        lines.append(
            "rank: significance cluster, best first; a boundary where every model above is "
            "significantly better than every model below (paired tests of every pair)"
        )
    which = "Holm-adjusted p" if lay.holm else "p"
    lines.append(
        f"* {which} < {rows[0]['alpha']:g} against the baseline"
        + (" (Holm per metric)" if lay.holm else "")
    )
    return lines


def pair_rows(metric: str, res: ItemComparison, alpha: float) -> list[dict[str, Any]]:
    """One JSON-ready dict per compared pair (``--all-pairs``)."""
    return [
        {
            "system": p.model,
            "vs": p.baseline,
            "metric": metric,
            "delta": p.delta,
            "unpaired_se": p.unpaired_se,
            "unpaired_clustered_se": p.unpaired_clustered_se,
            **_prefixed("paired", _est(p.paired)),
            **_prefixed("paired_clustered", _est(p.clustered)),
            "correlation": p.correlation,
            "p_value": p.p_value,
            "p_adjusted": p.p_adjusted,
            "correction": res.correction,
            "significant": p.p_adjusted < alpha,
            "alpha": alpha,
        }
        for p in res.pairs
    ]


def _pairs_table(pairs: list[dict[str, Any]], width: int | None) -> Table:
    short = display_names(list(dict.fromkeys(r[k] for r in pairs for k in ("vs", "system"))))
    clustered = any(r["paired_clustered_se"] is not None for r in pairs)
    kind = "paired clust." if clustered else "paired"
    header = [
        "model",
        "vs",
        "metric",
        "Δ",
        "SE unpaired clust." if clustered else "SE unpaired",
        f"SE {kind}",
        f"CI {kind}",
        "corr",
        "p-value",
        "p (Holm)",
    ]
    body = []
    for r in pairs:
        d = width if width is not None else 4
        key = "paired_clustered" if r["paired_clustered_se"] is not None else "paired"
        unpaired = (
            r["unpaired_se"] if r["unpaired_clustered_se"] is None else r["unpaired_clustered_se"]
        )
        body.append(
            [
                short[r["system"]],
                short[r["vs"]],
                r["metric"],
                Number(r["delta"], d, signed=True),
                Number(unpaired, d),
                Number(r[key + "_se"], d),
                _ci(Interval(r[key + "_ci_low"], r[key + "_ci_high"]), d),
                Number(r["correlation"], 2),
                Number(r["p_value"], 5, p=True),
                Number(r["p_adjusted"], 5, p=True, marker=" *" if r["significant"] else ""),
            ]
        )
    return Table(
        header,
        body,
        [
            f"* Holm-adjusted p < {pairs[0]['alpha']:g} over every pair of each metric"
            if pairs[0]["correction"] == "holm"
            else f"* p < {pairs[0]['alpha']:g}"
        ],
    )


def render(
    tables: list[list[dict[str, Any]]],
    pairs: list[dict[str, Any]] | None,
    opts: ScoreOptions,
    notes: Sequence[str] = (),
) -> None:
    """One table of every metric and model (and with ``pairs`` one of every pair), in the
    chosen format and layout, to stdout or ``--out``; ``notes`` qualify the results."""
    rows = [r for t in tables for r in t]
    header, body, footer = _table(rows, opts.width)
    more = [] if pairs is None else [_pairs_table(pairs, opts.width)]
    data = rows if pairs is None else {"models": rows, "pairs": pairs}
    long = Table(header, body, [*footer, *notes])
    wide = _wide(rows, opts.width)
    wide = dataclasses.replace(wide, footer=[*wide.footer, *notes])
    emit_view(opts.fmt, long, wide, opts.out, opts.view, data=data, more=more)


def _wide(rows: list[dict[str, Any]], width: int | None) -> Table:
    """Models x metrics: each mean ± the half-width of its t interval (cluster-robust where
    clustered), ``*`` where it differs significantly from the baseline's (or, ranked,
    followed by its cluster); no best in bold: a score file does not say which direction is
    better."""
    short = display_names(list(dict.fromkeys(r["system"] for r in rows)))
    ranked = rows[0]["cluster"] is not None
    cells = {
        (short[r["system"]], r["metric"]): Cell(
            r["score"],
            _half_width(r),
            f" ({r['cluster']})" if ranked else ("*" if r["significant"] else ""),
        )
        for r in rows
    }
    decimals = _decimals(rows, width)
    metrics = [WideMetric(m, None, decimals[m]) for m in dict.fromkeys(r["metric"] for r in rows)]
    t = wide_table(list(short.values()), metrics, cells, first="model")
    which = "Holm-adjusted p" if rows[0]["correction"] == "holm" else "p"
    mark = (
        f"(k): the model's significance cluster ({which} < {rows[0]['alpha']:g})."
        if ranked
        else f"* {which} < {rows[0]['alpha']:g} against the baseline, {short[rows[0]['system']]}."
    )
    conf = f"{rows[0]['confidence'] * 100:g}%"
    clustered = rows[0]["clustered_se"] is not None
    spread = f"±: half-width of the {conf} t interval on the " + (
        "cluster-robust (CR1) standard error." if clustered else "standard error."
    )
    return Table(t.header, t.body, [spread, mark], bold=t.bold)


def _half_width(r: dict[str, Any]) -> float | None:
    """Half the t interval of a model's mean (the cluster-robust one where clustered)."""
    kind = "clustered" if r["clustered_se"] is not None else "naive"
    low, high = r[f"{kind}_ci_low"], r[f"{kind}_ci_high"]
    return None if low is None or high is None else (high - low) / 2


def _decimals(rows: list[dict[str, Any]], width: int | None) -> dict[str, int]:
    """4 decimals for scores on a 0-1 scale, 2 for larger scales (chrF, sentence BLEU: 0-100)."""
    large = {r["metric"] for r in rows if abs(r["score"]) > 1.0}
    return {
        r["metric"]: width if width is not None else (2 if r["metric"] in large else 4)
        for r in rows
    }


def compare_scores(files: list[str], opts: ScoreOptions) -> None:
    """Read, align, compare and render; every option is checked before any file is read."""
    _check(files, opts)
    every_pair = opts.rank or opts.all_pairs
    tables, pairs, notes = [], [], []
    for group in aligned_inputs(files, opts.columns, opts.common_items):
        clusters = cluster_codes(group.clusters) if group.clusters is not None else None
        res = compare_items(
            [s.model for s in group.sets],
            means_of(group),
            clusters,
            baseline=None if every_pair else 0,
            confidence=opts.confidence,
            correction=opts.correction,
            binary=[s.binary for s in group.sets],
            n_samples=opts.n_samples,
            seed=opts.seed,
        )
        ranking = _ranking(res, opts) if opts.rank else None
        tables.append(result_rows(group, res, opts.alpha, ranking))
        pairs += pair_rows(group.metric, res, opts.alpha)
        notes += [f"{group.metric}: {stats_sentence(n)}" for n in res.notes]
    render(tables, pairs if opts.all_pairs else None, opts, list(dict.fromkeys(notes)))


def _ranking(res: ItemComparison, opts: ScoreOptions) -> Ranking:
    """Significance clusters (:func:`evalab.stats.ranking.rank_systems`) from the paired
    tests of every pair."""
    index = {m.model: k for k, m in enumerate(res.models)}
    p = np.full((len(index), len(index)), np.nan)
    for pair in res.pairs:
        i, j = index[pair.model], index[pair.baseline]
        p[i, j] = p[j, i] = pair.p_value
    return rank_systems([m.mean for m in res.models], p, opts.alpha, opts.correction)
