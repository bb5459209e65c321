"""``evalab compare``: paired significance tests of systems against a baseline.

The first ``-i`` file is the baseline. For every metric and system the output gives the
corpus score, its bootstrap confidence interval (``mean ± half-width`` and the bounds),
the difference to the baseline and the p-value of a paired bootstrap (``--test bs``,
Koehn 2004) or approximate-randomization test (``--test ar``, Riezler & Maxwell 2005),
optionally Holm-adjusted across the systems compared on each metric. ``--test mcnemar``
(metrics with a right/wrong outcome per segment) shows the discordant counts and
McNemar's p-value instead (see :mod:`evalab.stats.mcnemar`).

``--rank`` sorts the systems by score and draws significance clusters from the paired
tests of every pair (:mod:`evalab.stats.ranking`); ``--all-pairs`` adds every pair's Δ,
p-values and segments won; ``-f html`` writes the page of :mod:`evalab.report.compare_page`.
"""

from __future__ import annotations

import warnings
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.compare_scores import ScoreOptions, check_mode, compare_scores
from evalab.cli.inputs import (
    aligned_stream,
    bind_source,
    check_model_inputs,
    check_source_option,
    input_options,
    load_streams,
    needs_references,
    show_progress,
    warn_language_misfits,
)
from evalab.cli.names import NamedInputs, named_inputs
from evalab.cli.options import (
    ClusterColumn,
    FigureOptions,
    IdColumn,
    Inputs,
    IntervalConfidence,
    LatexOptions,
    Layout,
    Metrics,
    MetricSelection,
    MetricSettings,
    MissingRef,
    OutFile,
    PageFormat,
    Quiet,
    RepeatedReferences,
    ScoreColumns,
    ScoreFiles,
    ShardOptions,
    Source,
    Width,
    check_width,
    given_options,
    n_samples_option,
    seed_option,
    table_view,
)
from evalab.cli.output import (
    PAGE_FORMATS,
    TABLE_FORMATS,
    TableView,
    check_out,
    emit,
    emit_view,
    ordered_row,
)
from evalab.cli.references import apply_missing_refs, check_missing_ref
from evalab.cli.score import page_spans, score_table, wide_notes
from evalab.cli.segment_checks import check_pair_work, check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.io import check_same_length, read_segments, same_file
from evalab.items import Columns
from evalab.metrics.base import Metric
from evalab.metrics.missing_refs import reference_count
from evalab.metrics.semantic import Alignment, BERTScore
from evalab.metrics.stats_value import NRefs, Stats
from evalab.progress import progress_bar
from evalab.report.agreement import AGREEMENT_HEADER, agreement_cell, agreement_notes
from evalab.report.compare_page import (
    ALIGNMENT_LIMIT,
    ComparePage,
    alignment_segments,
    ranking_figures,
    render_compare_page,
)
from evalab.report.error_spans import PageSpans
from evalab.report.notes import stats_sentence
from evalab.report.numbers import (
    NO_VALUE,
    scale_decimals,
)
from evalab.report.ranking_notes import unsettled_sentence
from evalab.report.table import Interval, Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, wide_table
from evalab.report.word_alignment import aligned_metric, page_edits
from evalab.stats.bootstrap import ConfidenceInterval, check_confidence
from evalab.stats.mcnemar import EXACT_MAX_DISCORDANT, binary_outcomes, mcnemar_test
from evalab.stats.multiple import holm_bonferroni
from evalab.stats.paired import (
    DEFAULT_P_VALUE,
    DEFAULT_TRIALS,
    P_VALUE_METHODS,
    PairedTestResult,
    paired_test,
)
from evalab.stats.ranking import (
    CLUSTER_RULE,
    RESOLUTION,
    PairwiseResult,
    Ranking,
    pairwise_mcnemar,
    pairwise_test,
    rank_systems,
    ranking_samples,
    segment_scores_from_stats,
    unsettled_boundaries,
    win_tie_loss,
)
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples, check_seed
from evalab.stats.thresholds import agreement, calibration_for

if TYPE_CHECKING:
    from evalab.metrics.ray_shards import RayCluster

CORRECTIONS = ("none", "holm")


#: --ci-n's default: bootstrap resamples of the intervals that --test ar adds
DEFAULT_CI_N = 1000


def _check_test_options(test: str, n_samples: int | None, ci_n: int) -> None:
    """Refuse an option the chosen --test does not use (it would be dropped in silence)."""
    unused = [
        option
        for option, given in (
            ("-n/--n-samples", n_samples is not None and test == "mcnemar"),
            ("--ci-n", ci_n != DEFAULT_CI_N and test != "ar"),
        )
        if given
    ]
    if unused:
        uses = {"-n/--n-samples": "bs and ar", "--ci-n": "ar"}
        raise SettingsError(
            f"{unused[0]} applies to --test {uses[unused[0]]} only, not --test {test}"
        )


def check_distinct_systems(inputs: list[str]) -> None:
    """Refuse one system file given twice under -i (also as ``./sys.txt`` or a link to it).

    It would be one system compared with (or meta-evaluated against) itself, and two rows
    of one name in every table.
    """
    twice = sorted(
        {p for i, p in enumerate(inputs) for q in inputs[i + 1 :] if p != "-" and same_file(p, q)}
    )
    if twice:
        raise SettingsError(
            f"system file given twice: {', '.join(twice)}; give each -i system once"
        )


