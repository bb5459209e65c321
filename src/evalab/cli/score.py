"""``evalab score``: corpus scores of one or more systems against shared references."""

# No ``from __future__ import annotations`` here: typer reads the options from the
# annotations, and as strings it would compile each of them again on every start.
import copy
import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

from evalab.cli.app import command
from evalab.cli.inputs import (
    aligned_stream,
    bind_source,
    check_model_inputs,
    check_segments_path,
    check_source_option,
    input_options,
    load_models,
    load_streams,
    needs_references,
    show_progress,
    warn_language_misfits,
)
from evalab.cli.names import NamedInputs, named_inputs
from evalab.cli.options import (
    Format,
    Inputs,
    LatexOptions,
    Layout,
    Metrics,
    MetricSelection,
    MetricSettings,
    MissingRef,
    OutFile,
    RepeatedReferences,
    Seed,
    ShardOptions,
    Source,
    Width,
    WithCI,
    canonical_metric_names,
    check_width,
    confidence_option,
    model_items,
    n_samples_option,
    segments_option,
    table_view,
)
from evalab.cli.output import (
    DEFAULT_VIEW,
    TableView,
    check_out,
    emit,
    emit_view,
    ordered_row,
    stream_of,
    to_json,
    to_json_lines,
)
from evalab.cli.peers import bare_scores
from evalab.cli.record_inputs import RecordOptions
from evalab.cli.references import apply_missing_refs, check_missing_ref
from evalab.cli.segment_checks import check_pair_work, check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.metrics.base import Metric, Score
from evalab.metrics.parallel import joined, shard_bounds, shardable, stats_table
from evalab.metrics.stats_value import Stats
from evalab.progress import progress_bar
from evalab.report.delimited import DELIMITERS, delimited_table
from evalab.report.error_spans import PageSpans, segments_table
from evalab.report.numbers import number, plus_minus, scale_decimals
from evalab.report.table import Number, Table, TableCell
from evalab.report.wide import Cell, WideMetric, WideTable, wide_table
from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, check_resampling
from evalab.stats.resampling import DEFAULT_SEED

if TYPE_CHECKING:
    from evalab.cli.score_alignments import AlignmentResults
    from evalab.metrics.ray_shards import RayCluster


def format_value(score: Score, width: int | None) -> str:
    """The score with ``width`` decimals (default: 1 on a 0-100 scale, 4 on 0-1)."""
    return number(score.score, scale_decimals(score.scale, width))


#: ``-n``'s default with --ci (sacrebleu's --confidence-n default too)
DEFAULT_CI_SAMPLES = 1000


