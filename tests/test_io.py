"""Reading segment files and writing outputs atomically (``evalab.io``)."""

from __future__ import annotations

import io
import sys

import pytest

from evalab.errors import InputError
from evalab.io import (
    atomic_path,
    check_same_length,
    read_segments,
    split_segments,
    write_bytes_atomic,
    write_text_atomic,
)


def write(tmp_path, name: str, data: bytes):
    p = tmp_path / name
    p.write_bytes(data)
    return p


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"a\nb\n", ["a", "b"]),
        (b"a\nb", ["a", "b"]),  # no final newline
        (b"a\r\nb\r\n", ["a", "b"]),  # CRLF scores like LF
        (b"a\n\nb\n", ["a", "", "b"]),  # an empty line is an empty segment
        (b"x\xe2\x80\xa8y\nz\n", ["x\u2028y", "z"]),  # U+2028 inside a line is not a split
        (b"x\xc2\x85y\x0cz\n", ["x\u0085y\x0cz"]),  # nor NEL or form feed
        (b"\n", [""]),
        ("café 東京\n".encode(), ["café 東京"]),
    ],
)
def test_read_segments(tmp_path, data, expected):
    assert read_segments(write(tmp_path, "f.txt", data)) == expected


def test_bom_is_kept_with_a_warning(tmp_path):
    # sacrebleu keeps a leading U+FEFF in segment 1, and the WMT22 official scores of
    # uk-en PROMT (a file that starts with a BOM) are only reproduced that way
    with pytest.warns(UserWarning, match=r"bom\.txt: starts with a UTF-8 byte-order mark"):
        assert read_segments(write(tmp_path, "bom.txt", b"\xef\xbb\xbfa\nb\n")) == ["\ufeffa", "b"]


def test_invalid_utf8_names_file_and_line(tmp_path):
    p = write(tmp_path, "latin1.txt", "ok\nok\ncaf\xe9\n".encode("latin-1"))
    with pytest.raises(InputError) as exc:
        read_segments(p)
    msg = str(exc.value)
    assert str(p) in msg and "not valid UTF-8" in msg and "line 3" in msg and "0xe9" in msg


def test_empty_file(tmp_path):
    p = write(tmp_path, "empty.txt", b"")
    with pytest.raises(InputError, match=r"empty\.txt: file is empty"):
        read_segments(p)
    assert read_segments(p, allow_empty=True) == []
    # a BOM alone is empty too
    with pytest.raises(InputError, match="file is empty"):
        read_segments(write(tmp_path, "bom.txt", b"\xef\xbb\xbf"))


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(InputError, match=r"nope\.txt: no such file"):
        read_segments(tmp_path / "nope.txt")
    with pytest.raises(InputError, match="is a directory"):
        read_segments(tmp_path)


def test_stdin(monkeypatch):
    fake = io.TextIOWrapper(io.BytesIO(b"a\r\nb\n"), encoding="utf-8")
    monkeypatch.setattr(sys, "stdin", fake)
    assert read_segments("-") == ["a", "b"]
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff\n"), encoding="utf-8"))
    with pytest.raises(InputError, match="<stdin>: not valid UTF-8"):
        read_segments("-")


def test_split_segments():
    assert split_segments("a\r\nb\rc\n") == ["a", "b\rc"]  # only a CR before LF is dropped


def test_check_same_length_names_every_input():
    assert check_same_length([("ref.txt", [1, 2]), ("hyp.txt", [3, 4])]) == 2
    with pytest.raises(InputError, match=r"ref\.txt: 2 lines, hyp\.txt: 3 lines"):
        check_same_length([("ref.txt", [1, 2]), ("hyp.txt", [1, 2, 3])])
    assert check_same_length([]) == 0


def test_atomic_write(tmp_path):
    target = tmp_path / "sub" / "out.json"
    write_text_atomic(target, "héllo\n")
    assert target.read_text(encoding="utf-8") == "héllo\n"
    write_bytes_atomic(target, b"\x00\x01")
    assert target.read_bytes() == b"\x00\x01"
    assert sorted(p.name for p in target.parent.iterdir()) == ["out.json"]


def test_atomic_failure_leaves_no_file(tmp_path):
    target = tmp_path / "out.txt"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("partial")
        raise RuntimeError("boom")
    assert not target.exists()
    assert list(tmp_path.iterdir()) == []


def test_atomic_failure_keeps_old_file(tmp_path):
    target = tmp_path / "out.txt"
    target.write_text("old")
    with pytest.raises(KeyboardInterrupt), atomic_path(target) as tmp:
        tmp.write_text("new, partial")
        raise KeyboardInterrupt
    assert target.read_text() == "old"
    assert [p.name for p in tmp_path.iterdir()] == ["out.txt"]