def result_rows(
    results: dict[str, PairedTestResult],
    metrics: dict[str, Metric],
    nrefs: NRefs,
    correction: str,
    alpha: float,
) -> list[dict[str, Any]]:
    """One JSON-ready dict per metric and system (baseline first within each metric)."""
    rows: list[dict[str, Any]] = []
    for name, res in results.items():
        raw = np.array(res.p_values())
        adjusted = raw.copy()
        defined = np.isfinite(raw)  # an undefined score (NaN) has no p-value to adjust
        if correction == "holm":
            adjusted[defined] = holm_bonferroni(raw[defined])
        metric_sig = metrics[name].signature_for(nrefs)
        for j, sys_res in enumerate(res.systems):
            p_adj = None if sys_res.baseline else float(adjusted[j - 1])
            rows.append(
                ordered_row(
                    {
                        "metric": name,
                        **sys_res.to_dict(),
                        "confidence": res.confidence,
                        "p_adjusted": p_adj,
                        "correction": correction,
                        "significant": None if p_adj is None else p_adj < alpha,
                        "alpha": alpha,
                        "test": res.test,
                        "n_samples": res.n_samples,
                        "seed": res.seed,
                        "signature": f"{metric_sig}|{res.signature}",
                    }
                )
            )
    return rows


def with_agreement(
    rows: list[dict[str, Any]], metrics: dict[str, Metric], nrefs: NRefs
) -> list[dict[str, Any]]:
    """``rows`` with ``human_agreement`` beside each Δ (``--agreement``): the share of judges
    expected to confirm its order (:func:`evalab.stats.thresholds.agreement`); None on the
    baseline's rows."""
    out = []
    for r in rows:
        if r.get("baseline"):
            out.append({**r, "human_agreement": None})
            continue
        found = calibration_for(r["metric"], metrics[r["metric"]].signature_for(nrefs))
        out.append({**r, "human_agreement": agreement(r["delta"], found).to_dict()})
    return out


def render(
    rows: list[dict[str, Any]],
    metrics: dict[str, Metric],
    fmt: str,
    width: int | None,
    out: str | None,
    short: dict[str, str],
    view: TableView,
    notes: Sequence[str] = (),
) -> None:
    """Print or write the comparison as a table, JSON, Markdown or LaTeX (``short``: table
    names; ``notes``: sentences that qualify the results)."""
    corrected = any(r["correction"] != "none" for r in rows)
    conf = f"{rows[0]['confidence'] * 100:g}% CI"
    agree = "human_agreement" in rows[0]
    header = ["system", "metric", "score (μ ± hw)", conf, "Δ baseline"]
    header += [AGREEMENT_HEADER] if agree else []
    header += ["p-value", *(["p (Holm)"] if corrected else [])]
    body = []
    for r in rows:
        d = scale_decimals(metrics[r["metric"]].scale, width)
        mean = Number(r["mean"], d, spread=r["half_width"]) if r["mean"] is not None else None
        mark = " *" if r["significant"] else ""
        line: list[TableCell] = [
            short[r["system"]],
            r["metric"],
            Number(r["score"], d, also=mean),
            Interval(r["ci_low"], r["ci_high"], d),
            "baseline" if r["baseline"] else Number(r["delta"], d, signed=True),
            *([agreement_cell(r["human_agreement"])] if agree else []),
            Number(r["p_value"], 5, p=True, marker="" if corrected else mark),
        ]
        if corrected:
            line.append(Number(r["p_adjusted"], 5, p=True, marker=mark))
        body.append(line)
    footer = list(dict.fromkeys(r["signature"] for r in rows))  # the signature names its metric
    which = "Holm-adjusted p" if corrected else "p"
    star = f"* {which} < {rows[0]['alpha']:g} against the baseline"
    notes = [*agreement_notes(rows), *notes]
    wide = _significance_wide(
        rows, metrics, width, short, [f"{star}, {short[rows[0]['system']]}.", *footer, *notes]
    )
    emit_view(fmt, Table(header, body, [*footer, star, *notes]), wide, out, view, data=rows)


def _significance_wide(
    rows: list[dict[str, Any]],
    metrics: dict[str, Metric],
    width: int | None,
    short: dict[str, str],
    footer: list[str],
) -> Table:
    """Systems x metrics of a comparison with the baseline: score ± half-width, ``*`` where
    the difference to the baseline is significant; ``footer`` follows the notes."""
    confidence = next((r.get("confidence") for r in rows if r.get("half_width") is not None), None)
    cells = {
        (short[r["system"]], r["metric"]): Cell(
            r["score"], r.get("half_width"), "*" if r["significant"] else ""
        )
        for r in rows
    }
    return _wide_text(rows, metrics, width, short, cells, [*wide_notes(confidence), *footer])


def _wide_text(
    rows: list[dict[str, Any]],
    metrics: dict[str, Metric],
    width: int | None,
    short: dict[str, str],
    cells: dict[tuple[str, str], Cell],
    notes: list[str],
) -> Table:
    columns = [
        WideMetric(m, metrics[m].higher_is_better, scale_decimals(metrics[m].scale, width))
        for m in dict.fromkeys(r["metric"] for r in rows)
    ]
    systems = list(dict.fromkeys(short[r["system"]] for r in rows))
    t = wide_table(systems, columns, cells)
    return Table(t.header, t.body, notes, bold=t.bold)


def mcnemar_rows(
    metrics: dict[str, Metric],
    stats: dict[str, dict[str, Stats]],
    correction: str,
    alpha: float,
) -> list[dict[str, Any]]:
    """McNemar's test of every system against the first, per metric, as JSON-ready dicts."""
    out: list[dict[str, Any]] = []
    for name, metric in metrics.items():
        outcomes = {
            sys_name: binary_outcomes(rows.rows, name) for sys_name, rows in stats[name].items()
        }
        names = list(outcomes)
        base = outcomes[names[0]]
        tests = [mcnemar_test(base, outcomes[s]) for s in names[1:]]
        raw = np.array([t.p_value for t in tests])
        adjusted = holm_bonferroni(raw) if correction == "holm" else raw
        for j, sys_name in enumerate(names):
            t = tests[j - 1] if j else None
            value = stats[name][sys_name]
            score = float(metric.scores_from_sums(value.sums()))
            p_adj = float(adjusted[j - 1]) if t else None
            out.append(
                ordered_row(
                    {
                        "metric": name,
                        "system": sys_name,
                        "score": score,
                        "baseline": j == 0,
                        "delta": score
                        - float(metric.scores_from_sums(stats[name][names[0]].sums())),
                        "baseline_only": t.baseline_only if t else None,
                        "system_only": t.system_only if t else None,
                        "p_value": t.p_value if t else None,
                        "method": t.method if t else None,
                        "p_adjusted": p_adj,
                        "correction": correction,
                        "alpha": alpha,
                        "test": "mcnemar",
                        "significant": None if p_adj is None else p_adj < alpha,
                        "signature": f"{value.signature}|test:mcnemar|exact:<={EXACT_MAX_DISCORDANT}|else:mid-p",
                    }
                )
            )
    return out


