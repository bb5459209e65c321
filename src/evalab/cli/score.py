"""``evalab score``: corpus scores of one or more systems against shared references."""

# No ``from __future__ import annotations`` here: typer reads the options from the
# annotations, and as strings it would compile each of them again on every start.
import copy
import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from evalab.cli.app import app
from evalab.cli.inputs import metric_inputs
from evalab.cli.language_checks import warn_encoder_misfit, warn_tokenizer_misfit
from evalab.cli.names import named_inputs, system_name
from evalab.cli.options import (
    build_metrics,
    canonical_metric_names,
    check_layout,
    ci_option,
    confidence_option,
    executor_option,
    latex_caption_option,
    latex_fragment_option,
    latex_label_option,
    latex_layout,
    latex_split_option,
    layout_option,
    model_items,
    n_samples_option,
    ray_address_option,
    ray_cluster,
    ray_timeout_option,
    seed_option,
    segments_option,
)
from evalab.cli.output import (
    DEFAULT_VIEW,
    TableView,
    check_format,
    check_out,
    emit,
    emit_view,
    format_option,
    json_safe,
    ordered_row,
    stream_of,
    to_json,
)
from evalab.cli.record_inputs import RecordOptions, read_streams
from evalab.cli.references import apply_missing_refs, check_missing_ref
from evalab.cli.segment_checks import check_no_nul, check_pair_work, check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.io import check_same_length, read_segments
from evalab.metrics.base import Metric, Score
from evalab.metrics.parallel import joined, shard_bounds, shardable, stats_table
from evalab.metrics.stats_value import Stats
from evalab.progress import model_loading, progress_bar
from evalab.report.delimited import DELIMITERS, delimited_table
from evalab.report.error_spans import PageSpans, segments_table
from evalab.report.numbers import number, plus_minus, scale_decimals
from evalab.report.table import Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, WideTable, wide_table
from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, check_confidence
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples, check_seed

if TYPE_CHECKING:
    from evalab.cli.score_alignments import AlignmentResults
    from evalab.metrics.ray_shards import RayCluster

#: no record options: every file is read as text unless its name says JSON Lines/CSV/TSV
NO_RECORDS = RecordOptions()


def load_inputs(
    references: list[str],
    inputs: list[str],
    names: dict[str, str] | None = None,
    records: RecordOptions = NO_RECORDS,
) -> tuple[list[list[str | None]], dict[str, list[str]]]:
    """Read reference streams and system outputs (text or record files); check they are all
    line-aligned.

    Systems are keyed by ``names[path]`` (:class:`~evalab.cli.names.NamedInputs`), else by
    their file names (their paths where two share a file name).
    """
    return load_streams(references, inputs, names, records)[:2]


def load_streams(
    references: list[str],
    inputs: list[str],
    names: dict[str, str] | None = None,
    records: RecordOptions = NO_RECORDS,
) -> tuple[list[list[str | None]], dict[str, list[str]], list[str]]:
    """:func:`load_inputs` and a label per reference stream (its file, and its position in
    a record file's list of references)."""
    if not inputs:
        raise SettingsError("no system output given; pass -i HYP [HYP2 ...]")
    streams = read_streams(references, inputs, records)
    check_same_length([*zip(streams.ref_labels, streams.refs, strict=True), *streams.systems])
    systems: dict[str, list[str]] = {}
    for p, segments in streams.systems:
        # two systems with the same file name in different folders keep their full paths
        name = system_name(p) if sum(system_name(q) == system_name(p) for q in inputs) == 1 else p
        systems[names[p] if names else name] = segments
    return streams.refs, systems, streams.ref_labels


def input_options(
    references: list[str], inputs: list[str], source: str | None = None
) -> list[tuple[str, str | None]]:
    """``(option, path)`` of every file a scoring command reads, for :func:`check_out`."""
    return [*(("-r", p) for p in references), *(("-i", p) for p in inputs), ("--source", source)]


