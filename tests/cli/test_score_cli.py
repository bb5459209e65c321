"""``evalab score`` and ``evalab metrics``: formats, settings, and one-line errors."""

from __future__ import annotations

import json

import pytest
from tests.conftest import read_lines, wmt_file

import evalab

REF = ["the cat sat on the mat", "hello world", "a b c"]
HYP_A = ["the cat on a mat", "hello world", "c b a"]
HYP_B = ["a dog", "goodbye", "a b c"]


@pytest.fixture
def files(tmp_path):
    def put(name: str, lines: list[str] | bytes) -> str:
        p = tmp_path / name
        if isinstance(lines, bytes):
            p.write_bytes(lines)
        else:
            p.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
        return str(p)

    return put


def test_table_output(run_cli, files):
    ref, a, b = files("ref.txt", REF), files("sysA.txt", HYP_A), files("sysB.txt", HYP_B)
    res = run_cli("score", "-r", ref, "-i", a, b, "-m", "rouge1", "rougeL", "f1")
    assert res.exit_code == 0, res.stderr
    lines = res.stdout.splitlines()
    row = next(x for x in lines if "sysA" in x and "rougeL" in x)  # tables show the differing part
    expected = evalab.metric("rougeL").corpus_score(HYP_A, [REF]).score
    assert f"{expected:.4f}" in row
    assert any(x.startswith("rougeL|nrefs:1|tok:rouge|stem:no|beta:1|") for x in lines)
    assert any(x.startswith("f1|nrefs:1|tok:words|") for x in lines)


def test_json_output_fields(run_cli, files):
    ref, a = files("ref.txt", REF), files("sysA.txt", HYP_A)
    res = run_cli(
        "score", "-r", ref, "-i", a, "-m", "rouge2", "exact_match", "accuracy", "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert [r["metric"] for r in rows] == ["rouge2", "exact_match", "accuracy"]
    for r in rows:
        assert {"system", "metric", "score", "scale", "signature"} <= set(r)
        assert r["system"] == "sysA.txt" and r["scale"] == 1.0
        assert r["signature"].endswith(f"version:{evalab.__version__}")
    assert rows[1]["score"] == pytest.approx(1 / 3)
    r2 = evalab.metric("rouge2").corpus_score(HYP_A, [REF])
    assert rows[0]["score"] == r2.score
    assert (rows[0]["precision"], rows[0]["recall"]) == (r2.precision, r2.recall)


def test_latex_output(run_cli, files):
    ref, a = files("ref.txt", REF), files("sys_A.txt", HYP_A)
    res = run_cli("score", "-r", ref, "-i", a, "-m", "f1", "-f", "latex", "-w", "2")
    assert res.exit_code == 0, res.stderr
    assert r"\begin{tabular}" in res.stdout and r"sys\_A.txt & f1 &" in res.stdout
    # the signature is a % comment below the table, not a 300-character caption
    assert "\n% f1|nrefs:1|tok:words|" in res.stdout and r"\caption{f1" not in res.stdout


def test_set_reaches_settings(run_cli, files):
    ref, a = files("ref.txt", ["Running cats"]), files("a.txt", ["the cat runs"])
    base = json.loads(run_cli("score", "-r", ref, "-i", a, "-m", "rouge1", "-f", "json").stdout)[0]
    res = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        a,
        "-m",
        "rouge1",
        "f1",
        "-f",
        "json",
        "--set",
        "use_stemmer=true",
        "--set",
        "f1.tokenize=squad",
        "--set",
        "rouge1.beta=2",
    )
    assert res.exit_code == 0, res.stderr
    stem, f1 = json.loads(res.stdout)
    assert "stem:porter" in stem["signature"] and "beta:2" in stem["signature"]
    assert stem["score"] > base["score"] == 0.0  # 'running' -> 'run', 'cats' -> 'cat'
    assert "tok:squad" in f1["signature"]
    res = run_cli(
        "score", "-r", ref, "-i", a, "-m", "rougeLsum", "-f", "json", "--set", "sentence_sep=<n>"
    )
    assert "split:newline+<n>" in json.loads(res.stdout)[0]["signature"]


def test_multiple_references(run_cli, files):
    r1, r2, a = files("r1.txt", REF), files("r2.txt", HYP_A), files("a.txt", HYP_A)
    res = run_cli("score", "-r", r1, "-r", r2, "-i", a, "-m", "rougeL", "-f", "json")
    row = json.loads(res.stdout)[0]
    assert row["score"] == 1.0 and "nrefs:2" in row["signature"]


def test_stdin_input(run_cli, files):
    ref = files("ref.txt", REF)
    res = run_cli(
        "score",
        "-r",
        ref,
        "-i",
        "-",
        "-m",
        "exact_match",
        "-f",
        "json",
        stdin="\n".join(REF) + "\n",
    )
    assert res.exit_code == 0, res.stderr
    row = json.loads(res.stdout)[0]
    assert row["system"] == "stdin" and row["score"] == 1.0


def test_out_file_written_atomically(run_cli, files, tmp_path):
    ref, a = files("ref.txt", REF), files("a.txt", HYP_A)
    out = tmp_path / "res" / "scores.json"
    res = run_cli("score", "-r", ref, "-i", a, "-m", "f1", "-f", "json", "--out", str(out))
    assert res.exit_code == 0 and res.stdout == ""
    assert json.loads(out.read_text())[0]["metric"] == "f1"


def test_warning_is_one_line(run_cli, files):
    ref, a = files("ref.txt", ["สวัสดีครับ", "ok"]), files("a.txt", ["สวัสดีครับ", "ok"])
    res = run_cli("score", "-r", ref, "-i", a, "-m", "rouge1", "-f", "json")
    assert res.exit_code == 0
    assert res.stderr.splitlines() == [
        "evalab: warning: rouge1: the 'rouge' tokenizer reduced 2 non-empty segment(s) (hypotheses "
        "and references) to no tokens; they score 0 (non-Latin text? use tokenize='unicode')"
    ]


