"""``evalab ppl``: cross-entropy, perplexity and bits per token/byte of a causal LM or of saved logits.

Two sources, one report:

* ``evalab ppl --model DIR -i TEXT``: a local Hugging Face causal LM scores the text
  with sliding windows (:mod:`evalab.models.causal_lm`). ``--documents file`` (default)
  scores the whole file as one document (lines joined by ``\\n``); ``--documents lines``
  scores every line as its own document (context never crosses lines).
* ``evalab ppl --logits FILE.npz``: saved logits and labels. Keys: ``logits`` (float,
  ``[N, T, V]`` or ``[T, V]``), ``labels`` (integer, ``[N, T]`` or ``[T]``), optional
  ``bytes`` and ``words`` (UTF-8 byte and word counts of the scored text: one number, or
  one per sequence) for bits per byte and word perplexity. ``--shift`` pairs logits at t
  with label t+1 (logits straight from a causal LM); ``--pad-id`` and ``--ignore-index``
  mask positions out of numerator and denominator.

JSON keys: ``perplexity``, ``nats_per_token``, ``bits_per_token``, ``tokens``,
``bits_per_byte``, ``word_perplexity``, ``signature`` (plus ``nll``, ``bytes``, ``words``,
``byte_perplexity``, ``documents``, ``settings``, and ``per_document`` with
``--per-document``; ``mean``, ``ci_low``, ``ci_high``, ``half_width``, ``confidence``,
``n_samples``, ``seed`` of the perplexity with ``--ci``, as ``evalab score --ci``). With ``--mean documents`` the three headline values are means over
documents of the per-document values; bits per byte and word perplexity stay corpus totals.
"""

from __future__ import annotations

import dataclasses
import io
import math
import zipfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.inputs import check_segments_path
from evalab.cli.options import (
    CISamples,
    Confidence,
    Device,
    Format,
    LatexOptions,
    OutFile,
    Quiet,
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
    to_json,
    to_json_lines,
)
from evalab.cli.score import ci_fields
from evalab.cli.segment_checks import check_resamplable
from evalab.errors import InputError, SettingsError
from evalab.io import read_bytes, read_segments
from evalab.metrics.loss import STAT_NAMES, CrossEntropy, Perplexity, PerplexitySettings
from evalab.nll import IGNORE_INDEX
from evalab.progress import model_loading
from evalab.report.markdown import markdown_table, md_code, md_escape
from evalab.report.numbers import number
from evalab.report.table import NumberText, Table, TableCell
from evalab.stats.bootstrap import bootstrap_ci, check_resampling
from evalab.stats.resampling import DEFAULT_SEED

#: the CLI's defaults are the metric's: one place says what ``--batch-size`` etc. default to
DEFAULTS = PerplexitySettings()
#: first bytes of a zip archive (np.savez writes one); anything else is not a .npz
ZIP_MAGIC = (b"PK\x03\x04", b"PK\x05\x06")


