"""``evalab semsim``: BERTScore-style semantic similarity of systems against references,
with the token alignment shown (``--explain``, ``--explain-html``), and
``evalab semsim baseline`` computing a rescaling baseline for a model.

All systems are scored by one metric object, so the model is loaded once and each
distinct string (the shared reference, segments repeated across systems) is embedded
once; see :mod:`evalab.models.embedders`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer

from evalab.cli.app import app
from evalab.cli.language_checks import MULTILINGUAL_ENCODERS, warn_encoder_misfit
from evalab.cli.options import (
    check_layout,
    ci_option,
    confidence_option,
    latex_caption_option,
    latex_fragment_option,
    latex_label_option,
    latex_layout,
    latex_split_option,
    layout_option,
    n_samples_option,
    seed_option,
    segments_option,
)
from evalab.cli.output import (
    TableView,
    check_format,
    check_out,
    emit,
    emit_view,
    format_option,
    ordered_row,
)
from evalab.cli.score import (
    check_segments_path,
    ci_fields,
    input_options,
    load_inputs,
    score_cell,
    segments_text,
    wide_notes,
)
from evalab.cli.segment_checks import check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.metrics.stats_value import Stats
from evalab.models.hub import cache_dir, cached_snapshot, resolve_model
from evalab.progress import model_loading
from evalab.report.table import Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, wide_table
from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, check_confidence
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples, check_seed

semsim_app = typer.Typer(
    invoke_without_command=True,
    no_args_is_help=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    help="Semantic similarity (BERTScore-style) of system outputs against references.",
)
app.add_typer(semsim_app, name="semsim")


def _build_metric(
    model: str | None,
    layer: int | None,
    idf: bool,
    rescale: bool,
    baseline: str | None,
    drop_function_words: bool,
    stopwords: str | None,
    oov: str,
    batch_size: int | None,
    device: str,
    max_length: int | None,
) -> Any:
    from evalab.metrics.semantic import BERTScore

    return BERTScore(
        model=model,
        layer=layer,
        idf=idf,
        rescale=rescale or baseline is not None,
        baseline=baseline,
        # a stopword list is only read when function words are dropped: giving one means that
        drop_function_words=drop_function_words or stopwords is not None,
        stopwords=stopwords,
        oov=oov,
        batch_size=batch_size,
        device=device,
        max_length=max_length,
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


@semsim_app.callback()
def semsim(
    ctx: typer.Context,
    reference: Annotated[
        list[str],
        typer.Option(
            "-r",
            "--reference",
            help="Reference file, one segment a line. Repeat for several references (max over references, as bert-score).",
        ),
    ] = [],  # noqa: B006
    input: Annotated[
        list[str], typer.Option("-i", "--input", help="System output file(s): -i SYS1 SYS2 ...")
    ] = [],  # noqa: B006
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Hugging Face encoder directory, Org/name in the local Hugging Face cache, or word-vector table (default: the shipped all-MiniLM-L6-v2).",
        ),
    ] = None,
    lang: Annotated[
        str | None,
        typer.Option(
            "--lang",
            help="Language of the references (bert-score's --lang): other than en, a multilingual encoder from the local Hugging Face cache unless --model is given.",
        ),
    ] = None,
    layer: Annotated[
        int | None,
        typer.Option(
            "--layer", help="Layer of the hidden states (0 = embeddings; default: last layer)."
        ),
    ] = None,
    idf: Annotated[
        bool,
        typer.Option(
            "--idf", help="IDF weights from the references (+1 smoothing, as bert-score)."
        ),
    ] = False,
    rescale: Annotated[
        bool, typer.Option("--rescale", help="Rescale with the baseline: (x - b) / (1 - b).")
    ] = False,
    baseline: Annotated[
        str | None,
        typer.Option(
            "--baseline",
            help="Baseline file (LAYER,P,R,F; from `evalab semsim baseline` or bert-score). Implies --rescale.",
        ),
    ] = None,
    drop_function_words: Annotated[
        bool,
        typer.Option(
            "--drop-function-words",
            help="Remove function words (table tags or --stopwords) before matching.",
        ),
    ] = False,
    stopwords: Annotated[
        str | None,
        typer.Option(
            "--stopwords",
            help="File with one function word per line. Implies --drop-function-words.",
        ),
    ] = None,
    oov: Annotated[
        str,
        typer.Option(
            "--oov",
            help="Static tables: 'zero' (cosine 0 outside the table) or 'exact' (letter match fallback).",
        ),
    ] = "zero",
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Sentences per forward pass (default: 64, or up to 4096 tokens for plain BERT encoders).",
        ),
    ] = None,
    device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
    max_length: Annotated[
        int | None,
        typer.Option(
            "--max-length", help="Truncate segments to this many tokens (default: model limit)."
        ),
    ] = None,
    explain: Annotated[
        bool,
        typer.Option("--explain", help="Print every token's best match and cosine, per segment."),
    ] = False,
    explain_html: Annotated[
        str | None,
        typer.Option(
            "--explain-html", help="Write the alignments as a self-contained HTML heat map page."
        ),
    ] = None,
    explain_limit: Annotated[
        int, typer.Option("--explain-limit", help="Segments explained per system (0 = all).")
    ] = 10,
    format: Annotated[str, format_option()] = "table",
    out: Annotated[
        str | None, typer.Option("-o", "--out", help="Write the scores to this file (atomically).")
    ] = None,
    ci: Annotated[
        bool,
        ci_option(
            "Add a bootstrap percentile confidence interval of F1 (reported as mean ± half-width)."
        ),
    ] = False,
    n_samples: Annotated[int, n_samples_option("Bootstrap resamples for --ci.")] = 1000,
    seed: Annotated[int, seed_option()] = DEFAULT_SEED,
    confidence: Annotated[float, confidence_option()] = 0.95,
    segments: Annotated[
        str | None,
        segments_option(
            "Also write per-segment scores to this JSON Lines file: one line per system and segment."
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
    layout: Annotated[
        str | None,
        layout_option(
            "Table layout: wide (a row per system, P, R and F1 ± the --ci half-width, the best of "
            "each column in bold) or long (F1 followed by the bootstrap mean ± half-width). "
            "Default: wide for -f latex and -f markdown with several systems, else long."
        ),
    ] = None,
    latex_split: Annotated[bool | None, latex_split_option()] = None,
    latex_fragment: Annotated[bool, latex_fragment_option()] = False,
    latex_caption: Annotated[str | None, latex_caption_option()] = None,
    latex_label: Annotated[str | None, latex_label_option()] = None,
) -> None:
    """Score systems with BERTScore P/R/F1; `semsim baseline` makes a rescaling baseline."""
    if ctx.invoked_subcommand is not None:
        return
    read = [
        *input_options(reference, input),
        ("--model", model),
        ("--baseline", baseline),
        ("--stopwords", stopwords),
    ]
    check_out(out, read)
    check_out(explain_html, read, option="--explain-html", outputs=[("--out", out)])
    check_format(format)
    check_layout(layout, format)
    view = TableView(
        layout, latex_layout(format, latex_split, latex_fragment, latex_caption, latex_label)
    )
    check_n_samples(n_samples, "--n-samples")
    check_seed(seed)
    check_confidence(confidence)
    check_segments_path(segments, out, read)
    if explain_limit < 0:
        raise SettingsError(f"--explain-limit must be 0 or more, got {explain_limit}")
    encoder = encoder_for(model, lang)
    metric = _build_metric(
        encoder,
        layer,
        idf,
        rescale,
        baseline,
        drop_function_words,
        stopwords,
        oov,
        batch_size,
        device,
        max_length,
    )
    refs, systems = load_inputs(reference, input)
    warn_encoder_misfit(metric, refs, "give --lang LANG, or --model FOLDER")
    metric.progress = not quiet
    with model_loading(f"encoder ({encoder or 'all-MiniLM-L6-v2'})", not quiet):
        metric.embedder  # noqa: B018 - loads the model (a property), between the two lines
    if ci:
        check_resamplable(len(refs[0]), "--ci", reference[0])
    results = []
    cis: list[ConfidenceInterval | None] = []
    explained: list[tuple[str, Any]] = []
    rows_of: dict[str, Stats] = {}
    for name, hyps in systems.items():
        rows = rows_of[name] = metric.stats(hyps, refs)
        results.append((name, metric.aggregate(rows, nrefs=len(refs))))
        cis.append(bootstrap_ci(metric, rows, n_samples, confidence, seed) if ci else None)
        if explain or explain_html:
            limit = len(hyps) if explain_limit == 0 else min(explain_limit, len(hyps))
            alignments = metric.explain(hyps[:limit], [r[:limit] for r in refs])
            explained += [(f"{name}, segment {i + 1}", a) for i, a in enumerate(alignments)]
    signature = results[0][1].signature
    if explain_html:
        from evalab.report.alignment import render_alignment_html

        emit(render_alignment_html(explained, signature=signature), explain_html)
    if segments:
        # the rows scored above, not a second pass of the encoder
        per = {n: {"bertscore": metric.segment_scores_of(r)} for n, r in rows_of.items()}
        emit(segments_text(per, None), segments)
    body: list[list[TableCell]] = [
        [
            n,
            Number(sc.precision, 4),
            Number(sc.recall, 4),
            score_cell(sc, c, None),
        ]
        for (n, sc), c in zip(results, cis, strict=True)
    ]
    data = [
        ordered_row({"system": n, **sc.to_dict(), **(ci_fields(sc, c) if c else {})})
        for (n, sc), c in zip(results, cis, strict=True)
    ]
    footer = list(
        dict.fromkeys(
            sc.signature + (f"|{c.signature}" if c else "")
            for (_, sc), c in zip(results, cis, strict=True)
        )
    )
    long = Table(["system", "P", "R", "F1"], body, footer)
    notes = wide_notes(confidence if ci else None)
    emit_view(format, long, _wide(results, cis, [*notes, *footer]), out, view, data=data)
    if explain:
        _print_explanations(explained)


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
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Encoder directory or word-vector table (default: the shipped all-MiniLM-L6-v2).",
        ),
    ] = None,
    pairs: Annotated[
        str | None,
        typer.Option(
            "--pairs",
            help="Unrelated sentence pairs, candidate<TAB>reference per line (default: the shipped English corpus).",
        ),
    ] = None,
    batch_size: Annotated[
        int | None,
        typer.Option(
            "--batch-size",
            help="Sentences per forward pass (default: 64, or up to 4096 tokens for plain BERT encoders).",
        ),
    ] = None,
    device: Annotated[str, typer.Option("--device", help="cpu or cuda.")] = "cpu",
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
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