def render_mcnemar(
    rows: list[dict[str, Any]],
    fmt: str,
    out: str | None,
    short: dict[str, str],
    metrics: dict[str, Metric],
    view: TableView,
) -> None:
    """Print or write McNemar results: scores, discordant counts and p-values."""
    corrected = rows[0]["correction"] != "none"
    header = [
        "system",
        "metric",
        "score",
        "Δ baseline",
        "base only",
        "system only",
        "p-value",
        "method",
    ]
    if corrected:
        header.append("p (Holm)")
    body = []
    for r in rows:
        mark = " *" if r["significant"] else ""
        line: list[TableCell] = [short[r["system"]], r["metric"], Number(r["score"], 4)]
        if r["baseline"]:
            line += ["baseline", Number(None, 0), Number(None, 0), Number(None, 5, p=True)]
            line += [NO_VALUE, *([Number(None, 5, p=True)] if corrected else [])]
        else:
            line += [
                Number(r["delta"], 4, signed=True),
                Number(r["baseline_only"], 0),
                Number(r["system_only"], 0),
                Number(r["p_value"], 5, p=True, marker="" if corrected else mark),
                r["method"],
            ]
            line += [Number(r["p_adjusted"], 5, p=True, marker=mark)] if corrected else []
        body.append(line)
    footer = list(dict.fromkeys(r["signature"] for r in rows))
    star = (
        f"* {'Holm-adjusted p' if corrected else 'p'} < {rows[0]['alpha']:g} against the baseline"
    )
    long = Table(
        header,
        body,
        [*footer, star + "; base only / system only: segments only that one got right"],
    )
    wide = _significance_wide(
        rows, metrics, 4, short, [f"{star}, {short[rows[0]['system']]}.", *footer]
    )
    emit_view(fmt, long, wide, out, view, data=rows)


def warn_if_powerless(n_systems: int, n: int, alpha: float, what: str) -> None:
    """Warn when Holm over all pairs cannot reach ``alpha`` with ``n`` resamples or trials.

    The smallest p-value is ``1 / (n + 1)`` and Holm multiplies the smallest by the number
    of pairs ``m``: below ``n = m / alpha`` no pair can be significant, so every system
    would share one cluster whatever the data.
    """
    m = n_systems * (n_systems - 1) // 2
    if m / (n + 1) >= alpha:
        warnings.warn(
            f"with {n} {what} the smallest p-value is 1/{n + 1}, and Holm over {m} pairs cannot bring it below "
            f"--alpha {alpha:g}: no two systems can be separated; use -n {int(m / alpha)} or more",
            stacklevel=2,
        )


def _resamples(test: str, n_samples: int | None, n_ranked: int, alpha: float, correct: str) -> int:
    """``-n`` as given, else the test's default; for a ranking of ``n_ranked`` systems (0: no
    ranking) enough for the smallest reachable adjusted p-value to be well below ``alpha``
    (:func:`evalab.stats.ranking.ranking_samples`)."""
    if n_samples is not None:
        return check_n_samples(n_samples)
    if test == "mcnemar" or not n_ranked:
        return DEFAULT_TRIALS.get(test, 0)
    return ranking_samples(test, n_ranked, alpha, correct)


def pairwise_results(
    test: str,
    built: dict[str, Metric],
    stats: dict[str, dict[str, Stats]],
    n: int,
    seed: int,
    confidence: float,
    p_value: str,
    ci_n: int,
    quiet: bool,
) -> dict[str, PairwiseResult]:
    """Every pair of systems tested on every metric (one resampling stream for all)."""
    if test == "mcnemar":
        return {name: pairwise_mcnemar(metric, stats[name]) for name, metric in built.items()}
    label = f"paired {'bootstrap' if test == 'bs' else 'randomization'}, all pairs"
    with progress_bar(n + (ci_n if test == "ar" else 0), label, enabled=not quiet) as advance:
        return pairwise_test(
            test,
            built,
            stats,
            n_samples=n,
            seed=seed,
            confidence=confidence,
            p_value=p_value,
            ci_samples=ci_n,
            progress=advance,
        )


def _ci_fields(ci: ConfidenceInterval | None) -> dict[str, float | None]:
    return {
        "mean": ci.mean if ci else None,
        "ci_low": ci.low if ci else None,
        "ci_high": ci.high if ci else None,
        "half_width": ci.half_width if ci else None,
    }


def _settings_fields(res: PairwiseResult, rk: Ranking) -> dict[str, Any]:
    resampled = res.test != "mcnemar"
    return {
        "test": res.test,
        "n_samples": res.n_samples if resampled else None,
        "seed": res.seed if resampled else None,
        "correction": rk.correction,
        "alpha": rk.alpha,
        "clustering": CLUSTER_RULE,
    }


