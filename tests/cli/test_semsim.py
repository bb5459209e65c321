"""``evalab semsim`` and ``evalab semsim baseline``; ``bertscore`` in ``evalab score``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from models.semantic_helpers import make_tiny_bert

DATA = Path(__file__).resolve().parents[1] / "data"
TABLE = str(DATA / "vi_seed001_table.tsv")


@pytest.fixture
def seed_files(tmp_path):
    hyp = tmp_path / "hyp.txt"
    ref = tmp_path / "ref.txt"
    hyp.write_text("bố tôi tậu chiếc xe_hơi\ncon mèo ngủ trên ghế\n", encoding="utf-8")
    ref.write_text("cha tôi mua cái ô_tô\ncha tôi mua cái ô_tô\n", encoding="utf-8")
    return str(ref), str(hyp)


@pytest.fixture(scope="module")
def tiny_bert(tmp_path_factory):
    return make_tiny_bert(tmp_path_factory.mktemp("tiny-bert-cli"))


def test_semsim_json_with_static_table(run_cli, seed_files, tmp_path):
    ref, hyp = seed_files
    hyp2 = tmp_path / "hyp2.txt"
    hyp2.write_text("cha tôi mua cái ô_tô\ncha tôi mua cái ô_tô\n", encoding="utf-8")
    res = run_cli("semsim", "-r", ref, "-i", hyp, str(hyp2), "--model", TABLE, "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["system"] for r in rows] == ["hyp.txt", "hyp2.txt"]
    assert rows[0]["fmeasure"] == pytest.approx((0.98258 + 0.39118) / 2, abs=1e-4)
    assert rows[1]["fmeasure"] == pytest.approx(1.0)
    assert rows[0]["signature"].startswith("bertscore|nrefs:1|model:vi_seed001_table.tsv#")


def test_semsim_drop_function_words_and_table(run_cli, seed_files, tmp_path):
    ref, hyp = seed_files
    out = tmp_path / "scores.tsv"
    res = run_cli(
        "semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--drop-function-words", "-o", str(out)
    )
    assert res.exit_code == 0, res.stderr
    lines = out.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "system\tP\tR\tF1"
    f = float(lines[1].split("\t")[3])
    assert f == pytest.approx((0.987 + 0.117) / 2, abs=1e-3)
    assert "fw:dropped" in lines[2]


def test_semsim_explain_terminal_and_html(run_cli, tmp_path):
    hyp = tmp_path / "h.txt"
    ref = tmp_path / "r.txt"
    hyp.write_text("bố tôi <b>&\n", encoding="utf-8")
    ref.write_text("cha mèo\n", encoding="utf-8")
    page = tmp_path / "align.html"
    res = run_cli(
        "semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--explain", "--explain-html", str(page)
    )
    assert res.exit_code == 0, res.stderr
    assert "h.txt, segment 1" in res.stdout
    # greedy matching: both 'bố' and 'tôi' point at 'cha'
    assert "bố" in res.stdout and "0.996" in res.stdout
    html = page.read_text(encoding="utf-8")
    assert html.startswith("<!DOCTYPE html>")
    assert "&lt;b&gt;&amp;" in html and "<b>&" not in html
    # self-contained: no URL (the content security policy tag is http-equiv)
    assert "http://" not in html and "https://" not in html
    assert html.count('class="best-p"') + html.count('class="best-p best-r"') == 3


def test_semsim_multi_reference_takes_max(run_cli, tmp_path):
    hyp = tmp_path / "h.txt"
    r1 = tmp_path / "r1.txt"
    r2 = tmp_path / "r2.txt"
    hyp.write_text("bố tôi\n", encoding="utf-8")
    r1.write_text("mèo ghế\n", encoding="utf-8")
    r2.write_text("bố tôi\n", encoding="utf-8")
    res = run_cli("semsim", "-r", r1, "-r", r2, "-i", hyp, "--model", TABLE, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[0]["fmeasure"] == pytest.approx(1.0)


def test_semsim_with_a_local_encoder_dir(run_cli, tiny_bert, tmp_path):
    hyp = tmp_path / "h.txt"
    ref = tmp_path / "r.txt"
    hyp.write_text("the cat sat on the mat\na red car\n", encoding="utf-8")
    ref.write_text("a cat sat on a mat\nthe red auto\n", encoding="utf-8")
    res = run_cli(
        "semsim", "-r", ref, "-i", hyp, "--model", tiny_bert, "--layer", "1", "--idf", "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    row = json.loads(res.stdout)[0]
    assert "|layer:1|idf:yes|" in row["signature"]
    assert 0 < row["fmeasure"] <= 1


def test_semsim_errors_exit_2_without_output(run_cli, seed_files, tmp_path, tiny_bert):
    ref, hyp = seed_files
    out = tmp_path / "never.json"
    cases = [
        (("--model", str(tmp_path / "nope")), "does not exist"),
        (("--model", str(tmp_path)), "no config.json"),
        (("--model", str(tiny_bert), "--layer", "7"), "layer 7 is out of range"),
        (("--model", TABLE, "--rescale"), "rescale needs a baseline"),
        (
            ("--model", TABLE, "--device", "tpu"),
            "bertscore device 'tpu': expected cpu, cuda or cuda:N",
        ),
    ]
    for extra, message in cases:
        res = run_cli("semsim", "-r", ref, "-i", hyp, *extra, "-o", str(out))
        assert res.exit_code == 2, (extra, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
        if message:
            assert message in res.stderr
        assert not out.exists()
    res = run_cli("semsim", "-i", hyp, "--model", TABLE)
    assert res.exit_code == 2 and "no reference given" in res.stderr


def test_semsim_baseline_subcommand_and_rescale(run_cli, seed_files, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text(
        "# unrelated\nbố tôi\tmèo ghế\ncon chó chạy\tbàn nhà\nmua xe_hơi\tngủ nghỉ\n",
        encoding="utf-8",
    )
    base = tmp_path / "base.tsv"
    res = run_cli("semsim", "baseline", "--model", TABLE, "--pairs", pairs, "--out", base, "-q")
    assert res.exit_code == 0, res.stderr
    lines = base.read_text(encoding="utf-8").splitlines()
    assert lines[0] == "LAYER,P,R,F"
    layer, _, _, f = lines[1].split(",")
    assert layer == "0" and 0 < float(f) < 0.5
    ref, hyp = seed_files
    raw = json.loads(
        run_cli("semsim", "-r", ref, "-i", hyp, "--model", TABLE, "-f", "json").stdout
    )[0]
    res = run_cli(
        "semsim", "-r", ref, "-i", hyp, "--model", TABLE, "--baseline", base, "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    resc = json.loads(res.stdout)[0]
    b = float(f)
    assert resc["fmeasure"] == pytest.approx((raw["fmeasure"] - b) / (1 - b))
    assert "rescale:base.tsv(" in resc["signature"]


def test_semsim_baseline_with_encoder_has_a_row_per_layer(run_cli, tiny_bert, tmp_path):
    pairs = tmp_path / "pairs.tsv"
    pairs.write_text("the cat sat\ta red car\nthe house\tdogs run on the mat\n", encoding="utf-8")
    base = tmp_path / "base.tsv"
    res = run_cli("semsim", "baseline", "--model", tiny_bert, "--pairs", pairs, "--out", base, "-q")
    assert res.exit_code == 0, res.stderr
    assert [line.split(",")[0] for line in base.read_text().splitlines()] == [
        "LAYER",
        "0",
        "1",
        "2",
    ]
    bad = tmp_path / "bad.tsv"
    bad.write_text("only one column\n", encoding="utf-8")
    res = run_cli("semsim", "baseline", "--model", tiny_bert, "--pairs", bad, "--out", base)
    assert res.exit_code == 2 and "candidate<TAB>reference" in res.stderr


def test_bertscore_in_evalab_score(run_cli, seed_files):
    ref, hyp = seed_files
    res = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        hyp,
        "-m",
        "bertscore",
        "--set",
        f"model={TABLE}",
        "-f",
        "json",
        "-j",
        "2",
    )
    assert res.exit_code == 0, res.stderr
    row = json.loads(res.stdout)[0]
    assert row["metric"] == "bertscore"
    assert row["score"] == pytest.approx((0.98258 + 0.39118) / 2, abs=1e-4)
