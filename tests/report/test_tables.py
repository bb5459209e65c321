"""What the ablation report states, the same in the API and every format: no claimed
certainty where the seeds show no spread, the conditions held fixed and the metrics'
definitions first, and the component view (a retrained row beside an eval row)."""

from __future__ import annotations

import html
import json
from pathlib import Path

import numpy as np
import pytest
from tests.cli.refusal import assert_refused
from tests.conftest import REPO

from evalab.ablation import RunStore, analyze, load_study, plan_runs
from evalab.ablation.store.run_store import Outcome, RunResult
from evalab.examples.sort_digits import study_path
from evalab.report import render_html, render_json, render_latex, render_markdown
from evalab.report.latex import latex_paragraph
from evalab.report.tables import component_lines, condition_lines, definition_lines


def formats(analysis) -> dict[str, str]:
    return {
        "markdown": render_markdown(analysis),
        "latex": render_latex(analysis),
        "html": render_html(analysis),
        "json": render_json(analysis),
    }


def store_values(
    study, db: Path, means: dict[str, float], sd: float, *, eval_sd: float | None = None
) -> None:
    """Seeded values per planned run (``means`` by row label, else the base's); an eval run
    is its trained run's value plus its row's shift (the same trained model)."""
    rng = np.random.default_rng(0)
    trained: dict[str, float] = {}
    base = means["base"]
    with RunStore(db) as st:
        for run in plan_runs(study):
            if run.stage == "eval":
                v = (
                    trained[run.parent_key]
                    + means[run.rows[0]]
                    - base
                    + rng.normal(0, eval_sd or sd)
                )
            else:
                v = means.get(run.rows[0], base) + rng.normal(0, sd)
                trained[run.key] = v
            v = float(np.clip(v, 0.0, 100.0))
            metrics = {m: v for m in study.metrics}
            st.record(
                Outcome(
                    study.name,
                    run.rows,
                    run.config,
                    run.seed,
                    study.code_version,
                    None,
                    None,
                    RunResult(run.key, "ok", metrics=metrics),
                )
            )


def test_the_two_by_two_example_claims_no_certainty_in_the_api_or_any_format(
    run_cli, tmp_path, monkeypatch
):
    monkeypatch.syspath_prepend(str(REPO / "examples" / "two_by_two"))
    study_file, db = REPO / "examples" / "two_by_two" / "study.toml", tmp_path / "two.db"
    assert run_cli("ablate", "run", study_file, "--db", db, "-q").exit_code == 0
    a = analyze(load_study(study_file), db)
    inter = next(c for c in a.contrasts["acc"] if c.kind == "interaction")
    # before: ci [-10, -10] and p 0.0 in the API and the JSON, while the text said "no CI, no p"
    assert inter.value == -10 and inter.low is None and inter.high is None and inter.p is None
    assert inter.absent == "no_seed_spread"
    cell = a.row("A=false, B=false").metrics["acc"]
    assert (
        cell.delta == -10
        and cell.delta_low is None
        and cell.p_welch is None
        and cell.absent["p_t"] == "no_seed_spread"
    )
    out = formats(a)
    data = json.loads(out["json"])
    j = next(c for c in data["contrasts"]["acc"] if c["kind"] == "interaction")
    assert j["ci"] is None and j["p"] is None and j["absent"] == "no_seed_spread"
    assert all(c["ci"] is None and c["p"] is None for c in data["contrasts"]["acc"])
    statement = "80 - 80 - 80 + 70 = -10"
    said = "no seed spread: no CI, no p (t)"
    assert f"{statement}` ({said})" in out["markdown"]
    assert f'<code>{statement}</code> <span class="notes">({said})</span>' in out["html"]
    assert latex_paragraph(f"{statement} ({said})") in out["latex"]
    assert any(said in line[3] for _, lines in data["report"]["effects"] for line in lines)
    for text in out.values():
        assert "[-10.00, -10.00]" not in text and "<0.001" not in text and "&lt;0.001" not in text


