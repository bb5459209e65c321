"""``evalab ppl``: cross-entropy, perplexity and bits per token/byte of a causal LM or of saved logits.

Two sources, one report:

* ``evalab ppl --model DIR TEXT_FILE``: a local Hugging Face causal LM scores the text
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
``--per-document``). With ``--mean documents`` the three headline values are means over
documents of the per-document values; bits per byte and word perplexity stay corpus totals.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from evalab.cli import app
from evalab.cli.output import check_format, emit, print_table, to_json
from evalab.errors import InputError, SettingsError
from evalab.io import read_segments

FORMATS = ("table", "json", "markdown")


def load_npz(path: str) -> dict[str, np.ndarray]:
    """Read the ``--logits`` file: arrays ``logits``, ``labels`` and optional ``bytes``/``words``."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"{path}: no such file")
    try:
        with np.load(p, allow_pickle=False) as data:
            arrays = {k: data[k] for k in data.files}
    except (OSError, ValueError) as exc:
        raise InputError(f"{path}: not a readable .npz archive ({exc})") from exc
    missing = [k for k in ("logits", "labels") if k not in arrays]
    if missing:
        raise InputError(
            f"{path}: missing array(s) {', '.join(missing)}; found {', '.join(sorted(arrays)) or 'none'}. "
            "Save with np.savez(path, logits=..., labels=...[, bytes=..., words=...])"
        )
    return arrays


def _per_sequence(value: np.ndarray | None, n: int, key: str, path: str) -> np.ndarray | None:
    if value is None:
        return None
    arr = np.asarray(value, dtype=np.float64).reshape(-1)
    if arr.size == 1 and n > 1:
        # one corpus-level count: attribute it to the first row, rows stay additive
        out = np.zeros(n)
        out[0] = arr[0]
        return out
    if arr.size != n:
        raise InputError(f"{path}: '{key}' has {arr.size} values for {n} sequences; give one number or one per sequence")
    return arr


def rows_from_npz(path: str, *, shift: bool, pad_id: int | None, ignore_index: int | None) -> np.ndarray:
    """Stats rows (one per sequence) of the loss metrics from a ``--logits`` file."""
    from evalab.metrics.loss import Perplexity

    arrays = load_npz(path)
    logits, labels = arrays["logits"], arrays["labels"]
    if logits.ndim == 2:
        logits, labels = logits[None], labels[None] if labels.ndim == 1 else labels
    if logits.ndim != 3:
        raise InputError(f"{path}: 'logits' must have shape [N, T, V] or [T, V], got {logits.shape}")
    try:
        rows = Perplexity.stats_from_logits(logits, labels, shift=shift, ignore_index=ignore_index, pad_id=pad_id)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from exc
    n = rows.shape[0]
    from evalab.metrics.loss import _BYTES, _WORDS

    for key, col in (("bytes", _BYTES), ("words", _WORDS)):
        values = _per_sequence(arrays.get(key), n, key, path)
        if values is not None:
            rows[:, col] = values
    return rows


def build_report(rows: np.ndarray, *, mean: str, lm_fields: list[tuple[str, str]], extra: list[tuple[str, str]]) -> dict[str, Any]:
    """The report dict (JSON layout) from stats rows, via the corpus metrics."""
    from evalab.metrics.loss import CrossEntropy, Perplexity

    ppl = Perplexity(mean=mean)
    ce = CrossEntropy(mean=mean)
    if rows.shape[0] == 0 or rows[:, 1].sum() <= 0:
        raise InputError("nothing to score: no token has a prediction (text too short, or all positions masked)")
    p_score = ppl.aggregate(rows)
    c_score = ce.aggregate(rows)
    comps = p_score.components
    fields = [("per", "token"), ("mean", mean), *lm_fields, *extra]
    from evalab._version import __version__

    signature = "ppl|" + "|".join(f"{k}:{v}" for k, v in fields) + f"|version:{__version__}"
    return {
        "perplexity": p_score.score,
        "nats_per_token": c_score.score,
        "bits_per_token": c_score.score / math.log(2),
        "tokens": comps["tokens"],
        "bits_per_byte": comps["bits_per_byte"],
        "word_perplexity": comps["word_perplexity"],
        "byte_perplexity": comps["byte_perplexity"],
        "nll": comps["nll"],
        "bytes": comps["bytes"],
        "words": comps["words"],
        "documents": int(rows.shape[0]),
        "settings": dict(fields),
        "signature": signature,
    }