def load_npz(path: str) -> dict[str, np.ndarray]:
    """Read the ``--logits`` file: arrays ``logits``, ``labels`` and optional ``bytes``/``words``."""
    raw, _ = read_bytes(path, "arrays (a .npz file)")  # once: a FIFO or a pipe reads like a file
    try:
        if raw[:4] not in ZIP_MAGIC:
            raise InputError(
                f"{path}: not a .npz archive (a zip of arrays); save it with "
                "np.savez(path, logits=..., labels=...)"
            )
        with np.load(io.BytesIO(raw), allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        if isinstance(exc, InputError):
            raise
        raise InputError(f"{path}: not a readable .npz archive ({exc})") from exc
    missing = [k for k in ("logits", "labels") if k not in arrays]
    if missing:
        raise InputError(
            f"{path}: missing array(s) {', '.join(missing)}; found {', '.join(sorted(arrays)) or 'none'}. "
            "Save with np.savez(path, logits=..., labels=...[, bytes=..., words=...])"
        )
    return arrays


def _per_sequence(value: np.ndarray | None, n: int, key: str, path: str) -> np.ndarray | None:
    """One count per sequence from the ``bytes``/``words`` array: one number, or one per sequence."""
    if value is None:
        return None
    try:
        arr = np.asarray(value, dtype=np.float64).reshape(-1)
    except (TypeError, ValueError):
        raise InputError(f"{path}: '{key}' must hold numbers, got {value.dtype}") from None
    if not np.all(np.isfinite(arr)) or np.any(arr < 0) or np.any(arr != np.round(arr)):
        raise InputError(
            f"{path}: '{key}' must be whole numbers >= 0 (counts of the scored text), got {arr[:5].tolist()}"
        )
    if arr.size == 1 and n > 1:
        # one corpus-level count: attribute it to the first row, rows stay additive
        out = np.zeros(n)
        out[0] = arr[0]
        return out
    if arr.size != n:
        raise InputError(
            f"{path}: '{key}' has {arr.size} values for {n} sequences; give one number or one per sequence"
        )
    return arr


def rows_from_npz(
    path: str, *, shift: bool, pad_id: int | None, ignore_index: int | None
) -> np.ndarray:
    """Stats rows (one per sequence) of the loss metrics from a ``--logits`` file."""
    arrays = load_npz(path)
    logits, labels = arrays["logits"], arrays["labels"]
    if logits.ndim == 2:
        logits, labels = logits[None], labels[None] if labels.ndim == 1 else labels
    if logits.ndim != 3:
        raise InputError(
            f"{path}: 'logits' must have shape [N, T, V] or [T, V], got {logits.shape}"
        )
    if not np.issubdtype(logits.dtype, np.number) or not np.issubdtype(labels.dtype, np.integer):
        raise InputError(
            f"{path}: 'logits' must be numbers and 'labels' integers, got {logits.dtype} and {labels.dtype}"
        )
    try:
        rows = Perplexity.stats_from_logits(
            logits, labels, shift=shift, ignore_index=ignore_index, pad_id=pad_id
        )
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from exc
    n = rows.shape[0]
    counts = {key: _per_sequence(arrays.get(key), n, key, path) for key in ("bytes", "words")}
    return Perplexity.stats_from_nll(
        rows[:, STAT_NAMES.index("nll")],
        rows[:, STAT_NAMES.index("tokens")],
        n_bytes=counts["bytes"],
        n_words=counts["words"],
    )


def build_report(
    rows: np.ndarray, metric: Perplexity, extra: list[tuple[str, str]]
) -> dict[str, Any]:
    """The report dict (JSON layout) from stats rows, via the perplexity metrics.

    ``extra`` are the settings of this command that shape the rows (how documents are cut,
    how the logits were paired); the signature is the metric's with them added before its
    version field.
    """
    if rows.shape[0] == 0 or rows[:, STAT_NAMES.index("tokens")].sum() <= 0:
        raise InputError(
            "nothing to score: no token has a prediction (text too short, or all positions masked)"
        )
    p_score = metric.aggregate(rows)
    nats = CrossEntropy(mean=metric.settings.mean).aggregate(rows).score
    comps = p_score.components
    fields = [
        f.split(":", 1) for f in p_score.signature.split("|")[1:] if not f.startswith("version:")
    ]
    head, _, version = p_score.signature.rpartition("|version:")
    signature = head + "".join(f"|{k}:{v}" for k, v in extra) + f"|version:{version}"
    return {
        "perplexity": p_score.score,
        "nats_per_token": nats,
        "bits_per_token": nats / math.log(2),
        "tokens": comps["tokens"],
        "bits_per_byte": comps["bits_per_byte"],
        "word_perplexity": comps["word_perplexity"],
        "byte_perplexity": comps["byte_perplexity"],
        "nll": comps["nll"],
        "bytes": comps["bytes"],
        "words": comps["words"],
        "documents": int(rows.shape[0]),
        "settings": {**dict(fields), **dict(extra)},
        "signature": signature,
    }


def _num(value: Any, decimals: int = 4) -> str:
    if isinstance(value, float):
        # a random model's word perplexity runs to 1e16: scientific notation stays readable
        return number(value, decimals, scientific_from=1e6)
    return str(value)


def _value(report: dict[str, Any], key: str) -> str:
    """A quantity of the report as shown; the perplexity with its ``--ci`` interval."""
    return _num(report[key]) + (ci_suffix(report) if key == "perplexity" else "")


QUANTITIES = [
    ("tokens", "tokens scored"),
    ("nats_per_token", "nats per token"),
    ("bits_per_token", "bits per token"),
    ("perplexity", "perplexity"),
    ("bits_per_byte", "bits per byte"),
    ("word_perplexity", "word perplexity"),
]


def render(report: dict[str, Any], fmt: str) -> str | None:
    """Text of the report in ``json`` or ``markdown``; None for the terminal table and LaTeX."""
    if fmt == "json":
        return to_json(report)
    settings = ", ".join(f"{k} {v}" for k, v in report["settings"].items())
    if fmt == "markdown":
        lines = ["# Perplexity report", "", markdown_table(_quantities_table(report, []))]
        lines += [
            md_escape(f"Settings: {settings}."),
            "",
            f"Signature: {md_code(report['signature'])}",
        ]
        if "per_document" in report:
            lines += ["", markdown_table(Table(*_document_table(report))).rstrip("\n")]
        return "\n".join(lines) + "\n"
    return None


def _document_table(report: dict[str, Any]) -> tuple[list[str], list[list[TableCell]]]:
    """The ``--per-document`` table: document, tokens, nats per token, perplexity."""
    header = ["document", "tokens", "nats/token", "perplexity"]
    body: list[list[TableCell]] = [
        [
            NumberText(str(d["document"])),
            NumberText(str(d["tokens"])),
            NumberText(_num(d["nats_per_token"])),
            NumberText(_num(d["perplexity"])),
        ]
        for d in report["per_document"]
    ]
    return header, body


def _quantities_table(report: dict[str, Any], footer: list[str]) -> Table:
    """The report's quantities, one a row, each as :func:`_value` writes it."""
    body: list[list[TableCell]] = [
        [label, NumberText(_value(report, key))] for key, label in QUANTITIES
    ]
    return Table(["quantity", "value"], body, footer)


def per_document(rows: np.ndarray) -> list[dict[str, Any]]:
    """Per-document tokens, nats per token and perplexity (None where nothing was scored)."""
    out = []
    for i, row in enumerate(rows):
        tokens = int(row[1])
        nats = float(row[0] / tokens) if tokens else math.nan
        out.append(
            {
                "document": i + 1,
                "tokens": tokens,
                "nll": float(row[0]),
                "nats_per_token": nats,
                "perplexity": math.exp(nats) if tokens else math.nan,
            }
        )
    return out


def rows_from_model(
    metric: Perplexity, text_file: str, documents: str, progress: bool
) -> np.ndarray:
    """Stats rows of the text under the metric's LM: the whole file or each line a document.

    The metric's scorer is built (model folder, device and window checked) before the text
    is read, so a bad model is refused before a large file is.
    """
    with model_loading(f"language model ({metric.settings.model})", progress):
        scorer = metric.scorer
    segments = read_segments(text_file)
    texts = ["\n".join(segments)] if documents == "file" else segments
    docs = scorer.score_texts(texts, progress=progress)
    return Perplexity.stats_from_nll([d.nll for d in docs], [d.tokens for d in docs], texts=texts)


def check_model_only(logits: str | None, given: dict[str, object]) -> None:
    """Refuse LM options with ``--logits``: they would be dropped in silence (``--stride 0`` too)."""
    if logits is None:
        return
    unused = [option for option, value in given.items() if value is not None]
    if unused:
        verb = "applies" if len(unused) == 1 else "apply"
        raise SettingsError(
            f"{', '.join(unused)} {verb} to --model only; --logits {logits} is scored as saved"
        )


def check_sources(
    text_file: str | None,
    model: str | None,
    logits: str | None,
    *,
    shift: bool,
    pad_id: int | None,
    documents: str,
    threads: int | None,
) -> None:
    """Refuse contradictory or incomplete source options, before anything is read."""
    if documents not in ("file", "lines"):
        raise SettingsError(f"--documents must be file or lines, got {documents!r}")
    if (model is None) == (logits is None):
        raise SettingsError("give exactly one source: --model DIR -i TEXT, or --logits FILE.npz")
    if logits is not None and text_file is not None:
        raise SettingsError(
            "-i TEXT is not used with --logits; store byte and word counts in the .npz as 'bytes' and 'words'"
        )
    if model is not None:
        if text_file is None:
            raise SettingsError("--model needs a text to score: -i TEXT")
        if shift or pad_id is not None:
            raise SettingsError(
                "--shift and --pad-id apply to --logits only (the LM path shifts by itself)"
            )
    if threads is not None and threads < 1:
        raise SettingsError(f"--threads must be at least 1, got {threads}")


@dataclass(frozen=True)
class PplRequest:
    """``evalab ppl``'s options, as the command line gives them."""

    input: Annotated[
        str | None,
        typer.Option("-i", "--input", help="Text to score with --model (UTF-8; '-' = stdin)."),
    ] = None
    # the spelling before `-i` (evalab ppl --model DIR TEXT), kept working but not advertised
    text_file: Annotated[str | None, typer.Argument(hidden=True, show_default=False)] = None
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Hugging Face causal LM: a local directory (model + tokenizer) or Org/name in the local Hugging Face cache.",
        ),
    ] = DEFAULTS.model
    logits: Annotated[
        str | None,
        typer.Option(
            "--logits", help="Saved logits/labels (.npz with keys logits, labels[, bytes, words])."
        ),
    ] = None
    max_length: Annotated[
        int | None,
        typer.Option(
            "--max-length", help="Window length in tokens (default: the model's context size)."
        ),
    ] = DEFAULTS.max_length
    stride: Annotated[
        int | None,
        typer.Option("--stride", help="Tokens between window starts (default: half the window)."),
    ] = DEFAULTS.stride
    batch_size: Annotated[int, typer.Option("--batch-size", help="Windows per forward pass.")] = (
        DEFAULTS.batch_size
    )
    bos: Annotated[
        bool,
        typer.Option(
            "--bos/--no-bos", help="Prepend the tokenizer's BOS token so the first token is scored."
        ),
    ] = DEFAULTS.bos
    device: Device = DEFAULTS.device
    dtype: Annotated[
        str,
        typer.Option("--dtype", help="Model weights dtype: float32, float64, bfloat16, float16."),
    ] = DEFAULTS.dtype
    documents: Annotated[
        str,
        typer.Option(
            "--documents", help="file: the whole file is one document; lines: each line is one."
        ),
    ] = "file"
    mean: Annotated[
        str,
        typer.Option(
            "--mean", help="tokens: corpus total / tokens; documents: mean of per-document values."
        ),
    ] = DEFAULTS.mean
    shift: Annotated[
        bool,
        typer.Option(
            "--shift", help="With --logits: pair logits at t with label t+1 (raw causal-LM logits)."
        ),
    ] = False
    pad_id: Annotated[
        int | None, typer.Option("--pad-id", help="With --logits: label id to mask out (padding).")
    ] = None
    ignore_index: Annotated[
        int, typer.Option("--ignore-index", help="With --logits: label value to mask out.")
    ] = IGNORE_INDEX
    threads: Annotated[
        int | None,
        typer.Option(
            "--threads",
            help="torch CPU threads (default: torch's choice; 1 is often fastest on a busy machine). Numbers do not depend on it beyond float rounding.",
        ),
    ] = None
    per_doc: Annotated[
        bool, typer.Option("--per-document", help="Add one row per document to the report.")
    ] = False
    format: Format = "table"
    out: OutFile = None
    ci: Annotated[
        bool,
        ci_option(
            "Add a bootstrap percentile confidence interval of the perplexity, resampling documents (--documents lines, or the sequences of --logits)."
        ),
    ] = False
    n_samples: CISamples = 1000
    seed: Seed = DEFAULT_SEED
    confidence: Confidence = 0.95
    segments: Annotated[
        str | None,
        segments_option(
            "Also write per-document values to this JSON Lines file ('-' = stdout): one line per document."
        ),
    ] = None
    quiet: Quiet = False
    layout: Annotated[
        str | None,
        layout_option(
            "Table layout: wide (one row for the text or logits file: perplexity ± the --ci "
            "half-width, nats and bits per token, bits per byte, word perplexity, tokens) or long "
            "(a row per quantity; the default)."
        ),
    ] = None
    latex: LatexOptions = field(default_factory=LatexOptions)


