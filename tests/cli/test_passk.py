"""``evalab passk --maj``: maj@k from lm-evaluation-harness self-consistency runs, inspect-ai
epochs and answer columns, equal to the harness's own votes and to a hand count; bad input."""

from __future__ import annotations

import json
import random
from collections import Counter
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused
from tests.items.harness_files import (
    extracted,
    inspect_log,
    voted,
    write_self_consistency_run,
)


def _generations(seed: int, problems: int, n: int, skill: float) -> tuple[list, list]:
    """``problems`` gsm8k-style problems with ``n`` sampled solutions each: right with chance
    ``skill``, else one of two wrong answers, now and then no answer at all."""
    rng = random.Random(seed)
    targets = [str(rng.randint(2, 900)) for _ in range(problems)]
    texts = []
    for t in targets:
        wrong = [str(int(t) + 1), str(int(t) * 2)]
        gens = []
        for _ in range(n):
            u = rng.random()
            if u < 0.05:
                gens.append("Let me think. I am not sure.")
                continue
            a = t if u < skill else rng.choice(wrong)
            gens.append(f"Some steps. The answer is {a}.")
        texts.append(gens)
    return texts, targets


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, tuple[Path, list, list]]:
    out = tmp_path_factory.mktemp("sc")
    runs = {}
    for model, skill, seed in (("org/big", 0.55, 1), ("org/small", 0.35, 2)):
        texts, targets = _generations(seed, 60, 16, skill)
        folder = write_self_consistency_run(out / model.replace("/", "__"), texts, targets, model)
        runs[model] = (folder, texts, targets)
    return runs


def _by(rows: list[dict], model: str, k: int) -> dict:
    return next(r for r in rows if r["model"] == model and r["k"] == k)


