"""``evalab meta-eval``: how well do metrics agree with human judgements of the same systems?

Scores every ``-i`` system with the ``-m`` metrics (and/or reads ``--scores``), reads the
human segment scores (``--human``), and reports system- and segment-level correlations and
pairwise accuracies with bootstrap intervals and rank clusters (see :mod:`evalab.metaeval`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.compare import check_distinct_systems
from evalab.cli.inputs import (
    aligned_stream,
    bind_source,
    input_options,
    load_streams,
    metric_inputs,
    needs_references,
    show_progress,
)
from evalab.cli.language_checks import warn_tokenizer_misfit
from evalab.cli.names import NamedInputs, named_inputs
from evalab.cli.options import (
    FigureOptions,
    Inputs,
    IntervalConfidence,
    LatexOptions,
    MetricSelection,
    MetricSettings,
    OutFile,
    PageFormat,
    Quiet,
    RepeatedReferences,
    Source,
    layout_option,
    table_view,
)
from evalab.cli.output import (
    PAGE_FORMATS,
    TableView,
    check_out,
    emit,
    emit_view,
    to_json,
)
from evalab.cli.segment_checks import (
    bounded_metrics,
    check_no_nul,
    check_pair_work,
    check_resamplable,
)
from evalab.errors import InputError, SettingsError
from evalab.io import check_same_length, read_segments
from evalab.metaeval.align import align_human, find_system, parse_name_map
from evalab.metaeval.evaluate import (
    HUMAN_SYSTEM_MODES,
    MetaEvalResult,
    MetaEvalSettings,
    meta_evaluate,
)
from evalab.metaeval.human import FORMATS as HUMAN_FORMATS
from evalab.metaeval.human import read_human_scores
from evalab.metaeval.scores import (
    METRIC_SYSTEM_MODES,
    MetricScores,
    metric_scores,
    precomputed_scores,
    read_precomputed,
)
from evalab.progress import progress_bar
from evalab.report.table import Table
from evalab.stats.bootstrap import check_resampling
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples


def _check_options(
    n_bootstrap: int,
    permutations: int,
    seed: int,
    confidence: float,
    alpha: float,
    metric_system: str,
    human_system: str,
    human_format: str,
) -> None:
    check_resampling(n_bootstrap, confidence, seed)
    if permutations != 0:
        check_n_samples(permutations, "--permutations")
    if not 0.0 < alpha < 1.0:
        raise SettingsError(f"--alpha must be strictly between 0 and 1, got {alpha}")
    if metric_system not in METRIC_SYSTEM_MODES:
        raise SettingsError(
            f"--metric-system must be one of {', '.join(METRIC_SYSTEM_MODES)}, got {metric_system!r}"
        )
    if human_system not in HUMAN_SYSTEM_MODES:
        raise SettingsError(
            f"--human-system must be one of {', '.join(HUMAN_SYSTEM_MODES)}, got {human_system!r}"
        )
    if human_format not in HUMAN_FORMATS:
        raise SettingsError(
            f"--human-format must be one of {', '.join(HUMAN_FORMATS)}, got {human_format!r}"
        )


def _aliases(paths: list[str], short: dict[str, str]) -> dict[str, str]:
    """Every name a system may be called by (short name, file name, path) -> short name."""
    out: dict[str, str] = {}
    for p in paths:
        for alias in (short[p], Path(p).name, p):
            out.setdefault(alias, short[p])
    return out


def _check_source(source: str | None, n_segments: int, reference: str) -> None:
    # checked before any metric runs; the metrics that read it (comet) get it bound later
    if source is not None:
        segments = read_segments(source)
        check_no_nul(source, segments)
        check_same_length([(source, segments), (reference, [None] * n_segments)])


def _collect_scores(
    metrics: list[str],
    set_: list[str],
    scores_file: str | None,
    refs: list[list[str | None]],
    hyps: list[list[str]],
    systems: list[str],
    aliases: dict[str, str],
    file_names: dict[str, str],
    metric_system: str,
    mask: np.ndarray,
    *,
    progress: bool,
    source: tuple[str | None, tuple[str, Sequence[str | None]]],
) -> list[MetricScores]:
    out: list[MetricScores] = []
    built = show_progress(MetricSelection.parse(metrics, set_).build(), progress)
    warn_tokenizer_misfit(built, refs)  # 13a on Chinese: said once, as in `score`
    # the metrics that read sources (comet) get the --source segments, as in `score`
    built = bind_source(built, *source)
    for name, metric in built.items():
        out.append(metric_scores(name, metric, hyps, refs, metric_system, mask))
    if scores_file is not None:
        table = read_precomputed(
            scores_file, lambda name: find_system(name, aliases, file_names), mask.shape[1]
        )
        for name, per_system in table.items():
            if name in metrics:
                raise InputError(
                    f"{scores_file}: metric {name!r} is also computed by -m; rename one of them"
                )
            out.append(
                precomputed_scores(
                    name, per_system, systems, mask.shape[1], metric_system, mask, scores_file
                )
            )
    return out


def _save_scores(path: str, collected: list[MetricScores], systems: list[str]) -> None:
    """Segment scores in the ``--scores`` format, so a slow metric is computed once."""
    lines = ["metric\tsystem\tsegment\tscore"]
    for m in collected:
        if m.segment is None:
            continue
        for name, row in zip(systems, m.segment, strict=True):
            lines += [f"{m.name}\t{name}\t{k}\t{float(v)!r}" for k, v in enumerate(row, start=1)]
    emit("\n".join(lines) + "\n", path)


def _render(result: MetaEvalResult, fmt: str, width: int, out: str | None, view: TableView) -> None:
    from evalab.report import metaeval_table as render

    if fmt == "json":
        emit(to_json(render.to_dict(result)), out)
    elif fmt == "html":
        from evalab.report.metaeval_html import render_html

        emit(render_html(result), out)
    else:
        foot = render.footer(result)
        long = Table(render.header(result), render.table_rows(result, width), foot)
        w = render.wide_rows(result, width)
        wide = Table(w.header, w.body, [*render.wide_notes(result), *foot], bold=w.bold)
        emit_view(fmt, long, wide, out, view)


@dataclass(frozen=True)
class MetaEvalRequest:
    """``evalab meta-eval``'s options, as the command line gives them."""

    human: Annotated[
        str,
        typer.Option(
            "--human",
            help="Human segment scores: MQM average-score file or TSV (system, segment, score).",
        ),
    ]
    input: Inputs
    reference: RepeatedReferences = field(default_factory=list)
    metrics: Annotated[
        list[str],
        typer.Option(
            "-m",
            "--metrics",
            help="evalab metrics: -m bleu chrf ... (default bleu chrf unless --scores is given).",
        ),
    ] = field(default_factory=list)
    scores: Annotated[
        str | None,
        typer.Option(
            "--scores",
            help="Precomputed metric scores: METRIC<TAB>SYSTEM<TAB>SEGMENT (or - for the system score)<TAB>SCORE.",
        ),
    ] = None
    source: Source = None
    name_map: Annotated[
        list[str],
        typer.Option(
            "--name-map",
            help="HUMAN=SYSTEM: a human-file system name and the -i system it denotes. Repeatable.",
        ),
    ] = field(default_factory=list)
    human_format: Annotated[str, typer.Option("--human-format", help="auto, mqm or tsv.")] = "auto"
    metric_system: Annotated[
        str,
        typer.Option(
            "--metric-system",
            help="Metric system score: corpus (the metric's corpus score), mean or rated-mean of segment scores.",
        ),
    ] = "corpus"
    human_system: Annotated[
        str,
        typer.Option(
            "--human-system",
            help="Human system score: rated-mean (over the system's rated segments) or common-mean (segments rated for all).",
        ),
    ] = "rated-mean"
    n_bootstrap: Annotated[
        int,
        typer.Option(
            "-n",
            "--n-samples",
            help="Bootstrap resamples of segments for the intervals and the paired-bootstrap p-values (system level; acc_eq with no grouping).",
        ),
    ] = 1000
    permutations: Annotated[
        int,
        typer.Option(
            "--permutations",
            help="Permutation trials of the segment-level PERM-BOTH tests (0: none).",
        ),
    ] = 1000
    seed: Annotated[int, typer.Option("--seed", help="Seed of resampling and permutations.")] = (
        DEFAULT_SEED
    )
    confidence: IntervalConfidence = 0.95
    alpha: Annotated[
        float, typer.Option("--alpha", help="Significance level of the rank clusters.")
    ] = 0.05
    set_: MetricSettings = field(default_factory=list)
    format: PageFormat = "table"
    width: Annotated[int, typer.Option("-w", "--width", help="Decimals shown.")] = 4
    out: OutFile = None
    save_scores: Annotated[
        str | None,
        typer.Option(
            "--save-scores",
            help="Also write every metric's segment scores to this file, in the --scores format.",
        ),
    ] = None
    quiet: Quiet = False
    layout: Annotated[
        str | None,
        layout_option(
            "Table layout: wide (a row per metric, a column per statistic, each value with its "
            "rank cluster, the best in bold) or long (a row per statistic and metric, with "
            "intervals and p-values). Default: wide for -f latex and -f markdown where it fits "
            "the page, else long."
        ),
    ] = None
    latex: LatexOptions = field(default_factory=LatexOptions)
    figure_files: FigureOptions = field(default_factory=FigureOptions)