@command(PplRequest, "ppl")
def ppl(req: PplRequest) -> None:
    """Perplexity, cross-entropy and bits per token/byte of a causal LM on a text, or of saved logits."""
    text_file, view = checked_ppl(req)
    # the LM options are named after the metric's settings, and default to them (DEFAULTS)
    settings = {f.name for f in dataclasses.fields(PerplexitySettings)}
    metric = Perplexity(**{k: v for k, v in dataclasses.asdict(req).items() if k in settings})
    rows, extra = token_rows(req, metric, text_file)
    report = build_report(rows, metric, extra)
    signature = report["signature"]  # the documents' signature: no resampling settings
    if req.per_doc:
        report["per_document"] = per_document(rows)
    if req.ci:
        check_resamplable(rows.shape[0], "--ci", req.logits or text_file or "")
        score = dataclasses.replace(metric.aggregate(rows), signature=report["signature"])
        ci = bootstrap_ci(metric, rows, req.n_samples, req.confidence, req.seed)
        report.update(ci_fields(score, ci))
    if req.segments:
        emit(document_lines(rows, metric, signature), req.segments)
    source = Path(req.logits or text_file or "-").name
    write_report(report, req.format, req.out, req.per_doc, view, source=source)


def checked_ppl(req: PplRequest) -> tuple[str | None, TableView]:
    """Every option checked before any work: the text file (``-i`` or the positional
    argument) and the table's view."""
    if req.input is not None and req.text_file is not None:
        raise SettingsError(f"give the text once, as -i {req.input}, not also as {req.text_file}")
    text_file = req.input if req.input is not None else req.text_file
    read = [("-i", text_file), ("--model", req.model), ("--logits", req.logits)]
    check_out(req.out, read)
    view = table_view(req.format, req.layout, req.latex)
    check_ci(req.ci, req.n_samples, req.seed, req.confidence, req.logits, req.documents)
    check_segments_path(req.segments, req.out, read)
    check_sources(
        text_file,
        req.model,
        req.logits,
        shift=req.shift,
        pad_id=req.pad_id,
        documents=req.documents,
        threads=req.threads,
    )
    check_model_only(
        req.logits,
        {
            "--max-length": req.max_length,
            "--stride": req.stride,
            "--threads": req.threads,
            "--documents": None if req.documents == "file" else req.documents,
        },
    )
    return text_file, view


