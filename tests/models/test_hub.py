"""Model names (``Org/name``) resolved in a fake local Hugging Face cache built here from the
tiny models the suite already builds, through the real CLI; a cache without the model is
one line saying where it looked. Nothing touches the network."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from tests.cli.refusal import assert_refused
from tests.models.broken_lms import tiny_lm_builder
from tests.models.semantic_helpers import make_tiny_bert

pytest.importorskip("torch")
pytest.importorskip("transformers")


def _cache(root: Path, name: str, model: Path, revision: str = "0123abcd") -> Path:
    """``root`` laid out as huggingface_hub lays out its cache, holding ``model`` as ``name``."""
    repo = root / ("models--" + name.replace("/", "--"))
    shutil.copytree(model, repo / "snapshots" / revision)
    (repo / "snapshots" / "old-revision").mkdir()  # another snapshot: refs/main picks the right one
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(revision, encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("models")
    return {
        "bert": make_tiny_bert(root / "tiny-bert"),
        "lm": tiny_lm_builder().build_tiny_lm(root / "tiny-gpt2", seed=0, positions=64),
    }


@pytest.fixture
def texts(tmp_path) -> tuple[Path, Path]:
    (tmp_path / "ref.txt").write_text("the cat sat on the mat\nthe red car\n", encoding="utf-8")
    (tmp_path / "hyp.txt").write_text("a cat sat on a mat\nthe red auto\n", encoding="utf-8")
    return tmp_path / "ref.txt", tmp_path / "hyp.txt"


def _scores(run) -> list[float]:
    assert run.exit_code == 0, run.stderr
    return [row.get("score", row.get("fmeasure")) for row in json.loads(run.stdout)]


@pytest.mark.parametrize("variable", ["HF_HUB_CACHE", "HF_HOME"])
def test_semsim_and_score_find_a_cached_model_by_name(
    run_cli, monkeypatch, tmp_path, models, texts, variable
):
    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv(variable, str(cache if variable == "HF_HUB_CACHE" else tmp_path))
    ref, hyp = texts
    by_folder = _scores(
        run_cli("semsim", "-r", ref, "-i", hyp, "--model", models["bert"], "-q", "-f", "json")
    )
    assert (
        _scores(
            run_cli("semsim", "-r", ref, "-i", hyp, "--model", "Org/tiny-bert", "-q", "-f", "json")
        )
        == by_folder
    )
    folder = _scores(
        run_cli(
            "score",
            "-r",
            ref,
            "-i",
            hyp,
            "-m",
            "bertscore",
            "--set",
            f"bertscore.model={models['bert']}",
            "-q",
            "-f",
            "json",
        )
    )
    for spelling in (("--model", "Org/tiny-bert"), ("--set", "bertscore.model=Org/tiny-bert")):
        assert (
            _scores(
                run_cli(
                    "score", "-r", ref, "-i", hyp, "-m", "bertscore", *spelling, "-q", "-f", "json"
                )
            )
            == folder
        )


def test_ppl_finds_a_cached_model_by_name(run_cli, monkeypatch, tmp_path, models, texts):
    monkeypatch.setenv("HF_HUB_CACHE", str(_cache(tmp_path / "hub", "tiny-gpt2", models["lm"])))
    ref, _ = texts
    by_folder = run_cli("ppl", "--model", models["lm"], "-i", ref, "-q", "-f", "json")
    by_name = run_cli("ppl", "--model", "tiny-gpt2", "-i", ref, "-q", "-f", "json")
    assert by_folder.exit_code == 0 and by_name.stdout == by_folder.stdout


@pytest.mark.parametrize(
    "args",
    [
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", "Org/absent"),
        ("ppl", "--model", "Org/absent", "-i", "ref.txt"),
        (
            "score",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "-m",
            "comet",
            "--source",
            "ref.txt",
            "--model",
            "Org/absent",
        ),
        (
            "score",
            "-r",
            "ref.txt",
            "-i",
            "hyp.txt",
            "-m",
            "comet",
            "--source",
            "ref.txt",
            "--set",
            "comet.model=Org/absent",
        ),
    ],
    ids=["semsim", "ppl", "score --model", "score --set"],
)
def test_a_name_missing_from_the_cache_is_one_line_saying_where(
    monkeypatch, tmp_path, models, texts, args
):
    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])  # a cache, without that model
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    line = assert_refused(
        args,
        "Org/absent: not a local folder and not in the Hugging Face cache",
        watch=(tmp_path,),
        cwd=texts[0].parent,
    )
    assert (
        str(cache / "models--Org--absent" / "refs" / "main") in line and "never downloads" in line
    )


def test_a_revision_named_but_not_there_is_refused(monkeypatch, tmp_path, models, texts):
    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])
    (cache / "models--Org--tiny-bert" / "refs" / "main").write_text("feedface", encoding="utf-8")
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    assert_refused(
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--model", "Org/tiny-bert"),
        "names revision 'feedface'",
        watch=(tmp_path,),
        cwd=texts[0].parent,
    )


def test_model_on_a_command_without_a_model_metric(texts, tmp_path):
    assert_refused(
        ("score", "-r", "ref.txt", "-i", "hyp.txt", "-m", "bleu", "--model", "x"),
        "none is among -m bleu",
        watch=(tmp_path,),
        cwd=texts[0].parent,
    )


def test_lang_picks_a_multilingual_encoder_from_the_cache(
    run_cli, monkeypatch, tmp_path, models, texts
):
    ref, hyp = texts
    monkeypatch.setenv(
        "HF_HUB_CACHE", str(_cache(tmp_path / "hub", "xlm-roberta-large", models["bert"]))
    )
    by_folder = _scores(
        run_cli("semsim", "-r", ref, "-i", hyp, "--model", models["bert"], "-q", "-f", "json")
    )
    assert (
        _scores(run_cli("semsim", "-r", ref, "-i", hyp, "--lang", "de", "-q", "-f", "json"))
        == by_folder
    )


def test_lang_without_a_multilingual_encoder_says_which_to_point_at(
    monkeypatch, tmp_path, models, texts
):
    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    line = assert_refused(
        ("semsim", "-r", "ref.txt", "-i", "hyp.txt", "--lang", "de"),
        "no multilingual encoder",
        watch=(tmp_path,),
        cwd=texts[0].parent,
    )
    assert (
        str(cache) in line and "bert-base-multilingual-cased" in line and "--model FOLDER" in line
    )


def test_the_library_api_finds_cached_models_by_name(monkeypatch, tmp_path, models):
    import evalab

    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])
    _cache(cache, "Org/tiny-gpt2", models["lm"])
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    hyps, refs = ["a cat sat on a mat", "the red auto"], [["the cat sat on the mat", "the red car"]]
    for name, folder, hub_id in (
        ("bertscore", models["bert"], "Org/tiny-bert"),
        ("perplexity", models["lm"], "Org/tiny-gpt2"),
    ):
        by_name = evalab.metric(name, model=hub_id)
        assert Path(by_name.settings.model).parent.parent.name == "models--" + hub_id.replace(
            "/", "--"
        )
        by_folder = evalab.metric(name, model=str(folder))
        assert by_name.corpus_score(hyps, refs).score == pytest.approx(
            by_folder.corpus_score(hyps, refs).score, rel=1e-12
        )


def test_the_library_api_finds_a_cached_comet_by_name(monkeypatch, tmp_path):
    from tests.metrics.test_contract import tiny_comet

    import evalab

    folder = Path(tiny_comet())
    monkeypatch.setenv("HF_HUB_CACHE", str(_cache(tmp_path / "hub", "Org/tiny-comet", folder)))
    hyps, refs, srcs = ["a cat sat", "the red auto"], [["the cat sat", "the red car"]], ["x", "y"]
    by_name = evalab.metric("comet", model="Org/tiny-comet").with_sources(srcs)
    by_folder = evalab.metric("comet", model=str(folder)).with_sources(srcs)
    assert by_name.corpus_score(hyps, refs).score == pytest.approx(
        by_folder.corpus_score(hyps, refs).score, rel=1e-6
    )


@pytest.mark.parametrize("name", ["comet", "bertscore", "perplexity"])
def test_the_library_api_says_where_it_looked(monkeypatch, tmp_path, models, name):
    import evalab
    from evalab.errors import InputError

    cache = _cache(tmp_path / "hub", "Org/tiny-bert", models["bert"])  # a cache, without that model
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    with pytest.raises(InputError) as err:
        evalab.metric(name, model="Org/absent")
    message = str(err.value)
    assert "\n" not in message and "Org/absent: not a local folder" in message
    assert str(cache / "models--Org--absent" / "refs" / "main") in message
