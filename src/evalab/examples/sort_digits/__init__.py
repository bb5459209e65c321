"""The built-in study: a small encoder–decoder transformer that sorts digits, ablated like
Table 3 of "Attention Is All You Need" (rows A, D and E), run by ``evalab demo``.

``run(config, seed)`` (in :mod:`.entry`) is the study's entry point; ``study.toml`` beside
this file is the study itself (:func:`study_path`).
"""

from __future__ import annotations

from pathlib import Path


def study_path() -> Path:
    """Path of the shipped study file (package data).

    >>> study_path().name
    'study.toml'
    """
    return Path(__file__).with_name("study.toml")