def ranking_rows(
    results: dict[str, PairwiseResult],
    rankings: dict[str, Ranking],
    metrics: dict[str, Metric],
    nrefs: NRefs,
) -> list[dict[str, Any]]:
    """One JSON-ready dict per metric and system, best first within each metric."""
    rows: list[dict[str, Any]] = []
    for name, res in results.items():
        rk = rankings[name]
        signature = f"{metrics[name].signature_for(nrefs)}|{res.signature}|{rk.rule}"
        for position, j in enumerate(rk.order, start=1):
            rows.append(
                ordered_row(
                    {
                        "metric": name,
                        "system": res.systems[j],
                        "score": res.scores[j],
                        **_ci_fields(res.cis[j]),
                        "rank": position if rk.clusters[j] is not None else None,
                        "cluster": rk.clusters[j],
                        "confidence": res.confidence if res.cis[j] else None,
                        **_settings_fields(res, rk),
                        "signature": signature,
                    }
                )
            )
    return rows


def pair_rows(
    results: dict[str, PairwiseResult],
    rankings: dict[str, Ranking],
    metrics: dict[str, Metric],
    stats: dict[str, dict[str, Stats]],
    nrefs: NRefs,
) -> list[dict[str, Any]]:
    """One JSON-ready dict per metric and pair, the higher-ranked system first: Δ, p-values and
    the segments each system wins (sentence-level scores from the same stats rows)."""
    rows: list[dict[str, Any]] = []
    for name, res in results.items():
        rk = rankings[name]
        signature = f"{metrics[name].signature_for(nrefs)}|{res.signature}|{rk.rule}"
        segment = [
            segment_scores_from_stats(metrics[name], stats[name][s].rows) for s in res.systems
        ]
        for a, i in enumerate(rk.order):
            for j in rk.order[a + 1 :]:
                wins, ties, losses = win_tie_loss(segment[i], segment[j], res.higher_is_better)
                p, p_adj = float(res.p_values[i, j]), float(rk.p_adjusted[i, j])
                rows.append(
                    ordered_row(
                        {
                            "metric": name,
                            "system": res.systems[i],
                            "other": res.systems[j],
                            "delta": res.scores[i] - res.scores[j],
                            "p_value": p,
                            "p_adjusted": p_adj,
                            "significant": bool(p_adj < rk.alpha) if np.isfinite(p_adj) else None,
                            "wins": wins,
                            "ties": ties,
                            "losses": losses,
                            **_settings_fields(res, rk),
                            "signature": signature,
                        }
                    )
                )
    return rows


def pair_matrix(res: PairwiseResult, rk: Ranking) -> dict[str, Any]:
    """The pairs of one metric as matrices in ranking order: ``delta[i][j]`` = score of
    system ``i`` minus that of ``j``; p-values symmetric, ``None`` on the diagonal."""
    order = list(rk.order)
    return {
        "systems": [res.systems[i] for i in order],
        "delta": [[res.scores[i] - res.scores[j] for j in order] for i in order],
        "p_value": [[float(res.p_values[i, j]) for j in order] for i in order],
        "p_adjusted": [[float(rk.p_adjusted[i, j]) for j in order] for i in order],
    }


def _which(rows: list[dict[str, Any]]) -> str:
    return "Holm-adjusted p" if rows[0]["correction"] == "holm" else "p"


def _ranking_table(
    rows: list[dict[str, Any]], metrics: dict[str, Metric], width: int | None, short: dict[str, str]
) -> tuple[Table, Table]:
    """The ranking, long (a row per system and metric) and wide (systems x metrics, each
    score followed by its cluster)."""
    with_ci = any(r["ci_low"] is not None for r in rows)
    header = ["system", "metric", "rank", "cluster", "score (μ ± hw)" if with_ci else "score"]
    if with_ci:
        header.append(f"{rows[0]['confidence'] * 100:g}% CI")
    body = []
    for r in rows:
        d = scale_decimals(metrics[r["metric"]].scale, width)
        mean = Number(r["mean"], d, spread=r["half_width"]) if r["mean"] is not None else None
        line: list[TableCell] = [short[r["system"]], r["metric"], Number(r["rank"], 0)]
        line += [Number(r["cluster"], 0), Number(r["score"], d, also=mean)]
        if with_ci:
            line.append(Interval(r["ci_low"], r["ci_high"], d))
        body.append(line)
    signatures = list(dict.fromkeys(r["signature"] for r in rows))
    n_pairs = sum(1 for r in rows if r["metric"] == rows[0]["metric"])
    n_pairs = n_pairs * (n_pairs - 1) // 2
    rule = (
        f"cluster: a new cluster starts where every system above is significantly better than every "
        f"system below ({_which(rows)} < {rows[0]['alpha']:g} over the {n_pairs} pair{'s' * (n_pairs != 1)} of each metric)"
    )
    cells = {
        (short[r["system"]], r["metric"]): Cell(
            r["score"], r["half_width"], "" if r["cluster"] is None else f" ({r['cluster']})"
        )
        for r in rows
    }
    confidence = rows[0]["confidence"] if with_ci else None
    notes = [*wide_notes(confidence), f"(k): the system's {rule}.", *signatures]
    wide = _wide_text(rows, metrics, width, short, cells, notes)
    return Table(header, body, [*signatures, rule]), wide


def _pairs_table(
    rows: list[dict[str, Any]], metrics: dict[str, Metric], width: int | None, short: dict[str, str]
) -> Table:
    corrected = rows[0]["correction"] != "none"
    agree = "human_agreement" in rows[0]
    header = [
        "system",
        "vs",
        "metric",
        "Δ",
        *([AGREEMENT_HEADER] if agree else []),
        "p-value",
        *(["p (Holm)"] if corrected else []),
        "wins",
        "ties",
        "losses",
    ]
    body = []
    for r in rows:
        mark = " *" if r["significant"] else ""
        line: list[TableCell] = [
            short[r["system"]],
            short[r["other"]],
            r["metric"],
            Number(r["delta"], scale_decimals(metrics[r["metric"]].scale, width), signed=True),
            *([agreement_cell(r["human_agreement"])] if agree else []),
            Number(r["p_value"], 5, p=True, marker="" if corrected else mark),
        ]
        if corrected:
            line.append(Number(r["p_adjusted"], 5, p=True, marker=mark))
        body.append([*line, *(Number(r[k], 0) for k in ("wins", "ties", "losses"))])
    footer = [
        f"* {_which(rows)} < {rows[0]['alpha']:g}; Δ = system - vs; wins, ties, losses: segments whose "
        "sentence-level score is better for system, equal, better for vs",
        *agreement_notes(rows),
    ]
    return Table(header, body, footer)


