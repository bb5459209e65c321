"""JSON Lines, CSV and TSV inputs (``--field``, ``--ref-field``, ``--id-field``) score exactly
what the same data as line-aligned text files scores, and are refused like text files."""

from __future__ import annotations

import csv
import io
import json
import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from .refusal import assert_refused

#: every metric that needs no model
METRICS = (
    "bleu",
    "chrf",
    "chrf++",
    "ter",
    "wer",
    "cer",
    "rouge1",
    "rougeL",
    "exact_match",
    "f1",
    "accuracy",
)

# segments a text file can hold: no line breaks, no NUL, no BOM (a text file keeps it, a
# record file's first column name drops it)
_SEGMENT = st.text(
    st.characters(
        blacklist_categories=("Cs",),
        blacklist_characters="\n\r\x00\ufeff\x85\u2028\u2029\x0b\x0c\x1c\x1d\x1e",
    ),
    min_size=1,
    max_size=30,
).filter(str.strip)
_RECORDS = st.lists(st.tuples(_SEGMENT, _SEGMENT, _SEGMENT), min_size=1, max_size=12)


def _json(run) -> list[dict]:
    assert run.exit_code == 0, run.stderr
    return json.loads(run.stdout)


def _write_text(path: Path, lines: list[str], newline: str = "\n") -> Path:
    path.write_bytes("".join(line + newline for line in lines).encode("utf-8"))
    return path


def _table(rows: list[dict], delimiter: str, newline: str) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(
        buf, fieldnames=list(rows[0]), delimiter=delimiter, lineterminator=newline
    )
    writer.writeheader()
    writer.writerows(rows)
    return buf.getvalue()


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(records=_RECORDS, seed=st.integers(0, 2**16), crlf=st.booleans())
def test_record_files_score_like_text_files(run_cli, tmp_path_factory, records, seed, crlf):
    folder = tmp_path_factory.mktemp("records")
    nl = "\r\n" if crlf else "\n"
    hyps, refs_a, refs_b = (list(column) for column in zip(*records, strict=True))
    text = _json(
        run_cli(
            "score",
            "-r",
            _write_text(folder / "a.txt", refs_a, nl),
            _write_text(folder / "b.txt", refs_b, nl),
            "-i",
            _write_text(folder / "hyp.txt", hyps, nl),
            "-m",
            *METRICS,
            "-f",
            "json",
        )
    )
    order = list(range(len(records)))
    random.Random(seed).shuffle(order)  # records in another order, aligned by id
    nested = [
        {"id": f"s{i}", "out": {"text": hyps[i], "score": 0.5}, "refs": [refs_a[i], refs_b[i]]}
        for i in order
    ]
    (folder / "pred.jsonl").write_bytes(
        "".join(json.dumps(r, ensure_ascii=seed % 2 == 0) + nl for r in nested).encode()
    )
    refs_file = [{"id": f"s{i}", "refs": [refs_a[i], refs_b[i]]} for i in range(len(records))]
    (folder / "refs.jsonl").write_bytes("".join(json.dumps(r) + nl for r in refs_file).encode())
    from_records = _json(
        run_cli(
            "score",
            "-r",
            folder / "refs.jsonl",
            "-i",
            folder / "pred.jsonl",
            "--field",
            "out.text",
            "--ref-field",
            "refs",
            "--id-field",
            "id",
            "-m",
            *METRICS,
            "-f",
            "json",
        )
    )
    assert [{k: v for k, v in r.items() if k != "system"} for r in from_records] == [
        {k: v for k, v in r.items() if k != "system"} for r in text
    ]
    one_ref = _json(
        run_cli(
            "score", "-r", folder / "a.txt", "-i", folder / "hyp.txt", "-m", *METRICS, "-f", "json"
        )
    )
    for ending, delimiter in ((".csv", ","), (".tsv", "\t")):
        rows = [{"id": f"s{i}", "prediction": hyps[i], "reference": refs_a[i]} for i in order]
        (folder / f"pred{ending}").write_bytes(_table(rows, delimiter, nl).encode("utf-8"))
        table = _json(
            run_cli(
                "score",
                "-i",
                folder / f"pred{ending}",
                "--field",
                "prediction",
                "--ref-field",
                "reference",
                "-m",
                *METRICS,
                "-f",
                "json",
            )
        )
        assert [r["score"] for r in table] == [r["score"] for r in one_ref]


def test_stdin_and_a_list_or_string_of_references(run_cli, tmp_path):
    lines = [
        {"p": "the cat sat on the mat", "r": ["the cat sat on a mat", "a cat sat on the mat"]},
        {"p": "hello world", "r": "hello there world"},
    ]
    data = "".join(json.dumps(x) + "\n" for x in lines)
    from_stdin = run_cli(
        "score",
        "-i",
        "-",
        "--field",
        "p",
        "--ref-field",
        "r",
        "-m",
        "bleu",
        "chrf",
        "-f",
        "json",
        stdin=data,
    )
    _write_text(tmp_path / "a.txt", ["the cat sat on a mat", "hello there world"])
    _write_text(tmp_path / "b.txt", ["a cat sat on the mat", ""])
    _write_text(tmp_path / "h.txt", [x["p"] for x in lines])
    text = run_cli(
        "score",
        "-r",
        tmp_path / "a.txt",
        tmp_path / "b.txt",
        "-i",
        tmp_path / "h.txt",
        "--missing-ref",
        "empty-line",
        "-m",
        "bleu",
        "chrf",
        "-f",
        "json",
    )
    assert [r["score"] for r in _json(from_stdin)] == [r["score"] for r in _json(text)]
    assert "nrefs:var" in _json(from_stdin)[0]["signature"]


