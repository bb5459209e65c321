"""Every input read once (FIFOs, pipes, stdin) and gzip read wherever text or per-item files
are, through the CLI (``evalab.io._opened``)."""

from __future__ import annotations

import gzip
import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from tests.items.harness_files import inspect_log, write_lm_eval_run

ROOT = Path(__file__).resolve().parents[1]


def _scores(path: Path, values: list[int]) -> Path:
    path.write_text("".join(json.dumps({"id": i, "score": v}) + "\n" for i, v in enumerate(values)))
    return path


def _hung(signum: int, frame: object) -> None:
    raise TimeoutError("the FIFO was opened twice: the reader waits for a second writer")


def _evalab(*args: str, pass_fds: tuple[int, ...] = ()) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    return subprocess.run(
        [sys.executable, "-m", "evalab", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        pass_fds=pass_fds,
    )


def test_a_fifo_with_a_writer_is_read_once(tmp_path: Path) -> None:
    base = _scores(tmp_path / "a.jsonl", [1, 0, 1, 1, 0, 1])
    data = _scores(tmp_path / "b_src.jsonl", [1, 1, 1, 0, 0, 1]).read_bytes()
    fifo = tmp_path / "b.jsonl"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as out:  # blocks until the reader opens; a second open would hang
            out.write(data)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    res = _evalab("compare", "--scores", str(base), str(fifo), "-f", "json")
    writer.join(5)
    assert res.returncode == 0, res.stderr
    assert [r["n_items"] for r in json.loads(res.stdout)] == [6, 6]


def test_process_substitution_of_gzip_data_reads_like_the_file(tmp_path: Path) -> None:
    base = _scores(tmp_path / "a.jsonl", [1, 0, 1, 1, 0, 1])
    packed = gzip.compress(_scores(tmp_path / "b.jsonl", [1, 1, 1, 0, 0, 1]).read_bytes())
    read_end, write_end = os.pipe()  # `<(cat b.jsonl.gz)`: /dev/fd/N, no name ending
    os.write(write_end, packed)
    os.close(write_end)
    try:
        res = _evalab(
            "compare",
            "--scores",
            str(base),
            f"/dev/fd/{read_end}",
            "-f",
            "json",
            pass_fds=(read_end,),
        )
    finally:
        os.close(read_end)
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)[1]["score"] == pytest.approx(4 / 6)


def test_stdin_as_a_scores_file(run_cli, tmp_path: Path) -> None:
    base = _scores(tmp_path / "a.jsonl", [1, 0, 1, 1])
    stdin = "".join(json.dumps({"id": i, "score": v}) + "\n" for i, v in enumerate([0, 0, 1, 1]))
    res = run_cli("compare", "--scores", base, "-", "-f", "json", stdin=stdin)
    assert res.exit_code == 0, res.stderr
    assert json.loads(res.stdout)[1]["system"] == "-"


def _strip(out: str) -> list[dict[str, object]]:
    """Rows without the fields that name the file."""
    return [{k: v for k, v in r.items() if k not in ("system", "file")} for r in json.loads(out)]


def _gz(path: Path) -> Path:
    out = path.with_name(path.name + ".gz")
    out.write_bytes(gzip.compress(path.read_bytes()))
    return out


def test_gzip_texts_score_as_the_plain_files(run_cli, tmp_path: Path) -> None:
    ref, hyp, src = (tmp_path / n for n in ("ref.txt", "hyp.txt", "src.txt"))
    ref.write_text("the cat sat on the mat\na dog barks\n")
    hyp.write_text("the cat sat on a mat\na dog barked\n")
    src.write_text("le chat\nun chien\n")
    plain = run_cli("score", "-r", ref, "-i", hyp, "-m", "bleu,chrf", "-f", "json")
    packed = run_cli("score", "-r", _gz(ref), "-i", _gz(hyp), "-m", "bleu,chrf", "-f", "json")
    assert packed.exit_code == 0, packed.stderr
    assert _strip(packed.stdout) == _strip(plain.stdout)


def test_gzip_per_item_files_and_harness_logs(run_cli, tmp_path: Path) -> None:
    a = tmp_path / "a.csv"
    a.write_text("id,score\n0,1\n1,0\n2,1\n3,1\n")
    b = _gz(_scores(tmp_path / "b.jsonl", [0, 0, 1, 1]))
    res = run_cli("compare", "--scores", _gz(a), b, "-f", "json")
    assert res.exit_code == 0, res.stderr
    assert [r["score"] for r in json.loads(res.stdout)] == [0.75, 0.5]
    logs = [
        _gz(inspect_log(tmp_path / f"{m}.json", v, model=m))
        for m, v in (("x", "CICI"), ("y", "CCCI"))
    ]
    runs = [write_lm_eval_run(tmp_path / m, {"arc": [1, 0, 1, 1]}) for m in ("m1", "m2")]
    for f in runs[1].glob("samples_*"):
        _gz(f)
        f.unlink()
    for files in (logs, runs):
        res = run_cli("compare", "--scores", *files, "-f", "json")
        assert res.exit_code == 0, res.stderr