def check_source_option(built: dict[str, Metric], source: str | None, others: list[str]) -> None:
    """``--source`` is given exactly when a selected metric reads sources (COMET), and
    required when one cannot score without them (``needs_source``)."""
    readers = [n for n, m in built.items() if getattr(m, "uses_source", False)]
    needing = [n for n in readers if getattr(built[n], "needs_source", True)]
    if needing and source is None:
        raise SettingsError(
            f"{', '.join(needing)} reads the source segments: pass --source SRC (one segment a line)"
        )
    if source is not None and not readers:
        raise SettingsError("--source is given but no selected metric reads sources (comet does)")
    if source == "-" and "-" in others:
        raise SettingsError("stdin ('-') can be used for only one file")


def check_model_inputs(
    built: dict[str, Metric],
    source: str | None,
    has_references: bool,
    *,
    source_shown: bool = False,
) -> None:
    """Refuse, before any file is read, inputs a metric's model cannot score from (a COMET
    checkpoint's ``check_inputs``: CometKiwi without ``--source``, a source or no
    reference where its ``input_segments`` say otherwise); ``source_shown``: the source
    is also shown (``compare -f html``), so one the model does not read is no mistake."""
    for metric in built.values():
        check = getattr(metric, "check_inputs", None)
        if check is not None:
            check(source is not None, has_references, unread_source_ok=source_shown)


def bind_source(
    built: dict[str, Metric],
    source: str | None,
    references: list[str],
    refs: list[list[str | None]],
) -> dict[str, Metric]:
    """The metrics with the ``--source`` segments bound, checked line-aligned like a reference."""
    if source is None:
        return built
    segments = read_segments(source)
    check_no_nul(source, segments)
    check_same_length([(source, segments), (references[0], refs[0])])
    return {
        # only the metrics that use a source (COMET) define with_sources, as uses_source says
        n: m.with_sources(segments) if getattr(m, "uses_source", False) else m  # type: ignore[attr-defined]
        for n, m in built.items()
    }


def format_value(score: Score, width: int | None) -> str:
    """The score with ``width`` decimals (default: 1 on a 0-100 scale, 4 on 0-1)."""
    return number(score.score, scale_decimals(score.scale, width))


#: ``-n``'s default with --ci (sacrebleu's --confidence-n default too)
DEFAULT_CI_SAMPLES = 1000