def token_rows(
    req: PplRequest, metric: Perplexity, text_file: str | None
) -> tuple[np.ndarray, list[tuple[str, str]]]:
    """The per-sequence rows, from ``--logits`` or from the model on the text, and the
    signature's fields of where they came from."""
    if req.logits is not None:
        rows = rows_from_npz(
            req.logits, shift=req.shift, pad_id=req.pad_id, ignore_index=req.ignore_index
        )
        return rows, [
            ("src", "npz"),
            ("shift", "yes" if req.shift else "no"),
            ("ignore", str(req.ignore_index)),
            ("pad", "none" if req.pad_id is None else str(req.pad_id)),
        ]
    if req.threads is not None:
        import torch

        torch.set_num_threads(req.threads)
    rows = rows_from_model(metric, text_file or "", req.documents, progress=not req.quiet)
    return rows, [("docs", req.documents)]


def check_ci(
    ci: bool, n_samples: int, seed: int, confidence: float, logits: str | None, documents: str
) -> None:
    """Refuse bad ``--ci`` settings, and ``--ci`` over the one document of ``--documents file``,
    before a model is loaded."""
    check_resampling(n_samples, confidence, seed)
    if ci and logits is None and documents == "file":
        raise SettingsError(
            "--ci resamples documents, and --documents file makes the text one document; "
            "pass --documents lines (each line a document)"
        )


