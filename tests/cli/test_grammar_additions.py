"""The additive CLI grammar: ``--version``, ``score --segments``, unambiguous names in
``compare`` and a ``requires-python`` that matches the code, through the real entry point."""

from __future__ import annotations

import json
import subprocess
import sys
import tomllib

import pytest
from tests.cli.test_grammar import command_paths
from tests.conftest import REPO, read_lines, wmt_file

import evalab
from evalab.cli.names import display_names

N = 60


def test_version_through_the_console_entry_point():
    res = subprocess.run(
        [sys.executable, "-m", "evalab", "--version"], capture_output=True, text=True, check=False
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout == f"evalab {evalab.__version__}\n"
    assert res.stderr == ""


def test_version_is_listed_in_the_root_help(run_cli):
    res = run_cli("--help")
    assert res.exit_code == 0 and "--version" in res.stdout


@pytest.fixture
def en_de(wmt22, tmp_path):
    """Reference A and two systems of WMT22 en-de (first N segments) under their WMT names."""
    ref = tmp_path / "generaltest2022.en-de.ref.A.de"
    ref.write_text(
        "\n".join(read_lines(wmt_file("ref", "en-de", "A"))[:N]) + "\n", encoding="utf-8"
    )
    hyps = []
    for system in ("Online-A", "Online-B"):
        p = tmp_path / f"generaltest2022.en-de.hyp.{system}.de"
        p.write_text(
            "\n".join(read_lines(wmt_file("hyp", "en-de", system))[:N]) + "\n", encoding="utf-8"
        )
        hyps.append(p)
    return ref, hyps


def test_segments_writes_one_line_per_system_metric_and_segment(run_cli, en_de, tmp_path):
    sacrebleu = pytest.importorskip("sacrebleu")
    ref, hyps = en_de
    seg = tmp_path / "segments.jsonl"
    res = run_cli("score", "-r", ref, "-i", *hyps, "-m", "bleu", "chrf", "--segments", seg)
    assert res.exit_code == 0, res.stderr
    lines = [json.loads(line) for line in seg.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == 2 * 2 * N
    assert [(r["system"], r["metric"]) for r in lines[::N]] == [
        (h.name, m) for h in hyps for m in ("bleu", "chrf")
    ]
    refs = read_lines(ref)
    for row in lines:
        hyp = read_lines(hyps[0] if row["system"] == hyps[0].name else hyps[1])[row["segment"] - 1]
        peer = sacrebleu.sentence_bleu if row["metric"] == "bleu" else sacrebleu.sentence_chrf
        assert row["score"] == pytest.approx(peer(hyp, [refs[row["segment"] - 1]]).score, abs=1e-9)
    first = lines[0]
    assert list(first)[:4] == ["system", "metric", "segment", "score"]
    assert first["segment"] == 1 and "counts" in first and "eff:yes" in first["signature"]


def test_segments_agree_with_the_api(run_cli, en_de, tmp_path):
    ref, hyps = en_de
    seg = tmp_path / "seg.jsonl"
    res = run_cli("score", "-r", ref, "-i", hyps[0], "-m", "rougeL", "--segments", seg)
    assert res.exit_code == 0, res.stderr
    api = evalab.metric("rougeL").segment_scores(read_lines(hyps[0]), [read_lines(ref)])
    got = [json.loads(line) for line in seg.read_text(encoding="utf-8").splitlines()]
    assert [r["score"] for r in got] == [s.score for s in api]
    assert [r["precision"] for r in got] == [s.precision for s in api]


@pytest.mark.parametrize("target", ["ref", "hyp", "out", "dir"])
def test_segments_refuses_to_overwrite_an_input_or_the_out_file(run_cli, en_de, tmp_path, target):
    ref, hyps = en_de
    before = {p: p.read_bytes() for p in (ref, *hyps)}
    out = tmp_path / "out.txt"
    seg = {"ref": ref, "hyp": hyps[1], "out": out, "dir": tmp_path}[target]
    res = run_cli("score", "-r", ref, "-i", *hyps, "--segments", seg, "-o", out)
    assert res.exit_code == 2
    assert res.stderr.startswith("evalab: error: --segments") and len(res.stderr.splitlines()) == 1
    assert {p: p.read_bytes() for p in before} == before
    assert not out.exists()


def test_compare_keeps_online_a_and_online_b_apart(run_cli, en_de):
    ref, hyps = en_de
    res = run_cli("compare", "-r", ref, "-i", *hyps, "-m", "bleu", "--n-samples", "50", "-q")
    assert res.exit_code == 0, res.stderr
    names = [line.split("│")[1].strip() for line in res.stdout.splitlines() if line.startswith("│")]
    assert names == ["Online-A", "Online-B"]


@pytest.mark.parametrize(
    ("names", "shown"),
    [
        (["gt.en-de.hyp.Online-A.de", "gt.en-de.hyp.Online-B.de"], ["Online-A", "Online-B"]),
        (["out/sys_1.txt", "out/sys_2.txt"], ["sys_1", "sys_2"]),
        (["a/run-1.txt", "b/run-1.txt"], ["a", "b"]),
        (["x.de", "x.y.de"], ["x.de", "x.y.de"]),
    ],
)
def test_display_names_cut_only_at_dots_and_slashes(names, shown):
    assert list(display_names(names).values()) == shown


def test_display_names_are_always_unique_and_non_empty():
    from hypothesis import given
    from hypothesis import strategies as st

    part = st.text(alphabet="ab-_./", min_size=1, max_size=6)

    @given(st.lists(part, min_size=2, max_size=5, unique=True))
    def check(names):
        shown = display_names(names)
        assert len(set(shown.values())) == len(names)
        assert all(shown.values())

    check()


def test_requires_python_allows_only_versions_with_tomllib():
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    uses_tomllib = any(
        "import tomllib" in p.read_text(encoding="utf-8") for p in (REPO / "src").rglob("*.py")
    )
    if uses_tomllib:
        assert project["requires-python"] == ">=3.11"


@pytest.mark.parametrize("path", command_paths(), ids=" ".join)
def test_every_command_has_help_through_the_entry_point(run_cli, path):
    res = run_cli(*path, "--help")
    assert res.exit_code == 0, res.stderr
    assert "Usage" in res.stdout and f"evalab {' '.join(path)}" in res.stdout
