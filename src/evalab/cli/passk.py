"""``evalab passk``: pass@k or maj@k of models that sampled several answers per problem,
with CIs over problems and the paired comparison of each model with the first.

For pass@k the per-sample scores are read as ``compare --scores`` reads them (lm-eval
samples with repeats, inspect-ai logs with several epochs, JSON Lines/CSV with one record
per sample and a repeated item id); a sample is correct when its score is 1, and each
problem's pass@k is the unbiased estimate of :func:`evalab.stats.sampled.pass_at_k`. With
``--maj`` each problem's maj@k comes from :func:`evalab.items.answers.read_majorities`
(lm-eval's ``maj@K`` filters, inspect epochs' answers, an answer column). The problems'
values are item scores for :func:`evalab.stats.items.compare_items` (CLT and percentile
bootstrap intervals, paired t tests with Holm).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated

import numpy as np
import typer

from evalab.cli.app import app
from evalab.cli.compare_scores import aligned_inputs
from evalab.cli.options import (
    BootstrapSamples,
    BootstrapSeed,
    Format,
    LatexCaption,
    LatexFragment,
    LatexLabel,
    LatexSplit,
    OutFile,
    latex_layout,
)
from evalab.cli.output import check_format, check_out, emit_table
from evalab.errors import InputError, SettingsError
from evalab.items import Columns
from evalab.items.answers import majority_k, read_majorities
from evalab.items.table import Aligned, align
from evalab.report.table import Interval, Number, NumberText, Table, TableCell
from evalab.stats.items import compare_items
from evalab.stats.resampling import DEFAULT_SEED
from evalab.stats.sampled import pass_at_k, sampled_item_means


def _samples(group: Aligned) -> list[tuple[np.ndarray, np.ndarray]]:
    """Each model's samples ``n`` and correct ``c`` per problem (scores must be 0 or 1)."""
    out = []
    for s in group.sets:
        if not s.binary:
            raise InputError(
                f"{s.path}: {s.metric} has scores other than 0 and 1; pass@k counts correct "
                "samples (pick a 0/1 metric with --score-column)"
            )
        n = np.bincount(s.item, minlength=len(group.ids))
        out.append((n, np.bincount(s.item, weights=s.values, minlength=len(group.ids))))
    return out


@dataclass(frozen=True)
class _Measure:
    """pass@k or maj@k (``measure``: pass, maj) and the bootstrap's settings."""

    measure: str
    n_samples: int
    seed: int


_RULES = {
    "pass": "pass@k: 1 - C(n-c, k) / C(n, k) per problem (Chen et al. 2021)",
    "maj": "maj@k: the most frequent of a problem's first k answers (ties: the first seen) "
    "is correct",
}


def _pass_rows(
    scores: list[str],
    cols: Columns,
    ks: list[int],
    request: _Measure,
    body: list[list[TableCell]],
    data: list[dict[str, object]],
) -> str:
    """pass@k rows of every k (pass@1 by default); the metric counted."""
    groups = aligned_inputs(scores, cols, common=True, minimum=1)
    if len(groups) != 1:
        names = ", ".join(g.metric for g in groups)
        raise InputError(f"the files hold several metrics ({names}): pick one with --score-column")
    group = groups[0]
    counts = _samples(group)
    models = [s.model for s in group.sets]
    fewest = int(min(n.min() for n, _ in counts))
    for k in ks or [1]:
        values = [pass_at_k(n, c, k) for n, c in counts]
        _rows(f"pass@{k}", models, values, fewest, request, body, data)
    return group.metric


def _maj_rows(
    scores: list[str],
    cols: Columns,
    answer: str,
    ks: list[int],
    request: _Measure,
    body: list[list[TableCell]],
    data: list[dict[str, object]],
) -> str:
    """maj@k rows of every k (see :func:`read_majorities`); the metric voted on."""
    sets = [s for path in scores for s in read_majorities(path, cols, answer, ks)]
    seen: dict[tuple[str, str], str] = {}
    for s in sets:
        if seen.setdefault((s.model, s.metric), s.path) != s.path:
            raise InputError(
                f"{s.path}: model {s.model} given twice (also {seen[s.model, s.metric]})"
            )
    groups = align(sets, common=True)
    for group in sorted(groups, key=lambda g: majority_k(g.metric) or 0):
        values = [s.values[np.argsort(s.item, kind="stable")] for s in group.sets]
        label = f"maj@{majority_k(group.metric)}"
        _rows(label, [s.model for s in group.sets], values, None, request, body, data)
    return groups[0].metric.rpartition(",")[0]