@dataclass(frozen=True)
class PageTexts:
    """The segments the HTML page shows: references, sources (if given), every system's output."""

    references: list[str]
    sources: list[str] | None
    outputs: dict[str, list[str]]
    #: word counts of the --train file
    train_counts: dict[str, int] | None
    #: every reference file's segments (``None``: no reference for that segment), for the alignments
    reference_sets: list[list[str | None]]
    #: a word-level model's error spans (xCOMET), systems under their table names
    error_spans: PageSpans | None = None


def _page(
    results: dict[str, PairwiseResult],
    ranked: list[dict[str, Any]],
    metrics: dict[str, Metric],
    stats: dict[str, dict[str, Stats]],
    short: dict[str, str],
    texts: PageTexts,
    notes: list[str],
) -> ComparePage:
    """The HTML page's content, every system under its table name."""
    names = list(next(iter(results.values())).systems)
    scores = {
        m: {short[s]: segment_scores_from_stats(metrics[m], stats[m][s].rows) for s in names}
        for m in results
    }
    aligned = _bertscore(metrics, list(results))
    edited = aligned_metric(metrics, list(results))
    return ComparePage(
        title=f"evalab compare: {len(names)} systems, {len(texts.references)} segments",
        systems=[short[s] for s in names],
        references=texts.references,
        sources=texts.sources,
        outputs={short[s]: texts.outputs[s] for s in names},
        higher_is_better={m: res.higher_is_better for m, res in results.items()},
        segment_scores=scores,
        ranking=[{**r, "system": short[r["system"]]} for r in ranked],
        notes=notes,
        train_counts=texts.train_counts,
        error_spans=texts.error_spans,
        alignment_metric=None if aligned is None else aligned[0],
        alignment_limit=ALIGNMENT_LIMIT,
        alignments=None
        if aligned is None
        else _alignments(aligned[1], scores[aligned[0]], texts, {short[s]: s for s in names}),
        edit_alignments=None
        if edited is None
        else page_edits(
            *edited,
            alignment_segments(scores[edited[0]]),
            {short[s]: texts.outputs[s] for s in names},
            texts.reference_sets,
            ALIGNMENT_LIMIT,
        ),
    )


def _bertscore(metrics: dict[str, Metric], names: list[str]) -> tuple[str, BERTScore] | None:
    """The first BERTScore metric of ``names`` (the page shows its token alignments)."""
    for name in names:
        metric = metrics[name]
        if isinstance(metric, BERTScore):
            return name, metric
    return None


def _alignments(
    metric: BERTScore, scores: dict[str, np.ndarray], texts: PageTexts, key: dict[str, str]
) -> dict[str, dict[int, Alignment]]:
    """Per system (table name), the token alignments of the page's segments (``alignment_segments``).
    With IDF weights every segment is explained (the weights, which decide the tokens matched
    from, come from all the references, as in the scores); otherwise only the chosen ones."""
    out = {}
    for name, chosen in alignment_segments(scores).items():
        hyps = texts.outputs[key[name]]
        run = list(range(len(hyps))) if metric.settings.idf else chosen
        found: dict[int, Alignment] = {}
        for present, segments in _by_present_references(texts.reference_sets, run).items():
            # every segment of the group has the references in ``present``
            refs = [
                [r for i in segments if (r := texts.reference_sets[j][i]) is not None]
                for j in present
            ]
            found.update(
                zip(segments, metric.explain([hyps[i] for i in segments], refs), strict=True)
            )
        out[name] = {i: found[i] for i in chosen}
    return out


def _by_present_references(
    refs: list[list[str | None]], segments: list[int]
) -> dict[tuple[int, ...], list[int]]:
    """The segments grouped by which references they have (``--missing-ref empty-line``)."""
    groups: dict[tuple[int, ...], list[int]] = {}
    for i in segments:
        groups.setdefault(tuple(j for j, r in enumerate(refs) if r[i] is not None), []).append(i)
    return groups


def render_ranking(
    results: dict[str, PairwiseResult], run: SystemsRun, done: ScoredSystems
) -> None:
    """The ranking with clusters (and with ``--all-pairs`` or ``--agreement`` every pair) in
    ``-f``; with the page's texts (``-f html``) the page instead; with ``--figures`` the
    ranking's forest plots written there as PDF, SVG and PNG; with ``--agreement`` the pairs
    carry the share of judges confirming each Δ."""
    req, metrics, stats, short = run.req, done.built, done.stats, run.named.short_by_key()
    nrefs, alpha = reference_count(done.refs), req.alpha
    correction, width, out, texts = run.correct, req.width, req.out, done.texts
    rankings = {
        name: rank_systems(res.scores, res.p_values, alpha, correction, res.higher_is_better)
        for name, res in results.items()
    }
    ranked = ranking_rows(results, rankings, metrics, nrefs)
    if req.figure_files.figures is not None:
        shown = [{**r, "system": short[r["system"]]} for r in ranked]
        higher = {m: res.higher_is_better for m, res in results.items()}
        req.figure_files.write(ranking_figures(shown, higher), [*run.read, ("--out", out)])
    long, wide = _ranking_table(ranked, metrics, width, short)
    unsettled = _unsettled(results, rankings, short)
    long = replace(long, footer=[*long.footer, *unsettled])
    wide = replace(wide, footer=[*wide.footer, *unsettled])
    if texts is not None:
        emit(
            render_compare_page(
                _page(results, ranked, metrics, stats, short, texts, list(long.footer))
            ),
            out,
        )
        return
    data: dict[str, Any] = {"ranking": ranked, "unsettled": _unsettled_data(results, rankings)}
    more = []
    if req.all_pairs or req.agreement:
        data["pairs"] = pair_rows(results, rankings, metrics, stats, nrefs)
        if req.agreement:
            data["pairs"] = with_agreement(data["pairs"], metrics, nrefs)
        data["matrix"] = {name: pair_matrix(res, rankings[name]) for name, res in results.items()}
        more.append(_pairs_table(data["pairs"], metrics, width, short))
    emit_view(req.format, long, wide, out, run.view, data=data, more=more)


