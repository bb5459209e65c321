"""``evalab score``: corpus scores of one or more systems against shared references."""

from __future__ import annotations

import dataclasses
import json
from typing import Annotated, Any

import typer

from evalab.cli import app
from evalab.cli.names import named_inputs, system_name
from evalab.cli.options import build_metrics
from evalab.cli.output import (
    check_format,
    check_out,
    emit,
    emit_table,
    format_option,
    json_safe,
    ordered_row,
    to_json,
)
from evalab.cli.references import apply_missing_refs, check_missing_ref
from evalab.cli.segment_checks import check_edit_distance_sizes, check_no_nul, check_resamplable
from evalab.errors import SettingsError
from evalab.io import check_same_length, read_segments, write_text_atomic
from evalab.metrics.base import Metric, Score
from evalab.metrics.parallel import stats_table
from evalab.stats.bootstrap import ConfidenceInterval, bootstrap_ci, check_confidence
from evalab.stats.resampling import DEFAULT_SEED, check_n_samples, check_seed


def load_inputs(
    references: list[str], inputs: list[str], names: dict[str, str] | None = None
) -> tuple[list[list[str]], dict[str, list[str]]]:
    """Read reference streams and system outputs; check they are all line-aligned.

    Systems are keyed by ``names[path]`` (:class:`~evalab.cli.names.NamedInputs`), else by
    their file names (their paths where two share a file name).
    """
    if not references:
        raise SettingsError("no reference given; pass -r REF (repeat -r for several references)")
    if not inputs:
        raise SettingsError("no system output given; pass -i HYP [HYP2 ...]")
    if sum(1 for p in [*references, *inputs] if p == "-") > 1:
        raise SettingsError("stdin ('-') can be used for only one file")
    ref_files = [(p, read_segments(p)) for p in references]
    hyp_files = [(p, read_segments(p)) for p in inputs]
    for p, segments in [*ref_files, *hyp_files]:
        check_no_nul(p, segments)
    check_same_length([*ref_files, *hyp_files])
    systems: dict[str, list[str]] = {}
    for p, segments in hyp_files:
        # two systems with the same file name in different folders keep their full paths
        name = system_name(p) if sum(system_name(q) == system_name(p) for q in inputs) == 1 else p
        systems[names[p] if names else name] = segments
    refs = [segments for _, segments in ref_files]
    return refs, systems


def input_options(references: list[str], inputs: list[str], source: str | None = None) -> list[tuple[str, str | None]]:
    """``(option, path)`` of every file a scoring command reads, for :func:`check_out`."""
    return [*(("-r", p) for p in references), *(("-i", p) for p in inputs), ("--source", source)]


def check_source_option(built: dict[str, Metric], source: str | None, others: list[str]) -> None:
    """``--source`` is given exactly when a selected metric reads sources (COMET)."""
    readers = [n for n, m in built.items() if getattr(m, "uses_source", False)]
    if readers and source is None:
        raise SettingsError(f"{', '.join(readers)} reads the source segments: pass --source SRC (one segment a line)")
    if source is not None and not readers:
        raise SettingsError("--source is given but no selected metric reads sources (comet does)")
    if source == "-" and "-" in others:
        raise SettingsError("stdin ('-') can be used for only one file")


def bind_source(
    built: dict[str, Metric], source: str | None, references: list[str], refs: list[list[str | None]]
) -> dict[str, Metric]:
    """The metrics with the ``--source`` segments bound, checked line-aligned like a reference."""
    if source is None:
        return built
    segments = read_segments(source)
    check_no_nul(source, segments)
    check_same_length([(source, segments), (references[0], refs[0])])
    return {n: m.with_sources(segments) if getattr(m, "uses_source", False) else m for n, m in built.items()}  # type: ignore[attr-defined]


def format_value(score: Score, width: int | None) -> str:
    """The score with ``width`` decimals (default: 1 on a 0-100 scale, 4 on 0-1)."""
    decimals = width if width is not None else (1 if score.scale == 100 else 4)
    return f"{score.score:.{decimals}f}"