@app.command()
def score(
    input: Annotated[
        list[str],
        typer.Option(
            "-i",
            "--input",
            help="System output file(s): -i SYS1 SYS2 ... (NAME=PATH names a system).",
        ),
    ],
    reference: Annotated[
        list[str],
        typer.Option(
            "-r",
            "--reference",
            help="Reference file(s), one segment a line ('-' = stdin): -r REF1 REF2 ... or -r once per file.",
        ),
    ] = [],  # noqa: B006
    source: Annotated[
        str | None,
        typer.Option(
            "--source",
            help="Source file, one segment a line, for metrics that read sources (comet).",
        ),
    ] = None,
    metrics: Annotated[
        list[str],
        typer.Option(
            "-m",
            "--metrics",
            help="Metric name(s), any case: -m bleu chrf ... or -m BLEU,chrF (see `evalab metrics`).",
        ),
    ] = ["bleu"],  # noqa: B006
    set_: Annotated[
        list[str],
        typer.Option(
            "-s",
            "--set",
            help="Metric setting KEY=VALUE (all metrics with KEY) or METRIC.KEY=VALUE. Repeatable.",
        ),
    ] = [],  # noqa: B006
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model of the selected model metrics (comet, bertscore, perplexity): a local folder or an Org/name in the local Hugging Face cache (same as --set METRIC.model=...).",
        ),
    ] = None,
    tokenize: Annotated[
        str | None,
        typer.Option(
            "-tok",
            "--tokenize",
            help="BLEU's tokenizer, as sacrebleu's -tok (same as --set bleu.tokenize=...).",
        ),
    ] = None,
    lowercase: Annotated[
        bool,
        typer.Option(
            "-lc",
            "--lowercase",
            help="Case-insensitive BLEU, as sacrebleu's -lc (same as --set bleu.lowercase=true).",
        ),
    ] = False,
    langpair: Annotated[
        str | None,
        typer.Option(
            "-l",
            "--langpair",
            help="SRC-TGT language pair: BLEU's tokenizer as sacrebleu picks it (zh: zh, ja: ja-mecab, ko: ko-mecab, else 13a), unless -tok is given.",
        ),
    ] = None,
    num_refs: Annotated[
        int,
        typer.Option(
            "-nr",
            "--num-refs",
            help="Split the one -r file on tabs into this many references per line, as sacrebleu's --num-refs.",
        ),
    ] = 1,
    format: Annotated[str, format_option()] = "table",
    score_only: Annotated[
        bool,
        typer.Option(
            "-b", "--score-only", help="Print only the score(s), one a line, as sacrebleu's -b."
        ),
    ] = False,
    width: Annotated[
        int | None,
        typer.Option(
            "-w", "--width", help="Decimals shown (default 1 for 0-100 metrics, 4 for 0-1)."
        ),
    ] = None,
    jobs: Annotated[
        int,
        typer.Option(
            "-j",
            "--jobs",
            help="Processes computing per-segment statistics (shards are summed: same numbers).",
        ),
    ] = 1,
    executor: Annotated[str, executor_option()] = "local",
    ray_address: Annotated[str | None, ray_address_option()] = None,
    ray_timeout: Annotated[float | None, ray_timeout_option()] = None,
    out: Annotated[
        str | None,
        typer.Option(
            "-o", "--out", help="Write the output to this file (atomically) instead of stdout."
        ),
    ] = None,
    ci: Annotated[bool, ci_option()] = False,
    n_samples: Annotated[
        int | None,
        n_samples_option(
            f"Bootstrap resamples for --ci (default {DEFAULT_CI_SAMPLES}); with --paired-bs/--paired-ar, compare's -n."
        ),
    ] = None,
    seed: Annotated[int, seed_option()] = DEFAULT_SEED,
    confidence: Annotated[
        float,
        confidence_option("Confidence level for --ci (sacrebleu's --confidence switch is --ci)."),
    ] = 0.95,
    paired_bs: Annotated[
        bool,
        typer.Option(
            "--paired-bs",
            help="Run `evalab compare -t bs` on the -i systems (the first is the baseline), as sacrebleu's --paired-bs.",
        ),
    ] = False,
    paired_ar: Annotated[
        bool,
        typer.Option(
            "--paired-ar",
            help="Run `evalab compare -t ar` on the -i systems (the first is the baseline), as sacrebleu's --paired-ar.",
        ),
    ] = False,
    segments: Annotated[
        str | None,
        segments_option(
            "Also write per-segment scores to this file: JSON Lines, one line per system, metric and segment (a .csv or .tsv name: a table, one row each)."
        ),
    ] = None,
    missing_ref: Annotated[
        str,
        typer.Option(
            "--missing-ref",
            help="none: an empty reference line is an empty reference (as sacrebleu); empty-line: beyond the first -r file it means no reference for that segment.",
        ),
    ] = "none",
    field: Annotated[
        str | None,
        typer.Option(
            "--field",
            help="Record inputs (.jsonl, .csv, .tsv, stdin): the field holding the prediction; a dotted path into nested JSON (output.text).",
        ),
    ] = None,
    ref_field: Annotated[
        str | None,
        typer.Option(
            "--ref-field",
            help="Record inputs: the field holding the reference (a string) or references (a list); read from the -r record file, or from the first -i file when no -r is given.",
        ),
    ] = None,
    id_field: Annotated[
        str | None,
        typer.Option(
            "--id-field",
            help="Record inputs: align the records of every record file by this field instead of by position.",
        ),
    ] = None,
    quiet: Annotated[
        bool,
        typer.Option(
            "-q", "--quiet", help="No progress bar (model metrics: bertscore, perplexity, comet)."
        ),
    ] = False,
    layout: Annotated[str | None, layout_option()] = None,
    latex_split: Annotated[bool | None, latex_split_option()] = None,
    latex_fragment: Annotated[bool, latex_fragment_option()] = False,
    latex_caption: Annotated[str | None, latex_caption_option()] = None,
    latex_label: Annotated[str | None, latex_label_option()] = None,
    align: Annotated[
        int | None,
        typer.Option(
            "--align",
            metavar="N",
            help="wer/cer: also show jiwer's alignment (REF/HYP lines, S/D/I marks) of each system's N worst segments; in -f json as data.",
        ),
    ] = None,
    errors: Annotated[
        int | None,
        typer.Option(
            "--errors",
            metavar="K",
            help="wer/cer: also show each system's K most frequent substitutions, insertions and deletions with their counts (jiwer's error counts).",
        ),
    ] = None,
) -> None:
    """Score system outputs against references with one or more metrics."""
    set_ = [
        *set_,
        *peer_settings(canonical_metric_names(metrics), tokenize, lowercase, langpair),
        *model_items(model, metrics),
    ]
    if paired_bs or paired_ar:
        _run_paired(locals())
        return
    named = named_inputs(input)
    input = named.paths
    read = [*input_options(reference, input, source), *metric_inputs(metrics, set_)]
    check_out(out, read)
    check_format(format)
    check_layout(layout, format)
    latex = latex_layout(format, latex_split, latex_fragment, latex_caption, latex_label)
    check_score_only(score_only, format, align is not None or errors is not None)
    if align is not None or errors is not None:
        from evalab.cli.score_alignments import check_align_options

        check_align_options(align, errors, canonical_metric_names(metrics), format)
    check_missing_ref(missing_ref)
    n = check_n_samples(DEFAULT_CI_SAMPLES if n_samples is None else n_samples, "--n-samples")
    check_seed(seed)
    check_confidence(confidence)
    if width is not None and not 0 <= width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {width}")
    cluster = ray_cluster(executor, ray_address, ray_timeout, shards=jobs)
    check_segments_path(segments, out, read)
    built = show_progress(build_metrics(metrics, set_), not quiet)
    check_model_inputs(built, source, bool(reference) or ref_field is not None)
    check_source_option(built, source, [*reference, *input])
    refs, systems, labels = load_streams(
        reference, input, named.keys, RecordOptions(field, ref_field, id_field)
    )
    refs = split_num_refs(refs, labels, num_refs)
    if num_refs > 1:
        labels = [f"{labels[0]} (column {k})" for k in range(1, num_refs + 1)]
    refs = apply_missing_refs(refs, labels, missing_ref)
    warn_language_misfits(built, refs, langpair_option=True)
    if ci:
        check_resamplable(len(refs[0]), "--ci", labels[0])
    check_pair_work(built, systems, refs)
    built = bind_source(built, source, labels, refs)
    load_models(built, not quiet)
    results: list[tuple[str, str, Score]] = []
    cis: list[ConfidenceInterval | None] = []
    scored = score_table(built, systems, refs, jobs, cluster, segments=segments is not None)
    table = scored.stats
    with progress_bar(
        len(systems) * len(built) * n, "bootstrap (--ci)", ci and not quiet, unit="resamples"
    ) as advance:
        for sys_name in systems:
            for name, metric in built.items():
                rows = table[name][sys_name]
                results.append((sys_name, name, metric.aggregate(rows)))
                cis.append(
                    bootstrap_ci(metric, rows, n, confidence, seed, progress=advance)
                    if ci
                    else None
                )
    if segments:
        emit(segments_text(scored.segments, segments), segments)
    if score_only:
        emit("".join(format_value(sc, width) + "\n" for _, _, sc in results), out)
        return
    found = None
    if align is not None or errors is not None:
        from evalab.cli.score_alignments import alignment_results

        found = alignment_results(built, systems, refs, table, align, errors)
    view = TableView(layout, latex)
    emit_results(results, format, width, out, cis, named.short_by_key(), view, found)