def _unsettled(
    results: dict[str, PairwiseResult], rankings: dict[str, Ranking], short: dict[str, str]
) -> list[str]:
    """The note of each cluster that more resamples could split, in words."""
    lines = []
    for name, res in results.items():
        for u in unsettled_boundaries(rankings[name], res.p_values, res.n_samples):
            above, below = (short[res.systems[k]] for k in (u.above, u.below))
            lines.append(
                unsettled_sentence(
                    name, u, above, below, test=res.test, correction=rankings[name].correction
                )
            )
    return lines


def _unsettled_data(
    results: dict[str, PairwiseResult], rankings: dict[str, Ranking]
) -> list[dict[str, Any]]:
    """The notes of :func:`_unsettled` as JSON: metric, cluster, the two systems, the
    blocking adjusted p-value, its Monte Carlo error and the resamples."""
    return [
        {
            "metric": name,
            "cluster": u.cluster,
            "above": res.systems[u.above],
            "below": res.systems[u.below],
            "p_adjusted": u.p_adjusted,
            "mc_error": u.mc_error,
            "n_samples": u.n_samples,
        }
        for name, res in results.items()
        for u in unsettled_boundaries(rankings[name], res.p_values, res.n_samples)
    ]


def _page_texts(
    fmt: str,
    source: str | None,
    train: str | None,
    reference: list[str],
    refs: list[list[str | None]],
    systems: dict[str, list[str]],
) -> PageTexts | None:
    """The texts of the HTML page (``None`` for the other formats); the source checked line-aligned."""
    if fmt != "html":
        return None
    sources = None
    if source is not None:
        sources = read_segments(source)
        check_same_length([(source, sources), (reference[0], refs[0])])
    counts = None
    if train is not None:
        counts = Counter(w for line in read_segments(train) for w in line.split())
        if not counts:
            raise InputError(
                f"--train {train}: no words; give the training side the frequency buckets count words in"
            )
    return PageTexts(
        [r if r is not None else "" for r in refs[0]],
        sources,
        systems,
        dict(counts) if counts else None,
        refs,
    )


@dataclass(frozen=True)
class CompareRequest:
    """``evalab compare``'s options, as the command line gives them."""

    reference: RepeatedReferences = field(default_factory=list)
    input: Inputs = field(default_factory=list)
    source: Source = None
    metrics: Metrics = field(default_factory=lambda: ["bleu"])
    test: Annotated[
        str,
        typer.Option(
            "-t",
            "--test",
            help="Paired test: bs (paired bootstrap, Koehn 2004), ar (approximate randomization) or mcnemar (right/wrong metrics: exact_match, accuracy).",
        ),
    ] = "bs"
    n_samples: Annotated[
        int | None,
        n_samples_option(
            f"Bootstrap resamples (bs, default {DEFAULT_TRIALS['bs']}) or AR trials (ar, default "
            f"{DEFAULT_TRIALS['ar']}); with --rank, --all-pairs or -f html enough for Holm over "
            f"all pairs to reach alpha/{RESOLUTION} (45 pairs: 9000 resamples); with --scores, "
            "bootstrap intervals."
        ),
    ] = None
    seed: Annotated[
        int, seed_option("Seed of the resampling (numpy default_rng; 0 is a seed too).")
    ] = DEFAULT_SEED
    confidence: IntervalConfidence = 0.95
    ci_n: Annotated[
        int,
        typer.Option(
            "--ci-n", help="With --test ar: bootstrap resamples for the intervals (0: none)."
        ),
    ] = DEFAULT_CI_N
    p_value: Annotated[
        str,
        typer.Option(
            "--p-value",
            help="Bootstrap p-value: centered (calibrated) or sacrebleu (reproduces sacrebleu --paired-bs).",
        ),
    ] = DEFAULT_P_VALUE
    correct: Annotated[
        str | None,
        typer.Option(
            "--correct",
            help="Multiple-comparison correction per metric: none or holm (Holm-Bonferroni). Default: holm over all pairs with --rank/--all-pairs, none otherwise.",
        ),
    ] = None
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the * marker.")] = (
        0.05
    )
    set_: MetricSettings = field(default_factory=list)
    format: PageFormat = "table"
    width: Width = None
    shards: ShardOptions = field(default_factory=ShardOptions)
    out: OutFile = None
    quiet: Quiet = False
    rank: Annotated[
        bool,
        typer.Option(
            "--rank",
            help="Rank the systems by score, with significance clusters from paired tests of every pair.",
        ),
    ] = False
    all_pairs: Annotated[
        bool,
        typer.Option(
            "--all-pairs",
            help="Also list every pair of systems: Δ, p-values, and segments won, tied and lost (implies --rank).",
        ),
    ] = False
    agreement: Annotated[
        bool,
        typer.Option(
            "--agreement",
            help="Beside each Δ, the share of human judges expected to confirm its order (Kocmi et al. 2024's calibration: BLEU, chrF, COMET, MetricX; implies --all-pairs with --rank).",
        ),
    ] = False
    train: Annotated[
        str | None,
        typer.Option(
            "--train",
            help="With -f html: a training file (one segment a line) whose word counts define the page's frequency buckets (default: the references).",
        ),
    ] = None
    missing_ref: MissingRef = "none"
    scores: ScoreFiles = field(default_factory=list)
    id_column: IdColumn = "id"
    score_column: ScoreColumns = field(default_factory=list)
    cluster_column: ClusterColumn = None
    sample_column: Annotated[
        str | None,
        typer.Option(
            "--sample-column",
            help="With --scores: the column numbering several samples (generations) of one item.",
        ),
    ] = None
    common_items: Annotated[
        bool,
        typer.Option(
            "--common-items",
            help="With --scores: compare on the items every model has (else missing or extra ids are refused).",
        ),
    ] = False
    layout: Layout = None
    latex: LatexOptions = field(default_factory=LatexOptions)
    figure_files: FigureOptions = field(default_factory=FigureOptions)

    @property
    def every_pair(self) -> bool:
        """Paired tests of every pair (``--rank``, ``--all-pairs``, the page), not against the baseline."""
        return self.rank or self.all_pairs or self.format == "html"


