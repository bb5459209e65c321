"""``evalab compare``: paired significance tests of systems against a baseline.

The first ``-i`` file is the baseline. For every metric and system the output gives the
corpus score, its bootstrap confidence interval (``mean ± half-width`` and the bounds),
the difference to the baseline and the p-value of a paired bootstrap (``--test bs``,
Koehn 2004) or approximate-randomization test (``--test ar``, Riezler & Maxwell 2005),
optionally Holm-adjusted across the systems compared on each metric. ``--test mcnemar``
(metrics with a right/wrong outcome per segment) shows the discordant counts and
McNemar's p-value instead (see :mod:`evalab.stats.mcnemar`).
"""

from __future__ import annotations

import os
from typing import Annotated, Any

import numpy as np
import typer

from evalab.cli import app
from evalab.cli.compare_scores import ScoreOptions, check_mode, compare_scores
from evalab.cli.options import build_metrics
from evalab.cli.output import check_format, check_out, emit_table, format_option, ordered_row
from evalab.cli.references import apply_missing_refs, check_missing_ref
from evalab.cli.score import (
    bind_source,
    check_source_option,
    input_options,
    load_inputs,
    show_progress,
)
from evalab.cli.segment_checks import check_edit_distance_sizes, check_resamplable
from evalab.errors import SettingsError
from evalab.io import same_file
from evalab.items import Columns
from evalab.metrics.base import Metric
from evalab.metrics.missing_refs import reference_count
from evalab.metrics.parallel import stats_table
from evalab.metrics.stats_value import NRefs, Stats
from evalab.progress import progress_bar
from evalab.stats.bootstrap import check_confidence
from evalab.stats.mcnemar import EXACT_MAX_DISCORDANT, binary_outcomes, mcnemar_test
from evalab.stats.multiple import holm_bonferroni
from evalab.stats.paired import (
    DEFAULT_P_VALUE,
    DEFAULT_TRIALS,
    P_VALUE_METHODS,
    PairedTestResult,
    paired_test,
)
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples, check_seed

CORRECTIONS = ("none", "holm")


#: --ci-n's default: bootstrap resamples of the intervals that --test ar adds
DEFAULT_CI_N = 1000


def _check_test_options(test: str, n_samples: int | None, ci_n: int) -> None:
    """Refuse an option the chosen --test does not use (it would be dropped in silence)."""
    unused = [option for option, given in (
        ("-n/--n-samples", n_samples is not None and test == "mcnemar"),
        ("--ci-n", ci_n != DEFAULT_CI_N and test != "ar"),
    ) if given]
    if unused:
        uses = {"-n/--n-samples": "bs and ar", "--ci-n": "ar"}
        raise SettingsError(f"{unused[0]} applies to --test {uses[unused[0]]} only, not --test {test}")


def check_distinct_systems(inputs: list[str]) -> None:
    """Refuse one system file given twice under -i (also as ``./sys.txt`` or a link to it).

    It would be one system compared with (or meta-evaluated against) itself, and two rows
    of one name in every table.
    """
    twice = sorted({p for i, p in enumerate(inputs) for q in inputs[i + 1:] if p != "-" and same_file(p, q)})
    if twice:
        raise SettingsError(f"system file given twice: {', '.join(twice)}; give each -i system once")


def display_names(names: list[str]) -> dict[str, str]:
    """Short names for the table: the part of each name that differs between systems.

    ``generaltest2022.en-de.hyp.Online-A.de`` and ``...Online-B.de`` show as ``Online-A``
    and ``Online-B``: the common prefix and suffix are dropped at a ``.`` or ``/``
    boundary only. ``-`` and ``_`` join the words of a system's own name, so cutting there
    would print ``Online-A`` and ``Online-B`` as ``A`` and ``B``, which no reader can map
    back to a system. JSON output keeps the full names.

    >>> display_names(["out/base.txt", "out/sys1.txt"])
    {'out/base.txt': 'base', 'out/sys1.txt': 'sys1'}
    >>> display_names(["hyp.Online-A.de", "hyp.Online-B.de"])
    {'hyp.Online-A.de': 'Online-A', 'hyp.Online-B.de': 'Online-B'}
    """
    unique = list(dict.fromkeys(names))
    if len(unique) < 2:
        return {n: n for n in unique}
    seps = "./"
    prefix = os.path.commonprefix(unique)  # noqa: RUF071 - characters, not path parts
    cut = max((i + 1 for i, c in enumerate(prefix) if c in seps), default=0)
    rev = os.path.commonprefix([n[::-1] for n in unique])  # noqa: RUF071
    tail = max((i + 1 for i, c in enumerate(rev) if c in seps), default=0)
    short = {n: n[cut : len(n) - tail] for n in unique}
    if any(not v for v in short.values()) or len(set(short.values())) < len(unique):
        return {n: n for n in unique}
    return short