BAD_CASES = [
    # (name, ref lines, hyp lines, extra args, message fragments)
    (
        "line-count",
        REF,
        HYP_A[:2],
        [],
        ["differ in line count", "ref.txt: 3 lines", "hyp.txt: 2 lines"],
    ),
    ("missing", None, HYP_A, [], ["ref.txt: no such file"]),
    (
        "utf8",
        "ok\ncaf\xe9\nx\n".encode("latin-1"),
        HYP_A,
        [],
        ["ref.txt: not valid UTF-8", "line 2"],
    ),
    ("empty", b"", HYP_A, [], ["ref.txt: file is empty"]),
    ("metric", REF, HYP_A, ["-m", "rouge3"], ["unknown metric 'rouge3'", "rouge1"]),
    (
        "tokenizer",
        REF,
        HYP_A,
        ["-m", "rouge1", "--set", "tokenizer=thai"],
        ["unknown tokenizer 'thai'", "unicode"],
    ),
    (
        "setting",
        REF,
        HYP_A,
        ["-m", "rouge1", "--set", "stemmer=yes"],
        ["no selected metric has a setting 'stemmer'"],
    ),
    (
        "value",
        REF,
        HYP_A,
        ["-m", "rouge1", "--set", "use_stemmer=maybe"],
        ["'use_stemmer': cannot read 'maybe' as bool"],
    ),
    ("format", REF, HYP_A, ["-m", "f1", "-f", "xlsx"], ["unknown format 'xlsx'"]),
]


@pytest.mark.parametrize(
    ("name", "ref", "hyp", "extra", "fragments"), BAD_CASES, ids=[c[0] for c in BAD_CASES]
)
def test_bad_input_is_one_line_exit_2_no_output(
    run_cli, files, tmp_path, name, ref, hyp, extra, fragments
):
    ref_path = files("ref.txt", ref) if ref is not None else str(tmp_path / "ref.txt")
    hyp_path = files("hyp.txt", hyp)
    out = tmp_path / "out.json"
    args = [
        "score",
        "-r",
        ref_path,
        "-i",
        hyp_path,
        *(extra or ["-m", "rouge1"]),
        "--out",
        str(out),
    ]
    res = run_cli(*args)
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("evalab: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert "Traceback" not in res.stderr and res.stdout == ""
    assert not out.exists()
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        p for p in ("ref.txt", "hyp.txt") if (tmp_path / p).exists()
    )


def test_wmt22_system_scores(run_cli, wmt22):
    ref = wmt_file("ref", "de-en", "A")
    hyp = wmt_file("hyp", "de-en", "Online-B")
    res = run_cli(
        "score", "-r", ref, "-i", hyp, "-m", "rougeL", "-f", "json", "--set", "use_stemmer=yes"
    )
    row = json.loads(res.stdout)[0]
    expected = evalab.metric("rougeL", use_stemmer=True).corpus_score(
        read_lines(hyp), [read_lines(ref)]
    )
    assert row["system"] == hyp.name and row["score"] == expected.score


# -- evalab metrics ----------------------------------------------------------------------------
def test_metrics_json_lists_settings_and_defaults(run_cli):
    res = run_cli("metrics", "-f", "json")
    assert res.exit_code == 0, res.stderr
    entries = {e["metric"]: e for e in json.loads(res.stdout)}
    for name in ("exact_match", "f1", "accuracy", "rouge1", "rouge2", "rougeL", "rougeLsum"):
        assert entries[name]["scale"] == 1.0
    settings = {s["name"]: s for s in entries["rougeLsum"]["settings"]}
    assert settings["tokenize"]["default"] == "rouge"
    assert settings["use_stemmer"]["default"] is False and settings["use_stemmer"]["type"] == "bool"
    assert settings["beta"]["default"] == 1.0 and "sentence_sep" in settings
    assert {s["name"]: s["default"] for s in entries["f1"]["settings"]} == {"tokenize": "words"}


def test_metrics_give_each_range_where_scores_can_lie(run_cli):
    # not "0-scale" for all: MetricX lies in [0, 25], lower is better; TER passes 100
    entries = {e["metric"]: e for e in json.loads(run_cli("metrics", "-f", "json").stdout)}
    ranges = {name: e["range"] for name, e in entries.items()}
    assert ranges["bleu"] == "[0, 100]" and ranges["ter"] == "[0, inf)"
    assert ranges["metricx"] == "[0, 25]" and ranges["perplexity"] == "[1, inf)"
    assert ranges["comet"] == "(-inf, inf)" and ranges["bertscore"] == "[-1, 1]"
    table = run_cli("metrics").stdout
    row = table[table.index("│ metricx") :].splitlines()
    assert "[0, 25]" in row[0] and "lower is better" in row[1]


def test_metrics_table_prints_help_literally(run_cli):
    res = run_cli("metrics")
    assert res.exit_code == 0, res.stderr
    for text in ("rougeLsum", "exact_match", "use_stemmer = False", "[a-z0-9]"):
        assert text in res.stdout


def test_jobs_give_the_same_numbers(run_cli, files):
    ref = files("ref.txt", REF * 4)
    a = files("a.txt", HYP_A * 4)
    args = ("score", "-r", ref, "-i", a, "-m", "rougeLsum", "f1", "-f", "json")
    one = json.loads(run_cli(*args).stdout)
    two = json.loads(run_cli(*args, "-j", "2").stdout)
    assert one == two
