"""``evalab semsim``: BERTScore-style semantic similarity of systems against references,
with the token alignment shown (``--explain``, ``--explain-html``), and
``evalab semsim baseline`` computing a rescaling baseline for a model.

All systems are scored by one metric object, so the model is loaded once and each
distinct string (the shared reference, segments repeated across systems) is embedded
once; see :mod:`evalab.models.embedders`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from evalab.cli.app import command, sub_app
from evalab.cli.inputs import check_segments_path, input_options, load_streams
from evalab.cli.language_checks import MULTILINGUAL_ENCODERS, warn_encoder_misfit
from evalab.cli.options import (
    CISamples,
    Confidence,
    Device,
    Format,
    LatexOptions,
    OutFile,
    Quiet,
    RepeatedReferences,
    Seed,
    ci_option,
    layout_option,
    segments_option,
    table_view,
)
from evalab.cli.output import (
    TableView,
    check_out,
    emit,
    emit_view,
    ordered_row,
)
from evalab.cli.score import ci_fields, score_cell, segments_text, wide_notes
from evalab.cli.segment_checks import check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.metrics.stats_value import Stats
from evalab.models.hub import cache_dir, cached_snapshot, resolve_model
from evalab.progress import model_loading
from evalab.report.table import Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, wide_table
from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, check_resampling
from evalab.stats.resampling import DEFAULT_SEED

#: the encoder options of ``semsim`` and ``semsim baseline``
EncoderModel = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="Hugging Face encoder directory, Org/name in the local Hugging Face cache, or word-vector table (default: the shipped all-MiniLM-L6-v2).",
    ),
]
EncoderBatch = Annotated[
    int | None,
    typer.Option(
        "--batch-size",
        help="Sentences per forward pass (default: 64, or up to 4096 tokens for plain BERT encoders).",
    ),
]

semsim_app = sub_app(
    "semsim",
    "Semantic similarity (BERTScore-style) of system outputs against references (with "
    "several -r, each segment's best reference, as bert-score).",
    invoke_without_command=True,
    no_args_is_help=False,
)


def _build_metric(encoder: str | None, req: SemsimRequest) -> Any:
    """The BERTScore metric of ``semsim``'s options, on ``encoder``."""
    from evalab.metrics.semantic import BERTScore

    return BERTScore(
        model=encoder,
        layer=req.layer,
        idf=req.idf,
        rescale=req.rescale or req.baseline is not None,
        baseline=req.baseline,
        # a stopword list is only read when function words are dropped: giving one means that
        drop_function_words=req.drop_function_words or req.stopwords is not None,
        stopwords=req.stopwords,
        oov=req.oov,
        batch_size=req.batch_size,
        device=req.device,
        max_length=req.max_length,
    )


def encoder_for(model: str | None, lang: str | None) -> str | None:
    """The encoder ``--model`` names (a hub id resolved in the local cache), or for ``--lang``
    other than English the first multilingual encoder found in the cache; None: the default."""
    if model is not None:
        return resolve_model(model)
    if lang is None or lang.lower().split("-")[0] == "en":
        return None
    for name in MULTILINGUAL_ENCODERS:
        try:
            return str(cached_snapshot(name))
        except InputError:
            continue
    raise SettingsError(
        f"--lang {lang}: the default encoder is English-only and no multilingual encoder is in the "
        f"Hugging Face cache {cache_dir()} (looked for {', '.join(MULTILINGUAL_ENCODERS)}); pass --model FOLDER"
    )


