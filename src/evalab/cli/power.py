"""``evalab power``: how many items an evaluation needs, and what difference it can detect.

From a pilot run (``--scores A B``: two per-item files, read as ``compare --scores`` reads
them) or from assumed standard deviations, correlation and clustering, for the paired
design (both models on the same items) and the unpaired one (each on its own items); see
:mod:`evalab.stats.power`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Annotated, Any

import numpy as np
import typer

from evalab.cli.app import command
from evalab.cli.compare_scores import aligned_inputs, means_of
from evalab.cli.options import (
    ClusterColumn,
    Format,
    IdColumn,
    LatexOptions,
    OutFile,
    ScoreColumns,
    ScoreFiles,
    given_options,
)
from evalab.cli.output import check_format, check_out, emit_table
from evalab.errors import SettingsError
from evalab.items import Columns
from evalab.report.latex import WHOLE, LatexLayout
from evalab.report.notes import stats_sentence
from evalab.report.numbers import NO_VALUE
from evalab.report.table import NumberText, Table
from evalab.stats.items import FEW_CLUSTERS, FewClusters, ItemNote, cluster_codes, estimate
from evalab.stats.power import DESIGNS, Design, detectable_delta, items_needed

__all__ = ["Pilot", "pilot_designs"]


def _icc(deff: float, m: float) -> float:
    """The intra-cluster correlation that gives design effect ``deff`` at cluster size ``m``."""
    return 0.0 if m <= 1 else min(1.0, max(0.0, (deff - 1.0) / (m - 1.0)))


@dataclass(frozen=True)
class Pilot:
    """The designs a pilot of two models gives, its item count and what qualifies them."""

    designs: dict[str, Design]
    items: int
    notes: tuple[ItemNote, ...] = ()


def pilot_designs(files: list[str], cols: Columns) -> Pilot:
    """Paired and unpaired designs estimated from a pilot of two models, and its item count."""
    groups = aligned_inputs(files, cols, common=False)
    if len(groups) != 1:
        raise SettingsError(
            f"power --scores needs one metric, the files have {len(groups)} "
            f"({', '.join(g.metric for g in groups)}); pick one with --score-column NAME"
        )
    if len(groups[0].sets) != 2:
        raise SettingsError(f"power --scores needs two models, got {len(groups[0].sets)}")
    group = groups[0]
    a, b = (m.means for m in means_of(group))
    sd_a, sd_b = float(a.std(ddof=1)), float(b.std(ddof=1))
    rho = float(np.corrcoef(a, b)[0, 1]) if sd_a > 0 and sd_b > 0 else 0.0
    m, icc_paired, icc_unpaired = 1, 0.0, 0.0
    notes: tuple[ItemNote, ...] = ()
    if group.clusters is not None:
        codes = cluster_codes(group.clusters)
        size = a.size / (int(codes.max()) + 1)
        m = max(1, round(size))

        def deff(x: np.ndarray) -> float:
            return (estimate(x, codes).se / estimate(x).se) ** 2 if x.std() > 0 else 1.0

        icc_paired = _icc(deff(a - b), size)
        icc_unpaired = _icc((deff(a) + deff(b)) / 2, size)
        g = int(codes.max()) + 1
        notes = (FewClusters(g),) if g < FEW_CLUSTERS else ()
    designs = {
        "paired": Design("paired", sd_a, sd_b, rho, m, icc_paired),
        "unpaired": Design("unpaired", sd_a, sd_b, 0.0, m, icc_unpaired),
    }
    return Pilot(designs, int(a.size), notes)


def _no_spread(files: list[str], design: Design) -> SettingsError:
    """The refusal of a paired plan from a pilot whose differences do not vary."""
    return SettingsError(
        f"--scores {' '.join(files)}: the pilot's per-item differences have no variance (the two "
        "models differ by the same amount on every item: paired sd 0), so no paired plan follows "
        "from it (any difference would look detectable with 2 items); give a pilot whose models "
        f"differ on some items, or plan --design unpaired (pooled sd {design.sd:.4f})"
    )


def _assumed(
    sd_a: float | None, sd_b: float | None, corr: float, m: int, icc: float
) -> dict[str, Design]:
    if sd_a is None:
        raise SettingsError(
            "power needs a pilot (--scores A B) or the assumed spread (--sd, e.g. 0.48 for "
            "accuracies near 0.65)"
        )
    sd_b = sd_a if sd_b is None else sd_b
    return {d: Design(d, sd_a, sd_b, corr if d == "paired" else 0.0, m, icc) for d in DESIGNS}


def _row(
    design: Design, delta: float | None, items: int | None, alpha: float, power: float
) -> dict[str, Any]:
    need = items_needed(design, delta, alpha, power) if delta is not None else None
    mdd = detectable_delta(design, items, alpha, power) if items is not None else None
    return {
        "design": design.design,
        "sd_a": design.sd_a,
        "sd_b": design.sd_b,
        "correlation": design.correlation if design.design == "paired" else None,
        "cluster_size": design.cluster_size,
        "icc": design.icc,
        "design_effect": design.design_effect,
        "test_sd": design.sd,
        "alpha": alpha,
        "power": power,
        "delta": delta,
        "items_needed": need,
        "items": items,
        "detectable_delta": mdd,
    }


def _render(
    rows: list[dict[str, Any]],
    fmt: str,
    out: str | None,
    latex: LatexLayout = WHOLE,
    notes: tuple[ItemNote, ...] = (),
) -> None:
    header = [
        "design",
        "sd",
        "corr",
        "cluster",
        "icc",
        "deff",
        "Δ",
        "items needed",
        "items",
        "detectable Δ",
    ]

    def num(v: float | None, spec: str) -> NumberText:
        return NumberText(
            NO_VALUE if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)
        )

    body = [
        [
            r["design"],
            num(r["test_sd"], ".4f"),
            num(r["correlation"], ".2f"),
            NumberText(str(r["cluster_size"])),
            num(r["icc"], ".3f"),
            num(r["design_effect"], ".2f"),
            num(r["delta"], "g"),
            NumberText("none ≤ 10^9")
            if r["delta"] is not None and r["items_needed"] is None
            else num(r["items_needed"], "d"),
            num(r["items"], "d"),
            num(r["detectable_delta"], ".4f"),
        ]
        for r in rows
    ]
    r0 = rows[0]
    footer = [
        f"two-sided t test at alpha {r0['alpha']:g}, power {r0['power']:g}; sd: of the per-item "
        "differences (paired) or pooled (unpaired); unpaired: items per model; "
        "deff = 1 + (cluster - 1) icc",
        *(stats_sentence(n) for n in notes),
    ]
    emit_table(fmt, Table(header, body, footer), out, data=rows, latex=latex)


@dataclass(frozen=True)
class PowerRequest:
    """``evalab power``'s options, as the command line gives them."""

    scores: ScoreFiles = field(default_factory=list)
    delta: Annotated[
        float | None,
        typer.Option("--delta", help="The difference to detect: gives the items needed."),
    ] = None
    items: Annotated[
        int | None,
        typer.Option(
            "--items",
            help="Items of an evaluation: gives the smallest detectable difference (default: the pilot's items).",
        ),
    ] = None
    alpha: Annotated[float, typer.Option("--alpha", help="Level of the two-sided test.")] = 0.05
    power_: Annotated[
        float,
        typer.Option("--power", help="Power wanted (probability of detecting the difference)."),
    ] = 0.8
    design: Annotated[
        str | None, typer.Option("--design", help="paired or unpaired (default: both).")
    ] = None
    sd: Annotated[
        float | None,
        typer.Option(
            "--sd", help="Without a pilot: standard deviation of one model's item scores."
        ),
    ] = None
    sd_b: Annotated[
        float | None,
        typer.Option("--sd-b", help="Without a pilot: the other model's (default: --sd)."),
    ] = None
    correlation: Annotated[
        float,
        typer.Option(
            "--correlation",
            help="Without a pilot: correlation of the two models' scores on one item.",
        ),
    ] = 0.0
    cluster_size: Annotated[
        int,
        typer.Option(
            "--cluster-size",
            help="Without a pilot: items per cluster (e.g. questions per passage).",
        ),
    ] = 1
    icc: Annotated[
        float,
        typer.Option("--icc", help="Without a pilot: intra-cluster correlation of the scores."),
    ] = 0.0
    id_column: IdColumn = "id"
    score_column: ScoreColumns = field(default_factory=list)
    cluster_column: ClusterColumn = None
    format: Format = "table"
    out: OutFile = None
    latex: LatexOptions = field(default_factory=LatexOptions)