#: the options of one mode only: -r/-i system outputs, and --scores per-item files
TEXT_ONLY = (
    ("-r/--reference", "reference"),
    ("-i/--input", "input"),
    ("--source", "source"),
    ("-m/--metrics", "metrics"),
    ("-t/--test", "test"),
    ("--ci-n", "ci_n"),
    ("--p-value", "p_value"),
    ("-s/--set", "set_"),
    ("-j/--jobs", "shards.jobs"),
    ("--executor", "shards.executor"),
    ("--missing-ref", "missing_ref"),
    ("--train", "train"),
    ("--figures", "figure_files.figures"),
    ("--agreement", "agreement"),
)
ITEMS_ONLY = (
    ("--id-column", "id_column"),
    ("--score-column", "score_column"),
    ("--cluster-column", "cluster_column"),
    ("--sample-column", "sample_column"),
    ("--common-items", "common_items"),
)


@command(CompareRequest)
def compare(req: CompareRequest) -> None:
    """Compare systems with a baseline (the first -i, or --scores per-item files instead of -r/-i): scores, CIs, deltas and paired p-values; a quality-estimation metric needs --source, not -r."""
    check_mode(bool(req.scores), given_options(req, TEXT_ONLY), given_options(req, ITEMS_ONLY))
    # the page is a view of texts: --scores has the table formats only
    view = table_view(
        req.format, req.layout, req.latex, TABLE_FORMATS if req.scores else PAGE_FORMATS
    )
    if req.scores:
        compare_per_item(req, view)
    else:
        compare_systems(checked_systems(req, view))


def compare_per_item(req: CompareRequest, view: TableView) -> None:
    """``compare --scores``: per-item score files (:mod:`evalab.cli.compare_scores`)."""
    cols = Columns(req.id_column, tuple(req.score_column), req.cluster_column, req.sample_column)
    opts = ScoreOptions(
        cols,
        req.common_items,
        req.confidence,
        req.correct,
        req.alpha,
        req.n_samples or 0,
        req.seed,
        req.format,
        req.width,
        req.out,
        req.rank,
        req.all_pairs,
        view,
    )
    compare_scores(req.scores, opts)


@dataclass(frozen=True)
class SystemsRun:
    """``compare -r/-i``, every option checked: what the comparison of texts runs with."""

    req: CompareRequest
    named: NamedInputs
    #: the ``-m`` metrics with their ``--set`` settings, resolved once
    metrics: MetricSelection
    #: every file the command reads, for the outputs to replace none of them
    read: list[tuple[str, str | None]]
    #: resamples (bs) or trials (ar); McNemar's exact test has none
    n: int
    correct: str
    cluster: RayCluster | None
    view: TableView


#: ``compare -r/-i`` without -i, or without -r where a metric needs references
NEEDS_INPUTS = "compare needs -r REFERENCE and -i BASELINE SYS1 ... (or --scores FILES)"


def checked_systems(req: CompareRequest, view: TableView) -> SystemsRun:
    """Every option of ``compare -r/-i`` checked before any file is read or any resampling starts."""
    if not req.input:
        raise SettingsError(NEEDS_INPUTS)
    metrics = MetricSelection.parse(req.metrics, req.set_)
    _check_references_given(req, metrics)
    named = named_inputs(req.input)
    read = [
        *input_options(req.reference, named.paths, req.source),
        ("--train", req.train),
        *metrics.read_paths(),
    ]
    check_out(req.out, read)
    if req.figure_files.figures is not None and not req.every_pair:
        raise SettingsError("--figures writes the ranking's forest plots: give --rank (or -f html)")
    req.figure_files.check([*read, ("--out", req.out)])
    if req.train is not None and req.format != "html":
        raise SettingsError(
            f"--train applies to -f html only (the page's frequency buckets), not -f {req.format}"
        )
    check_missing_ref(req.missing_ref)
    _checked_test(req)
    _check_agreement(req)
    if req.agreement and not req.every_pair:
        view = replace(view, layout="long")  # the column of Δs: the long table
    correct = req.correct if req.correct is not None else ("holm" if req.every_pair else "none")
    if correct not in CORRECTIONS:
        raise SettingsError(f"--correct must be one of {', '.join(CORRECTIONS)}, got {correct!r}")
    if not 0.0 < req.alpha < 1.0:
        raise SettingsError(f"--alpha must be strictly between 0 and 1, got {req.alpha}")
    ranked = len(named.paths) if req.every_pair else 0
    n = _resamples(req.test, req.n_samples, ranked, req.alpha, correct)
    check_width(req.width)
    cluster = req.shards.cluster()
    if len(named.paths) < 2:
        raise SettingsError(
            "compare needs a baseline and at least one system: -i BASELINE SYS1 [SYS2 ...]"
        )
    check_distinct_systems(named.paths)
    return SystemsRun(req, named, metrics, read, n, correct, cluster, view)