@command(MetaEvalRequest, "meta-eval")
def meta_eval(req: MetaEvalRequest) -> None:
    """Meta-evaluate metrics against human scores: correlations, accuracies, CIs, clusters (-i may include human translations, e.g. ref-C)."""
    run = checked_meta_eval(req)
    refs, texts, _ = load_streams(req.reference, run.named.paths, required=run.needs_references)
    check_pair_work(bounded_metrics(run.metric_names, req.set_), texts, refs)
    aligned = aligned_stream(req.reference, refs, run.named.paths, texts)
    n_segments = len(aligned[1])
    check_resamplable(n_segments, "meta-eval's bootstrap", aligned[0])
    _check_source(req.source, n_segments, aligned[0])
    short = run.named.short
    systems = [short[p] for p in run.named.paths]
    aliases = _aliases(run.named.paths, short)
    file_names = {short[p]: Path(p).name for p in run.named.paths}
    human = read_human_scores(req.human, n_segments, req.human_format)
    human_matrix = align_human(human, systems, aliases, run.mapping, file_names)
    collected = _collect_scores(
        run.metric_names,
        req.set_,
        req.scores,
        refs,
        list(texts.values()),
        systems,
        aliases,
        file_names,
        req.metric_system,
        np.isfinite(human_matrix),
        progress=not req.quiet,
        source=(req.source, aligned),
    )
    s = MetaEvalSettings(
        req.n_bootstrap, req.permutations, req.seed, req.confidence, req.alpha, req.human_system
    )
    with progress_bar(req.n_bootstrap, "bootstrap", not req.quiet) as advance:
        result = meta_evaluate(human_matrix, systems, collected, s, advance)
    if req.save_scores is not None:
        _save_scores(req.save_scores, collected, systems)
    if req.figure_files.figures is not None:
        from evalab.report.metaeval_html import metaeval_figures

        req.figure_files.write(metaeval_figures(result), run.written)
    _render(result, req.format, req.width, req.out, run.view)


