"""An independent recomputation of `ablate report` on studies written for this test only.

The verifier reads the run database with ``sqlite3`` and the study file with ``tomllib`` and
recomputes every statistic with numpy, scipy and itertools (nothing from evalab): means, sds
and t intervals over seeds, Welch or paired Δs with their CIs, t and exact permutation
p-values, the Holm adjustment over the family of distinct comparisons, bounds, the eval rows'
second Δ to the base, and the grid effects. It then checks that the JSON analysis carries
those numbers and that the rendered tables of every format (JSON ``report``, Markdown,
LaTeX, HTML, terminal) show them, cell for cell.

The runs are stored directly (nothing is trained): the study files are real, the values are
seeded draws, and a 2x2 grid duplicates two variants and the base, so one comparison can
only be counted once if the report dedupes it.
"""

from __future__ import annotations

import html.parser
import itertools
import json
import math
import re
import sqlite3
import tomllib
from pathlib import Path

import numpy as np
import pytest
from scipy import stats as sps

from evalab.ablation import RunStore, load_study, plan_runs
from evalab.ablation.store.run_store import Outcome, RunResult

from .evalsynth import ENTRY as EVAL_ENTRY

STUDY = """
[study]
name = "held-out"
entry = "synth_entry:run"
evaluate = "synth_entry:evaluate"
seeds = [0, 1, 2, 3, 4]
metrics = ["acc", "loss"]
higher_is_better = {{ acc = true, loss = false }}
{extra}

[base]
a = 1
shift = 0.0
pos = true
ffn = true

[evaluation]
drop = 0

[[variant]]
label = "(P) no pos"
set = {{ pos = false }}

[[variant]]
label = "(F) no FFN"
set = {{ ffn = false }}
component = "ffn"

[[variant]]
label = "(S) shift"
set = {{ shift = -1.0 }}

[[variant]]
label = "(F') FFN at eval"
stage = "eval"
from = "base"
set = {{ drop = 1 }}
component = "ffn"

[[variant]]
label = "(F'') FFN at eval of (F)"
stage = "eval"
from = "(F) no FFN"
set = {{ drop = 1 }}

[grid]
pos = [false, true]
ffn = [false, true]
"""

MEANS = {"(P) no pos": -0.4, "(F) no FFN": -2.5, "(S) shift": -1.0, "pos=false, ffn=false": -9.0}


def write(folder: Path, extra: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "synth_entry.py").write_text(EVAL_ENTRY, encoding="utf-8")
    path = folder / "study.toml"
    path.write_text(STUDY.format(extra=extra), encoding="utf-8")
    return path


def store(path: Path, db: Path, *, sd: float = 1.5, top: float = 80.0) -> None:
    """Seeded values for every planned run; an eval run is its trained run's value minus a
    paired drop (the same trained model)."""
    study = load_study(path, check_entry=False)
    rng = np.random.default_rng(26)
    trained: dict[str, float] = {}
    with RunStore(db) as st:
        for run in plan_runs(study):  # training runs first
            if run.stage == "eval":
                acc = trained[run.parent_key] - 6.0 - rng.normal(0, 1.0)
            else:
                acc = top + MEANS.get(run.rows[0], 0.0) + rng.normal(0, sd)
                trained[run.key] = acc
            acc = min(acc, 100.0)
            st.record(
                Outcome(
                    study.name,
                    run.rows,
                    run.config,
                    run.seed,
                    study.code_version,
                    None,
                    None,
                    RunResult(run.key, "ok", metrics={"acc": acc, "loss": 1 - acc / 100}),
                )
            )


# --------------------------------------------------------------------------- the verifier


def holm(p: list[float]) -> list[float]:
    order = sorted(range(len(p)), key=lambda i: p[i])
    out, running = [0.0] * len(p), 0.0
    for rank, i in enumerate(order):
        running = max(running, min(1.0, (len(p) - rank) * p[i]))
        out[i] = running
    return out