def ci_suffix(report: dict[str, Any]) -> str:
    """`` (mean ± half-width)`` after the perplexity with ``--ci``, as ``evalab score --ci`` shows it."""
    if "half_width" not in report:
        return ""
    return f" ({_num(report['mean'])} ± {_num(report['half_width'])})"


def document_lines(rows: np.ndarray, metric: Perplexity, signature: str) -> str:
    """JSON Lines of every document's values: metric, segment (from 1), score (the document's
    perplexity; null where it has no scored token), tokens, nll, nats per token, signature."""
    return to_json_lines(
        [
            {
                "metric": metric.name,
                "segment": doc["document"],
                "score": doc["perplexity"] if doc["tokens"] else None,
                "scale": metric.scale,
                "higher_is_better": metric.higher_is_better,
                "tokens": doc["tokens"],
                "nll": doc["nll"],
                "nats_per_token": doc["nats_per_token"] if doc["tokens"] else None,
                "signature": signature,
            }
            for doc in per_document(rows)
        ]
    )


#: the wide layout's columns: key, name and whether higher is better (None: neither)
WIDE_COLUMNS = [
    ("perplexity", "perplexity", False),
    ("nats_per_token", "nats/token", False),
    ("bits_per_token", "bits/token", False),
    ("bits_per_byte", "bits/byte", False),
    ("word_perplexity", "word perplexity", False),
    ("tokens", "tokens", None),
]