@pytest.mark.parametrize("cut", [5, 20])
def test_a_truncated_or_corrupt_gzip_is_one_line(run_cli, tmp_path: Path, cut: int) -> None:
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\n" * 50)
    bad = tmp_path / "hyp.txt.gz"
    bad.write_bytes(gzip.compress(ref.read_bytes())[:cut])
    for args in (("score", "-r", ref, "-i", bad), ("compare", "--scores", bad, ref)):
        res = run_cli(*args)
        assert res.exit_code == 2 and res.stdout == ""
        assert (
            res.stderr.count("\n") == 1
            and "hyp.txt.gz: gzip data that cannot be decompressed" in res.stderr
        )


def test_ablate_import_reads_a_fifo_once(run_cli, tmp_path: Path) -> None:
    from evalab.ablation.importing.importer import read_records

    data = b"seed,acc\n0,0.5\n1,0.75\n"
    fifo = tmp_path / "runs.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(gzip.compress(data)), daemon=True)
    writer.start()
    signal.signal(signal.SIGALRM, _hung)  # a second open of the FIFO would block for ever
    signal.alarm(30)
    try:
        assert [line for line, _ in read_records(fifo)] == [2, 3]
    finally:
        signal.alarm(0)
    writer.join(5)


def test_a_record_file_through_a_pipe_is_known_by_what_it_holds(tmp_path: Path) -> None:
    records = "".join(
        json.dumps({"id": i, "out": h, "ref": r}) + "\n"
        for i, (h, r) in enumerate([("the cat sat", "the cat sat"), ("a dog", "the dog")])
    )
    read_end, write_end = os.pipe()  # `<(zcat preds.jsonl.gz)`
    os.write(write_end, gzip.compress(records.encode()))
    os.close(write_end)
    try:
        res = _evalab(
            "score", "-i", f"/dev/fd/{read_end}", "--field", "out", "--ref-field", "ref", "-b",
            pass_fds=(read_end,),
        )  # fmt: skip
    finally:
        os.close(read_end)
    assert res.returncode == 0, res.stderr
    packed = tmp_path / "preds.jsonl.gz"
    packed.write_bytes(gzip.compress(records.encode()))
    named = _evalab("score", "-i", str(packed), "--field", "out", "--ref-field", "ref", "-b")
    assert named.returncode == 0 and named.stdout == res.stdout


def test_ppl_logits_from_a_fifo(tmp_path: Path) -> None:
    import io

    import numpy as np

    buffer = io.BytesIO()
    rng = np.random.default_rng(0)
    np.savez(buffer, logits=rng.normal(size=(6, 5)), labels=rng.integers(0, 5, 6))
    fifo = tmp_path / "logits.npz"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(buffer.getvalue()), daemon=True)
    writer.start()
    res = _evalab("ppl", "--logits", str(fifo), "-f", "json")
    writer.join(5)
    assert res.returncode == 0, res.stderr


def test_stdin_is_one_scores_file_only(run_cli, tmp_path: Path) -> None:
    res = run_cli("compare", "--scores", "-", "-", stdin='{"id": 1, "score": 1}\n')
    assert res.exit_code == 2 and "stdin ('-') can be used for only one file" in res.stderr


def test_gzip_data_that_inflates_past_the_cap_is_one_line(
    run_cli, tmp_path: Path, monkeypatch
) -> None:
    # a "gzip bomb": a few kB that decompress to far more than memory holds (capped here at 64 kB)
    import evalab.io

    monkeypatch.setattr(evalab.io, "GUNZIPPED_MAX", 64 * 1024)
    ref = tmp_path / "ref.txt"
    ref.write_text("the cat sat on the mat\n" * 10)
    bomb = tmp_path / "hyp.txt.gz"
    bomb.write_bytes(gzip.compress(b"the cat sat on the mat\n" * 10_000))
    before = bomb.read_bytes()
    for args in (("score", "-r", ref, "-i", bomb), ("compare", "--scores", bomb, ref)):
        res = run_cli(*args)
        assert res.exit_code == 2 and res.stdout == ""
        assert (
            res.stderr.count("\n") == 1
            and "hyp.txt.gz: gzip data that decompresses to more than" in res.stderr
        )
    assert bomb.read_bytes() == before
    ok = tmp_path / "ok.txt.gz"  # under the cap: read as before
    ok.write_bytes(gzip.compress(ref.read_bytes()))
    assert run_cli("score", "-r", ref, "-i", ok).exit_code == 0