def _num(value: Any, decimals: int = 4) -> str:
    if isinstance(value, float):
        if not math.isfinite(value):
            return "n/a"
        # a random model's word perplexity runs to 1e16: scientific notation stays readable
        return f"{value:.{decimals}e}" if abs(value) >= 1e6 else f"{value:.{decimals}f}"
    return str(value)


QUANTITIES = [
    ("tokens", "tokens scored"),
    ("nats_per_token", "nats per token"),
    ("bits_per_token", "bits per token"),
    ("perplexity", "perplexity"),
    ("bits_per_byte", "bits per byte"),
    ("word_perplexity", "word perplexity"),
]


def render(report: dict[str, Any], fmt: str) -> str | None:
    """Text of the report in ``json`` or ``markdown``; None for the terminal table."""
    if fmt == "json":
        return to_json(report)
    settings = ", ".join(f"{k} {v}" for k, v in report["settings"].items())
    if fmt == "markdown":
        lines = ["# Perplexity report", "", "| quantity | value |", "|---|---:|"]
        lines += [f"| {label} | {_num(report[key])} |" for key, label in QUANTITIES]
        lines += ["", f"Settings: {settings}.", "", f"Signature: `{report['signature']}`"]
        if "per_document" in report:
            lines += ["", "| document | tokens | nats/token | perplexity |", "|---:|---:|---:|---:|"]
            lines += [
                f"| {d['document']} | {d['tokens']} | {_num(d['nats_per_token'])} | {_num(d['perplexity'])} |"
                for d in report["per_document"]
            ]
        return "\n".join(lines) + "\n"
    return None


def per_document(rows: np.ndarray) -> list[dict[str, Any]]:
    """Per-document tokens, nats per token and perplexity (None where nothing was scored)."""
    out = []
    for i, row in enumerate(rows):
        tokens = int(row[1])
        nats = float(row[0] / tokens) if tokens else math.nan
        out.append({"document": i + 1, "tokens": tokens, "nll": float(row[0]), "nats_per_token": nats,
                    "perplexity": math.exp(nats) if tokens else math.nan})
    return out