def wide_report(report: dict[str, Any], source: str, notes: list[str]) -> Table:
    """The report as one row of a paper's table: the scored file, then a column per quantity
    (``↓`` lower is better), the perplexity ± its ``--ci`` half-width."""
    arrows = {True: " ↑", False: " ↓", None: ""}
    header = ["file", *(f"{name}{arrows[better]}" for _, name, better in WIDE_COLUMNS)]
    row = [source]
    for key, _, _ in WIDE_COLUMNS:
        hw = report.get("half_width") if key == "perplexity" else None
        row.append(_num(report[key]) + ("" if hw is None else f" ± {_num(hw)}"))
    return Table(header, [row], notes)


def write_report(
    report: dict[str, Any],
    fmt: str,
    out: str | None,
    per_doc: bool,
    view: TableView,
    *,
    source: str = "-",
) -> None:
    """Print or write the report: JSON, Markdown, LaTeX, or the table (tab-separated in a
    file); in the wide layout (``view``) one row for the ``source`` file."""
    text = render(report, fmt)
    if text is not None and not (fmt == "markdown" and view.layout == "wide"):
        emit(text, out)
        return
    footer = [
        f"settings: {', '.join(f'{k}={v}' for k, v in report['settings'].items())}",
        f"signature: {report['signature']}",
    ]
    if per_doc:
        footer += [
            f"document {d['document']}: {d['tokens']} tokens, perplexity {_num(d['perplexity'])}"
            for d in report["per_document"]
        ]
    long = _quantities_table(report, footer)
    notes = ["↓: lower is better."]
    if "half_width" in report:
        notes.append(
            f"±: half-width of the {report['confidence'] * 100:g}% bootstrap confidence interval."
        )
    emit_view(fmt, long, wide_report(report, source, [*notes, *footer]), out, view)