@app.command()
def score(
    reference: Annotated[list[str], typer.Option("-r", "--reference", help="Reference file, one segment a line ('-' = stdin). Repeat for several references.")],
    input: Annotated[list[str], typer.Option("-i", "--input", help="System output file(s): -i SYS1 SYS2 ... (NAME=PATH names a system).")],
    source: Annotated[str | None, typer.Option("--source", help="Source file, one segment a line, for metrics that read sources (comet).")] = None,
    metrics: Annotated[list[str], typer.Option("-m", "--metrics", help="Metric name(s): -m bleu chrf ... (see `evalab metrics`).")] = ["bleu"],  # noqa: B006
    set_: Annotated[list[str], typer.Option("-s", "--set", help="Metric setting KEY=VALUE (all metrics with KEY) or METRIC.KEY=VALUE. Repeatable.")] = [],  # noqa: B006
    format: Annotated[str, format_option()] = "table",
    width: Annotated[int | None, typer.Option("-w", "--width", help="Decimals shown (default 1 for 0-100 metrics, 4 for 0-1).")] = None,
    jobs: Annotated[int, typer.Option("-j", "--jobs", help="Processes computing per-segment statistics (shards are summed: same numbers).")] = 1,
    out: Annotated[str | None, typer.Option("-o", "--out", help="Write the output to this file (atomically) instead of stdout.")] = None,
    ci: Annotated[bool, typer.Option("--ci", help="Add a bootstrap percentile confidence interval (reported as mean ± half-width).")] = False,
    n_samples: Annotated[int, typer.Option("-n", "--n-samples", help="Bootstrap resamples for --ci.")] = 1000,
    seed: Annotated[int, typer.Option("--seed", help="Seed of the --ci resampling (0 is a seed too).")] = DEFAULT_SEED,
    confidence: Annotated[float, typer.Option("--confidence", help="Confidence level for --ci.")] = 0.95,
    segments: Annotated[str | None, typer.Option("--segments", help="Also write per-segment scores to this JSON Lines file: one line per system, metric and segment.")] = None,
    missing_ref: Annotated[str, typer.Option("--missing-ref", help="none: an empty reference line is an empty reference (as sacrebleu); empty-line: beyond the first -r file it means no reference for that segment.")] = "none",
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar (model metrics: bertscore, perplexity, comet).")] = False,
) -> None:
    """Score system outputs against references with one or more metrics."""
    named = named_inputs(input)
    input = named.paths
    check_out(out, input_options(reference, input, source))
    check_format(format)
    check_missing_ref(missing_ref)
    check_n_samples(n_samples, "--n-samples")
    check_seed(seed)
    check_confidence(confidence)
    if width is not None and not 0 <= width <= 16:
        raise SettingsError(f"--width must be between 0 and 16, got {width}")
    check_segments_path(segments, out, input_options(reference, input, source))
    built = show_progress(build_metrics(metrics, set_), not quiet)
    check_source_option(built, source, [*reference, *input])
    refs, systems = load_inputs(reference, input, named.keys)
    refs = apply_missing_refs(refs, reference, missing_ref)
    if ci:
        check_resamplable(len(refs[0]), "--ci", reference[0])
    check_edit_distance_sizes(list(built), systems, refs)
    built = bind_source(built, source, reference, refs)
    results: list[tuple[str, str, Score]] = []
    cis: list[ConfidenceInterval | None] = []
    table = stats_table(built, systems, refs, jobs)
    for sys_name in systems:
        for name, metric in built.items():
            rows = table[name][sys_name]
            results.append((sys_name, name, metric.aggregate(rows)))
            cis.append(bootstrap_ci(metric, rows, n_samples, confidence, seed) if ci else None)
    if segments:
        write_text_atomic(segments, segment_lines(built, systems, refs))
    emit_results(results, format, width, out, cis, named.short_by_key())


