"""A synthetic study for the ablation tests: metrics from a known formula plus seeded noise.

acc = 70 + 10 * (a or b) + shift + N(0, noise): components a and b are redundant (seed 004),
so with noise 0 the 2x2 grid over a, b gives removal 0, addition +10, interaction -10.
``mode`` makes a run raise, hang, return a non-number or fail on its first attempt.
"""

from __future__ import annotations

import contextlib
import json
from pathlib import Path
from typing import Any

ENTRY = """
import os
import random
import time


def run(config, seed, out_dir=None):
    mode = config["mode"]
    if mode == "raise":
        raise RuntimeError("boom: synthetic failure")
    if mode == "hang":
        time.sleep(120)
    if mode == "killed":
        os.kill(os.getpid(), 9)
    if mode == "nonnumber":
        return {"acc": "high", "loss": 0.1}
    if mode == "flaky":
        marker = os.path.join(out_dir, "tried")
        if not os.path.exists(marker):
            open(marker, "w").close()
            raise RuntimeError("flaky: first attempt fails")
    if config["sleep"]:
        time.sleep(config["sleep"])
    rng = random.Random(f"{seed}|{sorted(config.items())}")
    acc = 70.0 + 10.0 * (config["a"] or config["b"]) + config["shift"] + rng.gauss(0.0, config["noise"])
    return {"acc": acc, "loss": 1.0 - acc / 100.0}
"""

BASE = {"a": True, "b": True, "shift": 0.0, "noise": 0.5, "mode": "ok", "sleep": 0.0}


def toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, dict):
        return "{ " + ", ".join(f"{json.dumps(k)} = {toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, list):
        return "[" + ", ".join(toml_value(x) for x in v) + "]"
    return repr(v)


def write_study(
    folder: Path,
    *,
    name: str = "synth",
    seeds: list[int] | None = None,
    variants: list[tuple[str, str, dict[str, Any]]] = (),
    grid: dict[str, list[Any]] | None = None,
    base: dict[str, Any] | None = None,
    timeout: float = 60,
    retries: int = 0,
    reference: dict[str, dict[str, float]] | None = None,
    extra_study: str = "",
    entry_source: str = ENTRY,
) -> Path:
    """Write synth_entry.py and study.toml into ``folder``; return the study path."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "synth_entry.py").write_text(entry_source, encoding="utf-8")
    lines = [
        "[study]",
        f"name = {json.dumps(name)}",
        'entry = "synth_entry:run"',
        f"seeds = {toml_value(seeds if seeds is not None else [0, 1, 2, 3])}",
        'metrics = ["acc", "loss"]',
        'primary = "acc"',
        "higher_is_better = { acc = true, loss = false }",
        f"timeout = {timeout}",
        f"retries = {retries}",
        extra_study,
        "",
        "[base]",
    ]
    lines += [f"{k} = {toml_value(v)}" for k, v in (base or BASE).items()]
    for label, desc, settings in variants:
        lines += [
            "",
            "[[variant]]",
            f"label = {json.dumps(label)}",
            f"description = {json.dumps(desc)}",
            f"set = {toml_value(settings)}",
        ]
    if grid:
        lines += ["", "[grid]"] + [f"{k} = {toml_value(v)}" for k, v in grid.items()]
    for col, rows in (reference or {}).items():
        lines += ["", f"[reference.{json.dumps(col)}]"] + [
            f"{json.dumps(k)} = {v}" for k, v in rows.items()
        ]
    path = folder / "study.toml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def process_cmdlines() -> list[str]:
    """The command lines of every process on this host (zombies show as empty)."""
    out = []
    for proc_dir in Path("/proc").glob("[0-9]*"):
        with contextlib.suppress(OSError):
            out.append(
                (proc_dir / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            )
    return out


def write_command_study(
    folder: Path,
    command: str,
    *,
    name: str = "cmd",
    seeds: list[int] | None = None,
    timeout: float = 60,
) -> Path:
    """A study whose runs are a shell command template (written as a TOML literal string)."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "study.toml"
    path.write_text(
        f"[study]\nname = {json.dumps(name)}\ncommand = '''{command}'''\n"
        f"seeds = {toml_value(seeds if seeds is not None else [0])}\n"
        f'metrics = ["acc"]\ntimeout = {timeout}\n\n[base]\nx = 1\n',
        encoding="utf-8",
    )
    return path
