"""``evalab compare``: formats, JSON fields, Holm, agreement with the API, bad input."""

from __future__ import annotations

import json

import pytest
from tests.conftest import read_lines, write_wmt_subset

from evalab.cli.names import display_names
from evalab.metrics.bleu import BLEU
from evalab.stats import holm_bonferroni, paired_test

SYSTEMS = ["Online-B", "Online-A", "Lan-Bridge"]
N = 150


@pytest.fixture
def files(wmt22, tmp_path):
    """Reference and three systems (first 150 en-de segments), Online-B first (baseline)."""
    return write_wmt_subset(tmp_path, "en-de", SYSTEMS, N)


def compare_json(run_cli, ref, paths, *extra):
    res = run_cli("compare", "-r", ref, "-i", *paths, *extra, "--format", "json")
    assert res.exit_code == 0, res.stderr
    return json.loads(res.stdout)


def test_json_fields_and_values_match_the_api(run_cli, files):
    ref, paths = files
    rows = compare_json(
        run_cli, ref, paths, "-m", "bleu", "chrf", "--n-samples", "200", "--seed", "7"
    )
    assert [(r["metric"], r["system"]) for r in rows] == [
        (m, f"{s}.de") for m in ("bleu", "chrf") for s in SYSTEMS
    ]
    for r in rows:
        for key in (
            "system",
            "metric",
            "score",
            "ci_low",
            "ci_high",
            "mean",
            "half_width",
            "baseline",
            "delta",
            "p_value",
            "p_adjusted",
            "significant",
            "signature",
        ):
            assert key in r
        assert r["ci_low"] <= r["ci_high"]
        assert "|test:bs|n:200|seed:7|conf:0.95|p:centered" in r["signature"]
        assert r["signature"].startswith(f"{r['metric']}|nrefs:1|")
    base = rows[0]
    assert base["baseline"] is True and base["p_value"] is None and base["delta"] == 0.0
    assert all(r["baseline"] is False and 0 < r["p_value"] <= 1 for r in rows[1:3])
    # the same numbers as the library on the same stats rows
    refs = [read_lines(ref)]
    stats = {
        "bleu": {
            f"{s}.de": BLEU().stats(read_lines(p), refs)
            for s, p in zip(SYSTEMS, paths, strict=True)
        }
    }
    api = paired_test("bs", {"bleu": BLEU()}, stats, n_samples=200, seed=7)["bleu"]
    for r, a in zip(rows[:3], api.systems, strict=True):
        assert r["score"] == a.score and r["p_value"] == a.p_value
        assert (r["ci_low"], r["ci_high"]) == (a.ci.low, a.ci.high)
        assert r["delta"] == pytest.approx(r["score"] - base["score"], abs=1e-12)


def test_holm_adjusts_per_metric(run_cli, files):
    ref, paths = files
    rows = compare_json(
        run_cli, ref, paths, "-m", "bleu", "chrf", "--n-samples", "200", "--correct", "holm"
    )
    for metric in ("bleu", "chrf"):
        mine = [r for r in rows if r["metric"] == metric and not r["baseline"]]
        expected = holm_bonferroni([r["p_value"] for r in mine])
        assert [r["p_adjusted"] for r in mine] == expected.tolist()
        assert all(
            r["correction"] == "holm" and r["significant"] == (r["p_adjusted"] < 0.05) for r in mine
        )
    plain = compare_json(run_cli, ref, paths, "-m", "bleu", "--n-samples", "200")
    assert all(r["p_adjusted"] == r["p_value"] for r in plain)


def test_ar_and_seed(run_cli, files):
    ref, paths = files
    rows = compare_json(run_cli, ref, paths, "--test", "ar", "--n-samples", "500", "--ci-n", "100")
    assert "|test:ar|n:500|seed:12345|bs:100|conf:0.95" in rows[1]["signature"]
    assert rows[1]["p_value"] >= 1 / 501
    again = compare_json(run_cli, ref, paths, "--test", "ar", "--n-samples", "500", "--ci-n", "100")
    assert again == rows
    other = compare_json(
        run_cli, ref, paths, "--test", "ar", "--n-samples", "500", "--ci-n", "100", "--seed", "0"
    )
    assert "seed:0" in other[1]["signature"] and other[1]["p_value"] != rows[1]["p_value"]
    no_ci = compare_json(run_cli, ref, paths, "--test", "ar", "--n-samples", "50", "--ci-n", "0")
    assert no_ci[0]["ci_low"] is None


def test_table(run_cli, files, monkeypatch):
    monkeypatch.setenv("COLUMNS", "150")  # rich's width when stdout is not a terminal
    ref, paths = files
    res = run_cli(
        "compare", "-r", ref, "-i", *paths, "-m", "bleu", "--n-samples", "100", "--correct", "holm"
    )
    assert res.exit_code == 0, res.stderr
    out = res.stdout
    for s in SYSTEMS:
        assert s in out
    assert "baseline" in out and "p (Holm)" in out and "±" in out
    assert "bleu|nrefs:1|" in out and "|test:bs|n:100|seed:12345" in out
    assert "Holm-adjusted p < 0.05" in out