def _check_references_given(req: CompareRequest, metrics: MetricSelection) -> None:
    """No ``-r`` only where every metric scores without references (quality estimation,
    built to say so), and not for the page, which shows them."""
    if req.reference:
        return
    if needs_references(metrics.build()):
        raise SettingsError(NEEDS_INPUTS)
    if req.format == "html":
        raise SettingsError(
            "compare -f html shows each segment's reference beside the systems: pass -r REF"
        )


def _check_agreement(req: CompareRequest) -> None:
    """``--agreement`` sits beside a Δ column: not McNemar's table, the page, the wide layout."""
    unused = (
        (req.test == "mcnemar", "--test mcnemar"),
        (req.format == "html", "-f html"),
        (req.layout == "wide", "--layout wide (it has no Δ column)"),
    )
    for given, where in unused:
        if req.agreement and given:
            raise SettingsError(
                f"--agreement applies to the Δ of --test bs and ar in tables and JSON, not {where}"
            )


def _checked_test(req: CompareRequest) -> None:
    """The test's options checked (``-n`` with the ranking's default: :func:`_resamples`)."""
    if req.test not in (*DEFAULT_TRIALS, "mcnemar"):
        raise SettingsError(
            f"--test must be one of {', '.join(DEFAULT_TRIALS)}, mcnemar, got {req.test!r}"
        )
    _check_test_options(req.test, req.n_samples, req.ci_n)
    check_seed(req.seed)
    check_confidence(req.confidence)
    if req.test == "ar" and req.ci_n != 0:
        check_n_samples(req.ci_n, "--ci-n")
    if req.p_value not in P_VALUE_METHODS:
        raise SettingsError(
            f"--p-value must be one of {', '.join(P_VALUE_METHODS)}, got {req.p_value!r}"
        )


@dataclass(frozen=True)
class ScoredSystems:
    """The systems read and scored: what every mode of ``compare -r/-i`` reports from."""

    built: dict[str, Metric]
    refs: list[list[str | None]]
    systems: dict[str, list[str]]
    stats: dict[str, dict[str, Stats]]
    texts: PageTexts | None


def scored_systems(run: SystemsRun) -> ScoredSystems:
    """Build the metrics, read and check the texts, and compute every metric's rows."""
    req, html = run.req, run.req.format == "html"
    built = show_progress(run.metrics.build(), not req.quiet)
    # the page shows a source whatever the metrics read
    check_model_inputs(built, req.source, bool(req.reference), source_shown=html)
    if not (html and req.source is not None):
        check_source_option(built, req.source, [*req.reference, *run.named.paths])
    refs, systems, _ = load_streams(
        req.reference, run.named.paths, run.named.keys, required=needs_references(built)
    )
    refs = apply_missing_refs(refs, req.reference, req.missing_ref)
    warn_language_misfits(built, refs)
    texts = _page_texts(req.format, req.source, req.train, req.reference, refs, systems)
    aligned = aligned_stream(req.reference, refs, run.named.paths, systems)
    if req.test != "mcnemar":  # McNemar's exact test is exact on any count; resampling is not
        check_resamplable(len(aligned[1]), f"--test {req.test}", aligned[0])
    check_pair_work(built, systems, refs)
    built = bind_source(built, req.source, aligned)
    scored = score_table(
        built, systems, refs, req.shards.jobs, run.cluster, segments=False, spans=texts is not None
    )
    if texts is not None:
        texts = replace(texts, error_spans=page_spans(scored, run.named.short_by_key()))
    return ScoredSystems(built, refs, systems, scored.stats, texts)


def compare_systems(run: SystemsRun) -> None:
    """``compare -r/-i``: the ranking (``--rank``, ``--all-pairs``, the page), McNemar's
    table, or the paired tests against the baseline."""
    done = scored_systems(run)
    if run.req.every_pair:
        rank_pairs(run, done)
    elif run.req.test == "mcnemar":
        rows = mcnemar_rows(done.built, done.stats, run.correct, run.req.alpha)
        render_mcnemar(
            rows, run.req.format, run.req.out, run.named.short_by_key(), done.built, run.view
        )
    else:
        against_baseline(run, done)


def rank_pairs(run: SystemsRun, done: ScoredSystems) -> None:
    """Paired tests of every pair, rendered as the ranking with clusters (or the page)."""
    req = run.req
    if run.correct == "holm" and req.test != "mcnemar":
        warn_if_powerless(
            len(done.systems), run.n, req.alpha, "resamples" if req.test == "bs" else "trials"
        )
    results = pairwise_results(
        req.test,
        done.built,
        done.stats,
        run.n,
        req.seed,
        req.confidence,
        req.p_value,
        req.ci_n,
        req.quiet,
    )
    render_ranking(results, run, done)


def against_baseline(run: SystemsRun, done: ScoredSystems) -> None:
    """The paired bootstrap or randomization test of every system against the baseline."""
    req, n = run.req, run.n
    ci_total = n if req.test == "bs" else req.ci_n
    label = f"paired {'bootstrap' if req.test == 'bs' else 'randomization'}"
    with progress_bar(
        n + (ci_total if req.test == "ar" else 0), label, enabled=not req.quiet
    ) as advance:
        results = paired_test(
            req.test,
            done.built,
            done.stats,
            n_samples=n,
            seed=req.seed,
            confidence=req.confidence,
            p_value=req.p_value,
            ci_samples=req.ci_n,
            progress=advance,
        )
    rows = result_rows(results, done.built, reference_count(done.refs), run.correct, req.alpha)
    if req.agreement:
        rows = with_agreement(rows, done.built, reference_count(done.refs))
    notes = [stats_sentence(n) for res in results.values() for n in res.notes]
    short = run.named.short_by_key()
    render(rows, done.built, req.format, req.width, req.out, short, run.view, notes)