def test_the_report_opens_with_the_conditions_held_fixed_and_the_metric_definitions(tmp_path):
    study = load_study(REPO / "examples" / "eval_stage" / "study.toml", check_entry=False)
    db = tmp_path / "e.db"
    store_values(
        study,
        db,
        {"base": 98.7, "(X) x1 retrained": 97.9, "(X') x1 at eval": 90.9},
        0.3,
        eval_sd=1.0,
    )
    a = analyze(study, db)
    held = condition_lines(a)
    assert held[0] == "Base configuration keys no row changes: lr = 0.01, steps = 150."
    assert held[1] == (
        "[evaluation] defaults (every trained row is evaluated with them): zero_feature = -1; "
        "eval rows change zero_feature (Stage column)."
    )
    assert held[2:] == [
        "Seeds: 0, 1, 2, 3 (4 per row, the same for every row).",
        "Code version: tiny-eval-1 (written in the study file).",
    ]
    assert (
        definition_lines(a)[0]
        == "acc: percent of 2000 held-out points classified right (threshold 0.5)."
    )
    out = formats(a)
    md = out["markdown"]
    assert md.index("### Conditions held fixed") < md.index("### Metrics") < md.index("### Results")
    for text in (md, out["html"]):
        assert "lr = 0.01, steps = 150" in text and "zero_feature = -1" in text
    assert latex_paragraph(held[0]) in out["latex"]
    assert json.loads(out["json"])["report"]["opening"][0]["lines"] == held


def test_a_computed_metric_prints_its_signature_and_its_own_bounds(tmp_path):
    from tests.ablation.outsynth import write_outputs_study

    tables = '[metrics.bleu]\nmetric = "chrf"\noutputs = "hyp.txt"\nreferences = ["data/ref.txt"]\n'
    study = load_study(write_outputs_study(tmp_path, tables=tables), check_entry=False)
    a = analyze_empty(study, tmp_path)
    chrf = next(d for d in a.definitions if d.metric == "bleu")  # named bleu, computed as chrF
    assert (
        chrf.kind == "signature"
        and chrf.text.startswith("chrf|nrefs:1")
        and chrf.bounds == (0.0, 100.0)
    )
    line = next(x for x in definition_lines(a) if x.startswith("bleu:"))
    assert f"signature {chrf.text}" in line and "bounds [0, 100] (the metric's own range)" in line
    # its intervals stay inside them without the study declaring bounds (before: a CI up to 105)
    db = tmp_path / "s.db"
    store_values(study, db, {"base": 98.5}, 2.0)
    m = analyze(study, db).base.metrics["bleu"]
    assert m.mean + 2.0 * m.std / 2**0.5 * 12.7 > 100 and m.ci_high == 100.0


def analyze_empty(study, tmp_path):
    db = tmp_path / "empty.db"
    with RunStore(db):
        pass
    return analyze(study, db)


def test_the_component_view_on_the_eval_stage_example_in_every_format(tmp_path):
    study = load_study(REPO / "examples" / "eval_stage" / "study.toml", check_entry=False)
    db = tmp_path / "e.db"
    # retraining without x1 is not separated from the base; zeroing it at evaluation costs 8 points
    store_values(
        study,
        db,
        {"base": 98.7, "(X) x1 retrained": 98.5, "(X') x1 at eval": 90.9},
        0.8,
        eval_sd=0.5,
    )
    a = analyze(study, db)
    (view,) = a.components
    assert (view.component, view.retrained.label, view.at_eval.label) == (
        "x1",
        "(X) x1 retrained",
        "(X') x1 at eval",
    )
    assert (
        view.reading == "relied_on_when_trained"
        and view.at_eval.paired
        and not view.retrained.paired
    )
    x = a.row("(X) x1 retrained").metrics["acc"]
    assert (view.retrained.delta, view.retrained.low, view.retrained.p) == (
        x.delta,
        x.delta_low,
        x.p_welch,
    )
    (line,) = component_lines(a)
    assert (
        line.startswith("x1 (acc): retrained (X) x1 retrained: Δ ")
        and "at eval (X') x1 at eval: Δ -" in line
    )
    assert "to base (paired)" in line and "reading: relied on when trained" in line
    out = formats(a)
    assert f"- {line}" in out["markdown"].replace("\\", "")
    assert html.escape(line) in out["html"]
    assert latex_paragraph(line) in out["latex"]
    assert json.loads(out["json"])["report"]["components"] == [line]