def show_progress(built: dict[str, Metric], enabled: bool) -> dict[str, Metric]:
    """The metrics with their progress bars on (stderr, terminal only) or off (``-q``).

    Model metrics spend seconds to minutes per system: bertscore and perplexity show a bar
    when the CLI asks for one, comet has a ``progress`` setting (on by default, so ``-q``
    turns it off). String metrics finish in a blink and have no bar.
    """
    shown = {}
    for name, metric in built.items():
        if hasattr(metric, "progress"):
            metric.progress = enabled  # type: ignore[attr-defined]
        if hasattr(metric.settings, "progress") and not enabled:
            metric = type(metric)(dataclasses.replace(metric.settings, progress=False))  # type: ignore[call-arg]
        shown[name] = metric
    return shown


def check_segments_path(segments: str | None, out: str | None, inputs: list[tuple[str, str | None]]) -> None:
    """Refuse a ``--segments`` file that would overwrite an input or the ``--out`` file."""
    check_out(segments, [*inputs, ("--out", out)], option="--segments")


def segment_lines(
    built: dict[str, Metric], systems: dict[str, list[str]], refs: list[list[str | None]]
) -> str:
    """JSON Lines of every segment's score: system, metric, segment (line number from 1), score,
    scale, direction, signature and components, as ``Metric.segment_scores`` defines them
    (BLEU per segment is sentence BLEU, with effective order as its signature says)."""
    lines = []
    for sys_name, hyps in systems.items():
        for name, metric in built.items():
            for i, sc in enumerate(metric.segment_scores(hyps, refs), start=1):
                fields = {k: v for k, v in sc.to_dict().items() if k not in ("metric", "verbose")}
                row = {"system": sys_name, "metric": name, "segment": i, **fields}
                lines.append(json.dumps(json_safe(row), ensure_ascii=False))
    return "".join(line + "\n" for line in lines)


def emit_results(
    results: list[tuple[str, str, Score]], fmt: str, width: int | None, out: str | None,
    cis: list[ConfidenceInterval | None] | None = None, short: dict[str, str] | None = None,
) -> None:
    """Print or write ``(system, metric, Score)`` results in ``fmt`` (with CIs from ``--ci``);
    tables call each system by ``short[system]`` where given."""
    cis = cis or [None] * len(results)
    if fmt == "json":
        rows: list[dict[str, Any]] = [
            ordered_row({"system": s, **sc.to_dict(), "metric": m, **(_ci_fields(sc, c) if c else {})})
            for (s, m, sc), c in zip(results, cis, strict=True)
        ]
        emit(to_json(rows), out)
        return
    header = ["system", "metric", "score", "details"]
    body = [
        [(short or {}).get(s, s), m, format_value(sc, width) + (_ci_text(sc, c, width) if c else ""), sc.verbose]
        for (s, m, sc), c in zip(results, cis, strict=True)
    ]
    signatures = []
    for (_, _, sc), c in zip(results, cis, strict=True):
        line = sc.signature + (f"|{c.signature}" if c else "")  # the signature names its metric
        if line not in signatures:
            signatures.append(line)
    if fmt == "latex":  # the details (counts, lengths) would overflow a paper's column
        header, body = header[:3], [b[:3] for b in body]
    emit_table(fmt, header, body, out, footer=signatures)


def _ci_fields(score: Score, ci: ConfidenceInterval) -> dict[str, Any]:
    """JSON fields of a ``--ci`` interval; the signature gains the resampling settings."""
    fields = {k: v for k, v in ci.to_dict().items() if k != "score"}
    return {**fields, "signature": f"{score.signature}|{ci.signature}"}


def _ci_text(score: Score, ci: ConfidenceInterval, width: int | None) -> str:
    """`` (mean ± half-width)`` with the decimals of the score."""
    decimals = width if width is not None else (1 if score.scale == 100 else 4)
    return f" ({ci.mean:.{decimals}f} ± {ci.half_width:.{decimals}f})"
