"""``evalab ppl``: both sources, the three formats, and bad input (exit 2, one line)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest

import evalab.nll as L

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

REPO = Path(__file__).resolve().parents[2]
LINES = [
    "Der schnelle braune Fuchs.",
    "Grüße aus Köln!",
    "",
    "Ein dritter Satz, etwas länger als die anderen.",
]


@pytest.fixture(autouse=True)
def one_thread():
    # torch's thread pool thrashes on a loaded shared machine; one thread is faster here
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)


@pytest.fixture(scope="module")
def tiny_lm(tmp_path_factory) -> Path:
    spec = importlib.util.spec_from_file_location(
        "make_tiny_lm", REPO / "benchmarks" / "make_tiny_lm.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tiny_lm(tmp_path_factory.mktemp("lm") / "tiny-gpt2", seed=0, positions=64)


@pytest.fixture
def text_file(tmp_path) -> Path:
    path = tmp_path / "text.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def test_model_json_report(run_cli, tiny_lm, text_file):
    res = run_cli(
        "ppl", "--model", tiny_lm, "-i", text_file, "--max-length", 32, "--stride", 16, "-f", "json"
    )
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    for key in (
        "perplexity",
        "nats_per_token",
        "bits_per_token",
        "tokens",
        "bits_per_byte",
        "word_perplexity",
        "signature",
    ):
        assert key in rep
    from evalab.models.causal_lm import CausalLMScorer

    text = "\n".join(LINES)  # the whole file is one document, final newline dropped
    doc = CausalLMScorer(tiny_lm, max_length=32, stride=16).score_texts([text])[0]
    assert rep["tokens"] == doc.tokens == len(text.encode("utf-8")) - 1  # byte-level, no BOS
    assert rep["nats_per_token"] == pytest.approx(doc.nll / doc.tokens, rel=1e-9)
    assert rep["perplexity"] == pytest.approx(math.exp(rep["nats_per_token"]))
    assert rep["bits_per_token"] == pytest.approx(rep["nats_per_token"] / math.log(2))
    assert rep["bits_per_byte"] == pytest.approx(doc.nll / (L.count_bytes(text) * math.log(2)))
    assert rep["word_perplexity"] == pytest.approx(math.exp(doc.nll / L.count_words(text)))
    assert rep["signature"].startswith(
        "perplexity|per:token|mean:tokens|lm:tiny-gpt2|window:32|stride:16|bos:no|"
    )
    assert "|docs:file|" in rep["signature"]


def test_lines_documents_bos_and_per_document(run_cli, tiny_lm, text_file):
    res = run_cli(
        "ppl",
        "--model",
        tiny_lm,
        "-i",
        text_file,
        "--documents",
        "lines",
        "--bos",
        "--per-document",
        "--mean",
        "documents",
        "--batch-size",
        3,
        "-f",
        "json",
    )
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    docs = rep["per_document"]
    assert [d["tokens"] for d in docs] == [
        len(s.encode("utf-8")) for s in LINES
    ]  # BOS: every byte scored
    scored = [d for d in docs if d["tokens"]]
    assert rep["perplexity"] == pytest.approx(sum(d["perplexity"] for d in scored) / len(scored))
    assert docs[2]["perplexity"] is None  # the empty line has nothing to score
    assert (
        "bos:yes" in rep["signature"]
        and "mean:documents" in rep["signature"]
        and "docs:lines" in rep["signature"]
    )


def test_markdown_and_table_and_out(run_cli, tiny_lm, text_file, tmp_path):
    res = run_cli("ppl", "--model", tiny_lm, "-i", text_file, "--max-length", 32, "-f", "markdown")
    assert res.exit_code == 0, res.stderr
    assert res.stdout.startswith("# Perplexity report")
    assert "| bits per token |" in res.stdout and "Signature: `perplexity|" in res.stdout
    res = run_cli("ppl", "--model", tiny_lm, text_file, "--max-length", 32)
    assert (
        res.exit_code == 0 and "perplexity" in res.stdout and "signature: perplexity|" in res.stdout
    )
    out = tmp_path / "report.json"
    res = run_cli(
        "ppl", "--model", tiny_lm, "-i", text_file, "--max-length", 32, "-f", "json", "-o", out
    )
    assert res.exit_code == 0 and res.stdout == ""
    assert json.loads(out.read_text())["tokens"] > 0


def test_logits_npz(run_cli, tmp_path):
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((3, 8, 10))
    labels = rng.integers(1, 10, size=(3, 8))
    labels[1, 5:] = 0
    path = tmp_path / "batch.npz"
    np.savez(path, logits=logits, labels=labels, bytes=np.array([12, 9, 14]), words=np.array(7))
    res = run_cli("ppl", "--logits", path, "--shift", "--pad-id", 0, "-f", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)
    x, y = L.shift_pairs(logits, labels)
    total, count = L.summed_loss(x, y, pad_id=0)
    assert rep["tokens"] == count == 3 * 7 - 3
    assert abs(rep["perplexity"] - L.perplexity(x, y, pad_id=0)) < 1e-9
    assert rep["bits_per_byte"] == pytest.approx(total / (35 * math.log(2)))
    assert rep["word_perplexity"] == pytest.approx(math.exp(total / 7))
    assert "shift:yes" in rep["signature"] and "pad:0" in rep["signature"]
    # without --shift the pairs are taken as given: a different number
    res = run_cli("ppl", "--logits", path, "--pad-id", 0, "-f", "json")
    assert json.loads(res.stdout)["tokens"] == 3 * 8 - 3
    # [T, V] logits are one sequence; no byte counts -> bits per byte is null
    np.savez(tmp_path / "one.npz", logits=logits[0], labels=labels[0])
    rep = json.loads(run_cli("ppl", "--logits", tmp_path / "one.npz", "-f", "json").stdout)
    assert rep["tokens"] == 8 and rep["bits_per_byte"] is None


def test_score_command_runs_perplexity_with_a_model(run_cli, tiny_lm, text_file):
    args = ("score", "-m", "perplexity", "-s", f"model={tiny_lm}", "-s", "max_length=32")
    res = run_cli(*args, "-r", text_file, "-i", text_file, "-f", "json")
    assert res.exit_code == 0, res.stderr
    rep = json.loads(res.stdout)[0]
    assert rep["metric"] == "perplexity" and rep["score"] > 1 and "lm:tiny-gpt2" in rep["signature"]
    # a language model's loss reads no reference: without -r the same number
    res = run_cli(*args, "-i", text_file, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[0] == rep
    # beside a metric that needs one, -r is required as ever
    res = run_cli(*args, "-m", "bleu", "-i", text_file)
    assert res.exit_code == 2 and "no reference given; pass -r REF" in res.stderr


def bad_npz(tmp_path: Path, name: str, **arrays) -> Path:
    path = tmp_path / name
    np.savez(path, **arrays)
    return path


def test_bad_input_exits_2_with_one_line(run_cli, tiny_lm, text_file, tmp_path):
    nan_logits = np.zeros((2, 4))
    nan_logits[1, 2] = np.nan
    not_npz = tmp_path / "x.npz"
    not_npz.write_text("hello")
    cases = [
        (("ppl", "--model", tmp_path / "nope", "-i", text_file), "no such model directory"),
        (("ppl", "--model", tiny_lm), "needs a text to score: -i TEXT"),
        (("ppl", "--model", tiny_lm, tmp_path / "missing.txt"), "no such file"),
        (("ppl", "-i", text_file), "exactly one source"),
        (("ppl", "--model", tiny_lm, "--logits", not_npz, "-i", text_file), "exactly one source"),
        (
            ("ppl", "--model", tiny_lm, "-i", text_file, "--max-length", 100),
            "exceeds the model's context size",
        ),
        (("ppl", "--model", tiny_lm, "-i", text_file, "-f", "pdf"), "unknown format"),
        (("ppl", "--logits", not_npz), "not a .npz archive"),
        (
            ("ppl", "--logits", bad_npz(tmp_path, "k.npz", logits=np.zeros((2, 3)))),
            "missing array(s) labels",
        ),
        (
            (
                "ppl",
                "--logits",
                bad_npz(tmp_path, "n.npz", logits=nan_logits, labels=np.array([0, 1])),
            ),
            "NaN or inf",
        ),
        (
            (
                "ppl",
                "--logits",
                bad_npz(tmp_path, "v.npz", logits=np.zeros((2, 3)), labels=np.array([0, 3])),
            ),
            "outside the vocabulary",
        ),
        (
            (
                "ppl",
                "--logits",
                bad_npz(tmp_path, "s.npz", logits=np.zeros((2, 3)), labels=np.array([0, 1, 2])),
            ),
            "labels have shape",
        ),
        (
            (
                "ppl",
                "--logits",
                bad_npz(tmp_path, "m.npz", logits=np.zeros((2, 3)), labels=np.array([-100, -100])),
            ),
            "nothing to score",
        ),
    ]
    out = tmp_path / "never.json"
    for args, message in cases:
        res = run_cli(*args, "-o", out)
        assert res.exit_code == 2, (args, res.stderr)
        assert message in res.stderr, (args, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr
        assert not out.exists()


@pytest.fixture(scope="module")
def broken_lms(tmp_path_factory):
    from tests.models.broken_lms import build_broken_lms

    return build_broken_lms(tmp_path_factory.mktemp("broken"))


BROKEN = (
    "encoder",
    "encoder-type",
    "encoder-decoder",
    "missing-head",
    "truncated",
    "no-tokenizer",
    "pickle",
    "no-weights",
)


@pytest.mark.parametrize("name", BROKEN)
def test_models_that_would_give_a_random_number_are_refused(broken_lms, tmp_path, name):
    """One clear line naming the folder and what is wrong; python -m evalab, inputs unchanged.
    All in the default suite: the fork server (``refusal.py``) has torch and transformers
    imported, which made each a cold start of ~20 s on a loaded machine."""
    from tests.cli.refusal import assert_refused

    folder, needle = broken_lms[name]
    text = tmp_path / "text.txt"
    text.write_text("Hello world, a text to score.\n", encoding="utf-8")
    line = assert_refused(
        ("ppl", "--model", folder, text, "-o", tmp_path / "never.json"),
        needle,
        watch=(tmp_path, folder),
    )
    assert str(folder) in line
    assert "pickled code ran" not in line


def test_every_broken_model_in_process(run_cli, broken_lms, tmp_path):
    """The same refusals through the CLI's main() in this process (fast: torch is warm)."""
    text = tmp_path / "text.txt"
    text.write_text("Hello world, a text to score.\n", encoding="utf-8")
    assert set(broken_lms) == set(BROKEN)
    for name, (folder, needle) in broken_lms.items():
        res = run_cli("ppl", "--model", folder, text, "-o", tmp_path / "never.json")
        assert res.exit_code == 2 and needle in res.stderr, (name, res.stderr)
        assert res.stderr.count("\n") == 1 and "Traceback" not in res.stderr, (name, res.stderr)
        assert "pickled code ran" not in res.stdout + res.stderr
    assert not (tmp_path / "never.json").exists()