#: sacrebleu's tokenizer for a target language (``-l SRC-TGT``); 13a for any other
LANGPAIR_TOKENIZERS = {"zh": "zh", "ja": "ja-mecab", "ko": "ko-mecab"}


def langpair_target(langpair: str) -> str:
    """The target language of ``-l SRC-TGT``, refused unless it has that form."""
    parts = langpair.split("-")
    if len(parts) != 2 or not all(p.isalpha() for p in parts):
        raise SettingsError(
            f"-l/--langpair {langpair!r}: expected SRC-TGT language codes, e.g. -l en-zh"
        )
    return parts[1].lower()


def peer_settings(
    metrics: list[str], tokenize: str | None, lowercase: bool, langpair: str | None
) -> list[str]:
    """``--set`` items for sacrebleu's ``-tok``, ``-lc`` and ``-l`` (BLEU's settings there)."""
    if langpair is not None:
        target = langpair_target(langpair)
        if tokenize is None and "bleu" in metrics:
            tokenize = LANGPAIR_TOKENIZERS.get(target, "13a")
    items = [f"bleu.tokenize={tokenize}"] if tokenize is not None else []
    items += ["bleu.lowercase=true"] if lowercase else []
    if items and "bleu" not in metrics:
        flag = "-tok/--tokenize" if tokenize is not None else "-lc/--lowercase"
        raise SettingsError(
            f"{flag} sets BLEU's setting, as in sacrebleu, but bleu is not among -m {' '.join(metrics)}; "
            "use --set METRIC.KEY=VALUE for the others (see `evalab metrics`)"
        )
    return items


