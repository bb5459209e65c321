"""Empty lines in reference files: empty references (sacrebleu's default) or missing ones.

sacrebleu keeps an empty reference line as an empty reference: it takes part in BLEU's
closest-length choice (a length of 0) and in chrF's and TER's best-reference choice.
evalab does the same by default and warns with the count. With ``--missing-ref
empty-line``, an empty line in any reference file but the first marks that reference as
missing for the segment (``None``, sacrebleu's Python convention): the segment is scored
against its other references, and the signature says ``nrefs:var``.
"""

from __future__ import annotations

import warnings

from evalab.errors import SettingsError

__all__ = ["MISSING_REF_MODES", "apply_missing_refs"]

#: ``--missing-ref`` choices: empty lines are empty references, or (beyond the first file) missing
MISSING_REF_MODES = ("none", "empty-line")


def check_missing_ref(mode: str) -> None:
    """Refuse an unknown ``--missing-ref`` value."""
    if mode not in MISSING_REF_MODES:
        raise SettingsError(
            f"--missing-ref must be one of {', '.join(MISSING_REF_MODES)}, got {mode!r}"
        )


def apply_missing_refs(
    refs: list[list[str | None]], paths: list[str], mode: str
) -> list[list[str | None]]:
    """Reference streams with empty lines beyond the first file as ``None`` when asked; warns.

    A ``None`` already there (a record with fewer references than others) stays missing.
    """
    empty = [sum(1 for r in stream if r is not None and not r.strip()) for stream in refs]
    if mode == "empty-line" and refs:
        missing = sum(empty[1:])
        if empty[0]:
            warnings.warn(
                f"{empty[0]} empty line(s) in the first reference file {paths[0]} are scored as "
                "empty references (--missing-ref empty-line applies from the second file on)",
                stacklevel=2,
            )
        if missing:
            warnings.warn(
                f"{missing} empty reference line(s) beyond the first file counted as missing",
                stacklevel=2,
            )
        return [
            refs[0],
            *([None if r is None or not r.strip() else r for r in stream] for stream in refs[1:]),
        ]
    if any(empty):
        where = ", ".join(f"{p} ({n})" for p, n in zip(paths, empty, strict=True) if n)
        warnings.warn(
            f"{sum(empty)} empty reference line(s) scored as empty references, as sacrebleu does: "
            f"{where}; pass --missing-ref empty-line if they mean 'no reference'",
            stacklevel=2,
        )
    return list(refs)
