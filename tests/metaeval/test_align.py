"""Matching human-file system names to the -i systems."""

from __future__ import annotations

import numpy as np
import pytest

from evalab.cli.app import option_of
from evalab.errors import InputError, SettingsError
from evalab.metaeval.align import align_human, parse_name_map
from evalab.metaeval.human import HumanScores

HUMAN = HumanScores(
    "h.tsv",
    {
        "Facebook-AI": np.array([1.0, np.nan]),
        "Nemo": np.array([2.0, 3.0]),
        "ref-C": np.array([4.0, 5.0]),
        "ref-B": np.array([np.nan, np.nan]),
    },
)
FILES = {
    "Facebook-AI": "nt.en-de.hyp.Facebook-AI.de",
    "NVIDIA-NeMo": "nt.en-de.hyp.NVIDIA-NeMo.de",
    "ref.C": "nt.en-de.ref.C.de",
}
ALIASES = {**{s: s for s in FILES}, **{f: s for s, f in FILES.items()}}


def test_short_names_dotted_parts_and_the_name_map():
    got = align_human(
        HUMAN, list(FILES), ALIASES, parse_name_map(["Nemo=NVIDIA-NeMo", "ref-C=ref.C"]), FILES
    )
    np.testing.assert_array_equal(got, [[1.0, np.nan], [2.0, 3.0], [4.0, 5.0]])


def test_a_name_map_value_may_be_a_dotted_part_of_the_file_name():
    files = {
        "hyp.Facebook-AI": "nt.hyp.Facebook-AI.de",
        "hyp.NVIDIA-NeMo": "nt.hyp.NVIDIA-NeMo.de",
        "ref.C": "nt.ref.C.de",
    }
    aliases = {s: s for s in files}
    got = align_human(HUMAN, list(files), aliases, {"Nemo": "NVIDIA-NeMo", "ref-C": "ref.C"}, files)
    assert got[1, 1] == 3.0


@pytest.mark.parametrize(
    ("systems", "name_map", "message"),
    [
        (["Facebook-AI", "NVIDIA-NeMo"], {}, "'NVIDIA-NeMo' has no scores in h.tsv"),
        (
            ["Facebook-AI", "NVIDIA-NeMo"],
            {"Nemo": "nosuch"},
            "^name_map Nemo=nosuch: 'nosuch' is not one of the given systems",
        ),
        (["Facebook-AI", "NVIDIA-NeMo"], {"Nobody": "NVIDIA-NeMo"}, "h.tsv has no system 'Nobody'"),
        (["Facebook-AI", "ref.C"], {"ref-B": "ref.C"}, "no segment is rated"),
        (["Facebook-AI"], {}, "at least 3 systems"),
        # two points always correlate perfectly: a system-level Pearson of -1 or +1 is no finding
        (["Facebook-AI", "NVIDIA-NeMo"], {"Nemo": "NVIDIA-NeMo"}, "at least 3 systems"),
        # one human system's judgements cannot rate two different outputs
        (
            ["Facebook-AI", "NVIDIA-NeMo", "ref.C"],
            {"Nemo": "NVIDIA-NeMo", "ref-C": "ref.C", "Facebook-AI": "ref.C"},
            "named by both",
        ),
        (
            ["Facebook-AI", "NVIDIA-NeMo", "ref.C"],
            {"Facebook-AI": "NVIDIA-NeMo"},
            "both take the scores of 'Facebook-AI'",
        ),
    ],
)
def test_refusals(systems, name_map, message):
    with pytest.raises((InputError, SettingsError), match=message):
        align_human(HUMAN, systems, ALIASES, name_map, FILES)


def test_the_refusals_name_the_parameters_and_the_cli_words_them_as_options():
    with pytest.raises(InputError) as err:
        align_human(HUMAN, ["Facebook-AI", "NVIDIA-NeMo"], ALIASES, {"Nemo": "nosuch"}, FILES)
    assert err.value.worded(option_of).startswith(
        "--name-map Nemo=nosuch: 'nosuch' is not one of the -i systems ("
    )
    twice = {"Nemo": "NVIDIA-NeMo", "ref-C": "ref.C", "Facebook-AI": "ref.C"}
    with pytest.raises(SettingsError) as err:
        align_human(HUMAN, ["Facebook-AI", "NVIDIA-NeMo", "ref.C"], ALIASES, twice, FILES)
    assert str(err.value).startswith("name_map: the system 'ref.C' is named by both")
    assert err.value.worded(option_of).startswith("--name-map: -i system 'ref.C' is named by both")
    with pytest.raises(InputError) as err:
        align_human(HUMAN, ["Facebook-AI"], ALIASES, {}, FILES)
    assert "(systems SYS1 SYS2 SYS3 ...)" in str(err.value)
    assert "(-i SYS1 SYS2 SYS3 ...)" in err.value.worded(option_of)


def test_bad_name_map_items():
    for item in ("Nemo", "=x", "Nemo="):
        with pytest.raises(SettingsError, match="HUMAN_NAME=SYSTEM_NAME"):
            parse_name_map([item])
    with pytest.raises(SettingsError, match="mapped twice"):
        parse_name_map(["a=b", "a=c"])