def split_num_refs(
    refs: list[list[str | None]], paths: list[str], num_refs: int
) -> list[list[str | None]]:
    """``--num-refs N``: the one reference file's lines split on tabs into N streams."""
    if num_refs == 1:
        return refs
    if num_refs < 1:
        raise SettingsError(f"--num-refs must be at least 1, got {num_refs}")
    if len(paths) != 1 or any(line is None for line in refs[0]):
        raise SettingsError(
            "--num-refs splits one tab-separated reference text file; give one -r file (and no --ref-field)"
        )
    for line_no, line in enumerate(refs[0], start=1):
        fields = (line or "").count("\t") + 1
        if fields != num_refs:
            raise InputError(
                f"{paths[0]}: line {line_no} has {fields} tab-separated reference(s), expected "
                f"{num_refs} (--num-refs {num_refs})"
            )
    columns = [(line or "").split("\t") for line in refs[0]]
    return [[row[k] for row in columns] for k in range(num_refs)]


def check_score_only(score_only: bool, fmt: str, aligned: bool = False) -> None:
    """``-b`` prints bare numbers: it has no table, JSON or LaTeX form, nor alignments."""
    if score_only and aligned:
        raise SettingsError(
            "-b/--score-only prints bare scores, one a line; it does not combine with --align/--errors"
        )
    if score_only and fmt != "table":
        raise SettingsError(
            f"-b/--score-only prints bare scores, one a line; it does not combine with -f {fmt}"
        )


#: score's options that compare has no counterpart for (they would be dropped in silence)
_NOT_PAIRED = (
    ("segments", None, "--segments"),
    ("score_only", False, "-b/--score-only"),
    ("num_refs", 1, "--num-refs"),
    ("align", None, "--align"),
    ("errors", None, "--errors"),
)


def _run_paired(given: dict[str, Any]) -> None:
    """``score --paired-bs/--paired-ar``: sacrebleu's paired mode is ``evalab compare``.

    The compare command is looked up on the app (the CLI registers it when it sees these
    flags), not imported: compare builds on this module.
    """
    ctx = click.get_current_context()
    compare = ctx.find_root().command.commands["compare"]  # type: ignore[attr-defined]
    if given["paired_bs"] and given["paired_ar"]:
        raise SettingsError("--paired-bs and --paired-ar are two tests: give one (as in sacrebleu)")
    for key, default, flag in _NOT_PAIRED:
        if given[key] != default:
            raise SettingsError(
                f"{flag} is not available with --paired-bs/--paired-ar (they run `evalab compare`)"
            )
    ctx.invoke(
        compare,
        reference=given["reference"],
        input=given["input"],
        source=given["source"],
        metrics=given["metrics"],
        test="bs" if given["paired_bs"] else "ar",
        n_samples=given["n_samples"],
        seed=given["seed"],
        confidence=given["confidence"],
        set_=given["set_"],
        format=given["format"],
        width=given["width"],
        jobs=given["jobs"],
        executor=given["executor"],
        ray_address=given["ray_address"],
        ray_timeout=given["ray_timeout"],
        out=given["out"],
        quiet=given["quiet"],
        missing_ref=given["missing_ref"],
        layout=given["layout"],
        latex_split=given["latex_split"],
        latex_fragment=given["latex_fragment"],
        latex_caption=given["latex_caption"],
        latex_label=given["latex_label"],
    )