@dataclass(frozen=True)
class SemsimRequest:
    """``evalab semsim``'s options, as the command line gives them."""

    reference: RepeatedReferences = field(default_factory=list)
    input: Annotated[
        list[str], typer.Option("-i", "--input", help="System output file(s): -i SYS1 SYS2 ...")
    ] = field(default_factory=list)
    model: EncoderModel = None
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            help="Language of the references (bert-score's --lang): other than en, a multilingual encoder from the local Hugging Face cache unless --model is given.",
        ),
    ] = None
    layer: Annotated[
        int | None,
        typer.Option(
            "--layer", help="Layer of the hidden states (0 = embeddings; default: last layer)."
        ),
    ] = None
    idf: Annotated[
        bool,
        typer.Option(
            "--idf", help="IDF weights from the references (+1 smoothing, as bert-score)."
        ),
    ] = False
    rescale: Annotated[
        bool, typer.Option("--rescale", help="Rescale with the baseline: (x - b) / (1 - b).")
    ] = False
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Baseline file (LAYER,P,R,F; from `evalab semsim baseline` or bert-score). Implies --rescale.",
        ),
    ] = None
    drop_function_words: Annotated[
        bool,
        typer.Option(
            "--drop-function-words",
            help="Remove function words (table tags or --stopwords) before matching.",
        ),
    ] = False
    stopwords: Annotated[
        str | None,
        typer.Option(
            "--stopwords",
            help="File with one function word per line. Implies --drop-function-words.",
        ),
    ] = None
    oov: Annotated[
        str,
        typer.Option(
            "--oov",
            help="Static tables: 'zero' (cosine 0 outside the table) or 'exact' (letter match fallback).",
        ),
    ] = "zero"
    batch_size: EncoderBatch = None
    device: Device = "cpu"
    max_length: Annotated[
        int | None,
        typer.Option(
            "--max-length", help="Truncate segments to this many tokens (default: model limit)."
        ),
    ] = None
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Print every token's best match and cosine, per segment."),
    ] = False
    explain_html: Annotated[
        str | None,
        typer.Option(
            "--explain-html", help="Write the alignments as a self-contained HTML heat map page."
        ),
    ] = None
    explain_limit: Annotated[
        int, typer.Option("--explain-limit", help="Segments explained per system (0 = all).")
    ] = 10
    format: Format = "table"
    out: OutFile = None
    ci: Annotated[
        bool,
        ci_option(
            "Add a bootstrap percentile confidence interval of F1 (reported as mean ± half-width)."
        ),
    ] = False
    n_samples: CISamples = 1000
    seed: Seed = DEFAULT_SEED
    confidence: Confidence = 0.95
    segments: Annotated[
        str | None,
        segments_option(
            "Also write per-segment scores to this JSON Lines file: one line per system and segment."
        ),
    ] = None
    quiet: Quiet = False
    layout: Annotated[
        str | None,
        layout_option(
            "Table layout: wide (a row per system, P, R and F1 ± the --ci half-width, the best of "
            "each column in bold) or long (F1 followed by the bootstrap mean ± half-width). "
            "Default: wide for -f latex and -f markdown with several systems, else long."
        ),
    ] = None
    latex: LatexOptions = field(default_factory=LatexOptions)


@command(SemsimRequest, on=semsim_app.callback())
def semsim(req: SemsimRequest) -> None:
    """Score systems with BERTScore P/R/F1; `semsim baseline` makes a rescaling baseline."""
    if click.get_current_context().invoked_subcommand is not None:
        return
    view = checked_semsim(req)
    encoder = encoder_for(req.model, req.lang)
    metric = _build_metric(encoder, req)
    refs, systems, _ = load_streams(req.reference, req.input)
    warn_encoder_misfit(metric, refs, "give --lang LANG, or --model FOLDER")
    metric.progress = not req.quiet
    with model_loading(f"encoder ({encoder or 'all-MiniLM-L6-v2'})", not req.quiet):
        metric.embedder  # noqa: B018 - loads the model (a property), between the two lines
    if req.ci:
        check_resamplable(len(refs[0]), "--ci", req.reference[0])
    done = scored_systems(req, metric, refs, systems)
    if req.explain_html:
        from evalab.report.alignment import render_alignment_html

        signature = done.results[0][1].signature
        emit(render_alignment_html(done.explained, signature=signature), req.explain_html)
    if req.segments:
        # the rows scored above, not a second pass of the encoder
        per = {n: {"bertscore": metric.segment_scores_of(r)} for n, r in done.rows.items()}
        emit(segments_text(per, None), req.segments)
    render_semsim(req, done, view)
    if req.explain:
        _print_explanations(done.explained)


def checked_semsim(req: SemsimRequest) -> TableView:
    """Every option of ``semsim`` checked before any file is read; the table's view."""
    read = [
        *input_options(req.reference, req.input),
        ("--model", req.model),
        ("--baseline", req.baseline),
        ("--stopwords", req.stopwords),
    ]
    check_out(req.out, read)
    check_out(req.explain_html, read, option="--explain-html", outputs=[("--out", req.out)])
    view = table_view(req.format, req.layout, req.latex)
    check_resampling(req.n_samples, req.confidence, req.seed)
    check_segments_path(req.segments, req.out, read)
    if req.explain_limit < 0:
        raise SettingsError(f"--explain-limit must be 0 or more, got {req.explain_limit}")
    return view


@dataclass(frozen=True)
class SemsimScores:
    """Every system's corpus score, ``--ci`` interval, rows and explained alignments."""

    results: list[tuple[str, Any]]
    cis: list[ConfidenceInterval | None]
    rows: dict[str, Stats]
    explained: list[tuple[str, Any]]


def scored_systems(
    req: SemsimRequest, metric: Any, refs: list[list[str | None]], systems: dict[str, list[str]]
) -> SemsimScores:
    """Score every system (and explain its first segments with ``--explain``/``--explain-html``)."""
    done = SemsimScores([], [], {}, [])
    for name, hyps in systems.items():
        rows = done.rows[name] = metric.stats(hyps, refs)
        done.results.append((name, metric.aggregate(rows, nrefs=len(refs))))
        ci = bootstrap_ci(metric, rows, req.n_samples, req.confidence, req.seed) if req.ci else None
        done.cis.append(ci)
        if req.explain or req.explain_html:
            limit = len(hyps) if req.explain_limit == 0 else min(req.explain_limit, len(hyps))
            alignments = metric.explain(hyps[:limit], [r[:limit] for r in refs])
            done.explained.extend((f"{name}, segment {i + 1}", a) for i, a in enumerate(alignments))
    return done


