"""MetricX (``metricx``): parity with Google's ``metricx23``/``metricx24`` ``predict`` (the
input texts, the token ids and every segment's score within 1e-5), both versions, every
mode, two sizes, inputs past the length limit; and the refusals.

The oracle runs in a virtual environment of its own (``metricx_oracle``), on tiny random
checkpoints built there with its own ``MT5ForRegression`` (cached in
``~/.cache/evalab-tests``, as its predictions are).
"""

from __future__ import annotations

import random
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from evalab.errors import InputError, SettingsError
from evalab.metrics.metricx import MetricX
from metrics import metricx_oracle

pytest.importorskip("torch")
pytest.importorskip("sentencepiece")
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
import make_tiny_metricx

#: (version, d_model, layers): both versions, two sizes
SPECS = [
    metricx_oracle.tiny_spec(24, seed=1, d_model=32, layers=1),
    metricx_oracle.tiny_spec(24, seed=2, d_model=64, layers=2),
    metricx_oracle.tiny_spec(23, seed=3, d_model=32, layers=1),
    metricx_oracle.tiny_spec(23, seed=4, d_model=64, layers=2),
]
MODES = {24: ("hybrid", "ref", "qe"), 23: ("ref", "qe")}
#: segment scores of Google's code and ours: float32 in batches of other shapes
TOLERANCE = 1e-5
#: random cases in the default suite (one oracle process scores them all, cached)
N_CASES = 5
SLOW_CASES = 30
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def checkpoints() -> list[Path]:
    try:
        return metricx_oracle.make_checkpoints(SPECS)
    except metricx_oracle.OracleUnavailable as exc:
        pytest.skip(f"MetricX oracle venv cannot be built (offline?): {exc}")


def _segment(rng: random.Random, longest: int) -> str:
    text = make_tiny_metricx.words(rng, rng.randint(0, longest))
    odd = ["", "  two  spaces ", "naïve café – ok", "tab\there", "<extra_id_3> x", "日本語です。"]
    return rng.choice(odd) if rng.random() < 0.1 else text


def _case(seed: int) -> dict[str, Any]:
    """A random setting: checkpoint, mode, 1-4 systems sharing sources and references,
    segments, a length limit that many inputs reach (sometimes the version's default),
    batch sizes."""
    rng = random.Random(seed)
    model = seed % len(SPECS)
    version = SPECS[model]["version"]
    n = rng.randint(3, 16)
    src = [_segment(rng, 40) for _ in range(n)]
    ref = [_segment(rng, 40) for _ in range(n)]
    systems = [[_segment(rng, 40) for _ in range(n)] for _ in range(rng.randint(1, 4))]
    systems[0][0] = make_tiny_metricx.words(rng, 400)  # past every limit
    if len(systems) > 1:
        systems[1][1] = systems[0][1]  # the same input twice: scored once
    return {
        "model": model,
        "version": version,
        "mode": rng.choice(MODES[version]),
        "src": src,
        "ref": ref,
        "systems": systems,
        "max_input_length": rng.choice([None, 24, 48, 96]),
        "batch_size": rng.choice([1, 3, 8, 64]),
    }


def _oracle_job(case: dict[str, Any], checkpoint: Path) -> dict[str, Any]:
    mode, version = case["mode"], case["version"]
    # Google's predict reads a source field always (MetricX-24 without one: the empty string)
    src = case["src"] if mode != "ref" else [""] * len(case["src"])
    return {
        "checkpoint": str(checkpoint),
        "version": version,
        "qe": mode == "qe",
        "max_input_length": case["max_input_length"] or {23: 1024, 24: 1536}[version],
        "batch_size": 1,  # its Trainer stacks unpadded inputs: batch 1 (its README's)
        "systems": [
            [
                {"source": s, "hypothesis": h, "reference": r}
                for s, h, r in zip(src, hyps, case["ref"], strict=True)
            ]
            for hyps in case["systems"]
        ],
    }


def _ours(case: dict[str, Any], checkpoint: Path) -> MetricX:
    metric = MetricX(
        model=str(checkpoint),
        version=case["version"],
        mode=case["mode"],
        max_input_length=case["max_input_length"],
        batch_size=case["batch_size"],
        progress=False,
    )
    return metric.with_sources(case["src"]) if metric.uses_source else metric


