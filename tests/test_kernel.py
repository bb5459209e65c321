"""The kernel boundary (evalab._kernel): the switch to the fallbacks, packed segments, the token table."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np

import evalab
from evalab import _kernel
from evalab._kernel import Packed, TokenTable
from evalab.metrics import _rouge_pairs

SRC = Path(__file__).resolve().parents[1] / "src"

_PROBE = """
import json, warnings
from evalab import _kernel
import evalab
hyps = ["the cat sat on the mat", "a dog ran", "東京 は 晴れ"]
refs = [["the cat sat on a mat", "the dog ran away", "東京 は 雨"]]
scores = {m: evalab.metric(m).corpus_score(hyps, refs).score for m in ("bleu", "chrf", "ter", "wer", "cer", "rougeL")}
loaded = {k: getattr(_kernel, k) is not None for k in ("mt", "ed", "rouge", "ties")}
gil = {m: evalab.metric(m).releases_gil for m in ("bleu", "ter", "wer")}
print(json.dumps({"scores": scores, "loaded": loaded, "gil": gil}))
"""


def _probe(switch: str | None) -> dict:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    env.pop(_kernel.NO_KERNELS_ENV, None)
    if switch is not None:
        env[_kernel.NO_KERNELS_ENV] = switch
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(out.stdout)


def test_the_switch_turns_every_kernel_off_and_changes_no_number() -> None:
    off = _probe("1")
    assert off["loaded"] == {"mt": False, "ed": False, "rouge": False, "ties": False}
    assert not any(off["gil"].values())  # pure Python holds the GIL: no metric claims otherwise
    default = _probe(None)
    assert default["scores"] == off["scores"]
    if all(default["loaded"].values()):
        assert all(default["gil"].values())
    assert _probe("0")["loaded"] == default["loaded"]  # "0" leaves the kernels on


def test_packed_concat_and_tiled_keep_every_segment() -> None:
    a = Packed.of([[1, 2], [], [3]])
    b = Packed.of([[4], [5, 6, 7], []])
    both = Packed.concat([a, b])
    assert len(both) == 6
    assert [both.segment(s).tolist() for s in range(6)] == [[1, 2], [], [3], [4], [5, 6, 7], []]
    tiled = a.tiled(3)
    assert [tiled.segment(s).tolist() for s in range(len(tiled))] == [[1, 2], [], [3]] * 3
    assert tiled.offsets.dtype == np.int64 and tiled.offsets[-1] == len(tiled.ids)
    arrays = Packed.of([np.array([9, 8], dtype=np.int32), np.zeros(0, dtype=np.int32)])
    assert arrays.ids.tolist() == [9, 8] and arrays.lengths.tolist() == [2, 0]


def test_token_table_ids_and_unknown_tokens() -> None:
    table = TokenTable()
    packed = table.pack([["a", "b"], ["b", "c", "a"]])
    assert packed.ids.tolist() == [0, 1, 1, 2, 0] and packed.offsets.tolist() == [0, 2, 5]
    assert table.pack_known([["c", "zz"]]).ids.tolist() == [2, -1]
    assert table.known(["zz", "a"]).tolist() == [-1, 0]
    assert len(table) == 3  # looking up adds nothing


def test_token_table_empties_itself_between_sessions_only() -> None:
    table, resets = TokenTable(limit=2), []
    with table.session(on_reset=lambda: resets.append(1)):
        first = table.ids(["x", "y", "z"]).tolist()
        with table.session(on_reset=lambda: resets.append(1)):  # nested: ids must not move
            assert table.ids(["z", "x"]).tolist() == [first[2], first[0]]
    assert resets == [] and len(table) == 3
    with table.session(on_reset=lambda: resets.append(1)):  # over the bound, none open
        assert len(table) == 0
        assert table.ids(["z"]).tolist() == [0]
    assert resets == [1]


def test_rouge_scores_unchanged_when_its_table_is_emptied(monkeypatch) -> None:
    hyps = ["the cat sat on the mat", "a quick brown fox"]
    refs = [["the cat lay on the mat", "the quick brown dog"]]
    metric = evalab.metric("rougeL")
    before = metric.stats(hyps, refs).rows.copy()
    monkeypatch.setattr(_rouge_pairs.TABLE, "limit", 0)  # every call now starts afresh
    again = metric.stats(list(reversed(hyps)), [list(reversed(refs[0]))]).rows
    assert len(_rouge_pairs.TABLE) <= 12
    np.testing.assert_array_equal(again[::-1], before)
    np.testing.assert_array_equal(metric.stats(hyps, refs).rows, before)


def test_no_module_but_the_boundary_loads_a_kernel() -> None:
    kernels = ("_mtkernel", "_edkernel", "_rougekernel", "_tieskernel")
    offenders = [
        str(path.relative_to(SRC))
        for path in (SRC / "evalab").rglob("*.py")
        if path.name != "_kernel.py" and any(k in path.read_text() for k in kernels)
        for line in path.read_text().splitlines()
        if ("import" in line or "import_module" in line) and any(k in line for k in kernels)
    ]
    assert offenders == []
