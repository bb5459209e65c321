"""Reading per-item files: lm-eval runs, inspect-ai logs, plain tables and score --segments."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from tests.items.harness_files import DATE, inspect_log, lm_eval_sample, write_lm_eval_run

from evalab.errors import InputError
from evalab.items import Columns, align, read_scores


def test_lm_eval_run_folder_gives_every_task_and_metric(tmp_path: Path) -> None:
    run = write_lm_eval_run(tmp_path / "m1", {"arc_easy": [1, 0, 1], "piqa": [0, 1]})
    sets = read_scores(str(run))
    assert sorted(s.metric for s in sets) == [
        "arc_easy:acc",
        "arc_easy:acc_norm",
        "piqa:acc",
        "piqa:acc_norm",
    ]
    arc = next(s for s in sets if s.metric == "arc_easy:acc")
    assert arc.ids == ("0", "1", "2") and arc.values.tolist() == [1, 0, 1]
    assert arc.version == "1.0" and arc.model == "m1"  # model_args' pretrained=


def test_lm_eval_filters_are_metrics_and_doc_fields_are_clusters(tmp_path: Path) -> None:
    path = tmp_path / f"samples_gsm8k_{DATE}.jsonl"
    records = [
        lm_eval_sample(
            i,
            float(i % 2),
            passage=f"p{i // 2}",
            filt=f,
            extra={"metrics": ["exact_match"], "exact_match": float(i % 2)},
        )
        for i in range(4)
        for f in ("strict-match", "flexible-extract")
    ]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    sets = read_scores(str(path), Columns(cluster="doc.passage_id"))
    assert sorted(s.metric for s in sets) == [
        "gsm8k:exact_match,flexible-extract",
        "gsm8k:exact_match,strict-match",
    ]
    assert sets[0].clusters == ("p0", "p0", "p1", "p1")


def test_lm_eval_of_an_unknown_harness_version_is_refused(tmp_path: Path) -> None:
    run = write_lm_eval_run(tmp_path / "m", {"arc_easy": [1, 0]}, version="0.9.0")
    with pytest.raises(InputError, match=r"lm-evaluation-harness 0\.9\.0.*0\.4\.x"):
        read_scores(str(run))


def test_lm_eval_different_task_versions_do_not_align(tmp_path: Path) -> None:
    a = read_scores(str(write_lm_eval_run(tmp_path / "a", {"arc": [1, 0]})))
    b = read_scores(str(write_lm_eval_run(tmp_path / "b", {"arc": [1, 1]}, task_version=2.0)))
    with pytest.raises(InputError, match="different task versions"):
        align(a + b)


def test_lm_eval_corpus_metric_is_not_a_per_item_score(tmp_path: Path) -> None:
    path = tmp_path / f"samples_wmt16_{DATE}.jsonl"
    record = lm_eval_sample(0, 1.0, extra={"metrics": ["bleu"], "bleu": ["the ref", "the hyp"]})
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    with pytest.raises(InputError, match="corpus-level"):
        read_scores(str(path))


def test_inspect_log_epochs_are_samples_and_letters_are_numbers(tmp_path: Path) -> None:
    log = inspect_log(tmp_path / "log.json", ["C", "I", "P", "C", "C", "I", "I", "N"], epochs=2)
    (s,) = read_scores(str(log), Columns(cluster="metadata.passage"))
    assert s.metric == "reading:match" and s.ids == ("1", "2", "3", "4")
    assert s.values.tolist() == [1.0, 0.0, 0.5, 1.0, 1.0, 0.0, 0.0, 0.0]
    assert s.clusters == ("p0", "p0", "p1", "p1")


@pytest.mark.parametrize(
    ("kwargs", "needle"),
    [({"version": 1}, "log version 1"), ({"status": "error"}, "status is 'error'")],
)
def test_inspect_log_of_unknown_version_or_unfinished_is_refused(
    tmp_path: Path, kwargs: dict, needle: str
) -> None:
    log = inspect_log(tmp_path / "log.json", ["C", "I"], **kwargs)
    with pytest.raises(InputError, match=needle):
        read_scores(str(log))


def test_plain_csv_with_samples_and_clusters(tmp_path: Path) -> None:
    path = tmp_path / "m.csv"
    path.write_text("id,gen,passage,score\na,1,p,1\na,2,p,0\nb,1,p,1\nb,2,p,1\n", encoding="utf-8")
    (s,) = read_scores(str(path), Columns(sample="gen", cluster="passage"))
    assert s.ids == ("a", "b") and s.item.tolist() == [0, 0, 1, 1] and s.clusters == ("p", "p")


@pytest.mark.parametrize(
    ("text", "needle"),
    [
        ("id,score\na,1\nb,x\n", "m.csv: line 3, score: score 'x' is not a number"),
        ("id,score\na,1\nb,nan\n", "line 3, score: score is 'nan'"),
        ("id,score\na,1\na,0\n", "line 3: item 'a' already given at line 2"),
        (
            "id,gen,c,score\na,1,p,1\na,2,q,0\n",
            "line 3: item 'a' is in cluster 'q' here but 'p' at line 2",
        ),
        (
            "id,gen,c,score\na,1,p,1\na,1,p,0\n",
            "line 3: item 'a' sample '1' already given at line 2",
        ),
        # a bare carriage return ends a row (it was a csv.Error traceback)
        ("id,score\na,1\nb,0\r5\n", "m.csv: line 4: 1 fields, the header has 2"),
        # an unterminated quote is a broken file, not a cell that runs to the end
        ('id,score\na,1\nb,"0.5\n', "m.csv: line 3 is not valid CSV (unexpected end of data)"),
        ('id,score\na,1\nb,"0"5\n', "m.csv: line 3 is not valid CSV ("),
    ],
)
def test_plain_csv_refusals_name_file_and_line(tmp_path: Path, text: str, needle: str) -> None:
    path = tmp_path / "m.csv"
    path.write_text(text, encoding="utf-8")
    cols = Columns(cluster="c", sample="gen") if ",c," in text else Columns()
    with pytest.raises(InputError) as err:
        read_scores(str(path), cols)
    assert needle in str(err.value)


def test_alignment_refuses_extra_and_missing_ids_or_keeps_the_common_ones(tmp_path: Path) -> None:
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text("".join(json.dumps({"id": i, "score": 1}) + "\n" for i in "xyz"), encoding="utf-8")
    b.write_text("".join(json.dumps({"id": i, "score": 0}) + "\n" for i in "yzw"), encoding="utf-8")
    sets = read_scores(str(a)) + read_scores(str(b))
    with pytest.raises(InputError, match=r"b\.jsonl: line 3: item 'w' is not in .*a\.jsonl"):
        align(sets)
    (group,) = align(sets, common=True)
    assert group.ids == ("y", "z") and group.dropped == 2
    assert [s.values.tolist() for s in group.sets] == [[1, 1], [0, 0]]


def test_score_segments_output_is_one_model_per_system(tmp_path: Path, run_cli) -> None:
    ref, h1, h2 = (tmp_path / n for n in ("ref.txt", "h1.txt", "h2.txt"))
    ref.write_text("a b c\nd e f\ng h\n", encoding="utf-8")
    h1.write_text("a b c\nd x f\ng\n", encoding="utf-8")
    h2.write_text("a b\nd e f\ng h\n", encoding="utf-8")
    seg = tmp_path / "seg.jsonl"
    assert run_cli("score", "-r", ref, "-i", h1, h2, "-m", "chrf", "--segments", seg).exit_code == 0
    sets = read_scores(str(seg))
    assert [s.model for s in sets] == ["h1.txt", "h2.txt"]
    assert sets[0].metric == "chrf" and sets[0].ids == ("1", "2", "3")
    assert np.all(sets[0].values[:1] == 100.0)


@settings(max_examples=25, deadline=None)
@given(st.permutations(list(range(12))))
def test_the_order_of_a_files_lines_does_not_matter(order: list[int]) -> None:
    import tempfile

    values = [1, 0, 1, 1, 0, 0, 1, 0, 1, 1, 1, 0]
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.csv", Path(tmp) / "b.csv"
        a.write_text(
            "id,score\n" + "".join(f"i{k},{v}\n" for k, v in enumerate(values)), encoding="utf-8"
        )
        b.write_text(
            "id,score\n" + "".join(f"i{k},{1 - values[k]}\n" for k in order), encoding="utf-8"
        )
        (group,) = align(read_scores(str(a)) + read_scores(str(b)))
    assert group.ids == tuple(f"i{k}" for k in range(12))
    base, other = (s.values[np.argsort(s.item, kind="stable")] for s in group.sets)
    assert (other == 1 - base).all()


def test_inspect_words_numbers_and_dict_scores(tmp_path: Path) -> None:
    log = inspect_log(tmp_path / "log.json", [True, "yes", "0.25", "False"])
    (s,) = read_scores(str(log))
    assert s.values.tolist() == [1.0, 1.0, 0.25, 0.0]
    data = json.loads(log.read_text(encoding="utf-8"))
    for k, sample in enumerate(data["samples"]):
        sample["scores"] = {"rubric": {"value": {"fluency": k, "accuracy": "C"}}}
    log.write_text(json.dumps(data), encoding="utf-8")
    sets = read_scores(str(log))
    assert sorted(x.metric for x in sets) == ["reading:rubric.accuracy", "reading:rubric.fluency"]
    data["samples"][0]["scores"] = {"rubric": {"value": "maybe"}}
    log.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(InputError, match="sample 1, reading:rubric: score 'maybe' is not a number"):
        read_scores(str(log))


def test_lm_eval_folder_with_two_runs_of_one_task_is_refused(tmp_path: Path) -> None:
    run = write_lm_eval_run(tmp_path / "m", {"arc": [1, 0]})
    (run / f"samples_arc_{DATE.replace('12-00', '13-00')}.jsonl").write_text(
        (run / f"samples_arc_{DATE}.jsonl").read_text(encoding="utf-8"), encoding="utf-8"
    )
    with pytest.raises(InputError, match=r"task arc has two sample files .* give the samples file"):
        read_scores(str(run))


ACC = Columns(scores=("arc:acc",))


def test_lm_eval_output_folder_gives_each_model_gzip_and_json_output_path(tmp_path: Path) -> None:
    # lm_eval --output_path OUT writes OUT/<model, sanitized>/results_<date>.json and samples
    write_lm_eval_run(tmp_path / "out" / "org__a", {"arc": [1, 0, 1]}, model="org/a")
    write_lm_eval_run(tmp_path / "out" / "org__b", {"arc": [0, 0, 1]}, model="org/b")
    sets = read_scores(str(tmp_path / "out"), ACC)
    assert {s.model: s.values.tolist() for s in sets} == {
        "org/a": [1.0, 0.0, 1.0],
        "org/b": [0.0, 0.0, 1.0],
    }
    # the same files gzipped (by hand: lm-eval itself writes them plain)
    b = tmp_path / "out" / "org__b"
    for f in list(b.iterdir()):
        (b / f"{f.name}.gz").write_bytes(gzip.compress(f.read_bytes()))
        f.unlink()
    (s,) = read_scores(str(b), ACC)
    assert s.model == "org/b" and s.version == "1.0" and s.values.tolist() == [0.0, 0.0, 1.0]
    # --output_path results.json: results as results_<date>.json's stem, samples beside it
    c = write_lm_eval_run(tmp_path / "c", {"arc": [1, 1]}, model="org/c")
    (c / f"results_{DATE}.json").rename(c / f"mine_{DATE}.json")
    (s,) = read_scores(str(c), ACC)
    assert s.model == "org/c"


def _item_means(s) -> dict[str, float]:
    return dict(
        zip(
            s.ids,
            (np.bincount(s.item, weights=s.values) / np.bincount(s.item)).tolist(),
            strict=True,
        )
    )


def test_inspect_eval_archive_reads_as_its_json_log(tmp_path: Path) -> None:
    values = ["C", "I", "P", "C", "C", "I", "I", "N"]
    (from_json,) = read_scores(str(inspect_log(tmp_path / "log.json", values, epochs=2)))
    (from_zip,) = read_scores(str(inspect_log(tmp_path / "log.eval", values, epochs=2)))
    assert from_zip.metric == from_json.metric and from_zip.values.size == 8
    assert _item_means(from_zip) == _item_means(from_json)
    (tmp_path / "broken.eval").write_bytes(b"not a zip")
    with pytest.raises(InputError, match="not a zip archive"):
        read_scores(str(tmp_path / "broken.eval"))


def test_lm_eval_filters_without_names_are_refused(tmp_path: Path) -> None:
    path = tmp_path / f"samples_gsm8k_{DATE}.jsonl"
    records = [lm_eval_sample(0, 1.0), lm_eval_sample(0, 0.0)]
    for r in records:
        del r["filter"]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    with pytest.raises(InputError, match=r"line 2: doc_id 0 again .*no 'filter' key"):
        read_scores(str(path))