def _fmt(value: float | None, decimals: int) -> str:
    return "-" if value is None else f"{value:.{decimals}f}"


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
            rows.append(ordered_row(
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
            ))
    return rows


def render(rows: list[dict[str, Any]], metrics: dict[str, Metric], fmt: str, width: int | None, out: str | None) -> None:
    """Print or write the comparison as a table, JSON, Markdown or LaTeX."""
    corrected = any(r["correction"] != "none" for r in rows)
    conf = f"{rows[0]['confidence'] * 100:g}% CI"
    header = ["system", "metric", "score (μ ± hw)", conf, "Δ baseline", "p-value"]
    if corrected:
        header.append("p (Holm)")
    short = display_names([r["system"] for r in rows])
    body = []
    for r in rows:
        d = width if width is not None else (1 if metrics[r["metric"]].scale == 100 else 4)
        score = _fmt(r["score"], d)
        if r["mean"] is not None:
            score += f" ({r['mean']:.{d}f} ± {r['half_width']:.{d}f})"
        ci = "-" if r["ci_low"] is None else f"[{r['ci_low']:.{d}f}, {r['ci_high']:.{d}f}]"
        mark = " *" if r["significant"] else ""
        line = [
            short[r["system"]],
            r["metric"],
            score,
            ci,
            "baseline" if r["baseline"] else f"{r['delta']:+.{d}f}",
            "-" if r["p_value"] is None else f"{r['p_value']:.5f}" + ("" if corrected else mark),
        ]
        if corrected:
            line.append("-" if r["p_adjusted"] is None else f"{r['p_adjusted']:.5f}{mark}")
        body.append(line)
    footer = []
    for r in rows:
        if r["signature"] not in footer:  # the signature names its metric
            footer.append(r["signature"])
    which = "Holm-adjusted p" if corrected else "p"
    footer.append(f"* {which} < {rows[0]['alpha']:g} against the baseline")
    emit_table(fmt, header, body, out, footer=footer, data=rows)


def mcnemar_rows(
    metrics: dict[str, Metric], stats: dict[str, dict[str, Stats]], correction: str, alpha: float,
) -> list[dict[str, Any]]:
    """McNemar's test of every system against the first, per metric, as JSON-ready dicts."""
    out: list[dict[str, Any]] = []
    for name, metric in metrics.items():
        outcomes = {sys_name: binary_outcomes(rows, name) for sys_name, rows in stats[name].items()}
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
            out.append(ordered_row({
                "metric": name, "system": sys_name, "score": score, "baseline": j == 0,
                "delta": score - float(metric.scores_from_sums(stats[name][names[0]].sums())),
                "baseline_only": t.baseline_only if t else None, "system_only": t.system_only if t else None,
                "p_value": t.p_value if t else None, "method": t.method if t else None,
                "p_adjusted": p_adj, "correction": correction, "alpha": alpha, "test": "mcnemar",
                "significant": None if p_adj is None else p_adj < alpha,
                "signature": f"{value.signature}|test:mcnemar|exact:<={EXACT_MAX_DISCORDANT}|else:mid-p",
            }))
    return out