def warn_language_misfits(
    built: dict[str, Metric], refs: list[list[str | None]], *, langpair_option: bool = False
) -> None:
    """Say (once) when a metric's tokenizer or encoder does not fit the references' language."""
    warn_tokenizer_misfit(built, refs, langpair_option=langpair_option)
    if "bertscore" in built:
        warn_encoder_misfit(built["bertscore"], refs, "pass --set bertscore.model=FOLDER")


def load_models(built: dict[str, Metric], enabled: bool) -> None:
    """Load the model metrics' models now, each between a 'loading' and a 'ready' line
    (``-q``: silent), so a long load is not a silent pause before the first bar."""
    loaders = {
        "bertscore": lambda m: m.embedder,
        "comet": lambda m: m.model(),
        "perplexity": lambda m: m.scorer,
        "cross_entropy": lambda m: m.scorer,
    }
    for name, metric in built.items():
        if name in loaders:
            model = getattr(metric.settings, "model", None)
            with model_loading(f"{name} model ({model or 'default'})", enabled):
                loaders[name](metric)


def show_progress(built: dict[str, Metric], enabled: bool) -> dict[str, Metric]:
    """The metrics with their progress bars on (stderr, terminal only) or off (``-q``).

    Model metrics spend seconds to minutes per system: bertscore and perplexity show a bar
    when the CLI asks for one, comet has a ``progress`` setting (on by default, so ``-q``
    turns it off). String metrics finish in a blink and have no bar.
    """
    shown = {}
    for name, metric in built.items():
        if hasattr(metric, "progress"):
            metric.progress = enabled
        if hasattr(metric.settings, "progress") and not enabled:
            metric = type(metric)(dataclasses.replace(metric.settings, progress=False))  # type: ignore[call-arg]
        shown[name] = metric
    return shown


def check_segments_path(
    segments: str | None, out: str | None, inputs: list[tuple[str, str | None]]
) -> None:
    """Refuse a ``--segments`` file that would overwrite an input or the ``--out`` file."""
    check_out(segments, inputs, option="--segments", outputs=[("--out", out)])


@dataclass(frozen=True)
class ScoredTable:
    """``score``'s rows, and with ``--segments`` every segment's :class:`Score`."""

    #: metric -> system -> its stats rows
    stats: dict[str, dict[str, Stats]]
    #: system -> metric -> one sentence-level score per segment (empty without --segments)
    segments: dict[str, dict[str, list[Score]]]


def score_table(
    built: dict[str, Metric],
    systems: dict[str, list[str]],
    refs: list[list[str | None]],
    jobs: int,
    cluster: "RayCluster | None",
    *,
    segments: bool,
    spans: bool = False,
) -> ScoredTable:
    """Every metric's rows (:func:`stats_table`), each model run once. With ``segments``
    or ``spans``, a metric whose segment scores hold more than its rows (COMET's error
    spans: ``tags_words``) gives both from one run in this process (``scored_many``); with
    ``segments``, every other metric's segment scores are read from its rows
    (``segment_scores_of``)."""
    wanted = segments or spans
    own = {n: m for n, m in built.items() if wanted and getattr(m, "tags_words", False)}
    rest = {n: m for n, m in built.items() if n not in own}
    table = chunked_table(rest, systems, refs, jobs, cluster)
    per_metric: dict[str, dict[str, list[Score]]] = {}
    for name, metric in own.items():
        runs = metric.scored_many(list(systems.values()), refs)  # type: ignore[attr-defined]
        table[name] = {s: run.stats for s, run in zip(systems, runs, strict=True)}
        per_metric[name] = {s: run.segments for s, run in zip(systems, runs, strict=True)}
    if segments:
        for name, metric in rest.items():
            per_metric[name] = {s: metric.segment_scores_of(table[name][s]) for s in systems}
    return ScoredTable(
        {n: table[n] for n in built},
        {s: {n: per_metric[n][s] for n in built if n in per_metric} for s in systems}
        if per_metric
        else {},
    )


