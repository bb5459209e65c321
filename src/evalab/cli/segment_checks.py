"""Checks on the segments a scoring command read, before any metric runs.

* A NUL character: a text file has none. A UTF-16 file without a byte-order mark decodes
  as valid UTF-8 with a NUL after every ASCII letter, and would be scored as garbage.
* A resampling statistic on one segment: every resample is the corpus itself, so an
  interval of width 0 and a p-value of 1 would be printed as if they were findings.
* Segment pairs too long for an edit-distance metric: TER, WER and CER fill a table of
  hypothesis × reference tokens per segment, so a 10 MB single line would run for hours
  (WER, CER) or exhaust memory (TER). The bounds allow document-length segments
  (about 5 000 × 5 000 words for TER, 100 000 × 100 000 tokens for WER and CER).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from evalab.errors import InputError

__all__ = ["EDIT_CELL_LIMITS", "check_edit_distance_sizes", "check_no_nul", "check_resamplable"]

#: metric -> (unit, most hypothesis × reference cells of one segment); TER also searches shifts
EDIT_CELL_LIMITS: dict[str, tuple[str, int]] = {
    "ter": ("words", 25_000_000),
    "wer": ("words", 10_000_000_000),
    "cer": ("characters", 10_000_000_000),
}


def check_no_nul(path: str, segments: Sequence[str]) -> None:
    """Refuse a file with a NUL character, naming its first line."""
    for no, segment in enumerate(segments, start=1):
        if "\x00" in segment:
            raise InputError(
                f"{path}: line {no} contains a NUL byte, which no text file has (a UTF-16 file without "
                "byte-order mark? convert it with e.g. `iconv -f UTF-16LE -t UTF-8`)"
            )


def _size(text: str | None, unit: str) -> int:
    if text is None:
        return 0
    return len(text) if unit == "characters" else len(text.split())


def check_edit_distance_sizes(metrics: Sequence[str], systems: Mapping[str, Sequence[str]],
                              refs: Sequence[Sequence[str | None]]) -> None:
    """Refuse a segment whose hypothesis × reference size is beyond an edit-distance metric's bound."""
    for name in metrics:
        if name not in EDIT_CELL_LIMITS:
            continue
        unit, limit = EDIT_CELL_LIMITS[name]
        ref_sizes = [max(_size(stream[k], unit) for stream in refs) for k in range(len(refs[0]))]
        for system, hyps in systems.items():
            for k, (hyp, ref_size) in enumerate(zip(hyps, ref_sizes, strict=True), start=1):
                hyp_size = _size(hyp, unit)
                if hyp_size * ref_size > limit:
                    raise InputError(
                        f"{system}: line {k} has {hyp_size:,} {unit} against a reference of {ref_size:,}: "
                        f"{name}'s edit distance would fill {hyp_size * ref_size:,} cells (at most {limit:,}); "
                        f"split the segment into sentences or leave {name} out"
                    )


def check_resamplable(n_segments: int, what: str, reference: str) -> None:
    """Refuse a bootstrap or randomization (``what``) over fewer than 2 segments."""
    if n_segments < 2:
        raise InputError(
            f"{reference}: {what} needs at least 2 segments, got {n_segments}: every resample of one "
            "segment is the corpus itself, so its interval and p-value would say nothing"
        )