def render_mcnemar(rows: list[dict[str, Any]], fmt: str, out: str | None) -> None:
    """Print or write McNemar results: scores, discordant counts and p-values."""
    corrected = rows[0]["correction"] != "none"
    header = ["system", "metric", "score", "Δ baseline", "base only", "system only", "p-value", "method"]
    if corrected:
        header.append("p (Holm)")
    short = display_names([r["system"] for r in rows])
    body = []
    for r in rows:
        mark = " *" if r["significant"] else ""
        line = [short[r["system"]], r["metric"], f"{r['score']:.4f}"]
        if r["baseline"]:
            line += ["baseline", "-", "-", "-", "-"] + (["-"] if corrected else [])
        else:
            line += [f"{r['delta']:+.4f}", str(r["baseline_only"]), str(r["system_only"]),
                     f"{r['p_value']:.5f}" + ("" if corrected else mark), r["method"]]
            line += [f"{r['p_adjusted']:.5f}{mark}"] if corrected else []
        body.append(line)
    footer = list(dict.fromkeys(r["signature"] for r in rows))
    footer.append(f"* {'Holm-adjusted p' if corrected else 'p'} < {rows[0]['alpha']:g} against the baseline; "
                  "base only / system only: segments only that one got right")
    emit_table(fmt, header, body, out, footer=footer, data=rows)