#: segments scored at a time by :func:`chunked_table` (read at call time: a test sets a small one)
SCORE_CHUNK = 1 << 15


def chunked_table(
    built: dict[str, Metric],
    systems: dict[str, list[str]],
    refs: list[list[str | None]],
    jobs: int,
    cluster: "RayCluster | None",
) -> dict[str, dict[str, Stats]]:
    """:func:`stats_table`, computed :data:`SCORE_CHUNK` segments at a time in one process
    for the metrics whose rows of contiguous parts join exactly (``shardable``), so the
    working data of tokenising and counting, and the references a metric keeps prepared
    (several times the rows), are one chunk's, not the whole corpus's. Model metrics (batching over the whole corpus), ``-j N``
    shards and Ray workers keep one call over the whole corpus: the same rows."""
    n = len(next(iter(systems.values()), []))
    bounds = shard_bounds(n, -(-n // SCORE_CHUNK))
    parted = (
        [name for name, metric in built.items() if shardable(metric)]
        if jobs == 1 and cluster is None and len(bounds) > 1
        else []
    )
    whole = {name: metric for name, metric in built.items() if name not in parted}
    table = stats_table(whole, systems, refs, jobs, cluster) if whole else {}
    parts: dict[str, dict[str, list[Stats]]] = {n: {s: [] for s in systems} for n in parted}
    for a, b in bounds if parted else []:
        cut = {s: hyps[a:b] for s, hyps in systems.items()}
        # a light copy per chunk (pickling's state: no caches), so the references a metric
        # prepared for one chunk (BLEU's and chrF's n-gram tables) go with that chunk
        fresh = {name: copy.copy(built[name]) for name in parted}
        part = stats_table(fresh, cut, [r[a:b] for r in refs])
        for name in parted:
            for s in systems:
                parts[name][s].append(part[name][s])
    for name in parted:  # joined one at a time, each system's parts dropped once joined
        table[name] = {s: joined(built[name], parts[name].pop(s), refs) for s in systems}
    return {n: table[n] for n in built}


def page_spans(scored: ScoredTable, short: dict[str, str]) -> PageSpans | None:
    """The error spans of the first metric whose segment scores have them (xCOMET), every
    system under its table name (``short``), for the compare page."""
    per_system = list(scored.segments.values())
    for name in per_system[0] if per_system else {}:
        if any("error_spans" in sc.components for sc in per_system[0][name]):
            return PageSpans(
                name,
                {
                    short.get(s, s): [sc.components.get("error_spans", []) for sc in per[name]]
                    for s, per in scored.segments.items()
                },
            )
    return None


def segment_records(scores: dict[str, dict[str, list[Score]]]) -> list[dict[str, Any]]:
    """Every segment's score as one record: system, metric, segment (line number from 1),
    score, scale, direction, signature and components, as ``Metric.segment_scores`` defines
    them (BLEU per segment is sentence BLEU, with effective order as its signature says;
    COMET's error spans are ``error_spans``, a list of text, severity, confidence, start
    and end)."""
    return [
        {
            "system": sys_name,
            "metric": name,
            "segment": i,
            **{k: v for k, v in sc.to_dict().items() if k not in ("metric", "verbose")},
        }
        for sys_name, per in scores.items()
        for name, metric_scores in per.items()
        for i, sc in enumerate(metric_scores, start=1)
    ]


def segments_text(scores: dict[str, dict[str, list[Score]]], path: str | None) -> str:
    """The ``--segments`` file: CSV or TSV where its name ends in ``.csv``/``.tsv``
    (:func:`~evalab.report.error_spans.segments_table`), else JSON Lines, one record a line."""
    records = segment_records(scores)
    fmt = Path(path).suffix.lower().lstrip(".") if path and not stream_of(path) else ""
    if fmt in DELIMITERS:
        return delimited_table(segments_table(records), DELIMITERS[fmt])
    return "".join(json.dumps(json_safe(r), ensure_ascii=False) + "\n" for r in records)


def emit_results(
    results: list[tuple[str, str, Score]],
    fmt: str,
    width: int | None,
    out: str | None,
    cis: list[ConfidenceInterval | None] | None = None,
    short: dict[str, str] | None = None,
    view: TableView = DEFAULT_VIEW,
    found: "AlignmentResults | None" = None,
) -> None:
    """Print or write ``(system, metric, Score)`` results in ``fmt`` (with CIs from ``--ci``);
    tables call each system by ``short[system]`` where given, laid out as ``view`` says;
    ``found``: the ``--align``/``--errors`` results after them (in JSON in each result)."""
    cis = cis or [None] * len(results)
    if fmt == "json":
        rows: list[dict[str, Any]] = [
            ordered_row(
                {
                    "system": s,
                    **sc.to_dict(),
                    "metric": m,
                    **(ci_fields(sc, c) if c else {}),
                    **(found.json_fields(s, m) if found else {}),
                }
            )
            for (s, m, sc), c in zip(results, cis, strict=True)
        ]
        emit(to_json(rows), out)
        return
    signatures = []
    for (_, _, sc), c in zip(results, cis, strict=True):
        line = sc.signature + (f"|{c.signature}" if c else "")  # the signature names its metric
        if line not in signatures:
            signatures.append(line)
    t = _wide_results(results, cis, width, short or {})
    notes = wide_notes(cis[0].confidence if cis[0] else None)
    wide = Table(t.header, t.body, [*notes, *signatures], bold=t.bold)
    header = ["system", "metric", "score", "details"]
    body: list[list[TableCell]] = [
        [
            (short or {}).get(s, s),
            m,
            score_cell(sc, c, width),
            sc.verbose,
        ]
        for (s, m, sc), c in zip(results, cis, strict=True)
    ]
    if fmt == "latex":  # the details (counts, lengths) would overflow a paper's column
        header, body = header[:3], [b[:3] for b in body]
    more = found.tables(short or {}) if found else []
    after = found.text(short or {}) if found else ""
    emit_view(fmt, Table(header, body, signatures), wide, out, view, more=more, after=after)


def _wide_results(
    results: list[tuple[str, str, Score]],
    cis: list[ConfidenceInterval | None],
    width: int | None,
    short: dict[str, str],
) -> WideTable:
    """Systems x metrics of ``score``: the corpus score ± the half-width of its ``--ci``."""
    metrics: dict[str, WideMetric] = {}
    cells: dict[tuple[str, str], Cell] = {}
    for (s, m, sc), c in zip(results, cis, strict=True):
        metrics.setdefault(m, WideMetric(m, sc.higher_is_better, scale_decimals(sc.scale, width)))
        cells[(short.get(s, s), m)] = Cell(sc.score, c.half_width if c else None)
    systems = list(dict.fromkeys(short.get(s, s) for s, _, _ in results))
    return wide_table(systems, list(metrics.values()), cells)


def wide_notes(confidence: float | None) -> list[str]:
    """What a wide table's bold, arrows and ± mean."""
    lines = ["Bold: the best score of each column (↑ higher is better, ↓ lower is better)."]
    if confidence is not None:
        lines.append(f"±: half-width of the {confidence * 100:g}% bootstrap confidence interval.")
    return lines


def ci_fields(score: Score, ci: ConfidenceInterval) -> dict[str, Any]:
    """JSON fields of a ``--ci`` interval; the signature gains the resampling settings."""
    fields = {k: v for k, v in ci.to_dict().items() if k != "score"}
    return {**fields, "signature": f"{score.signature}|{ci.signature}"}


def ci_text(score: Score, ci: ConfidenceInterval, width: int | None) -> str:
    """`` (mean ± half-width)`` with the decimals of the score."""
    return f" ({plus_minus(ci.mean, ci.half_width, scale_decimals(score.scale, width))})"


def score_cell(score: Score, ci: ConfidenceInterval | None, width: int | None) -> Number:
    """The score's cell, then ``(mean ± half-width)`` of its ``--ci`` interval when given."""
    d = scale_decimals(score.scale, width)
    also = Number(ci.mean, d, spread=ci.half_width) if ci else None
    return Number(score.score, d, also=also)
