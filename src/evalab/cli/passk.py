"""``evalab passk``: pass@k or maj@k of models that sampled several answers per problem,
with CIs over problems and the paired comparison of each model with the first.

For pass@k the per-sample scores are read as ``compare --scores`` reads them (lm-eval
samples with repeats, inspect-ai logs with several epochs, JSON Lines/CSV with one record
per sample and a repeated item id); a sample is correct when its score is 1, and each
problem's pass@k is the unbiased estimate of :func:`evalab.stats.sampled.pass_at_k`. With
``--maj`` each problem's maj@k is lm-eval's ``maj@K`` filter as the run scored it, or
:func:`evalab.stats.sampled.majority_scores` of the answers :mod:`evalab.items.answers` reads
(inspect epochs' answers, an answer column). The problems' values are item scores for :func:`evalab.stats.items.compare_items` (CLT and percentile
bootstrap intervals, paired t tests with Holm).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.compare_scores import aligned_inputs
from evalab.cli.estimates import EstimateRequest
from evalab.cli.output import emit_table
from evalab.errors import InputError, SettingsError
from evalab.items import Columns
from evalab.items.answers import (
    SampledAnswers,
    is_lm_eval_run,
    lm_eval_votes,
    majority_k,
    read_answers,
)
from evalab.items.table import Aligned, ScoreSet, align
from evalab.report.table import Interval, Number, NumberText, Table, TableCell
from evalab.stats.items import compare_items
from evalab.stats.sampled import majority_scores, pass_at_k, sampled_item_means


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


_RULES = {
    "pass": "pass@k: 1 - C(n-c, k) / C(n, k) per problem (Chen et al. 2021)",
    "maj": "maj@k: the most frequent of a problem's first k answers (ties: the first seen) "
    "is correct",
}


@dataclass
class _Report:
    """The rows of a passk table (``measure``: pass or maj) and their JSON records."""

    measure: str
    n_samples: int
    seed: int
    body: list[list[TableCell]] = field(default_factory=list)
    data: list[dict[str, object]] = field(default_factory=list)
    #: problems left out because not every model has them
    dropped: int = 0

    def add(self, k: int, models: list[str], values: list[np.ndarray], fewest: int | None) -> None:
        """Each model's row of per-problem ``values`` (pass@k or maj@k) and its JSON record;
        ``fewest``: the fewest samples of a problem (pass@k; no column for maj@k)."""
        res = compare_items(
            models,
            [sampled_item_means(v) for v in values],
            baseline=0,
            n_samples=self.n_samples,
            seed=self.seed,
        )
        for j, model in enumerate(res.models):
            pair = next((p for p in res.pairs if p.model == model.model), None)
            boot = res.bootstrap[j] if res.bootstrap else None
            low, high = (boot.low, boot.high) if boot else (None, None)
            delta, p_holm = (pair.delta, pair.p_adjusted) if pair else (None, None)
            self.body.append(
                [
                    model.model,
                    f"{self.measure}@{k}",
                    Number(model.mean, 4, spread=model.naive.se),
                    Interval(low, high, 4),
                    Number(delta, 4, signed=True),
                    Number(p_holm, 4, p=True),
                    *([] if fewest is None else [NumberText(str(fewest))]),
                ]
            )
            self.data.append(
                {
                    "model": model.model,
                    "k": k,
                    f"{self.measure}_at_k": model.mean,
                    "se": model.naive.se,
                    "ci_low": low,
                    "ci_high": high,
                    "delta": delta,
                    "p_holm": p_holm,
                    "problems": len(values[j]),
                }
            )


def _pass_rows(req: PasskRequest, cols: Columns, report: _Report) -> str:
    """pass@k rows of every k (pass@1 by default); the metric counted."""
    groups = aligned_inputs(req.scores, cols, common=True, minimum=1)
    if len(groups) != 1:
        names = ", ".join(g.metric for g in groups)
        raise InputError(f"the files hold several metrics ({names}): pick one with --score-column")
    group = groups[0]
    report.dropped = group.dropped
    counts = _samples(group)
    models = [s.model for s in group.sets]
    fewest = int(min(n.min() for n, _ in counts))
    for k in req.k or [1]:
        report.add(k, models, [pass_at_k(n, c, k) for n, c in counts], fewest)
    return group.metric


def _majorities(paths: list[str], cols: Columns, answer: str, ks: list[int]) -> list[ScoreSet]:
    """Score sets of each file and each ``k``: every problem's maj@k (0 or 1). For lm-eval,
    the run's ``maj@K`` filters; for answers, each k of ``ks`` (by default the fewest samples
    of any problem in any of the answer files, so that every model votes over as many)."""
    read = [
        lm_eval_votes(p, cols, ks) if is_lm_eval_run(p) else read_answers(p, cols, answer)
        for p in paths
    ]
    sampled = [r for r in read if isinstance(r, SampledAnswers)]
    if sampled and not ks:
        ks = [min(s.fewest for s in sampled)]
    return [
        s
        for r in read  # in the order given: the first is the baseline
        for s in (r if isinstance(r, list) else [majority_scores(r, k) for k in ks])
    ]


def _maj_rows(req: PasskRequest, cols: Columns, report: _Report) -> str:
    """maj@k rows of every k (see :func:`_majorities`); the metric voted on."""
    sets = _majorities(req.scores, cols, req.answer_column, req.k)
    seen: dict[tuple[str, str], str] = {}
    for s in sets:
        if seen.setdefault((s.model, s.metric), s.path) != s.path:
            raise InputError(
                f"{s.path}: model {s.model} given twice (also {seen[s.model, s.metric]})"
            )
    groups = align(sets, common=True)
    report.dropped = max(g.dropped for g in groups)
    for group in sorted(groups, key=lambda g: majority_k(g.metric) or 0):
        values = [s.values[np.argsort(s.item, kind="stable")] for s in group.sets]
        report.add(majority_k(group.metric) or 0, [s.model for s in group.sets], values, None)
    return groups[0].metric.rpartition(",")[0]


@dataclass(frozen=True, kw_only=True)
class PasskRequest(EstimateRequest):
    """The options of ``evalab passk``."""

    scores: Annotated[
        list[str],
        typer.Argument(help="Per-sample score files, one or more per model.", show_default=False),
    ]
    k: Annotated[
        list[int],
        typer.Option(
            "-k",
            help="k of pass@k or maj@k (repeat for several). Default: pass@1; with --maj, "
            "every maj@K filter of an lm-eval run, else the fewest answers of any problem.",
            show_default=False,
        ),
    ] = field(default_factory=list)
    maj: Annotated[
        bool,
        typer.Option(
            "--maj",
            help="maj@k instead of pass@k: is the most frequent of a problem's first k answers "
            "correct (lm-eval: its maj@K filters; inspect: each epoch's answer)?",
        ),
    ] = False
    score_column: Annotated[
        str | None, typer.Option("--score-column", help="The 0/1 metric (or scorer) to count.")
    ] = None
    answer_column: Annotated[
        str,
        typer.Option("--answer-column", help="With --maj, CSV/JSONL: the column of the answer."),
    ] = "answer"
    id_column: Annotated[
        str, typer.Option("--id-column", help="CSV/JSONL: the problem id column.")
    ] = "id"
    sample_column: Annotated[
        str | None,
        typer.Option(
            "--sample-column", help="CSV/JSONL: the column numbering a problem's samples."
        ),
    ] = None


@command(PasskRequest)
def passk(req: PasskRequest) -> None:
    """pass@k (the unbiased estimator) or maj@k over problems with several sampled answers."""
    latex = req.checked([("SCORES", f) for f in req.scores])
    if not req.maj and req.answer_column != "answer":
        raise SettingsError("--answer-column names the answers maj@k votes on: give --maj too")
    if any(kk < 1 for kk in req.k):
        raise SettingsError(f"-k must be a whole number >= 1, got {min(req.k)}")
    cols = Columns(
        req.id_column, (req.score_column,) if req.score_column else (), None, req.sample_column
    )
    report = _Report("maj" if req.maj else "pass", req.n_samples, req.seed)
    metric = _maj_rows(req, cols, report) if req.maj else _pass_rows(req, cols, report)
    header = [
        "model",
        "k",
        f"{report.measure}@k ± se",
        "CI",
        "Δ",
        "p (Holm)",
        *(["min n"] if report.measure == "pass" else []),
    ]
    footer = [
        f"{report.data[0]['problems']} problems of {metric}; {_RULES[report.measure]}, averaged; "
        f"CI: percentile bootstrap over problems ({req.n_samples} resamples, seed {req.seed}); "
        f"Δ: against {report.data[0]['model']}, paired t test on the same problems, Holm over "
        "the models",
    ]
    if report.dropped:
        footer.append(f"problems not every model has, left out: {report.dropped}")
    emit_table(
        req.format, Table(header, report.body, footer), req.out, data=report.data, latex=latex
    )
