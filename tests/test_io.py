"""Reading segment files and writing outputs atomically (``evalab.io``)."""

from __future__ import annotations

import io
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

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


def _mode(path) -> int:
    import stat

    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.parametrize(("umask", "expected"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)])
def test_atomic_new_file_gets_the_umask_mode(tmp_path, umask, expected):
    import os

    old = os.umask(umask)
    try:
        write_text_atomic(tmp_path / "new.txt", "x")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "new.txt") == expected  # mkstemp's 0600 does not survive


def test_atomic_replaced_file_keeps_its_mode_and_link(tmp_path):
    import os

    target = tmp_path / "report.txt"
    target.write_text("old")
    target.chmod(0o604)
    os.symlink("report.txt", tmp_path / "link.txt")
    write_text_atomic(tmp_path / "link.txt", "new")
    assert (tmp_path / "link.txt").is_symlink() and target.read_text() == "new"
    assert _mode(target) == 0o604


@pytest.mark.parametrize(
    ("where", "needle"),
    [
        ("file/out.txt", "cannot write"),
        ("folder", "is a folder"),
        ("/proc/evalab.txt", "cannot write"),
    ],
)
def test_atomic_write_errors_are_input_errors(tmp_path, where, needle):
    (tmp_path / "file").write_text("x")
    (tmp_path / "folder").mkdir()
    target = where if where.startswith("/") else tmp_path / where
    with pytest.raises(InputError, match=needle):
        write_text_atomic(target, "x")
    assert (tmp_path / "file").read_text() == "x"


@pytest.mark.parametrize(
    ("data", "hint"),
    [
        ("a\nb\n".encode("utf-16"), "UTF-16"),
        (b"\xfe\xff" + "a\n".encode("utf-16-be"), "UTF-16"),
        ("a\nb\n".encode("utf-32"), "UTF-32"),
        (b"\x00\x00\xfe\xff" + "a\n".encode("utf-32-be"), "UTF-32"),
    ],
)
def test_utf16_and_utf32_are_named(tmp_path, data, hint):
    with pytest.raises(
        InputError, match=rf"{hint} \(.*-endian\) text .* `iconv -f {hint} -t UTF-8`"
    ):
        read_segments(write(tmp_path, "wide.txt", data))


def test_same_file(tmp_path):
    import os

    from evalab.io import same_file

    a = write(tmp_path, "a.txt", b"x")
    os.link(a, tmp_path / "hard.txt")
    os.symlink("a.txt", tmp_path / "soft.txt")
    assert same_file(a, tmp_path / "hard.txt") and same_file(a, tmp_path / "soft.txt")
    assert same_file(a, tmp_path / "missing" / ".." / "a.txt")
    assert not same_file(a, tmp_path / "b.txt") and same_file(
        tmp_path / "b.txt", tmp_path / "b.txt"
    )


def whole_file_lines(data: bytes) -> list[str] | str:
    """What reading the whole file at once gives: its lines, or the refusal's text."""
    from evalab.io import decode_utf8

    try:
        text = decode_utf8(data, "<stdin>")
    except InputError as exc:
        return str(exc)
    return split_segments(text) if text not in ("", "\ufeff") else "<stdin>: file is empty"


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.sampled_from([b"a", b"\n", b"\r", b"\r\n", "é".encode(), "東".encode(), b"\xe9", b" "]),
        max_size=30,
    ),
    st.integers(1, 9),
)
def test_block_reading_gives_the_whole_file_lines(parts, block) -> None:
    """Read ``block`` bytes at a time (sequences and CRLF cut anywhere), the lines, the bad
    byte's line and the empty-file refusal are those of the whole file decoded at once."""
    from unittest import mock

    import evalab.io as evalab_io

    data = b"".join(parts)
    stdin = io.TextIOWrapper(io.BytesIO(data), encoding="utf-8")
    with mock.patch.object(evalab_io, "READ_BLOCK", block), mock.patch.object(sys, "stdin", stdin):
        try:
            got: list[str] | str = read_segments("-")
        except InputError as exc:
            got = str(exc).split(", expected")[0]
    assert got == whole_file_lines(data)


def test_bom_and_bad_byte_in_a_later_block(tmp_path, monkeypatch):
    import evalab.io as evalab_io

    monkeypatch.setattr(evalab_io, "READ_BLOCK", 4)
    with pytest.warns(UserWarning, match="byte-order mark"):
        assert read_segments(write(tmp_path, "nl.txt", b"\xef\xbb\xbf\n")) == ["\ufeff"]
    with pytest.raises(InputError, match=r"byte 0xe9 on line 4"):
        read_segments(write(tmp_path, "late.txt", b"ab\ncd\nef\ngh\xe9\n"))
