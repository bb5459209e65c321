"""Every path a command reads is an input of the output check: models, encoders and
baselines named by ``--set``, and for ``ablate`` the study file, its code, the ``[metrics]``
references and every file of the store's run folders. Each case runs ``python -m evalab``
as a user would and checks a one-line refusal with no file changed (``assert_refused``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from .refusal import assert_refused, evalab
from .test_ablate import WRITE_HYP, outputs_study


@pytest.fixture
def work(tmp_path) -> Path:
    """A reference, a system, and model folders as the metrics read them."""
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\nhello world\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("the cat sat on a mat\nhello there world\n", encoding="utf-8")
    (tmp_path / "src.txt").write_text("die Katze\nhallo Welt\n", encoding="utf-8")
    ckpt = tmp_path / "comet" / "checkpoints"
    ckpt.mkdir(parents=True)
    (ckpt / "model.ckpt").write_bytes(b"weights")
    (tmp_path / "comet" / "hparams.yaml").write_text(
        "class_identifier: regression_metric\n", encoding="utf-8"
    )
    for name in ("encoder", "lm", "bert"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "config.json").write_text("{}", encoding="utf-8")
    (tmp_path / "lm" / "sub").mkdir()
    (tmp_path / "lm" / "sub" / "weights.bin").write_bytes(b"w")
    os.link(tmp_path / "lm" / "sub" / "weights.bin", tmp_path / "hard.bin")
    (tmp_path / "baseline.tsv").write_text("0,0.1,0.1,0.1\n", encoding="utf-8")
    (tmp_path / "stop.txt").write_text("the\n", encoding="utf-8")
    return tmp_path


SCORE = ("score", "-r", "ref.txt", "-i", "hyp.txt")
COMET = ("-m", "comet", "--source", "src.txt")
MODEL_AS_OUTPUT = [
    (
        (*SCORE, *COMET, "--set", "comet.model=comet", "-o", "comet/checkpoints/model.ckpt"),
        "is a file inside --set comet.model comet",
    ),
    (
        (*SCORE, *COMET, "--set", "comet.model=comet", "-o", "comet/hparams.yaml"),
        "is a file inside --set comet.model",
    ),
    (
        (
            *SCORE,
            *COMET,
            "--set",
            "comet.model=comet/checkpoints/model.ckpt",
            "-o",
            "comet/hparams.yaml",
        ),
        "same file as --set comet.model",
    ),
    (
        (
            *SCORE,
            *COMET,
            "--set",
            "comet.model=comet/checkpoints/model.ckpt",
            "-o",
            "comet/checkpoints/../checkpoints/model.ckpt",
        ),
        "same file as --set comet.model comet/checkpoints/model.ckpt",
    ),
    (
        (
            *SCORE,
            *COMET,
            "--set",
            "comet.model=comet",
            "--set",
            "comet.encoder=encoder",
            "-o",
            "encoder/config.json",
        ),
        "is a file inside --set comet.encoder encoder",
    ),
    (
        (*SCORE, *COMET, "--set", "comet.model=comet", "--segments", "comet/hparams.yaml"),
        "--segments comet/hparams.yaml is a file inside --set comet.model",
    ),
    (
        (*SCORE, "-m", "perplexity", "--set", "perplexity.model=lm", "-o", "lm/config.json"),
        "is a file inside --set perplexity.model lm",
    ),
    (
        (
            *SCORE,
            "-m",
            "perplexity",
            "--set",
            "perplexity.model=lm",
            "-o",
            "hard.bin",
        ),  # a hard link into the folder
        "is a file inside --set perplexity.model lm",
    ),
    (
        (
            *SCORE,
            "-m",
            "perplexity",
            "--set",
            "perplexity.model=lm",
            "--segments",
            "lm/sub/weights.bin",
        ),
        "is a file inside --set perplexity.model",
    ),
    (
        (*SCORE, "-m", "bertscore", "--set", "bertscore.model=bert", "-o", "bert/config.json"),
        "is a file inside --set bertscore.model bert",
    ),
    (
        (
            *SCORE,
            "-m",
            "bertscore",
            "--set",
            "bertscore.model=bert",
            "--set",
            "bertscore.baseline=baseline.tsv",
            "-o",
            "baseline.tsv",
        ),
        "same file as --set bertscore.baseline",
    ),
    (
        (*SCORE, "-m", "bertscore", "--set", "stopwords=stop.txt", "-o", "stop.txt"),
        "same file as --set bertscore.stopwords",
    ),
    (
        (
            "compare",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "ref.txt",
            *COMET,
            "--set",
            "comet.model=comet",
            "-o",
            "comet/hparams.yaml",
        ),
        "is a file inside --set comet.model",
    ),
    (
        (
            "meta-eval",
            "--human",
            "ref.txt",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "-m",
            "perplexity",
            "--set",
            "perplexity.model=lm",
            "-o",
            "lm/config.json",
        ),
        "is a file inside --set perplexity.model",
    ),
    (
        (
            "meta-eval",
            "--human",
            "ref.txt",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "-m",
            "perplexity",
            "--set",
            "perplexity.model=lm",
            "--save-scores",
            "lm/config.json",
        ),
        "--save-scores lm/config.json is a file inside",
    ),
]


@pytest.mark.parametrize(
    ("args", "needle"), MODEL_AS_OUTPUT, ids=[" ".join(a[-2:]) for a, _ in MODEL_AS_OUTPUT]
)
def test_an_output_onto_a_model_named_by_a_setting_is_refused(work, args, needle):
    assert_refused(args, needle, watch=(work,), cwd=work)


HELPER = "def value():\n    return 0.5\n"


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> tuple[Path, Path]:
    """A study (entry importing a helper module, [metrics.bleu] on data/ref.txt, per-example
    values) run once into s.db: its folder and the store."""
    folder = tmp_path_factory.mktemp("study")
    body = f'{WRITE_HYP}\nfrom helper import value\nreturn {{"acc": value(), "per_example": {{"acc": [1.0, 0.0, 1.0, 0.0]}}}}'
    study = outputs_study(folder, body, seeds=(0,))
    (folder / "helper.py").write_text(HELPER, encoding="utf-8")
    run = evalab("ablate", "run", study, "--db", folder / "s.db", "-q", cwd=folder)
    assert run.returncode == 0, run.stderr
    return folder, folder / "s.db"


def _run_file(folder: Path, name: str) -> str:
    found = sorted((folder / "runs").rglob(name))
    assert found, name
    return str(found[0])


@pytest.mark.parametrize("command", ["report", "status"])
@pytest.mark.parametrize(
    ("target", "needle"),
    [
        ("study.toml", "same file as STUDY_FILE"),
        ("out_entry.py", "same file as the study's code"),
        ("helper.py", "same file as the study's code"),  # imported by the entry
        ("data/ref.txt", "same file as [metrics.bleu] references"),
        ("examples.npz", "is a file inside the store's run folders"),
        ("hyp.txt", "is a file inside the store's run folders"),
        ("s.db", "same file as --db"),
    ],
)
def test_ablate_output_onto_what_the_study_reads_is_refused(stored, command, target, needle):
    folder, db = stored
    out = (
        _run_file(folder, target) if target in ("examples.npz", "hyp.txt") else str(folder / target)
    )
    assert_refused(
        ("ablate", command, folder / "study.toml", "--db", db, "-o", out), needle, watch=(folder,)
    )


def test_ablate_output_beside_the_study_is_written(stored, tmp_path):
    folder, db = stored
    run = evalab(
        "ablate",
        "report",
        folder / "study.toml",
        "--db",
        db,
        "-f",
        "json",
        "-o",
        tmp_path / "r.json",
    )
    assert run.returncode == 0, run.stderr
    assert json.loads((tmp_path / "r.json").read_text(encoding="utf-8"))["rows"]
