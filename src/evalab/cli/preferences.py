"""``evalab winrate``, ``evalab arena``, ``evalab agreement`` and ``evalab passk``: rankings from
judge preferences and battles, agreement between raters, pass@k over sampled answers.

Each command reads its input with :mod:`evalab.items.preferences` (or a record file), calls
one estimator of :mod:`evalab.stats` and hands one :class:`~evalab.report.table.Table` to the
writers; the words (column names, footers) are made here, at the edge.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.estimates import EstimateRequest, PageRequest
from evalab.cli.options import IntervalConfidence
from evalab.cli.output import emit, emit_table
from evalab.errors import InputError, SettingsError
from evalab.io import read_records
from evalab.items.preferences import read_annotations, read_battles
from evalab.numbers import NumberError, parse_number, read_value
from evalab.report.figures import Figure
from evalab.report.leaderboard import leaderboard_figure, leaderboard_html
from evalab.report.table import Interval, Number, NumberText, Table, TableCell
from evalab.stats.agreement import LEVELS, WEIGHTS, Agreement
from evalab.stats.bradley_terry import (
    RESAMPLES,
    TIES,
    Battles,
    BradleyTerry,
    EloScale,
    bradley_terry,
)
from evalab.stats.preferences import WinRateTable, win_rates
from evalab.stats.style_control import StyleControlled, style_controlled, style_features


def _named(spec: str) -> tuple[str | None, str]:
    """``NAME=PATH`` or ``PATH`` (a path that exists is never split at ``=``)."""
    if "=" in spec and not Path(spec).exists():
        name, path = spec.split("=", 1)
        if not name:
            raise SettingsError(f"{spec!r}: NAME=PATH needs a name before '='")
        return name, path
    return None, spec


def _cluster(c: int | None) -> str:
    return "" if c is None else str(c)


@dataclass(frozen=True, kw_only=True)
class WinrateRequest(PageRequest):
    """The options of ``evalab winrate``."""

    annotations: Annotated[
        list[str],
        typer.Argument(
            help="AlpacaEval annotations.json files, one per model (NAME=PATH to name one).",
            show_default=False,
        ),
    ]


@command(WinrateRequest)
def winrate(req: WinrateRequest) -> None:
    """Win rates against a baseline from judge preferences (AlpacaEval's figures, with CIs)."""
    named = [_named(a) for a in req.annotations]
    latex = req.checked([("ANNOTATIONS", path) for _, path in named])
    table = win_rates(
        [read_annotations(path, name) for name, path in named],
        n_samples=req.n_samples,
        confidence=req.confidence,
        seed=req.seed,
    )
    tab, data, figure = _winrate_output(table, req.n_samples, req.seed, req.confidence)
    if req.format == "html":
        page = leaderboard_html("Win rates", figure, Table(tab.header, tab.body), tab.footer)
        emit(page, req.out)
        return
    emit_table(req.format, tab, req.out, data=data, latex=latex)


def _winrate_output(
    table: WinRateTable, n_samples: int, seed: int, confidence: float
) -> tuple[Table, list[dict[str, Any]], Figure]:
    """The win rates best first as a table, its JSON, and the leaderboard figure."""
    order = table.ranking.order
    rates = [table.rates[i] for i in order]
    clusters = [table.ranking.clusters[i] for i in order]
    body: list[list[TableCell]] = [
        [
            r.model,
            Number(r.win_rate, 2, spread=r.standard_error),
            Interval(r.ci.low, r.ci.high, 2),
            f"{r.n_wins}/{r.n_draws}/{r.n_wins_base}",
            NumberText(str(r.n_total)),
            Number(r.discrete_win_rate, 2),
            NumberText(str(r.avg_length)),
            _cluster(c),
        ]
        for r, c in zip(rates, clusters, strict=True)
    ]
    base = table.rates[0].baseline
    footer = [
        f"win rate against {base} ± standard error (AlpacaEval); {confidence:.0%} bootstrap "
        f"interval over instructions ({n_samples} resamples, seed {seed}); W/D/L: the model's "
        "wins, draws and losses",
        f"cluster: paired t tests on the {table.shared_items} instructions every model was "
        f"judged on, Holm over all pairs, alpha {table.ranking.alpha:g}",
    ]
    header = ["model", "win rate", "CI", "W/D/L", "n", "discrete", "avg length", "cluster"]
    figure = leaderboard_figure(
        f"Win rate against {base}",
        [r.model for r in rates],
        [r.win_rate for r in rates],
        [r.ci.low for r in rates],
        [r.ci.high for r in rates],
        clusters,
        xlabel="win rate (%)",
        interval=f"{confidence:.0%} CI",
    )
    data = [_rate_json(r, c) for r, c in zip(rates, clusters, strict=True)]
    return Table(header, body, footer), data, figure


def _rate_json(r: Any, cluster: int | None) -> dict[str, Any]:
    return {
        "model": r.model,
        "baseline": r.baseline,
        "win_rate": r.win_rate,
        "standard_error": r.standard_error,
        "ci_low": r.ci.low,
        "ci_high": r.ci.high,
        "n_wins": r.n_wins,
        "n_wins_base": r.n_wins_base,
        "n_draws": r.n_draws,
        "n_total": r.n_total,
        "discrete_win_rate": r.discrete_win_rate,
        "avg_length": r.avg_length,
        "cluster": cluster,
    }


def _anchor(spec: str | None) -> tuple[str | None, float]:
    if spec is None:
        return None, 1000.0
    name, sep, value = spec.rpartition("=")
    try:
        return (name, float(parse_number(value))) if sep and name else (spec, 1000.0)
    except NumberError as exc:
        raise SettingsError(f"--anchor {spec!r}: the rating {exc}") from None


def _arena_page(result: BradleyTerry, table: Table) -> str:
    """The leaderboard page of a Bradley–Terry fit: its ratings with their intervals,
    coloured by cluster, above the table."""
    order = result.ranking.order
    figure = leaderboard_figure(
        "Bradley–Terry ratings",
        [result.models[i] for i in order],
        [float(result.ratings[i]) for i in order],
        [float(result.low[i]) for i in order],
        [float(result.high[i]) for i in order],
        [result.ranking.clusters[i] for i in order],
        xlabel="rating (Elo scale)",
        interval=f"{result.confidence:.0%} CI",
    )
    return leaderboard_html("Arena ratings", figure, table, table.footer)


Ties = Annotated[
    str, typer.Option("--ties", help="half: a tie is half a win each; drop: left out.")
]
Resampled = Annotated[
    str,
    typer.Option("--resample", help="battles, or items (whole prompts; needs an item per battle)."),
]
Anchor = Annotated[
    str | None,
    typer.Option("--anchor", help="NAME=RATING: fix one model's rating (default: mean 1000)."),
]
Style = Annotated[
    list[str],
    typer.Option(
        "--style",
        help="Style control: a per-side covariate NAME (fields NAME_a and NAME_b, or NAME "
        "with {} for a and b, e.g. sum_assistant_{}_tokens); repeat for several.",
    ),
]
L2 = Annotated[
    float, typer.Option("--l2", help="With --style: L2 penalty (FastChat's reg is 0.5).")
]


@dataclass(frozen=True, kw_only=True)
class ArenaRequest(PageRequest):
    """The options of ``evalab arena``."""

    battles: Annotated[
        str, typer.Argument(help="Battles: JSON list, JSON Lines, CSV or TSV.", show_default=False)
    ]
    ties: Ties = "half"
    resample: Resampled = "battles"
    anchor: Anchor = None
    style: Style = field(default_factory=list)
    l2: L2 = 0.0


@command(ArenaRequest)
def arena(req: ArenaRequest) -> None:
    """Bradley–Terry ratings (Elo scale) from pairwise battles, with CIs and clusters."""
    if req.ties not in TIES:
        raise SettingsError(f"--ties must be one of {', '.join(TIES)}, got {req.ties!r}")
    if req.resample not in RESAMPLES:
        raise SettingsError(f"--resample must be battles or items, got {req.resample!r}")
    latex = req.checked([("BATTLES", req.battles)])
    rec = read_battles(req.battles, tuple(req.style))
    name, rating = _anchor(req.anchor)
    fight = Battles.from_names(rec.model_a, rec.model_b, rec.outcome, rec.items)
    # the fit's settings, the same with and without --style
    fit: dict[str, Any] = {
        "ties": req.ties,
        "scale": EloScale(anchor=name, anchor_rating=rating),
        "resample": req.resample,
        "n_samples": req.n_samples,
        "confidence": req.confidence,
        "seed": req.seed,
    }
    data: Any
    if rec.style is not None:
        x = style_features(rec.style[..., 0], rec.style[..., 1])
        table, data = _style_table(style_controlled(fight, x, req.style, l2=req.l2, **fit))
        if req.format == "html":
            raise SettingsError("-f html draws the ratings of a fit without --style")
    else:
        result = bradley_terry(fight, **fit)
        table, data = _arena_table(result)
        if req.format == "html":
            emit(_arena_page(result, table), req.out)
            return
    emit_table(req.format, table, req.out, data=data, latex=latex)


def _style_table(result: StyleControlled) -> tuple[Table, dict[str, Any]]:
    """Style-controlled ratings best first, and the covariates' effects."""
    order = np.argsort(-result.ratings, kind="stable")
    body: list[list[TableCell]] = [
        [
            result.models[i],
            Number(float(result.ratings[i]), 1),
            Interval(float(result.low[i]), float(result.high[i]), 1),
        ]
        for i in order
    ]
    body += [
        [f"style: {name}", Number(float(e), 3), Interval(float(lo), float(hi), 3)]
        for name, e, lo, hi in zip(
            result.features, result.effects, result.effects_low, result.effects_high, strict=True
        )
    ]
    footer = [
        "Bradley–Terry with style control: ratings net of the style covariates, each "
        "(a - b) / (a + b + 1) standardised; a style row is its effect in log-odds per "
        f"standard deviation; {result.confidence:.0%} bootstrap intervals over "
        f"{result.resample} ({result.n_samples} resamples)",
        result.signature,
    ]
    data = {
        "ratings": [
            {
                "model": result.models[i],
                "rating": float(result.ratings[i]),
                "ci_low": float(result.low[i]),
                "ci_high": float(result.high[i]),
            }
            for i in order
        ],
        "style": [
            {"covariate": n, "effect": float(e), "ci_low": float(lo), "ci_high": float(hi)}
            for n, e, lo, hi in zip(
                result.features,
                result.effects,
                result.effects_low,
                result.effects_high,
                strict=True,
            )
        ],
        "signature": result.signature,
    }
    return Table(["model", "rating", "CI"], body, footer), data


def _arena_table(result: BradleyTerry) -> tuple[Table, list[dict[str, Any]]]:
    """The ratings best first, with the footer that says how they were made; and their JSON."""
    order = result.ranking.order
    body: list[list[TableCell]] = [
        [
            result.models[i],
            Number(float(result.ratings[i]), 1),
            Interval(float(result.low[i]), float(result.high[i]), 1),
            NumberText(str(int(result.battles[i]))),
            _cluster(result.ranking.clusters[i]),
        ]
        for i in order
    ]
    ties = "as half a win each" if result.ties == "half" else "left out"
    footer = [
        f"Bradley–Terry maximum likelihood; {result.confidence:.0%} bootstrap interval over "
        f"{result.resample} ({result.n_samples} resamples); ties {ties}",
        "cluster: every model above a boundary is significantly better than every model below "
        "it (Wald tests of the rating differences with the bootstrap standard errors, Holm "
        f"over all pairs, alpha {result.ranking.alpha:g})",
        result.signature,
    ]
    if result.unbounded_rounds:
        footer.insert(
            1,
            f"{result.unbounded_rounds} of {result.n_samples} resamples left some model without "
            "a finite rating (it won or lost every battle drawn): those interval ends are infinite",
        )
    data = [
        {
            "model": result.models[i],
            "rating": float(result.ratings[i]),
            "ci_low": float(result.low[i]),
            "ci_high": float(result.high[i]),
            "battles": int(result.battles[i]),
            "cluster": result.ranking.clusters[i],
        }
        for i in order
    ]
    header = ["model", "rating", "CI", "battles", "cluster"]
    return Table(header, body, footer), data


def _ratings_table(path: str, item_column: str | None) -> tuple[list[str], np.ndarray]:
    """Raters' names and the ``[items, raters]`` ratings of a wide record file (blank: missing)."""
    records = read_records(path)
    if not records:
        raise InputError(f"{path}: no ratings")
    if item_column is not None and item_column not in records[0].fields:
        raise InputError(
            f"{path}: no column {item_column!r} (--item-column); its columns are "
            f"{', '.join(records[0].fields)}"
        )
    columns = [c for c in records[0].fields if c != item_column]
    values = np.full((len(records), len(columns)), np.nan)
    for i, record in enumerate(records):
        for j, column in enumerate(columns):
            cell = record.fields.get(column)
            if cell is None or (isinstance(cell, str) and not cell.strip()):
                continue
            try:
                values[i, j] = float(read_value(cell))
            except (NumberError, TypeError) as exc:
                hint = (
                    f"; if {column!r} names the items, say so with --item-column {column}"
                    if item_column is None and j == 0
                    else ""
                )
                raise InputError(
                    f"{path}: line {record.line}: rater {column!r}: {exc} (a rating is a number; "
                    f"leave the cell empty for a missing one{hint})"
                ) from None
    return columns, values


@dataclass(frozen=True, kw_only=True)
class AgreementRequest(EstimateRequest):
    """The options of ``evalab agreement``."""

    ratings: Annotated[
        str,
        typer.Argument(
            help="CSV/TSV/JSONL: a row per item, a column per rater (empty: not rated).",
            show_default=False,
        ),
    ]
    coefficient: Annotated[
        str, typer.Option("--coefficient", help="alpha (Krippendorff), cohen or fleiss.")
    ] = "alpha"
    level: Annotated[
        str, typer.Option("--level", help="alpha's level: nominal, ordinal, interval or ratio.")
    ] = "nominal"
    weights: Annotated[
        str, typer.Option("--weights", help="cohen's weights: none, linear or quadratic.")
    ] = "none"
    item_column: Annotated[
        str | None, typer.Option("--item-column", help="A column naming the item (not a rater).")
    ] = None
    confidence: IntervalConfidence = 0.95


@command(AgreementRequest)
def agreement(req: AgreementRequest) -> None:
    """Agreement between raters (Krippendorff's α, Cohen's κ, Fleiss' κ) with a CI over items."""
    latex = req.checked([("RATINGS", req.ratings)])
    raters, values = _ratings_table(req.ratings, req.item_column)
    result = _agreement(req, raters, values)
    body: list[list[TableCell]] = [
        [
            _COEFFICIENTS[req.coefficient],
            result.variant or "",
            Number(result.value, 4),
            Interval(result.ci.low, result.ci.high, 4),
            NumberText(str(result.n_items)),
            NumberText(str(result.n_raters)),
        ]
    ]
    footer = [
        f"{req.confidence:.0%} bootstrap interval over items ({req.n_samples} resamples, "
        f"seed {req.seed})",
        result.signature,
    ]
    data = {
        "coefficient": result.coefficient,
        "variant": result.variant,
        "value": result.value,
        "ci_low": result.ci.low,
        "ci_high": result.ci.high,
        "items": result.n_items,
        "raters": result.n_raters,
        "signature": result.signature,
    }
    header = ["coefficient", "variant", "value", "CI", "items", "raters"]
    emit_table(req.format, Table(header, body, footer), req.out, data=data, latex=latex)


_COEFFICIENTS = {"alpha": "Krippendorff's α", "cohen": "Cohen's κ", "fleiss": "Fleiss' κ"}


def _agreement(req: AgreementRequest, raters: list[str], values: np.ndarray) -> Agreement:
    from evalab.stats.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha

    coefficient, level, weights = req.coefficient, req.level, req.weights
    n_samples, confidence, seed = req.n_samples, req.confidence, req.seed

    if coefficient == "alpha":
        if level not in LEVELS:
            raise SettingsError(f"--level must be one of {', '.join(LEVELS)}, got {level!r}")
        return krippendorff_alpha(
            values, level, n_samples=n_samples, confidence=confidence, seed=seed
        )
    if coefficient == "cohen":
        if weights not in WEIGHTS:
            raise SettingsError(f"--weights must be one of {', '.join(WEIGHTS)}, got {weights!r}")
        if len(raters) != 2:
            raise InputError(
                f"Cohen's kappa compares two raters; the file has {len(raters)} "
                f"({', '.join(raters)}): use --coefficient fleiss or alpha"
            )
        return cohen_kappa(
            values[:, 0],
            values[:, 1],
            weights,
            n_samples=n_samples,
            confidence=confidence,
            seed=seed,
        )
    if coefficient == "fleiss":
        return fleiss_kappa(values, n_samples=n_samples, confidence=confidence, seed=seed)
    raise SettingsError(f"--coefficient must be alpha, cohen or fleiss, got {coefficient!r}")
