"""One way to name a metric: --score-column takes the harness's, evalab's and --segments names,
in power and compare --scores, through the CLI."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest
from tests.items.harness_files import inspect_log, write_gsm8k_run, write_lm_eval_run


@pytest.fixture
def gsm8k(tmp_path: Path) -> tuple[Path, Path]:
    rng = random.Random(1)
    a = [rng.randint(0, 1) for _ in range(40)]
    b = [x if rng.random() < 0.8 else 1 - x for x in a]
    flex = [[max(x, rng.randint(0, 1)) for x in s] for s in (a, b)]
    return (
        write_gsm8k_run(tmp_path / "A", a, flex[0], "meta-llama/Llama-3-8B"),
        write_gsm8k_run(tmp_path / "B", b, flex[1], "mistralai/Mistral-7B"),
    )


@pytest.mark.parametrize(
    "name",
    ["exact_match,strict-match", "gsm8k:exact_match,strict-match", "EXACT_MATCH,strict-match"],
)
def test_power_picks_one_filter_of_a_gsm8k_log_by_any_printed_name(run_cli, gsm8k, name) -> None:
    res = run_cli(
        "power", "--scores", *gsm8k, "--score-column", name, "--delta", "0.05", "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    assert [r["design"] for r in json.loads(res.stdout)] == ["paired", "unpaired"]


def test_a_name_of_several_filters_lists_them_and_an_unknown_name_lists_what_exists(
    run_cli, gsm8k
) -> None:
    res = run_cli("power", "--scores", *gsm8k, "--score-column", "exact_match", "--delta", "0.05")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "gsm8k:exact_match,strict-match, gsm8k:exact_match,flexible-extract" in res.stderr
    res = run_cli("compare", "--scores", *gsm8k, "--score-column", "acc")
    assert res.exit_code == 2 and res.stderr.count("\n") == 1
    assert "no metric 'acc'; its metrics are gsm8k:exact_match,strict-match" in res.stderr


def test_compare_names_models_by_what_the_logs_say(run_cli, gsm8k, tmp_path: Path) -> None:
    res = run_cli("compare", "--scores", *gsm8k, "--score-column", "exact_match", "-f", "json")
    assert res.exit_code == 0, res.stderr
    rows = json.loads(res.stdout)
    assert {r["system"] for r in rows} == {"meta-llama/Llama-3-8B", "mistralai/Mistral-7B"}
    assert {r["metric"] for r in rows} == {
        "gsm8k:exact_match,strict-match",
        "gsm8k:exact_match,flexible-extract",
    }
    logs = [
        inspect_log(tmp_path / f"{m}.json", v, model=f"openai/{m}")
        for m, v in (("gpt-4o", ["C", "I", "C", "I"]), ("gpt-4o-mini", ["C", "C", "C", "I"]))
    ]
    res = run_cli("compare", "--scores", *logs, "-f", "json")
    assert {r["system"] for r in json.loads(res.stdout)} == {"openai/gpt-4o", "openai/gpt-4o-mini"}


def test_name_equals_path_and_an_unmatched_glob(run_cli, gsm8k, tmp_path: Path) -> None:
    a, b = gsm8k
    res = run_cli(
        "compare", "--scores", f"llama={a}", f"mistral={b}", "--score-column",
        "exact_match,strict-match", "-f", "json",
    )  # fmt: skip
    assert res.exit_code == 0, res.stderr
    assert [r["system"] for r in json.loads(res.stdout)] == ["llama", "mistral"]
    res = run_cli("compare", "--scores", str(tmp_path / "runs" / "*.jsonl"))
    assert res.exit_code == 2 and "no file matches this pattern" in res.stderr
    assert "baseline" not in res.stderr


def test_segments_file_metrics_by_name(run_cli, tmp_path: Path) -> None:
    ref, h1, h2, seg = (tmp_path / n for n in ("ref", "h1", "h2", "seg.jsonl"))
    ref.write_text("the cat sat on the mat\na dog barks loudly\nit rains today\nhello world\n")
    h1.write_text("the cat sat on a mat\na dog barks\nit rains\nhello world\n")
    h2.write_text("cat on the mat\ndog barks loudly\nit is raining today\nhello there world\n")
    assert (
        run_cli("score", "-r", ref, "-i", h1, h2, "-m", "chrf,ter", "--segments", seg).exit_code
        == 0
    )
    res = run_cli("power", "--scores", seg, "--score-column", "chrF", "--delta", "1", "-f", "json")
    assert res.exit_code == 0, res.stderr
    res = run_cli("compare", "--scores", seg, "--score-column", "ter", "-f", "json")
    assert {r["metric"] for r in json.loads(res.stdout)} == {"ter"}


def test_a_task_without_the_metric_is_left_out_with_a_note(run_cli, tmp_path: Path) -> None:
    runs = []
    for name in ("m1", "m2"):
        run = write_lm_eval_run(tmp_path / name, {"arc_easy": [1, 0, 1, 1]})
        write_gsm8k_run(tmp_path / f"g{name}", [1, 0, 1, 0], [1, 1, 1, 0], name)
        for f in (tmp_path / f"g{name}").glob("samples_*"):
            f.rename(run / f.name)
        runs.append(run)
    res = run_cli("compare", "--scores", *runs, "--score-column", "acc", "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert {r["metric"] for r in json.loads(res.stdout)} == {"arc_easy:acc"}
    assert "task(s) gsm8k have no acc; compared on the other tasks" in res.stderr


def test_a_jsonl_table_without_the_column_lists_its_keys(run_cli, tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / f"{name}.jsonl").write_text('{"id": 1, "acc": 1}\n{"id": 2, "acc": 0}\n')
    res = run_cli("compare", "--scores", tmp_path / "a.jsonl", tmp_path / "b.jsonl")
    assert res.exit_code == 2 and "no score column 'score' (there: id, acc)" in res.stderr


def test_a_metric_some_models_lack_is_left_out_with_a_note(run_cli, tmp_path: Path) -> None:
    both = write_lm_eval_run(tmp_path / "m1", {"arc_easy": [1, 0, 1, 1], "piqa": [1, 1, 0, 0]})
    one = write_lm_eval_run(tmp_path / "m2", {"arc_easy": [1, 1, 1, 0]})
    res = run_cli("compare", "--scores", both, one, "--score-column", "acc", "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert {r["metric"] for r in json.loads(res.stdout)} == {"arc_easy:acc"}
    assert (
        "piqa:acc: not scored for every model; compared on the metrics every model has"
        in res.stderr
    )
    res = run_cli(
        "compare", "--scores", one, write_lm_eval_run(tmp_path / "m3", {"piqa": [1, 0, 1, 0]})
    )
    assert res.exit_code == 2 and "no metric is scored for every model" in res.stderr
