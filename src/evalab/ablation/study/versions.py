"""What a study's code version is derived from: the code its entry points import, the
``[study] inputs`` files, the computed metrics' definitions and the ``[curves]`` rules."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from evalab.ablation.contract.codeversion import (
    CodeVersion,
    DigestCache,
    declared_inputs,
    derive_code_version,
)
from evalab.ablation.contract.computed import ComputedMetric
from evalab.ablation.contract.curves import CurveSettings, parse_settings
from evalab.ablation.study.entry import check_entry_imports, find_module_file
from evalab.ablation.study.where import Where, table_or_default


@dataclass(frozen=True)
class CodeKeys:
    """What the code version is derived from, and the versions it yields."""

    code: CodeVersion
    curves: CurveSettings
    stage_versions: dict[str, str]
    version: str  # the study's code version: the code's, extended by metrics and curves rules


def code_keys(
    path: Path,
    given: dict[str, Any],
    data: dict[str, Any],
    computed: dict[str, ComputedMetric],
    cache: DigestCache,
    w: Where,
    check_entry: bool,
) -> CodeKeys:
    entry, evaluate, code_version = given["entry"], given["evaluate"], given["code_version"]
    if check_entry:
        for key, point in (("entry", entry), ("evaluate", evaluate)):
            if point is not None:
                check_entry_imports(point, path.parent, w, key)
    # found without importing, so `status` and `report` (which skip the import check)
    # derive the same code version as `run`; it covers both entry points' code
    module_files = [find_module_file(p, path.parent) for p in (entry, evaluate) if p is not None]
    declared = _inputs(given["inputs"], path.parent, w)
    code = derive_code_version(
        path.parent,
        entry,
        given["command"],
        [f for f in module_files if f],
        pinned=code_version,
        inputs=declared,
        cache=cache,
    )
    curves = _curves(table_or_default(data, "curves"), entry, w)
    stage_versions = (
        _stage_versions(path.parent, given, module_files, declared, computed, curves, cache)
        if evaluate is not None and code_version is None
        else {}
    )
    version = _with_curves(_with_outputs(code.version, computed), curves)
    return CodeKeys(code, curves, stage_versions, version)


def _stage_versions(
    directory: Path,
    given: dict[str, Any],
    module_files: list[str | None],
    declared: list[Path],
    computed: dict[str, ComputedMetric],
    curves: CurveSettings,
    cache: DigestCache,
) -> dict[str, str]:
    """Each stage's own code version (training: what ``entry`` imports, evaluation: what
    ``evaluate`` imports), so evaluation edits redo evaluation only."""
    out = {}
    for stage, point, files in (
        ("train", given["entry"], module_files[:1]),
        ("eval", given["evaluate"], module_files[1:]),
    ):
        part = derive_code_version(
            directory,
            point,
            given["command"] if stage == "train" else None,
            [f for f in files if f],
            inputs=declared,
            cache=cache,
        )
        out[stage] = _with_curves(_with_outputs(part.version, computed), curves)
    return out


def _with_outputs(version: str, computed: dict[str, ComputedMetric]) -> str:
    """The code version, extended by the computed metrics' definitions and reference
    contents when there are any: changing a metric's settings or its references then
    supersedes the stored runs instead of mixing scores of two definitions."""
    if not computed:
        return version
    import hashlib

    digest = hashlib.sha256(
        "|".join(f"{n}:{c.digest}" for n, c in sorted(computed.items())).encode()
    ).hexdigest()
    return f"{version}+m{digest[:8]}"


def _with_curves(version: str, curves: CurveSettings) -> str:
    """The code version, extended by the ``[curves]`` rules when declared: they decide which
    values a run stores (``select``) and when it stops (``stop_when``)."""
    if not curves.select and not curves.stop_when:
        return version
    import hashlib

    digest = hashlib.sha256(f"{curves.select}|{curves.stop_when}".encode()).hexdigest()
    return f"{version}+c{digest[:8]}"


def _curves(table: Any, entry: str | None, w: Where) -> CurveSettings:
    """The ``[curves]`` table (``stop_when`` only for entry points: ``log()`` applies it)."""
    try:
        settings = parse_settings(table)
    except ValueError as exc:
        key, message = exc.args
        raise w.error(f"[curves] {key}".rstrip(), message, key or None, "curves") from None
    if settings.stop_when and entry is None:
        raise w.error(
            "[curves] stop_when",
            "applies to entry points (evalab.ablation.log returns True when it "
            "holds); a command stops itself",
            "stop_when",
            "curves",
        )
    return settings


def _inputs(raw: Any, directory: Path, w: Where) -> list[Path]:
    """The files ``[study] inputs`` names (part of the code version: a changed data file
    supersedes the runs that read it)."""
    if not isinstance(raw, list) or not all(
        isinstance(p, str) and p.strip() and "\0" not in p for p in raw
    ):
        raise w.error(
            "[study] inputs",
            f'must be a list of file names or glob patterns, e.g. ["data/*"]; got {raw!r}',
            "inputs",
            "study",
        )
    try:
        return declared_inputs(directory, raw)
    except ValueError as exc:
        raise w.error("[study] inputs", str(exc), "inputs", "study") from None
