"""The demo's held-out metrics come per held-out sequence, so they carry test-set intervals."""

from __future__ import annotations

import pytest

from evalab.ablation.store.per_example import check_per_example
from evalab.examples.sort_digits import entry

TINY = {"steps": 3, "warmup": 1, "eval_size": 16, "d_model": 8, "heads": 2, "d_ff": 8, "layers": 1}


def test_per_example_values_are_per_held_out_sequence_and_average_to_the_metrics(tmp_path):
    out = entry.run(TINY, seed=1, out_dir=str(tmp_path))
    per = out["per_example"]
    assert set(per) == set(entry.PER_EXAMPLE) == {"seq_acc", "digit_acc"}
    assert all(len(v) == TINY["eval_size"] for v in per.values())
    assert all(x in (0.0, 100.0) for x in per["seq_acc"])
    assert all(
        0.0 <= x <= 100.0 and (x * 10 / 100).is_integer() for x in per["digit_acc"]
    )  # seq_len 10
    for name in entry.PER_EXAMPLE:
        assert sum(per[name]) / len(per[name]) == pytest.approx(out[name], rel=1e-12, abs=1e-12)
    # what the ablation engine checks before it stores a run: accepted
    rows = check_per_example(per, {m: out[m] for m in entry.METRICS})
    assert rows["seq_acc"].rows.shape == (TINY["eval_size"], 2)
    # an evaluation-time run of the same model gives per-example values too, in the same order
    again = entry.evaluate({**TINY, **entry.EVAL_DEFAULTS}, 1, str(tmp_path))
    assert again["per_example"] == per