@dataclass(frozen=True)
class ScoreRequest:
    """``evalab score``'s options, as the command line gives them."""

    input: Inputs
    reference: RepeatedReferences = field(default_factory=list)
    source: Source = None
    metrics: Metrics = field(default_factory=lambda: ["bleu"])
    set_: MetricSettings = field(default_factory=list)
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="The model of the selected model metrics (comet, bertscore, perplexity): a local folder or an Org/name in the local Hugging Face cache (same as --set METRIC.model=...).",
        ),
    ] = None
    tokenize: Annotated[
        str | None,
        typer.Option(
            "-tok",
            "--tokenize",
            help="BLEU's tokenizer, as sacrebleu's -tok (same as --set bleu.tokenize=...).",
        ),
    ] = None
    lowercase: Annotated[
        bool,
        typer.Option(
            "-lc",
            "--lowercase",
            help="Case-insensitive BLEU, as sacrebleu's -lc (same as --set bleu.lowercase=true).",
        ),
    ] = False
    langpair: Annotated[
        str | None,
        typer.Option(
            "-l",
            "--langpair",
            help="SRC-TGT language pair: BLEU's tokenizer as sacrebleu picks it (zh: zh, ja: ja-mecab, ko: ko-mecab, else 13a), unless -tok is given.",
        ),
    ] = None
    num_refs: Annotated[
        int,
        typer.Option(
            "-nr",
            "--num-refs",
            help="Split the one -r file on tabs into this many references per line, as sacrebleu's --num-refs.",
        ),
    ] = 1
    format: Format = "table"
    score_only: Annotated[
        bool,
        typer.Option(
            "-b",
            "--score-only",
            help="Print only the score(s), one a line, as sacrebleu's -b (with several systems: SYSTEM<TAB>[METRIC<TAB>]SCORE).",
        ),
    ] = False
    width: Width = None
    shards: ShardOptions = dataclasses.field(default_factory=ShardOptions)
    out: OutFile = None
    ci: WithCI = False
    n_samples: Annotated[
        int | None,
        n_samples_option(
            f"Bootstrap resamples for --ci (default {DEFAULT_CI_SAMPLES}); with --paired-bs/--paired-ar, compare's -n."
        ),
    ] = None
    seed: Seed = DEFAULT_SEED
    confidence: Annotated[
        float,
        confidence_option("Confidence level for --ci (sacrebleu's --confidence switch is --ci)."),
    ] = 0.95
    paired_bs: Annotated[
        bool,
        typer.Option(
            "--paired-bs",
            help="Run `evalab compare -t bs` on the -i systems (the first is the baseline), as sacrebleu's --paired-bs.",
        ),
    ] = False
    paired_ar: Annotated[
        bool,
        typer.Option(
            "--paired-ar",
            help="Run `evalab compare -t ar` on the -i systems (the first is the baseline), as sacrebleu's --paired-ar.",
        ),
    ] = False
    segments: Annotated[
        str | None,
        segments_option(
            "Also write per-segment scores to this file: JSON Lines, one line per system, metric and segment (a .csv or .tsv name: a table, one row each)."
        ),
    ] = None
    missing_ref: MissingRef = "none"
    field: Annotated[
        str | None,
        typer.Option(
            "--field",
            help="Record inputs (.jsonl, .csv, .tsv, stdin): the field holding the prediction; a dotted path into nested JSON (output.text).",
        ),
    ] = None
    ref_field: Annotated[
        str | None,
        typer.Option(
            "--ref-field",
            help="Record inputs: the field holding the reference (a string) or references (a list); read from the -r record file, or from the first -i file when no -r is given.",
        ),
    ] = None
    id_field: Annotated[
        str | None,
        typer.Option(
            "--id-field",
            help="Record inputs: align the records of every record file by this field instead of by position.",
        ),
    ] = None
    quiet: Annotated[
        bool,
        typer.Option(
            "-q", "--quiet", help="No progress bar (model metrics: bertscore, perplexity, comet)."
        ),
    ] = False
    layout: Layout = None
    latex: LatexOptions = dataclasses.field(default_factory=LatexOptions)
    align: Annotated[
        int | None,
        typer.Option(
            "--align",
            metavar="N",
            help="wer/cer: also show jiwer's alignment (REF/HYP lines, S/D/I marks) of each system's N worst segments; in -f json as data.",
        ),
    ] = None
    errors: Annotated[
        int | None,
        typer.Option(
            "--errors",
            metavar="K",
            help="wer/cer: also show each system's K most frequent substitutions, insertions and deletions with their counts (jiwer's error counts).",
        ),
    ] = None

    @property
    def aligned(self) -> bool:
        """``--align``/``--errors``: jiwer's alignments after the scores."""
        return self.align is not None or self.errors is not None


@command(ScoreRequest)
def score(req: ScoreRequest) -> None:
    """Score system outputs against references with one or more metrics (a quality-estimation
    metric, such as a CometKiwi checkpoint or metricx qe, from --source without -r)."""
    names = canonical_metric_names(req.metrics)
    set_ = [
        *req.set_,
        *peer_settings(names, req.tokenize, req.lowercase, req.langpair),
        *model_items(req.model, req.metrics),
    ]
    req = dataclasses.replace(req, set_=set_)
    if req.paired_bs or req.paired_ar:
        _run_paired(req)
        return
    run = checked_score(req, names)
    built = show_progress(run.metrics.build(), not req.quiet)
    check_model_inputs(built, req.source, bool(req.reference) or req.ref_field is not None)
    check_source_option(built, req.source, [*req.reference, *run.named.paths])
    refs, systems, labels = read_references_and_systems(req, run.named, needs_references(built))
    warn_language_misfits(built, refs, langpair_option=True)
    aligned = aligned_stream(labels, refs, run.named.paths, systems)
    if req.ci:
        check_resamplable(len(aligned[1]), "--ci", aligned[0])
    check_pair_work(built, systems, refs)
    built = bind_source(built, req.source, aligned)
    load_models(built, not req.quiet)
    scored = score_table(
        built, systems, refs, req.shards.jobs, run.cluster, segments=req.segments is not None
    )
    results, cis = corpus_results(req, run.n, built, systems, scored.stats)
    if req.segments:
        emit(segments_text(scored.segments, req.segments), req.segments)
    if req.score_only:
        shown = [(s, m, format_value(sc, req.width)) for s, m, sc in results]
        emit(bare_scores(shown, run.named.short_by_key()), req.out)
        return
    found = None
    if req.aligned:
        from evalab.cli.score_alignments import alignment_results

        found = alignment_results(built, systems, refs, scored.stats, req.align, req.errors)
    emit_results(
        results, req.format, req.width, req.out, cis, run.named.short_by_key(), run.view, found
    )