@dataclass(frozen=True)
class MetaEvalRun:
    """``meta-eval``'s options checked: the systems, the metrics, what it writes, the layout."""

    named: NamedInputs
    metric_names: list[str]
    #: every file read or written, none of which an output may replace
    written: list[tuple[str, str | None]]
    view: TableView
    #: ``--name-map``: human-file system name -> ``-i`` system
    mapping: dict[str, str]
    #: ``-r`` is required: given, or a metric needs references (none for QE or --scores only)
    needs_references: bool


def checked_meta_eval(req: MetaEvalRequest) -> MetaEvalRun:
    """Every option checked before any work; the outputs may overwrite none of the inputs,
    nor each other."""
    named = named_inputs(req.input)
    metric_names = list(req.metrics) or ([] if req.scores else ["bleu", "chrf"])
    read = [
        *input_options(req.reference, named.paths, req.source),
        ("--human", req.human),
        ("--scores", req.scores),
        *metric_inputs(metric_names, req.set_),
    ]
    check_out(req.out, read)
    check_out(req.save_scores, read, option="--save-scores", outputs=[("--out", req.out)])
    written = [*read, ("--out", req.out), ("--save-scores", req.save_scores)]
    req.figure_files.check(written)
    _check_options(
        req.n_bootstrap,
        req.permutations,
        req.seed,
        req.confidence,
        req.alpha,
        req.metric_system,
        req.human_system,
        req.human_format,
    )
    if not 0 <= req.width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {req.width}")
    view = table_view(req.format, req.layout, req.latex, PAGE_FORMATS)
    check_distinct_systems(list(named.paths))
    needs = bool(req.reference) or needs_references(
        MetricSelection.parse(metric_names, req.set_).build()
    )
    return MetaEvalRun(named, metric_names, written, view, parse_name_map(req.name_map), needs)
