"""``evalab compare --scores``: per-item files of several models through the real CLI."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import scipy.stats
from tests.cli.refusal import assert_refused
from tests.items.harness_files import inspect_log, write_lm_eval_run

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "item-scores"
FILES = [EXAMPLE / f"model-{m}.csv" for m in "abc"]


def _read(path: Path) -> tuple[np.ndarray, np.ndarray]:
    rows = [line.split(",") for line in path.read_text(encoding="utf-8").splitlines()[1:]]
    return np.array([float(r[2]) for r in rows]), np.array([r[1] for r in rows])


def test_json_gives_naive_clustered_and_paired_errors(run_cli) -> None:
    res = run_cli(
        "compare",
        "--scores",
        *FILES,
        "--score-column",
        "correct",
        "--cluster-column",
        "passage",
        "--correct",
        "holm",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["system"] for r in rows] == [str(f) for f in FILES]
    a, _ = _read(FILES[0])
    b, _ = _read(FILES[1])
    base, other = rows[0], rows[1]
    assert base["score"] == pytest.approx(a.mean()) and base["n_clusters"] == 200
    assert base["naive_se"] == pytest.approx(a.std(ddof=1) / np.sqrt(a.size))
    assert base["clustered_se"] > 1.3 * base["naive_se"]  # 5 questions a passage
    ref = scipy.stats.ttest_rel(b, a)
    assert other["delta"] == pytest.approx((b - a).mean())
    assert other["paired_se"] == pytest.approx((b - a).mean() / ref.statistic)
    assert other["paired_clustered_se"] > other["paired_se"]
    assert other["paired_se"] < other["unpaired_se"]
    assert other["unpaired_clustered_se"] == pytest.approx(
        np.hypot(base["clustered_se"], other["clustered_se"])
    )
    assert other["p_adjusted"] >= other["p_value"]


def test_table_shows_the_intervals_side_by_side(run_cli) -> None:
    res = run_cli(
        "compare", "--scores", *FILES, "--score-column", "correct", "--cluster-column", "passage"
    )
    assert res.exit_code == 0, res.stderr
    assert "95% CI clust." in res.stdout and "95% CI paired clust." in res.stdout
    assert "│  1000 │" in res.stdout and "│      200 │" in res.stdout
    assert "model-b" in res.stdout and "model-b.csv" not in res.stdout


@pytest.mark.parametrize("fmt", ["markdown", "latex"])
def test_markdown_and_latex(run_cli, fmt: str, tmp_path: Path) -> None:
    out = tmp_path / "t.txt"
    res = run_cli("compare", "--scores", *FILES, "--score-column", "correct", "-f", fmt, "-o", out)
    assert res.exit_code == 0 and res.stdout == ""
    text = out.read_text(encoding="utf-8")
    assert ("| model-a |" in text) if fmt == "markdown" else ("\\toprule" in text)


def test_harness_logs_and_text_metrics_go_through_one_comparison(run_cli, tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    runs = [
        write_lm_eval_run(
            tmp_path / m, {"arc": (rng.random(50) < p).astype(float).tolist()}, passages=10
        )
        for m, p in (("base", 0.5), ("tuned", 0.7))
    ]
    res = run_cli("compare", "--scores", *runs, "--cluster-column", "doc.passage_id", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert {r["metric"] for r in rows} == {"arc:acc", "arc:acc_norm"} and rows[0][
        "n_clusters"
    ] == 10
    logs = [
        inspect_log(tmp_path / f"{m}.json", v)
        for m, v in (("x", ["C", "I", "C", "I"]), ("y", ["C", "C", "C", "I"]))
    ]
    res = run_cli("compare", "--scores", *logs, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[1]["delta"] == pytest.approx(0.25)
    ref = tmp_path / "ref.txt"
    hyps = [tmp_path / "h1.txt", tmp_path / "h2.txt"]
    ref.write_text("a b c d\ne f g h\ni j k l\n", encoding="utf-8")
    hyps[0].write_text("a b c d\ne f x h\ni j\n", encoding="utf-8")
    hyps[1].write_text("a b c\ne f g h\ni j k l\n", encoding="utf-8")
    seg = tmp_path / "seg.jsonl"
    assert run_cli("score", "-r", ref, "-i", *hyps, "-m", "chrf", "--segments", seg).exit_code == 0
    res = run_cli("compare", "--scores", seg, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert [r["system"] for r in json.loads(res.stdout)] == ["h1.txt", "h2.txt"]


def test_common_items_is_said(run_cli, tmp_path: Path) -> None:
    a, b = tmp_path / "a.csv", tmp_path / "b.csv"
    a.write_text("id,score\nx,1\ny,0\nz,1\n", encoding="utf-8")
    b.write_text("id,score\ny,1\nz,1\nw,0\n", encoding="utf-8")
    res = run_cli("compare", "--scores", a, b, "--common-items")
    assert res.exit_code == 0, res.stderr
    assert "score: items common to every model; 2 left out" in res.stdout


def test_bootstrap_intervals_with_n_samples(run_cli) -> None:
    res = run_cli(
        "compare",
        "--scores",
        *FILES[:2],
        "--score-column",
        "correct",
        "--cluster-column",
        "passage",
        "-n",
        "500",
        "-f",
        "json",
    )
    rows = json.loads(res.stdout)
    assert rows[1]["paired_bootstrap_low"] < rows[1]["delta"] < rows[1]["paired_bootstrap_high"]
    table = run_cli(
        "compare", "--scores", *FILES[:2], "--score-column", "correct", "-n", "200"
    ).stdout
    assert "95% CI paired boot." in table and "200 resamples of items, seed 12345" in table


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("b_text", "extra", "needle"),
    [
        ("id,score\nx,1\ny,yes\n", (), "b.csv: line 3, score: score 'yes' is not a number"),
        ("id,score\nx,1\ny,NaN\n", (), "b.csv: line 3, score: score is 'NaN'"),
        ("id,score\nx,1\nw,0\n", (), "b.csv: line 3: item 'w' is not in"),
        ("id,score\nx,1\n", (), "item 'y' is missing from"),
        (
            "id,s,c,score\nx,1,p,1\nx,2,q,0\ny,1,q,1\n",
            ("--sample-column", "s", "--cluster-column", "c"),
            "b.csv: line 3: item 'x' is in cluster 'q' here but 'p' at line 2",
        ),
    ],
)
def test_bad_per_item_files_are_refused(
    tmp_path: Path, b_text: str, extra: tuple[str, ...], needle: str
) -> None:
    a_text = "id,s,c,score\nx,1,p,1\ny,1,q,0\n" if extra else "id,score\nx,1\ny,0\n"
    a, b = _write(tmp_path, "a.csv", a_text), _write(tmp_path, "b.csv", b_text)
    assert_refused(("compare", "--scores", a, b, *extra), needle, watch=(tmp_path,))


def test_unknown_harness_version_is_refused(tmp_path: Path) -> None:
    a = write_lm_eval_run(tmp_path / "a", {"arc": [1.0, 0.0]})
    b = write_lm_eval_run(tmp_path / "b", {"arc": [1.0, 1.0]}, version="0.9.1")
    assert_refused(
        ("compare", "--scores", a, b), "written by lm-evaluation-harness 0.9.1", watch=(tmp_path,)
    )
    log = inspect_log(tmp_path / "x.json", ["C", "I"], version=7)
    assert_refused(("compare", "--scores", log, log), "inspect-ai log version 7", watch=(tmp_path,))


def test_scores_with_references_or_one_model_is_refused(tmp_path: Path) -> None:
    a = _write(tmp_path, "a.csv", "id,score\nx,1\ny,0\n")
    assert_refused(
        ("compare", "--scores", a, a, "-r", a),
        "-r/--reference applies to -r/-i system outputs",
        watch=(tmp_path,),
    )
    assert_refused(
        ("compare", "--scores", a, a, "--test", "ar"),
        "-t/--test applies to -r/-i",
        watch=(tmp_path,),
    )
    assert_refused(
        ("compare", "-r", a, "-i", a, a, "--cluster-column", "c"),
        "--cluster-column applies to --scores",
        watch=(tmp_path,),
    )
    assert_refused(("compare", "--scores", a), "at least 2 models", watch=(tmp_path,))
    b = _write(tmp_path, "b.csv", "id,score\nx,0\ny,0\n")
    assert_refused(
        ("compare", "--scores", a, b, "-o", b), "is the same file as --scores", watch=(tmp_path,)
    )
    assert_refused(("compare", "-i", a, a), "compare needs -r REFERENCE", watch=(tmp_path,))


def test_rank_and_all_pairs_give_clusters_and_every_pair(run_cli) -> None:
    res = run_cli(
        "compare",
        "--scores",
        *FILES,
        "--score-column",
        "correct",
        "--cluster-column",
        "passage",
        "--rank",
        "--all-pairs",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    data = json.loads(res.stdout)
    assert [r["cluster"] for r in data["models"]] == [
        2,
        1,
        2,
    ]  # b beats a and c; a and c do not differ
    pairs = {(p["system"], p["vs"]): p for p in data["pairs"]}
    assert len(pairs) == 3 and all(p["correction"] == "holm" for p in pairs.values())
    from evalab.stats.multiple import holm_bonferroni

    raw = [p["p_value"] for p in data["pairs"]]
    assert [p["p_adjusted"] for p in data["pairs"]] == pytest.approx(holm_bonferroni(raw).tolist())
    table = run_cli("compare", "--scores", *FILES, "--score-column", "correct", "--rank").stdout
    assert "rank: significance cluster" in table


def test_the_wide_table_keeps_the_error_bars(run_cli, tmp_path: Path) -> None:
    # two metrics: the wide layout (models x metrics), each mean ± its t interval's half-width
    rng = np.random.default_rng(3)
    files = []
    for m in range(3):
        path = tmp_path / f"m{m}.csv"
        rows = [f"q{i},{int(rng.random() < 0.5 + 0.1 * m)},{rng.random():.4f}" for i in range(200)]
        path.write_text("id,em,f1\n" + "\n".join(rows) + "\n", encoding="utf-8")
        files.append(path)
    args = ("compare", "--scores", *files, "--score-column", "em", "f1", "-q")
    res = run_cli(*args, "-f", "markdown")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("| model | em | f1 |")
    rows = json.loads(run_cli(*args, "-f", "json").stdout)
    base = next(r for r in rows if r["metric"] == "em" and r["baseline"])
    half = (base["naive_ci_high"] - base["naive_ci_low"]) / 2
    assert f"| m0 | {base['score']:.4f} ± {half:.4f} |" in res.stdout
    assert "±: half-width of the 95% t interval on the standard error." in res.stdout
    tex = run_cli(*args, "-f", "latex").stdout
    assert r"$\pm$" in tex and r"\caption{$\pm$: half-width of the 95\% t interval" in tex


def test_a_difference_without_spread_has_no_t_test(tmp_path: Path, run_cli) -> None:
    """A model against its copy (difference 0 on every item) and a model 0.25 above on every
    item: the paired t test is 0/0 or Δ/0, so no p-value and no t interval; the table says
    why in a note, and the other pair keeps its test (and its place in Holm)."""
    a = tmp_path / "a.csv"
    scores = [0.25 * (k % 4) for k in range(40)]
    a.write_text("id,score\n" + "".join(f"i{k},{s}\n" for k, s in enumerate(scores)), "utf-8")
    (tmp_path / "copy.csv").write_bytes(a.read_bytes())
    up = tmp_path / "up.csv"
    up.write_text(
        "id,score\n" + "".join(f"i{k},{s + 0.25}\n" for k, s in enumerate(scores)), "utf-8"
    )
    other = tmp_path / "other.csv"
    other.write_text(
        "id,score\n" + "".join(f"i{k},{(k * 7) % 5 / 4}\n" for k in range(40)), "utf-8"
    )
    files = (a, tmp_path / "copy.csv", up, other)
    res = run_cli("compare", "--scores", *files, "--correct", "holm", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = {Path(r["system"]).stem: r for r in json.loads(res.stdout)}
    for flat in ("copy", "up"):
        r = rows[flat]
        assert r["p_value"] is None and r["p_adjusted"] is None and r["paired_ci_low"] is None
        assert r["significant"] is False and r["paired_se"] == 0.0
    assert rows["up"]["delta"] == pytest.approx(0.25)
    assert 0 < rows["other"]["p_value"] <= rows["other"]["p_adjusted"] <= 1  # Holm of one
    assert rows["other"]["p_adjusted"] == rows["other"]["p_value"]
    table = run_cli("compare", "--scores", *files).stdout
    assert "no spread: the per-item difference is the same on every item" in table
    assert f"{up} − {a} = +0.25" in table


def _clustered(folder: Path, name: str, clusters: int) -> Path:
    """model-a/model-c with a column ``group``: its passages in ``clusters`` clusters."""
    lines = (EXAMPLE / name).read_text(encoding="utf-8").splitlines()
    out = folder / f"{clusters}-{name}"
    body = [f"{ln},{int(ln.split(',')[1][1:]) % clusters}" for ln in lines[1:]]
    out.write_text("\n".join([lines[0] + ",group", *body]) + "\n", encoding="utf-8")
    return out


@pytest.mark.parametrize(("clusters", "warned"), [(5, True), (29, True), (30, False), (200, False)])
def test_few_clusters_give_a_warning(tmp_path: Path, run_cli, clusters: int, warned: bool) -> None:
    files = [_clustered(tmp_path, f"model-{m}.csv", clusters) for m in "ac"]
    res = run_cli(
        "compare", "--scores", *files, "--score-column", "correct", "--cluster-column", "group"
    )
    assert res.exit_code == 0, res.stderr
    line = f"warning: clustered standard errors from {clusters} clusters"
    assert (line in res.stdout) is warned and ("warning" in res.stdout) is warned


def test_one_cluster_is_refused(tmp_path: Path) -> None:
    files = [_clustered(tmp_path, f"model-{m}.csv", 1) for m in "ac"]
    for command in ("compare", "power"):
        assert_refused(
            (command, "--scores", *files, "--score-column", "correct", "--cluster-column", "group"),
            "a clustered standard error needs at least 2 clusters, got 1",
            watch=(tmp_path, EXAMPLE),
        )


@pytest.mark.parametrize(
    ("name", "line", "needle"),
    [
        ("b.csv", "q2,1_0", "b.csv: line 3, score: score '1_0' is not a number"),
        ("b.csv", "q2,1e400", "b.csv: line 3, score: score '1e400': beyond the range of a float"),
        (
            "b.jsonl",
            '{"id": "q2", "score": ' + "9" * 400 + "}",
            "b.jsonl: line 2, score: score '999999999999999999999999'... (400 characters): an integer beyond",
        ),
        (
            "b.jsonl",
            '{"id": "q2", "score": "0x10"}',
            "b.jsonl: line 2, score: score '0x10' is not a number",
        ),
    ],
)
def test_a_score_outside_the_number_grammar_is_refused(tmp_path: Path, name, line, needle) -> None:
    """`1_0` was read as 10 (Python's float) and a 400-digit JSON integer ended in a
    traceback; each is one line naming the file, line and field."""
    a = tmp_path / "a.csv"
    a.write_text("id,score\nq1,1\nq2,0\n", encoding="utf-8")
    b = tmp_path / name
    first = "id,score\nq1,1\n" if name.endswith(".csv") else '{"id": "q1", "score": 1}\n'
    b.write_text(first + line + "\n", encoding="utf-8")
    assert_refused(("compare", "--scores", a, b), needle, watch=(tmp_path,))
