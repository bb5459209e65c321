"""The WMT21 en-de MQM data beside the repository (``../shared/wmt21-mqm``)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from tests.conftest import SHARED

MQM = Path(os.environ.get("EVALAB_WMT21_MQM", SHARED / "wmt21-mqm"))
SYSTEMS = [
    "Facebook-AI",
    "HuaweiTSC",
    "NVIDIA-NeMo",
    "Online-W",
    "UEdin",
    "VolcTrans-AT",
    "VolcTrans-GLAT",
    "eTranslation",
]


@pytest.fixture(scope="session")
def mqm() -> Path:
    """The folder of the WMT21 en-de MQM data (skips when it is absent)."""
    if not (MQM / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv").exists():
        pytest.skip(f"WMT21 MQM data not found at {MQM}")
    return MQM


def mqm_args(root: Path) -> list[str]:
    """``--human``, ``-r`` and ``-i`` arguments of the eight rated systems."""
    hyps = [str(root / "system-outputs" / f"newstest2021.en-de.hyp.{s}.de") for s in SYSTEMS]
    return [
        "--human",
        str(root / "human" / "mqm_newstest2021_ende.avg_seg_scores.tsv"),
        "-r",
        str(root / "references" / "newstest2021.en-de.ref.A.de"),
        "-i",
        *hyps,
        "--name-map",
        "Nemo=NVIDIA-NeMo",
    ]
