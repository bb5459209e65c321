"""``evalab passk``: pass@k of models that sampled several answers per problem, with CIs over
problems and the paired comparison of each model with the first.

The per-sample scores are read as ``compare --scores`` reads them (lm-eval samples with
repeats, inspect-ai logs with several epochs, JSON Lines/CSV with one record per sample and
a repeated item id); a sample is correct when its score is 1. Each problem's pass@k is the
unbiased estimate of :func:`evalab.stats.sampled.pass_at_k`; the problems' values are item
scores for :func:`evalab.stats.items.compare_items` (CLT and percentile bootstrap intervals,
paired t tests with Holm).
"""

from __future__ import annotations

from typing import Annotated

import numpy as np
import typer

from evalab.cli.app import app
from evalab.cli.compare_scores import aligned_inputs
from evalab.cli.options import BootstrapSamples, BootstrapSeed, Format, OutFile
from evalab.cli.output import check_format, check_out, emit_table
from evalab.errors import InputError
from evalab.items import Columns
from evalab.items.table import Aligned
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


def _rows(
    group: Aligned,
    counts: list[tuple[np.ndarray, np.ndarray]],
    k: int,
    n_samples: int,
    seed: int,
    body: list[list[TableCell]],
    data: list[dict[str, object]],
) -> None:
    """Append each model's pass@k row (and its JSON record) to ``body`` and ``data``."""
    values = [pass_at_k(n, c, k) for n, c in counts]
    res = compare_items(
        [s.model for s in group.sets],
        [sampled_item_means(v) for v in values],
        baseline=0,
        n_samples=n_samples,
        seed=seed,
    )
    for j, model in enumerate(res.models):
        pair = next((p for p in res.pairs if p.model == model.model), None)
        boot = res.bootstrap[j] if res.bootstrap else None
        low, high = (boot.low, boot.high) if boot else (None, None)
        delta, p_holm = (pair.delta, pair.p_adjusted) if pair else (None, None)
        body.append(
            [
                model.model,
                f"pass@{k}",
                Number(model.mean, 4, spread=model.naive.se),
                Interval(low, high, 4),
                Number(delta, 4, signed=True),
                Number(p_holm, 4, p=True),
                NumberText(str(int(counts[j][0].min()))),
            ]
        )
        data.append(
            {
                "model": model.model,
                "k": k,
                "pass_at_k": model.mean,
                "se": model.naive.se,
                "ci_low": low,
                "ci_high": high,
                "delta": delta,
                "p_holm": p_holm,
                "problems": len(group.ids),
            }
        )


@app.command()
def passk(
    scores: Annotated[
        list[str],
        typer.Argument(help="Per-sample score files, one or more per model.", show_default=False),
    ],
    k: Annotated[list[int], typer.Option("-k", help="k of pass@k (repeat for several).")] = [1],  # noqa: B006
    score_column: Annotated[
        str | None, typer.Option("--score-column", help="The 0/1 metric to count.")
    ] = None,
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
) -> None:
    """pass@k over problems with several sampled answers each (the unbiased estimator)."""
    check_format(fmt)
    check_out(out, [("SCORES", f) for f in scores])
    groups = aligned_inputs(
        scores,
        Columns(id_column, (score_column,) if score_column else (), None, sample_column),
        common=True,
        minimum=1,
    )
    if len(groups) != 1:
        names = ", ".join(g.metric for g in groups)
        raise InputError(f"the files hold several metrics ({names}): pick one with --score-column")
    group = groups[0]
    counts = _samples(group)
    body: list[list[TableCell]] = []
    data: list[dict[str, object]] = []
    for kk in k:
        _rows(group, counts, kk, n_samples, seed, body, data)
    header = ["model", "k", "pass@k ± se", "CI", f"Δ vs {group.sets[0].model}", "p (Holm)", "min n"]
    footer = [
        f"{len(group.ids)} problems of {group.metric}; pass@k: 1 - C(n-c, k) / C(n, k) per problem "
        f"(Chen et al. 2021), averaged; CI: percentile bootstrap over problems ({n_samples} "
        f"resamples, seed {seed}); Δ: paired t test on the same problems, Holm over the models",
    ]
    emit_table(fmt, Table(header, body, footer), out, data=data)