def test_bad_device_is_refused_before_loading(run_cli, tiny_lm, tmp_path):
    from tests.cli.refusal import assert_refused

    text = tmp_path / "text.txt"
    text.write_text("Hello.\n", encoding="utf-8")
    assert_refused(
        ("ppl", "--model", tiny_lm, text, "--device", "tpu9"),
        "device 'tpu9' is not a torch device",
        watch=(tmp_path, tiny_lm),
    )
    for device, needle in (("cuda:99", "cuda:99"), ("meta", "device 'meta' is not supported")):
        res = run_cli("ppl", "--model", tiny_lm, text, "--device", device)
        assert res.exit_code == 2 and needle in res.stderr and res.stderr.count("\n") == 1, (
            res.stderr
        )


def test_ppl_defaults_are_the_metric_settings():
    import inspect

    from evalab.cli.ppl import ppl
    from evalab.metrics.loss import PerplexitySettings

    defaults = {k: v.default for k, v in inspect.signature(ppl).parameters.items()}
    settings = PerplexitySettings()
    for key in ("max_length", "stride", "batch_size", "bos", "device", "dtype", "mean", "model"):
        assert defaults[key] == getattr(settings, key), key


@pytest.mark.parametrize(
    ("options", "needle"),
    [
        (["--stride", "0"], "--stride applies to --model only"),
        (["--max-length", "-3", "--threads", "2"], "--max-length, --threads apply to --model only"),
        (["--documents", "lines"], "--documents applies to --model only"),
    ],
)
def test_model_options_with_logits_are_refused(tmp_path, options, needle):
    """They were dropped in silence: `--stride 0` printed a perplexity as if it had been used."""
    from tests.cli.refusal import assert_refused

    rng = np.random.default_rng(0)
    np.savez(
        tmp_path / "lg.npz",
        logits=rng.normal(size=(2, 5, 7)).astype("float32"),
        labels=rng.integers(0, 7, (2, 5)),
    )
    assert_refused(("ppl", "--logits", "lg.npz", *options), needle, watch=(tmp_path,), cwd=tmp_path)