@dataclass(frozen=True)
class ScoreRun:
    """``score``'s options checked: the systems' names, the bootstrap's resamples, where
    ``-j N`` runs, and the table's layout."""

    named: NamedInputs
    #: the ``-m`` metrics with their ``--set`` settings, resolved once
    metrics: MetricSelection
    n: int
    cluster: "RayCluster | None"
    view: TableView


def checked_score(req: ScoreRequest, names: list[str]) -> ScoreRun:
    """Every option of ``score`` checked before any file is read."""
    named = named_inputs(req.input)
    metrics = MetricSelection.parse(req.metrics, req.set_)
    read = [*input_options(req.reference, named.paths, req.source), *metrics.read_paths()]
    check_out(req.out, read)
    view = table_view(req.format, req.layout, req.latex)
    check_score_only(req.score_only, req.format, req.aligned)
    if req.aligned:
        from evalab.cli.score_alignments import check_align_options

        check_align_options(req.align, req.errors, names, req.format)
    check_missing_ref(req.missing_ref)
    n_samples = DEFAULT_CI_SAMPLES if req.n_samples is None else req.n_samples
    n, _, _ = check_resampling(n_samples, req.confidence, req.seed)
    check_width(req.width)
    cluster = req.shards.cluster()
    check_segments_path(req.segments, req.out, read)
    return ScoreRun(named, metrics, n, cluster, view)


def read_references_and_systems(
    req: ScoreRequest, named: NamedInputs, required: bool
) -> tuple[list[list[str | None]], dict[str, list[str]], list[str]]:
    """The reference streams (``--num-refs`` split, ``--missing-ref`` applied; none where
    none is ``required``), the systems, and a label per reference stream."""
    records = RecordOptions(req.field, req.ref_field, req.id_field)
    refs, systems, labels = load_streams(
        req.reference, named.paths, named.keys, records, required=required
    )
    refs = split_num_refs(refs, labels, req.num_refs)
    if req.num_refs > 1:
        labels = [f"{labels[0]} (column {k})" for k in range(1, req.num_refs + 1)]
    return apply_missing_refs(refs, labels, req.missing_ref), systems, labels


def corpus_results(
    req: ScoreRequest,
    n: int,
    built: dict[str, Metric],
    systems: dict[str, list[str]],
    table: dict[str, dict[str, Stats]],
) -> tuple[list[tuple[str, str, Score]], list[ConfidenceInterval | None]]:
    """Every system's corpus score per metric, with its ``--ci`` interval (else ``None``)."""
    results: list[tuple[str, str, Score]] = []
    cis: list[ConfidenceInterval | None] = []
    with progress_bar(
        len(systems) * len(built) * n,
        "bootstrap (--ci)",
        req.ci and not req.quiet,
        unit="resamples",
    ) as advance:
        for sys_name in systems:
            for name, metric in built.items():
                rows = table[name][sys_name]
                results.append((sys_name, name, metric.aggregate(rows)))
                cis.append(
                    bootstrap_ci(metric, rows, n, req.confidence, req.seed, progress=advance)
                    if req.ci
                    else None
                )
    return results, cis


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


def _run_paired(req: ScoreRequest) -> None:
    """``score --paired-bs/--paired-ar``: sacrebleu's paired mode is ``evalab compare``.

    The compare command is looked up on the app (the CLI registers it when it sees these
    flags), not imported: compare builds on this module.
    """
    ctx = click.get_current_context()
    compare = ctx.find_root().command.commands["compare"]  # type: ignore[attr-defined]
    if req.paired_bs and req.paired_ar:
        raise SettingsError("--paired-bs and --paired-ar are two tests: give one (as in sacrebleu)")
    for key, default, flag in _NOT_PAIRED:
        if getattr(req, key) != default:
            raise SettingsError(
                f"{flag} is not available with --paired-bs/--paired-ar (they run `evalab compare`)"
            )
    shared = (
        "reference input source metrics n_samples seed confidence set_ format width out quiet "
        "missing_ref layout"
    )
    ctx.invoke(
        compare,
        test="bs" if req.paired_bs else "ar",
        **{name: getattr(req, name) for name in shared.split()},
        **dataclasses.asdict(req.shards),
        **dataclasses.asdict(req.latex),
    )


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
    return to_json_lines(records)


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