def welch(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    va, vb = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (va + vb) ** 2 / (va**2 / (x.size - 1) + vb**2 / (y.size - 1))
    d, half = x.mean() - y.mean(), sps.t.ppf(0.975, df) * math.sqrt(va + vb)
    return d, d - half, d + half, sps.ttest_ind(x, y, equal_var=False).pvalue


def paired(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    d = x - y
    half = sps.t.ppf(0.975, d.size - 1) * d.std(ddof=1) / math.sqrt(d.size)
    return d.mean(), d.mean() - half, d.mean() + half, sps.ttest_rel(x, y).pvalue


def perm(x: np.ndarray, y: np.ndarray) -> float:
    pooled, obs = np.concatenate([x, y]), abs(x.mean() - y.mean())
    hits = total = 0
    for idx in itertools.combinations(range(pooled.size), x.size):
        a = pooled[list(idx)]
        b = np.delete(pooled, list(idx))
        hits += abs(a.mean() - b.mean()) >= obs - 1e-9 * max(1.0, abs(pooled).max())
        total += 1
    return hits / total


def sign_flip(x: np.ndarray, y: np.ndarray) -> float:
    d, obs = x - y, abs((x - y).mean())
    flips = [
        abs((np.array(s) * d).mean()) >= obs - 1e-9 * max(1.0, abs(d).max())
        for s in itertools.product([1.0, -1.0], repeat=d.size)
    ]
    return sum(flips) / len(flips)


class Verifier:
    """The expected report, from the database and the study file alone."""

    def __init__(self, path: Path, db: Path):
        self.spec = tomllib.loads(path.read_text(encoding="utf-8"))
        conn = sqlite3.connect(db)
        self.values: dict[tuple[str, ...], dict[str, dict[int, float]]] = {}
        for rows, seed, metrics in conn.execute(
            "SELECT rows, seed, metrics FROM runs WHERE study='held-out'"
        ):
            for m, v in json.loads(metrics).items():
                self.values.setdefault(tuple(json.loads(rows)), {}).setdefault(m, {})[seed] = v
        conn.close()
        study = self.spec["study"]
        self.paired_seeds = study.get("paired_seeds", False)
        self.bounds = study.get("bounds", {})
        variants = self.spec["variant"]
        self.parent = {
            v["label"]: v.get("from", "base") for v in variants if v.get("stage") == "eval"
        }

    def group(self, label: str) -> tuple[str, ...]:
        return next(g for g in self.values if label in g)

    def seeds(self, label: str, m: str) -> dict[int, float]:
        return self.values[self.group(label)][m]

    def clip(self, m: str, lo: float, hi: float, delta: bool = True) -> tuple[float, float]:
        if m not in self.bounds:
            return lo, hi
        b0, b1 = self.bounds[m]
        if delta:
            b0, b1 = b0 - b1, b1 - b0
        return min(max(lo, b0), b1), min(max(hi, b0), b1)

    def delta(
        self, label: str, vs: str, m: str, pair: bool
    ) -> tuple[float, float, float, float, float]:
        a, b = self.seeds(label, m), self.seeds(vs, m)
        if pair:
            s = sorted(set(a) & set(b))
            x, y = np.array([a[i] for i in s]), np.array([b[i] for i in s])
            d, lo, hi, p = paired(x, y)
            pp = sign_flip(x, y)
        else:
            x, y = np.array(list(a.values())), np.array(list(b.values()))
            d, lo, hi, p = welch(x, y)
            pp = perm(x, y)
        lo, hi = self.clip(m, lo, hi)
        return d, lo, hi, p, pp

    def rows(self, m: str, decimals: int = 2) -> dict[str, dict[str, str]]:
        """Row name -> the Δ table's cells (by column header) the report must show."""
        out: dict[str, dict[str, str]] = {}
        tested: dict[str, list[tuple[str, float]]] = {"train": [], "eval": []}
        for g in self.values:
            name = " = ".join(g)
            label = g[0]
            vals = np.array(list(self.seeds(label, m).values()))
            half = sps.t.ppf(0.975, vals.size - 1) * vals.std(ddof=1) / math.sqrt(vals.size)
            lo, hi = self.clip(m, vals.mean() - half, vals.mean() + half, delta=False)
            cells = {"mean 95% CI (seeds)": f"[{lo:.{decimals}f}, {hi:.{decimals}f}]"}
            if "base" not in g:
                stage = "eval" if label in self.parent else "train"
                vs = self.parent.get(label, "base")
                d, lo, hi, p, pp = self.delta(label, vs, m, stage == "eval" or self.paired_seeds)
                cells.update(
                    {
                        "Δ": f"{d:+.{decimals}f}",
                        "Δ 95% CI (seeds)": f"[{lo:.{decimals}f}, {hi:.{decimals}f}]",
                        "p (t)": fmt_p(p),
                        "p (perm)": fmt_p(pp),
                    }
                )
                tested[stage].append((name, p))
                if vs != "base":
                    db, lo2, hi2, p2, _ = self.delta(label, "base", m, self.paired_seeds)
                    cells["Δ to base 95% CI (seeds)"] = (
                        f"{db:+.{decimals}f} [{lo2:.{decimals}f}, {hi2:.{decimals}f}]"
                        + (" paired" if self.paired_seeds else "")
                    )
                    cells["p (t) to base"] = fmt_p(p2)
            out[name] = cells
        for members in tested.values():
            for (name, _), q in zip(members, holm([p for _, p in members]), strict=True):
                out[name]["p (Holm)"] = fmt_p(q)
        return out

    def families(self, m: str) -> dict[str, list[str]]:
        fam: dict[str, list[str]] = {"train": [], "eval": []}
        for g in self.values:
            if "base" not in g:
                fam["eval" if g[0] in self.parent else "train"].append(" = ".join(g))
        return fam

    def contrast(self, cells: list[tuple[str, float]], m: str) -> tuple[float, float, float, float]:
        """A grid effect: Σ c·mean, Welch-Satterthwaite CI and p (paired: the per-seed contrast)."""
        vals = [self.seeds(label, m) for label, _ in cells]
        coefs = [c for _, c in cells]
        if self.paired_seeds:
            s = sorted(set.intersection(*(set(v) for v in vals)))
            per = sum(c * np.array([v[i] for i in s]) for c, v in zip(coefs, vals, strict=True))
            se, df = per.std(ddof=1) / math.sqrt(per.size), per.size - 1
            value = per.mean()
        else:
            arrays = [np.array(list(v.values())) for v in vals]
            parts = [c * c * a.var(ddof=1) / a.size for c, a in zip(coefs, arrays, strict=True)]
            se = math.sqrt(sum(parts))
            df = sum(parts) ** 2 / sum(
                p * p / (a.size - 1) for p, a in zip(parts, arrays, strict=True)
            )
            value = sum(c * a.mean() for c, a in zip(coefs, arrays, strict=True))
        half = sps.t.ppf(0.975, df) * se
        lo, hi = value - half, value + half
        if m in self.bounds:
            b0, b1 = self.bounds[m]
            lo_b, hi_b = (
                sum(min(c * b0, c * b1) for c in coefs),
                sum(max(c * b0, c * b1) for c in coefs),
            )
            lo, hi = min(max(lo, lo_b), hi_b), min(max(hi, lo_b), hi_b)
        return value, lo, hi, 2 * sps.t.sf(abs(value / se), df)


#: the report's decimals: 2 for values of 10 and more (accuracy in %), 4 below 1 (loss)
DECIMALS = (("acc", 2), ("loss", 4))


def fmt_p(p: float) -> str:
    return "<0.001" if p < 0.001 else f"{p:.3f}"


# --------------------------------------------------------------------------- the formats


class _Cells(html.parser.HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tables: list[list[list[str]]] = []
        self._cell: list[str] | None = None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append([])
        elif tag == "tr":
            self.tables[-1].append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1][-1].append("".join(self._cell))
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def md_tables(text: str) -> list[list[list[str]]]:
    out, cur = [], None
    for line in text.splitlines():
        if line.startswith("| "):
            cells = [
                c.replace("\\|", "|").replace("\\_", "_")
                for c in re.split(r" (?<!\\)\| ", line[2:-2])
            ]
            if cur is None:
                cur = [cells]
                out.append(cur)
            else:
                cur.append(cells)
        elif not line.startswith("|:") and not line.startswith("|-"):
            cur = None
    return out


def latex_rows(text: str) -> list[str]:
    # wrapped (p{}) label cells may break after "=", ",": drop the break points
    lines = text.replace(r"\allowbreak{}", "").splitlines()
    return [line for line in lines if line.endswith(r"\\") and " & " in line]


def check_every_format(run_cli, path: Path, db: Path, verifier: Verifier) -> dict:
    """The JSON's tables against the verifier; every other format against the JSON's tables."""
    from evalab.report.latex import latex_text

    out = {
        f: run_cli("ablate", "report", path, "--db", db, "--holm", "-f", f).stdout
        for f in ("json", "markdown", "latex", "html", "table")
    }
    data = json.loads(out["json"])
    tables = data["report"]["tables"]
    main = tables[0]
    for (m, decimals), col in zip(
        DECIMALS, [h for h in main["header"] if "(mean ± sd)" in h], strict=True
    ):
        for row in main["body"]:
            vals = np.array(list(verifier.seeds(row[0].split(" = ")[0], m).values()))
            cell = f"{vals.mean():.{decimals}f} ± {vals.std(ddof=1):.{decimals}f}"
            assert row[main["header"].index(col)] == cell, (row[0], m)
        for c in data["contrasts"][m]:  # every grid effect, from its cells and coefficients
            v, lo, hi, p = verifier.contrast(
                list(zip(c["cells"], c["coefficients"], strict=True)), m
            )
            assert (
                c["value"] == pytest.approx(v)
                and c["ci"] == pytest.approx([lo, hi])
                and c["p"] == pytest.approx(p)
            )
    for m, decimals in DECIMALS:
        t = next(t for t in tables if t["heading"].startswith(f"{m} ("))
        expected = verifier.rows(m, decimals)
        assert {row[0] for row in t["body"]} == set(expected)  # one row per distinct comparison
        for row in t["body"]:
            got = dict(zip(t["header"], row, strict=True))
            for col, cell in expected[row[0]].items():
                assert got[col] == cell, (row[0], col, got[col], cell)
            # no row outside the families shows a p(Holm); every member does
            assert (got.get("p (Holm)", "–") != "–") == ("p (Holm)" in expected[row[0]])
    bodies = [[list(map(str, r)) for r in t["body"]] for t in tables]
    md = md_tables(out["markdown"])
    for t in tables:
        assert [t["header"], *t["body"]] in md, t["heading"]
    parser = _Cells()
    parser.feed(out["html"])
    html_bodies = [
        [r for r in tab if r and not all(c == "" for c in r)][1:] for tab in parser.tables
    ]
    for body in bodies:
        assert body in html_bodies
    tex = "\n".join(latex_rows(out["latex"]))
    for body in bodies:
        for row in body:
            for cell in row:
                assert latex_text(cell) in tex, cell
    term = out["table"]
    for t in tables:
        below = term[term.index(t["heading"]) :].splitlines()
        for row in t["body"]:
            line = next(x for x in below if x.startswith(f"│ {row[0]} "))
            assert all(cell in line for cell in row), (row, line)
    return data


def test_every_number_of_every_format_matches_an_independent_recomputation(run_cli, tmp_path):
    path, db = write(tmp_path / "s"), tmp_path / "s.db"
    store(path, db)
    verifier = Verifier(path, db)
    data = check_every_format(run_cli, path, db, verifier)
    # the grid duplicates (P), (F) and the base: 4 distinct trained comparisons, not 7
    fams = {(f["metric"], f["stage"]): f for f in data["holm"]}
    expected = verifier.families("acc")
    assert {x.split(" = ")[0] for x in expected["train"]} == set(fams["acc", "train"]["members"])
    assert (
        len(expected["train"]) == 4
        and fams["acc", "train"]["adjusted"] != fams["acc", "train"]["p"]
    )
    assert (
        set(fams["acc", "eval"]["members"])
        == set(expected["eval"])
        == {"(F') FFN at eval", "(F'') FFN at eval of (F)"}
    )
    notes = data["report"]["notes"]
    assert (
        "Holm family for acc, trained rows vs the base: 4 comparisons ((P) no pos = pos=false, ffn=true; "
        "(F) no FFN = pos=true, ffn=false; (S) shift; pos=false, ffn=false)." in notes
    )
    # the grid effects, as numbers in the JSON and as text
    cs = {c["name"]: c for c in data["contrasts"]["acc"]}
    inter = cs["interaction pos x ffn: y(both) - y(ffn ablated) - y(pos ablated) + y(neither)"]
    v, lo, hi, p = verifier.contrast(
        [
            ("base", 1),
            ("pos=true, ffn=false", -1),
            ("pos=false, ffn=true", -1),
            ("pos=false, ffn=false", 1),
        ],
        "acc",
    )
    assert (
        inter["value"] == pytest.approx(v)
        and inter["ci"] == pytest.approx([lo, hi])
        and inter["p"] == pytest.approx(p)
    )
    removal = cs["removal of ffn=true → false from the full system"]
    v, lo, hi, p = verifier.contrast([("pos=true, ffn=false", 1), ("base", -1)], "acc")
    assert removal["ci"] == pytest.approx([lo, hi]) and removal["p"] == pytest.approx(p)
    # the same removal is the Δ of (F): one answer
    f = next(r for r in data["rows"] if r["label"] == "(F) no FFN")["metrics"]["acc"]
    assert f["delta_low"] == pytest.approx(lo) and f["p_welch"] == pytest.approx(p)


def test_paired_seeds_and_bounds_apply_to_every_contrast(run_cli, tmp_path):
    path = write(tmp_path / "s", "paired_seeds = true\nbounds = { acc = [0, 100] }")
    db = tmp_path / "s.db"
    store(
        path, db, sd=6.0, top=97.0
    )  # near the ceiling, with seed noise: t intervals leave [0, 100]
    verifier = Verifier(path, db)
    data = check_every_format(run_cli, path, db, verifier)
    cs = {c["name"]: c for c in data["contrasts"]["acc"]}
    removal = cs["removal of ffn=true → false from the full system"]
    _, lo, hi, p = verifier.contrast([("pos=true, ffn=false", 1), ("base", -1)], "acc")
    assert (
        removal["paired"]
        and removal["ci"] == pytest.approx([lo, hi])
        and removal["p"] == pytest.approx(p)
    )
    f = next(r for r in data["rows"] if r["label"] == "(F) no FFN")["metrics"]["acc"]
    assert f["paired"] and f["p_welch"] == pytest.approx(
        removal["p"]
    )  # the Δ table and the grid agree
    base = data["rows"][0]["metrics"]["acc"]
    assert base["ci_high"] <= 100.0 and all(
        c["ci"] is None or (c["ci"][0] >= -200 and c["ci"][1] <= 200)
        for c in data["contrasts"]["acc"]
    )