def _rows(
    label: str,
    models: list[str],
    values: list[np.ndarray],
    minimum: int | None,
    request: _Measure,
    body: list[list[TableCell]],
    data: list[dict[str, object]],
) -> None:
    """Append each model's row of per-problem ``values`` (pass@k or maj@k, ``label``) and its
    JSON record to ``body`` and ``data``; ``minimum``: the fewest samples of a problem."""
    res = compare_items(
        models,
        [sampled_item_means(v) for v in values],
        baseline=0,
        n_samples=request.n_samples,
        seed=request.seed,
    )
    k = int(label.partition("@")[2])
    for j, model in enumerate(res.models):
        pair = next((p for p in res.pairs if p.model == model.model), None)
        boot = res.bootstrap[j] if res.bootstrap else None
        low, high = (boot.low, boot.high) if boot else (None, None)
        delta, p_holm = (pair.delta, pair.p_adjusted) if pair else (None, None)
        body.append(
            [
                model.model,
                label,
                Number(model.mean, 4, spread=model.naive.se),
                Interval(low, high, 4),
                Number(delta, 4, signed=True),
                Number(p_holm, 4, p=True),
                NumberText("" if minimum is None else str(minimum)),
            ]
        )
        data.append(
            {
                "model": model.model,
                "k": k,
                f"{request.measure}_at_k": model.mean,
                "se": model.naive.se,
                "ci_low": low,
                "ci_high": high,
                "delta": delta,
                "p_holm": p_holm,
                "problems": len(values[j]),
            }
        )


@app.command()
def passk(
    scores: Annotated[
        list[str],
        typer.Argument(help="Per-sample score files, one or more per model.", show_default=False),
    ],
    k: Annotated[
        list[int],
        typer.Option(
            "-k",
            help="k of pass@k or maj@k (repeat for several). Default: pass@1; with --maj, "
            "every maj@K filter of an lm-eval run, else all of a problem's answers.",
            show_default=False,
        ),
    ] = [],  # noqa: B006
    maj: Annotated[
        bool,
        typer.Option(
            "--maj",
            help="maj@k instead of pass@k: is the most frequent of a problem's first k answers "
            "correct (lm-eval: its maj@K filters; inspect: each epoch's answer)?",
        ),
    ] = False,
    score_column: Annotated[
        str | None, typer.Option("--score-column", help="The 0/1 metric (or scorer) to count.")
    ] = None,
    answer_column: Annotated[
        str,
        typer.Option("--answer-column", help="With --maj, CSV/JSONL: the column of the answer."),
    ] = "answer",
    id_column: Annotated[
        str, typer.Option("--id-column", help="CSV/JSONL: the problem id column.")
    ] = "id",
    sample_column: Annotated[
        str | None,
        typer.Option(
            "--sample-column", help="CSV/JSONL: the column numbering a problem's samples."
        ),
    ] = None,
    n_samples: BootstrapSamples = 1000,
    seed: BootstrapSeed = DEFAULT_SEED,
    fmt: Format = "table",
    out: OutFile = None,
    latex_split: LatexSplit = None,
    latex_fragment: LatexFragment = False,
    latex_caption: LatexCaption = None,
    latex_label: LatexLabel = None,
) -> None:
    """pass@k (the unbiased estimator) or maj@k over problems with several sampled answers."""
    check_format(fmt)
    latex = latex_layout(fmt, latex_split, latex_fragment, latex_caption, latex_label)
    check_out(out, [("SCORES", f) for f in scores])
    if any(kk < 1 for kk in k):
        raise SettingsError(f"-k must be a whole number >= 1, got {min(k)}")
    cols = Columns(id_column, (score_column,) if score_column else (), None, sample_column)
    request = _Measure("maj" if maj else "pass", n_samples, seed)
    body: list[list[TableCell]] = []
    data: list[dict[str, object]] = []
    if maj:
        metric = _maj_rows(scores, cols, answer_column, k, request, body, data)
    else:
        metric = _pass_rows(scores, cols, k, request, body, data)
    header = [
        "model",
        "k",
        f"{request.measure}@k ± se",
        "CI",
        f"Δ vs {data[0]['model']}",
        "p (Holm)",
        "min n",
    ]
    footer = [
        f"{data[0]['problems']} problems of {metric}; {_RULES[request.measure]}, averaged; CI: "
        f"percentile bootstrap over problems ({n_samples} resamples, seed {seed}); Δ: paired t "
        "test on the same problems, Holm over the models",
    ]
    emit_table(fmt, Table(header, body, footer), out, data=data, latex=latex)