#: the assumptions of a plan without a pilot (a pilot gives them)
ASSUMPTIONS = (
    ("--sd", "sd"),
    ("--sd-b", "sd_b"),
    ("--correlation", "correlation"),
    ("--cluster-size", "cluster_size"),
    ("--icc", "icc"),
)


@command(PowerRequest)
def power(req: PowerRequest) -> None:
    """Items needed to detect a difference, and the smallest difference an evaluation detects (from a pilot run: --scores with two files)."""
    check_out(req.out, [("--scores", f) for f in req.scores])
    check_format(req.format)
    latex = req.latex.layout(req.format)
    if req.design is not None and req.design not in DESIGNS:
        raise SettingsError(f"--design must be paired or unpaired, got {req.design!r}")
    if req.items is not None and req.items < 2:
        raise SettingsError(f"--items must be at least 2, got {req.items}")
    if req.delta is None and req.items is None and not req.scores:
        raise SettingsError("power needs --delta (items needed) or --items (detectable difference)")
    items = req.items
    if req.scores:
        given = given_options(req, ASSUMPTIONS)
        if given:
            raise SettingsError(
                f"{given[0]} is an assumption for a plan without a pilot; with --scores the "
                "pilot gives it (name the clusters with --cluster-column)"
            )
        columns = Columns(req.id_column, tuple(req.score_column), req.cluster_column)
        pilot = pilot_designs(req.scores, columns)
        items = pilot.items if items is None and req.delta is None else items
        designs, notes = pilot.designs, pilot.notes
        if req.design != "unpaired" and designs["paired"].sd == 0.0:
            raise _no_spread(req.scores, designs["unpaired"])
    else:
        designs, notes = _assumed(req.sd, req.sd_b, req.correlation, req.cluster_size, req.icc), ()
    chosen = [designs[req.design]] if req.design else list(designs.values())
    rows = [_row(d, req.delta, items, req.alpha, req.power_) for d in chosen]
    _render(rows, req.format, req.out, latex, notes)