def _runs(seeds: range, checkpoints: list[Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    cases = [_case(seed) for seed in seeds]
    jobs = [_oracle_job(c, checkpoints[c["model"]]) for c in cases]
    return list(zip(cases, metricx_oracle.predict(jobs), strict=True))


@pytest.fixture(scope="session")
def parity_runs(checkpoints: list[Path]) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    return _runs(range(N_CASES), checkpoints)


def _check_parity(case: dict[str, Any], theirs: dict[str, Any], checkpoints: list[Path]) -> None:
    metric = _ours(case, checkpoints[case["model"]])
    refs = [case["ref"]] if metric.uses_references else []
    stats = metric.stats_many(case["systems"], refs)
    limit = metric.max_input_length
    for hyps, rows, oracle in zip(case["systems"], stats, theirs["systems"], strict=True):
        texts = metric.input_texts(hyps, refs)
        assert texts == oracle["inputs"]
        assert metric.model().token_ids(texts, limit) == oracle["input_ids"]
        ours = rows.rows[:, 0]
        np.testing.assert_allclose(ours, oracle["predictions"], rtol=0, atol=TOLERANCE)
        assert rows.rows[:, 1].tolist() == [1.0] * len(hyps)
    if case["max_input_length"] is not None:  # the long hypothesis reached the limit
        assert len(theirs["systems"][0]["input_ids"][0]) == limit - 1


@pytest.mark.parametrize("k", range(N_CASES))
def test_parity_with_google_metricx(k: int, parity_runs, checkpoints) -> None:
    _check_parity(*parity_runs[k], checkpoints)


@pytest.mark.slow
def test_parity_sweep(checkpoints) -> None:
    """Every version, mode and size, many more segments and systems."""
    runs = _runs(range(100, 100 + SLOW_CASES), checkpoints)
    assert {(c["model"], c["mode"]) for c, _ in runs} >= {
        (m, mode) for m, s in enumerate(SPECS) for mode in MODES[s["version"]]
    }
    for case, theirs in runs:
        _check_parity(case, theirs, checkpoints)


def test_the_tiny_checkpoints_spread_their_scores(parity_runs) -> None:
    """The fitted score row keeps most scores inside (0, 25): parity is not 0 == 0."""
    scores = np.concatenate(
        [s["predictions"] for _, theirs in parity_runs for s in theirs["systems"]]
    )
    inside = (scores > 0) & (scores < 25)
    assert inside.mean() > 0.5, scores
    assert len(np.unique(scores[inside])) > 10


# -- the command line: scores, the direction, refusals -------------------------------------


@pytest.fixture(scope="session")
def tiny() -> Path:
    """A tiny MetricX-24 checkpoint (built in evalab's venv, cached), under a name that says
    its version."""
    folder = metricx_oracle.tiny_checkpoint(0)
    named = folder.parent / "links" / "tiny-metricx-24"
    if not named.exists():
        named.parent.mkdir(parents=True, exist_ok=True)
        named.symlink_to(folder, target_is_directory=True)
    return named


@pytest.fixture
def files(tmp_path: Path) -> dict[str, Path]:
    rng = random.Random(3)
    src = [make_tiny_metricx.words(rng, 8) for _ in range(12)]
    ref = [make_tiny_metricx.words(rng, 8) for _ in range(12)]
    good = list(ref)  # the reference itself, and another system far from it
    bad = [make_tiny_metricx.words(rng, 3) for _ in range(12)]
    out = {}
    for name, lines in {"src": src, "ref": ref, "good": good, "bad": bad}.items():
        out[name] = tmp_path / f"{name}.txt"
        out[name].write_text("\n".join(lines) + "\n", encoding="utf-8")
    return out


def test_cli_scores_with_the_signature_and_lower_is_better(run_cli, tiny, files) -> None:
    r = run_cli(
        "score", "-m", "metricx", "--model", tiny, "--source", files["src"], "-r", files["ref"],
        "-i", files["good"], files["bad"], "-f", "json", "-q",
    )  # fmt: skip
    assert r.exit_code == 0, r.stderr
    import json

    scores = {row["system"]: row for row in json.loads(r.stdout)}
    assert {s["higher_is_better"] for s in scores.values()} == {False}
    signature = scores["good.txt"]["signature"]
    assert "|metricx:24|mode:hybrid|maxlen:1536|" in signature
    assert f"model:{metricx_oracle.tiny_checkpoint(0).name}@" in signature
    ours = MetricX(model=str(tiny), progress=False).with_sources(
        files["src"].read_text().split("\n")[:-1]
    )
    hyps = files["good"].read_text().split("\n")[:-1]
    refs = [files["ref"].read_text().split("\n")[:-1]]
    assert scores["good.txt"]["score"] == pytest.approx(
        ours.corpus_score(hyps, refs).score, abs=1e-9
    )


@pytest.mark.parametrize(
    ("settings", "drop", "message"),
    [
        (["--set", "metricx.model=/nonexistent/metricx"], (), "metricx.model is not a folder"),
        (
            ["--set", "metricx.mode=hybrid"],
            ("--source",),
            "reads the source segments: pass --source SRC, or --set metricx.mode=ref",
        ),
        (
            ["--set", "metricx.mode=hybrid"],
            ("-r",),
            "(MetricX-24, mode hybrid) reads a reference: pass -r REF, or --set metricx.mode=qe",
        ),
        (["--set", "metricx.mode=ref"], ("-r", "--source"), "reads a reference: pass -r REF"),
        (
            ["--set", "metricx.mode=qe"],
            ("-r", "--source"),
            "(MetricX-24, mode qe) reads the source segments: pass --source SRC",
        ),
        (
            [],
            ("-r", "--source"),
            "mode auto) reads the source segments, a reference or both: pass --source SRC",
        ),
        (["--set", "metricx.mode=ref"], (), "reads no source: drop --source"),
        (
            ["--set", "metricx.version=23", "--set", "metricx.mode=hybrid"],
            (),
            "mode hybrid is MetricX-24's",
        ),
        (["--set", "metricx.version=25"], (), "version must be 23 or 24"),
        (["--set", "metricx.max_input_length=1"], (), "max_input_length must be at least 2"),
    ],
)
def test_cli_refuses_in_one_line(run_cli, tiny, files, settings, drop, message) -> None:
    args = {"--source": [files["src"]], "-r": [files["ref"]]}
    given = [x for k, v in args.items() if k not in drop for x in (k, *v)]
    if settings[:2] != ["--set", "metricx.model=/nonexistent/metricx"]:
        settings = ["--set", f"metricx.model={tiny}", *settings]
    r = run_cli("score", "-m", "metricx", *settings, *given, "-i", files["good"], "-q")
    assert r.exit_code == 2
    assert r.stdout == ""
    assert len(r.stderr.strip().splitlines()) == 1 and message in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def _scored(run_cli, *args) -> dict[str, dict[str, Any]]:
    """``score -f json`` rows by system (exit 0 checked)."""
    import json

    r = run_cli("score", "-m", "metricx", *args, "-f", "json", "-q")
    assert r.exit_code == 0, r.stderr
    return {row["system"]: row for row in json.loads(r.stdout)}


def test_quality_estimation_needs_no_reference(run_cli, tiny, files) -> None:
    """Google's ``predict.py --qe``: ``-r`` may be left out where the mode reads none, and
    given it is ignored (the same rows and signature); MetricX-24's ``auto`` reads what is
    given, so without ``-r`` it is ``qe`` and with ``-r`` alone ``ref``."""
    model = ("--set", f"metricx.model={tiny}")
    src, hyps = ("--source", files["src"]), ("-i", files["good"], files["bad"])
    qe = _scored(run_cli, *model, "--set", "metricx.mode=qe", *src, *hyps)
    assert "metricx|nrefs:unused|src:yes|" in qe["good.txt"]["signature"]
    assert "|mode:qe|" in qe["good.txt"]["signature"]
    assert (
        _scored(run_cli, *model, "--set", "metricx.mode=qe", *src, "-r", files["ref"], *hyps) == qe
    )
    assert _scored(run_cli, *model, *src, *hyps) == qe  # auto, no -r: qe
    ref = _scored(run_cli, *model, "--set", "metricx.mode=ref", "-r", files["ref"], *hyps)
    assert "metricx|nrefs:1|src:no|" in ref["good.txt"]["signature"]
    assert _scored(run_cli, *model, "-r", files["ref"], *hyps) == ref  # auto, no --source: ref
    assert qe["good.txt"]["score"] != ref["good.txt"]["score"]


@pytest.mark.parametrize(
    ("command", "extra", "message"),
    [
        ("score", ("-m", "metricx,bleu"), "no reference given; pass -r REF (several: -r REF1 REF2)"),
        ("compare", ("-m", "metricx,bleu"), "compare needs -r REFERENCE and -i BASELINE SYS1 ... (or --scores FILES)"),
        ("compare", ("-m", "metricx", "-f", "html"), "compare -f html shows each segment's reference beside the systems: pass -r REF"),
    ],
)  # fmt: skip
def test_a_reference_metric_without_references_is_refused_as_before(
    run_cli, tiny, files, tmp_path, command, extra, message
) -> None:
    """A metric that needs references (bleu) beside a QE one: the line it always gave."""
    out = tmp_path / "out.txt"
    r = run_cli(
        command, *extra, "--set", f"metricx.model={tiny}", "--source", files["src"],
        "-i", files["good"], files["bad"], "-q", "-o", out,
    )  # fmt: skip
    assert r.exit_code == 2 and r.stdout == "" and not out.exists()
    assert r.stderr == f"evalab: error: {message}\n"


def test_compare_without_references(run_cli, tiny, files) -> None:
    """``compare`` of QE scores: the paired test on the rows ``score`` gives, no ``-r``."""
    import json

    model = ("-m", "metricx", "--set", f"metricx.model={tiny}", "--source", files["src"])
    hyps = ("-i", files["good"], files["bad"], "-q", "-n", "100", "-f", "json")
    r = run_cli("compare", *model, *hyps)
    assert r.exit_code == 0, r.stderr
    with_refs = run_cli("compare", *model, "--set", "metricx.mode=qe", "-r", files["ref"], *hyps)
    assert with_refs.exit_code == 0, with_refs.stderr
    assert json.loads(r.stdout) == json.loads(with_refs.stdout)
    qe = _scored(
        run_cli, "--set", f"metricx.model={tiny}", "--source", files["src"], "-i", files["bad"]
    )
    (row,) = [x for x in json.loads(r.stdout) if x["system"] == "bad.txt"]
    assert row["score"] == pytest.approx(qe["bad.txt"]["score"], abs=1e-12)
    assert "metricx|nrefs:unused|src:yes|" in row["signature"]


def test_auto_builds_the_text_predict_py_builds_for_the_sides_given(tiny) -> None:
    """Without a reference, MetricX-24's auto reads ``source: S candidate: H``, as Google's
    ``predict.py --qe`` builds it (the README: hybrid checkpoints, reference left empty);
    without a source ``source:  candidate: H reference: R``, its README's empty source."""
    auto = MetricX(model=str(tiny), progress=False)
    assert auto.input_texts(["H"], [["R"]]) == ["source:  candidate: H reference: R"]
    bound = auto.with_sources(["S"])
    assert bound.input_texts(["H"], []) == ["source: S candidate: H"]
    assert bound.input_texts(["H"], [["R"]]) == ["source: S candidate: H reference: R"]
    assert "|nrefs:unused|src:yes|" in bound.signature_for(0)
    assert "|mode:qe|" in bound.signature_for(0)
    assert "|mode:hybrid|" in bound.signature_for(1)
    with pytest.raises(InputError, match="reads the source segments, a reference or both"):
        auto.stats(["H"], [])


def test_refuses_a_model_of_another_kind_and_a_missing_tokenizer(tmp_path: Path, tiny) -> None:
    bert = tmp_path / "bert"
    bert.mkdir()
    (bert / "config.json").write_text('{"model_type": "bert", "vocab_size": 30522}')
    with pytest.raises(InputError, match="MetricX is an mT5"):
        MetricX(model=str(bert), version=24)
    bare = tmp_path / "metricx-24-bare"
    bare.mkdir()
    (bare / "config.json").write_text((tiny / "config.json").read_text())
    with pytest.raises(InputError, match=r"metricx\.tokenizer=google/mt5-xl"):
        MetricX(model=str(bare))
    with pytest.raises(SettingsError, match="which MetricX"):
        MetricX(model=str(metricx_oracle.tiny_checkpoint(0)))


def test_a_missing_reference_is_refused(tiny) -> None:
    metric = MetricX(model=str(tiny), mode="ref", progress=False)
    with pytest.raises(InputError, match="has no reference"):
        metric.corpus_score(["a", "b"], [["a", None]])


def test_input_texts_per_version_and_mode(tiny) -> None:
    """The layouts of Google's predict.py (the parity tests compare them with its own)."""
    cases = {
        (24, "hybrid"): "source: S candidate: H reference: R",
        (24, "ref"): "source:  candidate: H reference: R",
        (24, "qe"): "source: S candidate: H",
        (23, "ref"): "candidate: H reference: R",
        (23, "qe"): "candidate: H source: S",
    }
    for (version, mode), text in cases.items():
        metric = MetricX(model=str(tiny), version=version, mode=mode).with_sources(["S"])
        assert metric.input_texts(["H"], [["R"]]) == [text]
