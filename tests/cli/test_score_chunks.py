"""``evalab score``/``compare`` score long corpora SCORE_CHUNK segments at a time: the same
numbers as one call over the whole corpus, and bad input anywhere refused before output."""

from __future__ import annotations

import json

import pytest
from tests.conftest import wmt_file

import evalab.cli.score as score_cli
from evalab.metrics.parallel import stats_table

PAIR = "de-en"


@pytest.fixture
def wmt_inputs(wmt22, tmp_path):
    """Reference A, reference B with every 5th line empty (missing), and two systems."""
    ref_b = [
        "" if i % 5 == 0 else line
        for i, line in enumerate(wmt_file("ref", PAIR, "B").read_text("utf-8").splitlines())
    ]
    missing = tmp_path / "ref_b_missing.txt"
    missing.write_text("".join(f"{line}\n" for line in ref_b), encoding="utf-8")
    ref_a = str(wmt_file("ref", PAIR, "A"))
    hyps = [str(wmt_file("hyp", PAIR, s)) for s in ("Online-B", "Online-A")]
    return ref_a, str(wmt_file("ref", PAIR, "B")), str(missing), hyps


CASES = {
    "bleu-chrf": lambda a, b, m, h: ["score", "-r", a, "-i", *h, "-m", "bleu", "chrf", "chrf++"],
    "two-refs-ter": lambda a, b, m, h: ["score", "-r", a, b, "-i", h[0], "-m", "bleu", "ter"],
    "missing-refs": lambda a, b, m, h: [
        *("score", "-r", a, m, "-i", *h, "-m", "bleu", "chrf"),
        *("--missing-ref", "empty-line"),
    ],
    "jobs": lambda a, b, m, h: ["score", "-r", a, "-i", *h, "-m", "bleu", "chrf", "-j", "2"],
    "ci": lambda a, b, m, h: ["score", "-r", a, "-i", h[0], "-m", "bleu", "--ci", "-n", "50"],
    "paired-bs": lambda a, b, m, h: [
        *("score", "-r", a, "-i", *h, "-m", "bleu", "chrf", "--paired-bs", "-n", "50"),
    ],
    "compare-bs": lambda a, b, m, h: [
        *("compare", "-r", a, "-i", *h, "-m", "bleu", "-t", "bs", "-n", "50"),
    ],
}


@pytest.mark.parametrize("case", CASES)
def test_chunks_give_the_numbers_of_one_call(run_cli, wmt_inputs, monkeypatch, case):
    args = [*CASES[case](*wmt_inputs), "-f", "json", "-q"]
    whole = run_cli(*args)
    assert whole.exit_code == 0, whole.stderr
    monkeypatch.setattr(score_cli, "SCORE_CHUNK", 300)  # about 7 chunks of WMT22 de-en
    chunked = run_cli(*args)
    assert chunked.exit_code == 0, chunked.stderr
    assert json.loads(chunked.stdout) == json.loads(whole.stdout)


def test_segments_file_is_the_same_in_chunks(run_cli, wmt_inputs, monkeypatch, tmp_path):
    ref, _, _, hyps = wmt_inputs
    written = []
    for chunk in (score_cli.SCORE_CHUNK, 300):
        monkeypatch.setattr(score_cli, "SCORE_CHUNK", chunk)
        path = tmp_path / f"segments{chunk}.jsonl"
        res = run_cli("score", "-r", ref, "-i", hyps[0], "-m", "bleu", "--segments", path)
        assert res.exit_code == 0, res.stderr
        written.append(path.read_text("utf-8"))
    assert written[0] == written[1] and written[0].count("\n") > 1000


def test_each_chunk_is_scored_alone(run_cli, wmt_inputs, monkeypatch):
    """Shardable metrics see at most SCORE_CHUNK segments a call, each with empty caches;
    -j 2 still shards the whole corpus over processes."""
    calls: list[tuple[tuple[str, ...], int, int]] = []

    def spy(metrics, systems, refs, jobs=1, cluster=None):
        for metric in metrics.values():
            cache = getattr(metric, "_ref_cache", {})
            calls.append((tuple(metrics), len(next(iter(systems.values()))), len(cache)))
        return stats_table(metrics, systems, refs, jobs, cluster)

    monkeypatch.setattr(score_cli, "stats_table", spy)
    monkeypatch.setattr(score_cli, "SCORE_CHUNK", 500)
    ref, _, _, hyps = wmt_inputs
    assert run_cli("score", "-r", ref, "-i", hyps[0], "-m", "bleu", "chrf", "-q").exit_code == 0
    sizes = [n for _, n, _ in calls]
    assert len(calls) >= 8 and max(sizes) <= 500 and sum(sizes) == 2 * 1984
    assert all(cached == 0 for *_, cached in calls)
    calls.clear()
    assert run_cli("score", "-r", ref, "-i", hyps[0], "-m", "bleu", "-j", "2").exit_code == 0
    assert [n for _, n, _ in calls] == [1984]


@pytest.mark.parametrize(
    ("bad", "fragment"),
    [
        ("short", "lines"),
        ("utf8", "UTF-8"),
    ],
)
def test_bad_input_after_the_first_chunk_is_one_line(run_cli, tmp_path, monkeypatch, bad, fragment):
    monkeypatch.setattr(score_cli, "SCORE_CHUNK", 7)
    ref = tmp_path / "ref.txt"
    hyp = tmp_path / "hyp.txt"
    lines = [f"segment number {i} of the test" for i in range(60)]
    ref.write_text("".join(f"{x}\n" for x in lines), encoding="utf-8")
    data = "".join(f"{x}\n" for x in (lines[:-3] if bad == "short" else lines)).encode()
    if bad == "utf8":
        data = data.replace(b"number 55", b"number \xff55")
    hyp.write_bytes(data)
    out = tmp_path / "out.json"
    res = run_cli("score", "-r", ref, "-i", hyp, "-m", "bleu", "chrf", "-o", out, "-q")
    assert res.exit_code == 2
    lines_err = res.stderr.strip().splitlines()
    assert len(lines_err) == 1 and lines_err[0].startswith("evalab: error: ")
    assert fragment in lines_err[0] and "Traceback" not in res.stderr
    assert res.stdout == "" and not out.exists()
    assert hyp.read_bytes() == data
