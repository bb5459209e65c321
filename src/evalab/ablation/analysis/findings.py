"""What a study's report states besides the rows' statistics, as typed values (numbers and
codes; the report layer writes the sentences):

- :class:`HolmFamily`: one family of hypotheses Holm's adjustment runs over (per metric and
  stage: the trained rows' Δ to the base; the eval rows' Δ to the trained row they
  evaluate), with its members, so the report can state its size and who is in it;
- :class:`Conditions`: what no row changes (the base keys, the ``[evaluation]`` defaults,
  the seeds, the code version);
- :class:`MetricDefinition`: each metric's definition (a computed metric's signature, or
  the study's ``definitions`` entry);
- :class:`ComponentView`: a retrained row beside the eval row that removes the same
  component (both carry ``component = "NAME"``), with both Δs and the reading.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from evalab.stats.multiple import holm_bonferroni

if TYPE_CHECKING:
    from evalab.ablation.study.spec import Study

#: the readings of a component view
READINGS = ("needed_to_learn", "relied_on_when_trained", "needed_and_relied_on", "neither")


@dataclass(frozen=True)
class HolmFamily:
    """The hypotheses one Holm adjustment covers: ``members`` (row labels) with their
    unadjusted and adjusted p-values, in the rows' order."""

    metric: str
    stage: str  # "train": Δ to the base; "eval": Δ to the trained row evaluated
    members: tuple[str, ...]
    p: tuple[float, ...]
    adjusted: tuple[float, ...]

    @property
    def size(self) -> int:
        return len(self.members)


def holm_families(metric: str, tested: Sequence[tuple[str, str, float]]) -> list[HolmFamily]:
    """One family per stage over ``(label, stage, p)`` of the distinct comparisons tested."""
    out = []
    for stage in ("train", "eval"):
        members = [(label, p) for label, st, p in tested if st == stage]
        if members:
            adjusted = holm_bonferroni([p for _, p in members])
            out.append(
                HolmFamily(
                    metric,
                    stage,
                    tuple(x for x, _ in members),
                    tuple(p for _, p in members),
                    tuple(float(x) for x in adjusted),
                )
            )
    return out


@dataclass(frozen=True)
class Conditions:
    """What every row of the study shares."""

    fixed: dict[str, Any]  # [base] keys that no row changes, with their values
    evaluation: dict[
        str, Any
    ]  # the [evaluation] defaults (every trained row is evaluated with them)
    evaluation_fixed: dict[str, Any]  # of those, the keys no eval row changes
    seeds: tuple[int, ...]
    code_version: str
    code_pinned: bool


def conditions(
    study: Study, configs: Sequence[Mapping[str, Any]], eval_changes: Sequence[Mapping[str, Any]]
) -> Conditions:
    """The conditions held fixed, from the trained rows' configurations and the eval rows' changes."""
    fixed = {k: v for k, v in study.base.items() if all(c.get(k) == v for c in configs)}
    changed = {k for ch in eval_changes for k in ch}
    return Conditions(
        fixed,
        dict(study.evaluation),
        {k: v for k, v in study.evaluation.items() if k not in changed},
        tuple(study.seeds),
        study.code_version,
        bool(study.code and study.code.pinned),
    )


@dataclass(frozen=True)
class MetricDefinition:
    """A metric's definition: ``kind`` "signature" (computed by evalab), "declared" (the
    study's ``definitions``) or "undeclared" (the run returns it; nothing says what it is)."""

    metric: str
    kind: str
    text: str
    bounds: tuple[float, float] | None = None
    bounds_from: str = ""  # "study" | "metric" | ""


def definitions(
    study: Study, bounds: Callable[[str], tuple[tuple[float, float] | None, str]]
) -> list[MetricDefinition]:
    """Every metric's definition; ``bounds(metric)`` gives its bounds and where they come from."""
    out = []
    for m in study.metrics:
        b, source = bounds(m)
        if m in study.computed:
            cm = study.computed[m]
            out.append(
                MetricDefinition(
                    m, "signature", cm.build().signature_for(len(cm.references) or None), b, source
                )
            )
        elif m in study.definitions:
            out.append(MetricDefinition(m, "declared", study.definitions[m], b, source))
        else:
            out.append(MetricDefinition(m, "undeclared", "", b, source))
    return out


@dataclass(frozen=True)
class Side:
    """One side of a component view: the row, what its Δ is to, Δ with its CI and p."""

    label: str
    vs: str
    paired: bool
    delta: float | None
    low: float | None
    high: float | None
    p: float | None
    separated: bool  # p < alpha and the Δ is a loss (worse than the row it is taken to)


@dataclass(frozen=True)
class ComponentView:
    """A component removed by retraining (``retrained``) and at evaluation (``at_eval``)."""

    component: str
    metric: str
    retrained: Side
    at_eval: Side
    reading: str  # one of READINGS
    alpha: float


def reading(retrained: Side, at_eval: Side) -> str:
    """ "needed to learn" when a model retrained without it is worse; "relied on when
    trained" when it is not but the trained model loses without it at evaluation."""
    if retrained.separated:
        return "needed_and_relied_on" if at_eval.separated else "needed_to_learn"
    return "relied_on_when_trained" if at_eval.separated else "neither"


def component_pairs(study: Study) -> list[tuple[str, str, str]]:
    """``(component, retrained label, eval label)`` for every pair of rows sharing a component."""
    named = [v for v in study.variants if v.component]
    return [
        (t.component, t.label, e.label)
        for t in named
        if t.stage == "train"
        for e in named
        if e.stage == "eval" and e.component == t.component
    ]