def render_semsim(req: SemsimRequest, done: SemsimScores, view: TableView) -> None:
    """P, R and F1 of every system (F1 with its ``--ci`` interval), in ``-f``'s format."""
    pairs = list(zip(done.results, done.cis, strict=True))
    body: list[list[TableCell]] = [
        [n, Number(sc.precision, 4), Number(sc.recall, 4), score_cell(sc, c, None)]
        for (n, sc), c in pairs
    ]
    data = [
        ordered_row({"system": n, **sc.to_dict(), **(ci_fields(sc, c) if c else {})})
        for (n, sc), c in pairs
    ]
    footer = list(
        dict.fromkeys(sc.signature + (f"|{c.signature}" if c else "") for (_, sc), c in pairs)
    )
    long = Table(["system", "P", "R", "F1"], body, footer)
    notes = wide_notes(req.confidence if req.ci else None)
    emit_view(
        req.format, long, _wide(done.results, done.cis, [*notes, *footer]), req.out, view, data=data
    )


def _wide(
    results: list[tuple[str, Any]], cis: list[ConfidenceInterval | None], notes: list[str]
) -> Table:
    """Systems x (P, R, F1): F1 ± the half-width of its ``--ci`` interval, the best of each
    column in bold."""
    columns = [WideMetric(name, True, 4) for name in ("P", "R", "F1")]
    cells: dict[tuple[str, str], Cell] = {}
    for (n, sc), c in zip(results, cis, strict=True):
        cells[(n, "P")], cells[(n, "R")] = Cell(sc.precision), Cell(sc.recall)
        cells[(n, "F1")] = Cell(sc.fmeasure, c.half_width if c else None)
    t = wide_table([n for n, _ in results], columns, cells)
    return Table(t.header, t.body, notes, bold=t.bold)


def _print_explanations(explained: list[tuple[str, Any]]) -> None:
    from rich.console import Console
    from rich.table import Table

    from evalab.report.alignment import alignment_rows

    console = Console(soft_wrap=True)
    for title, a in explained:
        table = Table(
            title=f"{title}: P {a.precision:.4f}  R {a.recall:.4f}  F1 {a.f1:.4f}",
            show_header=True,
            header_style="bold",
            title_justify="left",
        )
        for col, justify in (
            ("hyp token", "left"),
            ("-> best ref", "left"),
            ("cos", "right"),
            ("ref token", "left"),
            ("-> best hyp", "left"),
            ("cos", "right"),
        ):
            table.add_column(col, justify=justify)  # type: ignore[arg-type]
        prec, rec = alignment_rows(a, "precision"), alignment_rows(a, "recall")
        for k in range(max(len(prec), len(rec))):
            left = [prec[k][0], prec[k][1], f"{prec[k][2]:.3f}"] if k < len(prec) else ["", "", ""]
            right = [rec[k][0], rec[k][1], f"{rec[k][2]:.3f}"] if k < len(rec) else ["", "", ""]
            table.add_row(*left, *right)
        console.print(table, markup=False, highlight=False)


@semsim_app.command("baseline")
def baseline_command(
    out: Annotated[
        str, typer.Option("-o", "--out", help="Baseline file to write (LAYER,P,R,F rows).")
    ],
    model: EncoderModel = None,
    pairs: Annotated[
        str | None,
        typer.Option(
            "--pairs",
            help="Unrelated sentence pairs, candidate<TAB>reference per line (default: the shipped English corpus).",
        ),
    ] = None,
    batch_size: EncoderBatch = None,
    device: Device = "cpu",
    quiet: Quiet = False,
) -> None:
    """Compute a rescaling baseline: mean P/R/F of unrelated sentence pairs, every layer."""
    check_out(out, [("--model", model), ("--pairs", pairs)])
    from evalab.metrics.semantic import (
        compute_baseline,
        default_pairs_path,
        format_baseline,
        read_pairs,
    )
    from evalab.models.embedders import load_embedder

    pair_list = read_pairs(pairs if pairs is not None else default_pairs_path())
    embedder = load_embedder(model, batch_size=batch_size, device=device)
    rows = compute_baseline(embedder, pair_list, progress=not quiet)
    emit(format_baseline(rows), out)
    source = pairs if pairs is not None else Path(default_pairs_path()).name
    typer.echo(
        f"baseline of {embedder.name} (layers 0-{embedder.layer}) from {len(pair_list)} pairs in {source} -> {out}",
        err=True,
    )