def test_maj_from_lm_eval_equals_the_harness_and_a_hand_count(run_cli, runs) -> None:
    folders = [str(f) for f, _, _ in runs.values()]
    res = run_cli("passk", *folders, "--maj", "-n", "200", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert sorted({r["k"] for r in rows}) == [8, 16]
    for model, (folder, texts, targets) in runs.items():
        results = json.loads(next(folder.glob("results_*.json")).read_text())
        harness = results["results"]["gsm8k_cot_self_consistency"]
        for k in (8, 16):
            hand = sum(
                Counter(extracted(t) for t in gens[:k]).most_common(1)[0][0] == target
                for gens, target in zip(texts, targets, strict=True)
            ) / len(targets)
            got = _by(rows, model, k)
            assert got["maj_at_k"] == pytest.approx(hand, abs=1e-12)
            assert got["maj_at_k"] == pytest.approx(harness[f"exact_match,maj@{k}"], abs=1e-12)
            assert got["problems"] == 60 and got["ci_low"] < hand < got["ci_high"]
    small = _by(rows, "org/small", 16)
    assert small["delta"] < 0 and small["p_holm"] < 0.05
    one = json.loads(run_cli("passk", *folders, "--maj", "-k", "8", "-f", "json").stdout)
    assert [r["k"] for r in one] == [8, 8]


def test_maj_from_inspect_epochs_and_an_answer_column(run_cli, tmp_path: Path) -> None:
    rng = random.Random(5)
    problems, epochs = 12, 5
    hand = {}
    logs = []
    for model, skill in (("openai/a", 0.6), ("openai/b", 0.4)):
        answers = [rng.choice("ABCD") if rng.random() > skill else "A" for _ in range(60)]
        values = ["C" if a == "A" else "I" for a in answers]
        logs.append(
            inspect_log(
                tmp_path / f"{model[-1]}.json", values, epochs=epochs, model=model, answers=answers
            )
        )
        per = [[answers[e * problems + i] for e in range(epochs)] for i in range(problems)]
        hand[model] = {k: sum(voted(p[:k]) == "A" for p in per) / problems for k in (3, 5)}
    res = run_cli("passk", *logs, "--maj", "-k", "3", "-k", "5", "-n", "50", "-f", "json")
    assert res.exit_code == 0, res.stderr
    for row in json.loads(res.stdout):
        assert row["maj_at_k"] == pytest.approx(hand[row["model"]][row["k"]], abs=1e-12)
    # by default every model votes over the fewest samples any problem has (3 epochs here)
    short = inspect_log(tmp_path / "c.json", ["C", "I", "I"] * 12, epochs=3, model="openai/c")
    res = run_cli("passk", logs[0], short, "--maj", "-n", "20", "-f", "json")
    assert [r["k"] for r in json.loads(res.stdout)] == [3, 3]
    # the same answers as JSON Lines, samples numbered out of file order
    plain = tmp_path / "plain.jsonl"
    plain.write_text(
        "\n".join(
            json.dumps(r)
            for r in [
                {"id": "q1", "n": 3, "answer": "7", "score": 0},
                {"id": "q1", "n": 1, "answer": "5", "score": 1},
                {"id": "q1", "n": 2, "answer": "7", "score": 0},
                {"id": "q2", "n": 2, "answer": "4", "score": 1},
                {"id": "q2", "n": 1, "answer": "9", "score": 0},
                {"id": "q2", "n": 3, "answer": "4", "score": 1},
            ]
        )
    )
    res = run_cli(
        "passk", plain, "--maj", "--sample-column", "n", "-k", "1", "-k", "3", "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    assert {r["k"]: r["maj_at_k"] for r in json.loads(res.stdout)} == {1: 0.5, 3: 0.5}
    csv = tmp_path / "plain.csv"
    csv.write_text("id,answer,ok\nq1,5,1\nq1,7,0\nq1,7,0\nq2,9,0\nq2,4,1\nq2,4,1\n")
    res = run_cli("passk", csv, "--maj", "--score-column", "ok", "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert [(r["k"], r["maj_at_k"]) for r in json.loads(res.stdout)] == [(3, 0.5)]


def test_maj_refuses_bad_input(runs, tmp_path: Path) -> None:
    folder = str(next(iter(runs.values()))[0])
    assert_refused(
        ("passk", folder, "--maj", "-k", "4"), "no maj@4 filter in the run", watch=(Path(folder),)
    )
    assert_refused(
        ("passk", folder, "--answer-column", "vote"), "give --maj too", watch=(Path(folder),)
    )
    (tmp_path / "half.jsonl").write_text('{"id": "a", "answer": "1", "score": 0.5}\n')
    assert_refused(
        ("passk", "half.jsonl", "--maj"),
        "maj@k needs each answer marked correct (1) or not (0)",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    (tmp_path / "named.csv").write_text("id,n,answer,score\na,first,1,1\n")
    assert_refused(
        ("passk", "named.csv", "--maj", "--sample-column", "n"),
        "named.csv: line 2: sample 'first' is not a number",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    (tmp_path / "few.jsonl").write_text('{"id": "a", "answer": "1", "score": 1}\n')
    assert_refused(
        ("passk", "few.jsonl", "--maj", "-k", "2"),
        "maj@2 needs at least 2 samples per problem",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    (tmp_path / "noanswer.jsonl").write_text('{"id": "a", "score": 1}\n')
    assert_refused(
        ("passk", "noanswer.jsonl", "--maj"),
        "no answer column 'answer'",
        watch=(tmp_path,),
        cwd=tmp_path,
    )
    log = inspect_log(tmp_path / "log.json", ["C", "I"])
    data = json.loads(log.read_text())
    for s in data["samples"]:
        s["scores"]["match"]["answer"] = None
    log.write_text(json.dumps(data))
    assert_refused(
        ("passk", "log.json", "--maj"),
        "the match score records no answer",
        watch=(tmp_path,),
        cwd=tmp_path,
    )


def test_maj_from_an_eval_archive_with_a_named_scorer(run_cli, tmp_path: Path) -> None:
    answers = ["7", "7", "5", "3", "9", "3"]  # two problems, three epochs (epoch-major)
    values = [1, 0, 1, 1, 0, 1]  # problem 1: 7 (right), 5, 9 -> 7; problem 2: 7, 3, 3 -> 3 (right)
    log = inspect_log(tmp_path / "a.eval", values, epochs=3, answers=answers)
    res = run_cli("passk", log, "--maj", "--score-column", "match", "-f", "json")
    assert res.exit_code == 0, res.stderr
    (row,) = json.loads(res.stdout)
    assert (row["k"], row["maj_at_k"]) == (3, 1.0)
    assert_refused(
        ("passk", "a.eval", "--maj", "--score-column", "choice"),
        "no scorer 'choice' (the log has match)",
        watch=(tmp_path,),
        cwd=tmp_path,
    )


def test_the_runs_votes_are_lm_evals_own_filters(run_cli, runs) -> None:
    # lm-eval's filter chain of gsm8k_cot_self_consistency (regex, majority_vote, take_first;
    # take_first_k first for maj@8) on the repeats: the votes the runs hold, and the maj@k
    # evalab reports. lm-eval is no test dependency (it pins torch and datasets): run with
    # pip install --no-deps --target DIR lm-eval==0.4.13 and PYTHONPATH=DIR.
    selection = pytest.importorskip("lm_eval.filters.selection")
    extraction = pytest.importorskip("lm_eval.filters.extraction")
    regex = extraction.RegexFilter(regex_pattern=r"The answer is (\-?[0-9\.\,]*[0-9]+)")

    def vote(resps: list, k: int) -> list[str]:
        first_k = selection.TakeKFilter(k=k).apply(resps, None)
        votes = selection.MajorityVoteFilter().apply(regex.apply(first_k, None), None)
        return list(selection.TakeFirstFilter().apply(votes, None))

    folders = [str(f) for f, _, _ in runs.values()]
    rows = json.loads(run_cli("passk", *folders, "--maj", "-n", "20", "-f", "json").stdout)
    for model, (folder, _, targets) in runs.items():
        text = next(folder.glob("samples_*")).read_text(encoding="utf-8")
        records = [json.loads(line) for line in text.splitlines()]
        for k in (8, 16):
            ours = [r for r in records if r["filter"] == f"maj@{k}"]
            theirs = vote([r["resps"][0] for r in ours], k)
            assert [r["filtered_resps"][0] for r in ours] == theirs
            right = [v == t for v, t in zip(theirs, targets, strict=True)]
            assert _by(rows, model, k)["maj_at_k"] == pytest.approx(sum(right) / len(right))


def test_problems_not_every_model_has_are_left_out_and_said(run_cli, tmp_path: Path) -> None:
    (tmp_path / "a.csv").write_text("id,answer,score\nq1,5,1\nq1,5,1\nq2,4,0\nq2,4,0\nq3,1,1\n")
    (tmp_path / "b.csv").write_text("id,answer,score\nq1,5,1\nq1,6,0\nq2,4,0\nq2,3,1\n")
    res = run_cli("passk", tmp_path / "a.csv", tmp_path / "b.csv", "--maj", "-k", "1")
    assert res.exit_code == 0, res.stderr
    assert (
        "2 problems of" in res.stdout and "problems not every model has, left out: 1" in res.stdout
    )