@pytest.fixture
def work(tmp_path) -> Path:
    _write_text(tmp_path / "ref.txt", ["a b c", "d e f", "g h"])
    _write_text(tmp_path / "hyp.txt", ["a b c", "d e", "g h"])
    rows = [
        {"id": 1, "out": {"text": "a b c"}, "refs": ["a b c"]},
        {"id": 2, "out": {"text": "d e"}, "refs": ["d e f"]},
        {"id": 3, "out": {"text": "g h"}, "refs": "g h"},
    ]
    _write_text(tmp_path / "pred.jsonl", [json.dumps(r) for r in rows])
    _write_text(
        tmp_path / "dup.jsonl", [json.dumps(r) for r in [rows[0], rows[1], {**rows[2], "id": 1}]]
    )
    _write_text(tmp_path / "short.jsonl", [json.dumps(r) for r in rows[:2]])
    _write_text(
        tmp_path / "other.jsonl", [json.dumps(r) for r in [rows[0], rows[1], {**rows[2], "id": 9}]]
    )
    _write_text(tmp_path / "bad.jsonl", [json.dumps(rows[0]), "{oops", json.dumps(rows[2])])
    _write_text(tmp_path / "blank.jsonl", [json.dumps(rows[0]), "", json.dumps(rows[2])])
    _write_text(tmp_path / "array.jsonl", [json.dumps(rows[0]), "[1, 2]", json.dumps(rows[2])])
    _write_text(
        tmp_path / "num.jsonl",
        [json.dumps(rows[0]), json.dumps({**rows[1], "out": {"text": 7}}), json.dumps(rows[2])],
    )
    _write_text(
        tmp_path / "noref.jsonl",
        [json.dumps(rows[0]), json.dumps({**rows[1], "refs": []}), json.dumps(rows[2])],
    )
    _write_text(
        tmp_path / "pred.csv",
        ["id,prediction,reference", "1,a b c,a b c", "2,d e,d e f,extra", "3,g h,g h"],
    )
    _write_text(tmp_path / "twice.csv", ["id,id,reference", "1,a,a"])
    return tmp_path


RECORD_REFUSALS = [
    (("-i", "pred.jsonl", "--ref-field", "refs"), "pred.jsonl is a record file: pass --field NAME"),
    (
        ("-r", "ref.txt", "-i", "hyp.txt", "--field", "text"),
        "--field selects a field of record files",
    ),
    (
        ("-i", "pred.jsonl", "--field", "out.txt", "--ref-field", "refs"),
        "pred.jsonl: line 1 has no field 'out.txt' (there: text)",
    ),
    (
        ("-i", "pred.jsonl", "--field", "out.text"),
        "--ref-field NAME for the references of the -i records",
    ),
    (
        ("-r", "ref.txt", "-i", "pred.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "every -r file is a text file",
    ),
    (("-i", "hyp.txt", "--ref-field", "refs"), "no -r file is given and no -i file is one"),
    (
        ("-i", "bad.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "bad.jsonl: line 2 is not valid JSON",
    ),
    (
        ("-i", "blank.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "blank.jsonl: line 2 is blank",
    ),
    (
        ("-i", "array.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "array.jsonl: line 2 is a JSON list",
    ),
    (
        ("-i", "num.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "num.jsonl: line 2: field 'out.text' is a number, expected a string",
    ),
    (
        ("-i", "noref.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "line 2: field 'refs' is an empty list",
    ),
    (
        ("-i", "dup.jsonl", "--field", "out.text", "--ref-field", "refs", "--id-field", "id"),
        "dup.jsonl: line 3 repeats id '1' of line 1",
    ),
    (
        (
            "-r",
            "pred.jsonl",
            "-i",
            "short.jsonl",
            "--field",
            "out.text",
            "--ref-field",
            "refs",
            "--id-field",
            "id",
        ),
        "short.jsonl: no record with id '3'",
    ),
    (
        (
            "-r",
            "pred.jsonl",
            "-i",
            "other.jsonl",
            "--field",
            "out.text",
            "--ref-field",
            "refs",
            "--id-field",
            "id",
        ),
        "other.jsonl: no record with id '3'",
    ),
    (
        (
            "-r",
            "short.jsonl",
            "-i",
            "pred.jsonl",
            "--field",
            "out.text",
            "--ref-field",
            "refs",
            "--id-field",
            "id",
        ),
        "pred.jsonl: line 3 has an id that short.jsonl does not have",
    ),
    (
        ("-r", "pred.jsonl", "-i", "short.jsonl", "--field", "out.text", "--ref-field", "refs"),
        "inputs differ in line count",
    ),
    (
        ("-r", "ref.txt", "-i", "hyp.txt", "pred.jsonl", "--field", "out.text", "--id-field", "id"),
        "--id-field aligns record files",
    ),
    (
        ("-i", "pred.csv", "--field", "prediction", "--ref-field", "reference"),
        "pred.csv: line 3 has 4 cell(s), the header 3",
    ),
    (("-i", "twice.csv", "--field", "id", "--ref-field", "reference"), "names column 'id' twice"),
    (("-i", "missing.jsonl", "--field", "p", "--ref-field", "r"), "missing.jsonl: no such file"),
]


@pytest.mark.parametrize(
    ("args", "needle"), RECORD_REFUSALS, ids=[n[:40] for _, n in RECORD_REFUSALS]
)
def test_record_refusals_are_one_line(work, args, needle):
    assert_refused(("score", *args), needle, watch=(work,), cwd=work)


def test_stdin_records_refused_like_files(work):
    assert_refused(
        ("score", "-i", "-", "--field", "p", "--ref-field", "r"),
        "<stdin>: line 2 is not valid JSON",
        watch=(work,),
        cwd=work,
        stdin=b'{"p": "a", "r": "a"}\n{"p": \n',
    )
