"""Script counts: the code-point ranges count what the equivalent regular expressions find."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from evalab.text.scripts import script_share

HAN = re.compile(r"[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002ebef]")
KANA = re.compile(r"[\u3040-\u30ff\u31f0-\u31ff\uff66-\uff9f]")
HANGUL = re.compile(r"[\u1100-\u11ff\u3130-\u318f\uac00-\ud7af]")

# every range edge and its neighbours, among any other text
EDGES = [
    chr(c + d)
    for c in (0x1100, 0x11FF, 0x3040, 0x30FF, 0x3400, 0x4DBF, 0x9FFF, 0xAC00, 0xD7AF, 0x2EBEF)
    for d in (-1, 0, 1)
]


@given(st.lists(st.text(alphabet=st.sampled_from(EDGES) | st.characters(), max_size=20)))
def test_counts_equal_the_regular_expressions(segments: list[str]) -> None:
    text = "\n".join(s for s in segments if s)
    share = script_share(segments)
    assert share.han == len(HAN.findall(text))
    assert share.kana == len(KANA.findall(text))
    assert share.hangul == len(HANGUL.findall(text))


def test_ascii_text_has_no_cjk() -> None:
    share = script_share(["The cat sat on the mat.", None, ""])
    assert (share.letters, share.han, share.kana, share.hangul) == (17, 0, 0, 0)
    assert share.dominant_cjk() is None