@app.command()
def compare(
    reference: Annotated[list[str], typer.Option("-r", "--reference", help="Reference file, one segment a line. Repeat for several references.")] = [],  # noqa: B006
    input: Annotated[list[str], typer.Option("-i", "--input", help="System outputs: -i BASELINE SYS1 SYS2 ... (the first is the baseline).")] = [],  # noqa: B006
    source: Annotated[str | None, typer.Option("--source", help="Source file, one segment a line, for metrics that read sources (comet).")] = None,
    metrics: Annotated[list[str], typer.Option("-m", "--metrics", help="Metric name(s): -m bleu chrf ... (see `evalab metrics`).")] = ["bleu"],  # noqa: B006
    test: Annotated[str, typer.Option("-t", "--test", help="Paired test: bs (paired bootstrap, Koehn 2004), ar (approximate randomization) or mcnemar (right/wrong metrics: exact_match, accuracy).")] = "bs",
    n_samples: Annotated[int | None, typer.Option("-n", "--n-samples", help=f"Bootstrap resamples (bs, default {DEFAULT_TRIALS['bs']}) or AR trials (ar, default {DEFAULT_TRIALS['ar']}).")] = None,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the resampling (numpy default_rng; 0 is a seed too).")] = DEFAULT_SEED,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level of the intervals.")] = 0.95,
    ci_n: Annotated[int, typer.Option("--ci-n", help="With --test ar: bootstrap resamples for the intervals (0: none).")] = DEFAULT_CI_N,
    p_value: Annotated[str, typer.Option("--p-value", help="Bootstrap p-value: centered (calibrated) or sacrebleu (reproduces sacrebleu --paired-bs).")] = DEFAULT_P_VALUE,
    correct: Annotated[str, typer.Option("--correct", help="Multiple-comparison correction per metric: none or holm (Holm-Bonferroni).")] = "none",
    alpha: Annotated[float, typer.Option("--alpha", help="Significance level of the * marker.")] = 0.05,
    set_: Annotated[list[str], typer.Option("-s", "--set", help="Metric setting KEY=VALUE or METRIC.KEY=VALUE. Repeatable.")] = [],  # noqa: B006
    format: Annotated[str, format_option()] = "table",
    width: Annotated[int | None, typer.Option("-w", "--width", help="Decimals shown (default 1 for 0-100 metrics, 4 for 0-1).")] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Processes computing per-segment statistics.")] = 1,
    out: Annotated[str | None, typer.Option("-o", "--out", help="Write the output to this file (atomically) instead of stdout.")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
    missing_ref: Annotated[str, typer.Option("--missing-ref", help="none: an empty reference line is an empty reference (as sacrebleu); empty-line: beyond the first -r file it means no reference for that segment.")] = "none",
    scores: Annotated[list[str], typer.Option("--scores", help="Per-item score files instead of -r/-i: --scores BASELINE A B ... (lm-eval sample logs or run folders, inspect-ai logs, CSV/JSONL, `score --segments` output); -n N adds bootstrap intervals.")] = [],  # noqa: B006
    id_column: Annotated[str, typer.Option("--id-column", help="With --scores: the item id column of CSV/JSONL files.")] = "id",
    score_column: Annotated[list[str], typer.Option("--score-column", help="With --scores: the score column(s) (default: score; for harness logs their per-item metrics).")] = [],  # noqa: B006
    cluster_column: Annotated[str | None, typer.Option("--cluster-column", help="With --scores: the column (or doc.FIELD, metadata.FIELD) grouping items into clusters, for clustered standard errors.")] = None,
    sample_column: Annotated[str | None, typer.Option("--sample-column", help="With --scores: the column numbering several samples (generations) of one item.")] = None,
    common_items: Annotated[bool, typer.Option("--common-items", help="With --scores: compare on the items every model has (else missing or extra ids are refused).")] = False,
) -> None:
    """Compare systems with a baseline: scores, CIs, deltas and paired p-values."""
    check_mode(bool(scores), {
        "-r/--reference": bool(reference), "-i/--input": bool(input), "--source": source is not None,
        "-m/--metrics": metrics != ["bleu"], "-t/--test": test != "bs", "--ci-n": ci_n != DEFAULT_CI_N,
        "--p-value": p_value != DEFAULT_P_VALUE, "-s/--set": bool(set_), "-j/--jobs": jobs != 1,
        "--missing-ref": missing_ref != "none",
    }, {
        "--id-column": id_column != "id", "--score-column": bool(score_column),
        "--cluster-column": cluster_column is not None, "--sample-column": sample_column is not None,
        "--common-items": common_items,
    })
    if scores:
        cols = Columns(id_column, tuple(score_column), cluster_column, sample_column)
        compare_scores(scores, ScoreOptions(cols, common_items, confidence, correct, alpha, n_samples or 0,
                                            seed, format, width, out), display_names)
        return
    if not reference or not input:
        raise SettingsError("compare needs -r REFERENCE and -i BASELINE SYS1 ... (or --scores FILES)")
    # every option is checked before any file is read or any resampling starts
    check_out(out, input_options(reference, input, source))
    check_format(format)
    check_missing_ref(missing_ref)
    if test not in (*DEFAULT_TRIALS, "mcnemar"):
        raise SettingsError(f"--test must be one of {', '.join(DEFAULT_TRIALS)}, mcnemar, got {test!r}")
    _check_test_options(test, n_samples, ci_n)
    n = DEFAULT_TRIALS.get(test, 0) if n_samples is None else check_n_samples(n_samples, "--n-samples")
    check_seed(seed)
    check_confidence(confidence)
    if test == "ar" and ci_n != 0:
        check_n_samples(ci_n, "--ci-n")
    if p_value not in P_VALUE_METHODS:
        raise SettingsError(f"--p-value must be one of {', '.join(P_VALUE_METHODS)}, got {p_value!r}")
    if correct not in CORRECTIONS:
        raise SettingsError(f"--correct must be one of {', '.join(CORRECTIONS)}, got {correct!r}")
    if not 0.0 < alpha < 1.0:
        raise SettingsError(f"--alpha must be strictly between 0 and 1, got {alpha}")
    if width is not None and not 0 <= width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {width}")
    if len(input) < 2:
        raise SettingsError("compare needs a baseline and at least one system: -i BASELINE SYS1 [SYS2 ...]")
    check_distinct_systems(input)
    built = show_progress(build_metrics(metrics, set_), not quiet)
    check_source_option(built, source, [*reference, *input])
    refs, systems = load_inputs(reference, input)
    refs = apply_missing_refs(refs, reference, missing_ref)
    if test != "mcnemar":  # McNemar's exact test is exact on any count; resampling is not
        check_resamplable(len(refs[0]), f"--test {test}", reference[0])
    check_edit_distance_sizes(list(built), systems, refs)
    built = bind_source(built, source, reference, refs)
    stats = stats_table(built, systems, refs, jobs)
    if test == "mcnemar":
        mc_rows = mcnemar_rows(built, stats, correct, alpha)
        render_mcnemar(mc_rows, format, out)
        return
    ci_total = n if test == "bs" else ci_n
    label = f"paired {'bootstrap' if test == 'bs' else 'randomization'}"
    with progress_bar(n + (ci_total if test == "ar" else 0), label, enabled=not quiet) as advance:
        results = paired_test(
            test, built, stats, n_samples=n, seed=seed, confidence=confidence,
            p_value=p_value, ci_samples=ci_n, progress=advance,
        )
    rows = result_rows(results, built, reference_count(refs), correct, alpha)
    render(rows, built, format, width, out)