@app.command("ppl")
def ppl(
    text_file: Annotated[str | None, typer.Argument(help="Text to score with --model (UTF-8; '-' = stdin).")] = None,
    model: Annotated[str | None, typer.Option("--model", help="Local Hugging Face causal LM directory (model + tokenizer).")] = None,
    logits: Annotated[str | None, typer.Option("--logits", help="Saved logits/labels (.npz with keys logits, labels[, bytes, words]).")] = None,
    max_length: Annotated[int | None, typer.Option("--max-length", help="Window length in tokens (default: the model's context size).")] = None,
    stride: Annotated[int | None, typer.Option("--stride", help="Tokens between window starts (default: half the window).")] = None,
    batch_size: Annotated[int, typer.Option("--batch-size", help="Windows per forward pass.")] = 8,
    bos: Annotated[bool, typer.Option("--bos/--no-bos", help="Prepend the tokenizer's BOS token so the first token is scored.")] = False,
    device: Annotated[str, typer.Option("--device", help="Torch device: cpu, cuda, cuda:1 ...")] = "cpu",
    dtype: Annotated[str, typer.Option("--dtype", help="Model weights dtype: float32, float64, bfloat16, float16.")] = "float32",
    documents: Annotated[str, typer.Option("--documents", help="file: the whole file is one document; lines: each line is one.")] = "file",
    mean: Annotated[str, typer.Option("--mean", help="tokens: corpus total / tokens; documents: mean of per-document values.")] = "tokens",
    shift: Annotated[bool, typer.Option("--shift", help="With --logits: pair logits at t with label t+1 (raw causal-LM logits).")] = False,
    pad_id: Annotated[int | None, typer.Option("--pad-id", help="With --logits: label id to mask out (padding).")] = None,
    ignore_index: Annotated[int, typer.Option("--ignore-index", help="With --logits: label value to mask out.")] = -100,
    threads: Annotated[int | None, typer.Option("--threads", help="torch CPU threads (default: torch's choice; 1 is often fastest on a busy machine). Numbers do not depend on it beyond float rounding.")] = None,
    per_doc: Annotated[bool, typer.Option("--per-document", help="Add one row per document to the report.")] = False,
    format: Annotated[str, typer.Option("-f", "--format", help="table, json or markdown.")] = "table",
    out: Annotated[str | None, typer.Option("-o", "--out", help="Write the report to this file (atomically).")] = None,
    quiet: Annotated[bool, typer.Option("-q", "--quiet", help="No progress bar.")] = False,
) -> None:
    """Perplexity, cross-entropy and bits per token/byte of a causal LM on a text, or of saved logits."""
    check_format(format, FORMATS)
    if documents not in ("file", "lines"):
        raise SettingsError(f"--documents must be file or lines, got {documents!r}")
    if mean not in ("tokens", "documents"):
        raise SettingsError(f"--mean must be tokens or documents, got {mean!r}")
    if (model is None) == (logits is None):
        raise SettingsError("give exactly one source: --model DIR TEXT_FILE, or --logits FILE.npz")
    if logits is not None:
        if text_file is not None:
            raise SettingsError(
                "TEXT_FILE is not used with --logits; store byte and word counts in the .npz as 'bytes' and 'words'"
            )
        rows = rows_from_npz(logits, shift=shift, pad_id=pad_id, ignore_index=ignore_index)
        lm_fields = [("lm", "external"), ("src", "npz"), ("shift", "yes" if shift else "no"),
                     ("ignore", str(ignore_index)), ("pad", "none" if pad_id is None else str(pad_id))]
        extra: list[tuple[str, str]] = []
    else:
        if text_file is None:
            raise SettingsError("--model needs a TEXT_FILE to score")
        if shift or pad_id is not None:
            raise SettingsError("--shift and --pad-id apply to --logits only (the LM path shifts by itself)")
        from evalab.metrics.loss import Perplexity
        from evalab.models.causal_lm import CausalLMScorer

        if threads is not None:
            if threads < 1:
                raise SettingsError(f"--threads must be at least 1, got {threads}")
            import torch

            torch.set_num_threads(threads)
        segments = read_segments(text_file)
        texts = ["\n".join(segments)] if documents == "file" else segments
        scorer = CausalLMScorer(model, max_length=max_length, stride=stride, batch_size=batch_size,
                                bos=bos, device=device, dtype=dtype)
        docs = scorer.score_texts(texts, progress=not quiet and sys.stderr.isatty())
        rows = Perplexity.stats_from_nll([d.nll for d in docs], [d.tokens for d in docs], texts=texts)
        lm_fields = scorer.signature_fields()
        extra = [("docs", documents)]
    report = build_report(rows, mean=mean, lm_fields=lm_fields, extra=extra)
    if per_doc:
        report["per_document"] = per_document(rows)
    text = render(report, format)
    if text is not None:
        emit(text, out)
        return
    body = [[label, _num(report[key])] for key, label in QUANTITIES]
    footer = [f"settings: {', '.join(f'{k}={v}' for k, v in report['settings'].items())}", f"signature: {report['signature']}"]
    if per_doc:
        footer += [f"document {d['document']}: {d['tokens']} tokens, perplexity {_num(d['perplexity'])}" for d in report["per_document"]]
    if out:
        emit("\n".join("\t".join(r) for r in [["quantity", "value"], *body]) + "\n" + "\n".join(footer) + "\n", out)
        return
    print_table(["quantity", "value"], body, footer=footer)
