"""``evalab judge``: is the judge to be trusted? Position bias of pairwise verdicts given in
both orders (MT-Bench, Arena-Hard judgments), agreement with people's verdicts on the same
games, and the length bias of AlpacaEval preferences."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Annotated

import typer

from evalab.cli.app import command
from evalab.cli.estimates import EstimateRequest
from evalab.cli.output import emit_tables
from evalab.errors import SettingsError
from evalab.items.preferences import read_annotations
from evalab.items.verdicts import read_verdicts
from evalab.report.table import Interval, Number, NumberText, Table, TableCell
from evalab.stats.judges import judge_agreement, length_bias, position_bias


def _position_table(path: str, baseline: str) -> tuple[Table, dict[str, object]]:
    verdicts = read_verdicts(path, baseline)
    bias = position_bias(verdicts)
    share = bias.first_wins / bias.decisive
    body: list[list[TableCell]] = [
        ["pairs judged in both orders", NumberText(str(bias.pairs)), ""],
        ["consistent", NumberText(str(bias.consistent)), _share(bias.consistent, bias.pairs)],
        [
            "first position won both",
            NumberText(str(bias.first_both)),
            _share(bias.first_both, bias.pairs),
        ],
        [
            "second position won both",
            NumberText(str(bias.second_both)),
            _share(bias.second_both, bias.pairs),
        ],
        [
            "a tie one way only",
            NumberText(str(bias.inconsistent)),
            _share(bias.inconsistent, bias.pairs),
        ],
        [
            "decisive games won by the first position",
            NumberText(f"{bias.first_wins}/{bias.decisive}"),
            f"{share:.1%} [{bias.first_interval.low:.1%}, {bias.first_interval.high:.1%}]",
        ],
    ]
    footer = [
        f"{verdicts.source}: {len(verdicts.item)} games ({verdicts.empty} without a verdict left "
        f"out); first position: Wilson 95% interval, exact binomial test of 50%: p = "
        f"{bias.p_value:.3g}"
    ]
    data: dict[str, object] = {
        "pairs": bias.pairs,
        "consistent": bias.consistent,
        "first_both": bias.first_both,
        "second_both": bias.second_both,
        "inconsistent": bias.inconsistent,
        "decisive": bias.decisive,
        "first_wins": bias.first_wins,
        "first_ci_low": bias.first_interval.low,
        "first_ci_high": bias.first_interval.high,
        "p_value": bias.p_value,
    }
    return Table(["position", "pairs / games", "share"], body, footer), data


def _share(k: int, n: int) -> str:
    return f"{k / n:.1%}" if n else ""


def _agreement_table(
    path: str, humans: str, baseline: str, n_samples: int, seed: int
) -> tuple[Table, dict[str, object]]:
    res = judge_agreement(
        read_verdicts(path, baseline),
        read_verdicts(humans, baseline),
        n_samples=n_samples,
        seed=seed,
    )
    k = res.kappa
    body: list[list[TableCell]] = [
        ["games both judged", NumberText(str(res.games)), ""],
        ["equal verdicts (with ties)", Number(res.with_ties, 3), ""],
        [
            "equal verdicts (both decisive)",
            Number(res.without_ties, 3),
            NumberText(str(res.decisive_both)),
        ],
        ["Cohen's κ", Number(k.value, 3), Interval(k.ci.low, k.ci.high, 3)],
    ]
    footer = [f"against {humans}; κ: bootstrap 95% interval over games ({n_samples} resamples)"]
    data: dict[str, object] = {
        "games": res.games,
        "with_ties": res.with_ties,
        "without_ties": res.without_ties,
        "kappa": k.value,
        "kappa_ci_low": k.ci.low,
        "kappa_ci_high": k.ci.high,
    }
    return Table(["agreement", "value", ""], body, footer), data


def _length_table(
    files: list[str], n_samples: int, seed: int
) -> tuple[Table, list[dict[str, object]]]:
    body: list[list[TableCell]] = []
    data: list[dict[str, object]] = []
    for path in files:
        prefs = read_annotations(path)
        b = length_bias(prefs, prefs.baseline_lengths, n_samples=n_samples, seed=seed)
        body.append(
            [
                b.model,
                Number(b.correlation, 3),
                Interval(b.interval.low, b.interval.high, 3),
                Number(b.longer_win_rate, 1),
                NumberText(str(b.longer)),
                Number(b.shorter_win_rate, 1),
                NumberText(str(b.shorter)),
            ]
        )
        data.append(
            {
                "model": b.model,
                "correlation": b.correlation,
                "ci_low": b.interval.low,
                "ci_high": b.interval.high,
                "longer_win_rate": b.longer_win_rate,
                "shorter_win_rate": b.shorter_win_rate,
                "longer": b.longer,
                "shorter": b.shorter,
            }
        )
    footer = [
        "r: Pearson correlation of log(model's length / baseline's length) with the preference, "
        f"bootstrap 95% interval over instructions ({n_samples} resamples); win rates where the "
        "model's answer is longer / shorter than the baseline's"
    ]
    header = ["model", "r", "CI", "win rate longer", "n", "win rate shorter", "n"]
    return Table(header, body, footer), data


@dataclass(frozen=True, kw_only=True)
class JudgeRequest(EstimateRequest):
    """The options of ``evalab judge``."""

    verdicts: Annotated[
        str | None,
        typer.Argument(
            help="MT-Bench or Arena-Hard pairwise judgments (JSON Lines).", show_default=False
        ),
    ] = None
    humans: Annotated[
        str | None,
        typer.Option("--humans", help="People's verdicts on the same games (same formats)."),
    ] = None
    baseline: Annotated[
        str, typer.Option("--baseline", help="Arena-Hard's baseline model (game 1 shows it first).")
    ] = "gpt-4-0314"
    lengths: Annotated[
        list[str],
        typer.Option("--lengths", help="AlpacaEval annotations.json: the judge's length bias."),
    ] = field(default_factory=list)


@command(JudgeRequest)
def judge(req: JudgeRequest) -> None:
    """Check a judge: position bias, agreement with people, length bias."""
    verdicts, humans = req.verdicts, req.humans
    if verdicts is None and not req.lengths:
        raise SettingsError("judge needs VERDICTS (pairwise judgments) or --lengths ANNOTATIONS")
    if humans is not None and verdicts is None:
        raise SettingsError("--humans compares with the judge's VERDICTS: give them too")
    latex = req.checked(
        [("VERDICTS", verdicts), ("--humans", humans), *(("--lengths", f) for f in req.lengths)]
    )
    tables: list[Table] = []
    data: dict[str, object] = {}
    if verdicts is not None:
        table, data["position"] = _position_table(verdicts, req.baseline)
        tables.append(table)
    if humans is not None and verdicts is not None:
        table, data["agreement"] = _agreement_table(
            verdicts, humans, req.baseline, req.n_samples, req.seed
        )
        tables.append(table)
    if req.lengths:
        table, data["length"] = _length_table(req.lengths, req.n_samples, req.seed)
        tables.append(table)
    emit_tables(req.format, tables, req.out, data, latex=latex)