def test_the_component_view_on_the_built_in_study(tmp_path):
    study = load_study(study_path(), check_entry=False)
    db = tmp_path / "d.db"
    means = {
        "base": 96.0,
        "(A) h=1": 66.3,
        "(A') 1 of 4 heads at eval": 0.5,
        "(E) none": 95.3,
        "(E') positions removed at eval": 95.0,
    }
    store_values(study, db, means, 1.5)
    a = analyze(study, db)
    views = {v.component: v for v in a.components}
    assert set(views) == {"heads", "positions"}
    assert (
        views["heads"].reading == "needed_and_relied_on"
    )  # 1 head learns less, and 4 trained heads are relied on
    assert views["positions"].reading == "neither"
    assert [v.retrained.label for v in a.components] == ["(A) h=1", "(E) none"]
    md = render_markdown(a)
    assert "### Per component: retrained and at evaluation" in md
    assert (
        "- heads (seq_acc): retrained (A) h=1: Δ -30." in md
        and "reading: needed to learn and relied on" in md
    )
    assert "- positions (seq_acc): retrained (E) none: Δ " in md and "reading: neither" in md


def test_an_eval_row_of_a_retrained_row_shows_its_delta_to_it_and_to_the_base(tmp_path):
    from tests.ablation.evalsynth import write_eval_study

    path = write_eval_study(
        tmp_path,
        base={"a": 1, "shift": 0.0},
        rows=[
            {"label": "(F) no FFN", "set": {"shift": -8.0}},
            {
                "label": "(F') at eval of (F)",
                "stage": "eval",
                "from": "(F) no FFN",
                "set": {"drop": 1},
            },
        ],
    )
    study = load_study(path, check_entry=False)
    db = tmp_path / "s.db"
    store_values(study, db, {"base": 80.0, "(F) no FFN": 72.0, "(F') at eval of (F)": 65.0}, 1.0)
    a = analyze(study, db)
    m = a.row("(F') at eval of (F)").metrics["acc"]
    assert m.vs == "(F) no FFN" and m.paired and m.to_base is not None and not m.to_base.paired
    assert m.to_base.delta == pytest.approx(m.mean - a.base.metrics["acc"].mean)
    t = next(
        t
        for t in json.loads(render_json(a))["report"]["tables"]
        if t["heading"].startswith("acc (")
    )
    # before: Δ -7 in a table titled "Δ to the base" (it is the Δ to (F))
    assert (
        t["heading"]
        == "acc (higher is better): Δ to the row in 'Δ to'; eval rows of other trained rows also to the base"
    )
    row = dict(
        zip(t["header"], next(r for r in t["body"] if r[0] == "(F') at eval of (F)"), strict=True)
    )
    assert row["Δ to"] == "(F) no FFN, paired" and row["Δ to base 95% CI (seeds)"].startswith(
        f"{m.to_base.delta:+.2f} ["
    )
    f = dict(zip(t["header"], next(r for r in t["body"] if r[0] == "(F) no FFN"), strict=True))
    assert f["Δ to"] == "base" and f["Δ to base 95% CI (seeds)"] == ""


@pytest.mark.parametrize(
    ("extra", "line", "needle"),
    [
        ("", "component = 3", "component: must be a string naming the component, got 3"),
        ('definitions = "acc"', "", "[study] definitions: must be a table such as"),
        ('definitions = { f1 = "x" }', "", "names 'f1', which is not in metrics"),
    ],
)
def test_bad_component_or_definitions_are_refused(tmp_path, extra, line, needle):
    from tests.ablation.synth import write_study

    path = write_study(tmp_path, variants=[("(C)", "shift", {"shift": -3.0})], extra_study=extra)
    if line:
        path.write_text(
            path.read_text(encoding="utf-8").replace(
                'set = { "shift" = -3.0 }', f'set = {{ "shift" = -3.0 }}\n{line}'
            ),
            encoding="utf-8",
        )
    assert_refused(("ablate", "run", path), needle, watch=(tmp_path,))