def test_latex_and_out_file(run_cli, files, tmp_path):
    ref, paths = files
    target = tmp_path / "table.tex"
    res = run_cli(
        "compare",
        "-r",
        ref,
        "-i",
        *paths,
        "--n-samples",
        "50",
        "--format",
        "latex",
        "--out",
        str(target),
    )
    assert res.exit_code == 0 and res.stdout == ""
    tex = target.read_text(encoding="utf-8")
    assert r"\begin{tabular}" in tex and r"\toprule" in tex and "Online-A" in tex
    # the signature is a % comment below the table, not a 300-character caption
    assert "\n% bleu|nrefs:1" in tex and r"\caption{bleu" not in tex


@pytest.mark.parametrize(
    "extra, message",
    [
        (("--n-samples", "0"), "--n-samples must be at least 1"),
        (("--n-samples", "-5"), "--n-samples must be at least 1"),
        (("--test", "t"), "--test must be one of bs, ar"),
        (("--confidence", "1.5"), "confidence must be strictly between 0 and 1"),
        (("--seed", "-1"), "seed must be a non-negative integer"),
        (("--correct", "bonferroni"), "--correct must be one of none, holm"),
        (("--p-value", "exact"), "--p-value must be one of"),
        (("-m", "nosuch"), "unknown metric"),
    ],
)
def test_bad_options_exit_2(run_cli, files, tmp_path, extra, message):
    ref, paths = files
    target = tmp_path / "out.json"
    res = run_cli("compare", "-r", ref, "-i", *paths, *extra, "--out", str(target))
    assert res.exit_code == 2
    assert message in res.stderr and res.stderr.count("\n") == 1
    assert not target.exists()


def test_bad_inputs_exit_2(run_cli, files, tmp_path):
    ref, paths = files
    short = tmp_path / "short.de"
    short.write_text("ein Satz\n", encoding="utf-8")
    res = run_cli("compare", "-r", ref, "-i", paths[0], str(short))
    assert (
        res.exit_code == 2
        and "short.de: 1 lines" in res.stderr
        and "Online-B.de: 150 lines" in res.stderr
    )
    res = run_cli("compare", "-r", ref, "-i", paths[0])
    assert res.exit_code == 2 and "at least one system" in res.stderr
    res = run_cli("compare", "-r", ref, "-i", paths[0], paths[0])
    assert res.exit_code == 2 and "given twice" in res.stderr


def test_identical_systems_and_empty_lines(run_cli, files, tmp_path):
    ref, paths = files
    copy = tmp_path / "copy.de"
    copy.write_text((tmp_path / "Online-B.de").read_text(encoding="utf-8"), encoding="utf-8")
    blank = tmp_path / "blank.de"
    lines = read_lines(paths[0])
    blank.write_text(
        "\n".join("" if i % 3 == 0 else h for i, h in enumerate(lines)) + "\n", encoding="utf-8"
    )
    for test in ("bs", "ar"):
        rows = compare_json(
            run_cli,
            ref,
            [paths[0], str(copy), str(blank)],
            "--test",
            test,
            "--n-samples",
            "200",
            "-m",
            "bleu",
            "chrf",
        )
        by = {(r["metric"], r["system"]): r for r in rows}
        for m in ("bleu", "chrf"):
            assert by[(m, "copy.de")]["p_value"] == 1.0 and by[(m, "copy.de")]["delta"] == 0.0
            assert by[(m, "blank.de")]["delta"] < 0 and by[(m, "blank.de")]["p_value"] < 0.01


def test_display_names():
    assert display_names(["a/gt.en-de.hyp.X.de", "a/gt.en-de.hyp.Y-2.de"]) == {
        "a/gt.en-de.hyp.X.de": "X",
        "a/gt.en-de.hyp.Y-2.de": "Y-2",
    }
    # names that would become empty or clash stay whole
    assert display_names(["x.de", "x.y.de"]) == {"x.de": "x.de", "x.y.de": "x.y.de"}
    assert display_names(["sys.txt", "sys.txt.bak"]) == {"sys.txt": "txt", "sys.txt.bak": "txt.bak"}
    assert display_names(["only"]) == {"only": "only"}


@pytest.mark.parametrize("test", ["bs", "ar"])
def test_identical_systems_are_qualified(run_cli, tmp_path, test):
    """A system against a copy of the baseline: every resample (trial) gives Δ 0, so the
    p-value and zero-width CI follow from that alone; a note says so, for that system only."""
    lines = [f"the cat sat on mat number {k} today" for k in range(30)]
    ref, base, other = tmp_path / "ref", tmp_path / "base", tmp_path / "third"
    ref.write_text("\n".join(lines) + "\n", encoding="utf-8")
    base.write_text("\n".join(ln.replace("cat", "dog", k % 2) for k, ln in enumerate(lines)) + "\n")
    other.write_text(
        "\n".join(ln.replace("mat", "rug", k % 3 == 0) for k, ln in enumerate(lines)) + "\n"
    )
    copy = tmp_path / "copy"
    copy.write_bytes(base.read_bytes())
    args = (
        "compare",
        "-r",
        ref,
        "-i",
        base,
        copy,
        other,
        "-m",
        "bleu",
        "--test",
        test,
        "-n",
        "200",
    )
    res = run_cli(*args)
    assert res.exit_code == 0, res.stderr
    notes = [ln for ln in res.stdout.splitlines() if ln.startswith("no spread")]
    assert len(notes) == 1 and "on bleu" in notes[0] and "copy Δ +0" in notes[0]
    assert "third" not in notes[0]
    rows = compare_json(
        run_cli, ref, [base, copy, other], "-m", "bleu", "--test", test, "-n", "200"
    )
    assert rows[1]["p_value"] == 1.0 and rows[1]["delta"] == 0.0  # kept, and qualified
