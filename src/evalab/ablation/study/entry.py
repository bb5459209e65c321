"""An entry point (``module:function``): its module's file found without running it, and
its import checked in a fresh interpreter."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from evalab.ablation.study.where import Where

_IMPORT_CHECK = r"""
import importlib, json, sys
sys.path.insert(0, sys.argv[1])
mod_name, fn_name = sys.argv[2].split(":")
try:
    mod = importlib.import_module(mod_name)
except BaseException as exc:
    print(json.dumps({"error": f"cannot import module {mod_name!r}: {type(exc).__name__}: {exc}"}))
    raise SystemExit(0)
fn = getattr(mod, fn_name, None)
if fn is None or not callable(fn):
    print(json.dumps({"error": f"module {mod_name!r} has no function {fn_name!r}"}))
else:
    print(json.dumps({"file": getattr(mod, "__file__", None)}))
"""


def check_entry_imports(entry: str, directory: Path, w: Where, key: str = "entry") -> str | None:
    """Import ``entry`` in a fresh interpreter (study folder on sys.path); return its file."""
    try:
        proc = subprocess.run(
            [sys.executable, "-c", _IMPORT_CHECK, str(directory), entry],
            cwd=directory,
            capture_output=True,
            text=True,
            timeout=120,
        )
    except subprocess.TimeoutExpired as exc:
        raise w.error(
            f"[study] {key}", f"importing {entry!r} took over 120 s", key, "study"
        ) from exc
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
        raise w.error(f"[study] {key}", f"importing {entry!r} failed: {tail}", key, "study")
    result = json.loads(lines[-1])
    if "error" in result:
        raise w.error(
            f"[study] {key}",
            f"{result['error']} (study folder {directory} is on sys.path)",
            key,
            "study",
        )
    file: str | None = result.get("file")
    return file


def find_module_file(entry: str, directory: Path) -> str | None:
    """The source file of the entry's module, located without executing any code."""
    from importlib.machinery import PathFinder

    search: list[str] | None = [str(directory), *sys.path]
    spec = None
    for part in entry.split(":")[0].split("."):
        spec = PathFinder.find_spec(part, search)
        if spec is None:
            return None
        search = list(spec.submodule_search_locations or [])
    return (
        spec.origin
        if spec is not None and spec.origin not in (None, "built-in", "frozen")
        else None
    )
