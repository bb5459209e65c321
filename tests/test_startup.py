"""What a process loads to start: ``import evalab`` (``evalab/__init__.py``) and the command
line (``evalab/cli/__init__.py``, ``evalab/cli/app.py``), each in a fresh interpreter.

No entry point loads the optional heavy stacks (a model metric imports them when it
scores); ``import evalab`` and ``evalab --version`` load neither numpy nor the typer app.
The time itself is benchmarks/bench_startup.py's to measure.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
HEAVY = frozenset({"torch", "transformers", "ray", "matplotlib", "scipy"})
APP = frozenset({"numpy", "typer", "click", "rich"})
#: printed last by every probe: the top-level names of the modules the process holds
REPORT = "\nimport sys\nprint(' '.join(sorted({m.split('.')[0] for m in sys.modules})))"


def loaded_by(code: str, cwd: Path | None = None) -> tuple[set[str], str]:
    """The top-level modules a fresh interpreter holds after ``code``, and what it printed."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(SRC), *filter(None, [env.get("PYTHONPATH")])])
    proc = subprocess.run(
        [sys.executable, "-c", code + REPORT],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    *printed, modules = proc.stdout.rstrip("\n").split("\n")
    return set(modules.split()), "\n".join(printed)


def test_import_evalab_loads_neither_heavy_stacks_nor_numpy() -> None:
    modules, _ = loaded_by("import evalab")
    assert not modules & (HEAVY | APP), modules & (HEAVY | APP)


def test_the_api_loads_the_metrics_on_first_use_only() -> None:
    modules, printed = loaded_by(
        "import evalab\nprint(round(evalab.corpus_score('chrf', ['a cat'], [['the cat']]).score, 4))"
        "\nprint(evalab.metric('bleu').name, evalab.Score.__name__, 'Metric' in dir(evalab))"
    )
    assert printed.splitlines()[1] == "bleu Score True" and "numpy" in modules
    assert not modules & HEAVY


@pytest.mark.parametrize("argv", [["--version"], ["--version", "score"]])
def test_version_is_answered_before_the_app_is_loaded(argv: list[str]) -> None:
    modules, printed = loaded_by(f"from evalab.cli import main\nmain({argv!r})")
    _, from_app = loaded_by("from evalab.cli.app import run\nrun(['--version'])")
    assert printed == from_app == f"evalab {__import__('evalab').__version__}"
    assert not modules & (HEAVY | APP), modules & (HEAVY | APP)


def test_every_command_of_the_cli_loads_no_heavy_stack() -> None:
    modules, _ = loaded_by("from evalab.cli.app import _register_commands\n_register_commands([])")
    assert not modules & HEAVY, modules & HEAVY


def test_scoring_a_file_from_the_cli_loads_no_heavy_stack(tmp_path: Path) -> None:
    (tmp_path / "hyp.txt").write_text("The cat sat on the mat.\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("The cat sat on a mat.\n", encoding="utf-8")
    argv = ["score", "-i", "hyp.txt", "-r", "ref.txt", "-m", "bleu", "chrf", "ter", "wer"]
    modules, printed = loaded_by(
        f"from evalab.cli import main\nmain({argv!r} + ['-b'])", cwd=tmp_path
    )
    assert printed.splitlines() == ["48.9", "71.4", "16.7", "0.1667"]
    assert not modules & HEAVY, modules & HEAVY


def test_a_one_line_bleu_score_loads_no_heavy_stack_and_no_rich(tmp_path: Path) -> None:
    # the path a shell loop pays per call: `evalab score -i HYP -r REF -b` on one line;
    # rich (progress bars, pretty tables) has nothing to draw there
    (tmp_path / "hyp.txt").write_text("The cat sat on the mat.\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("The cat sat on a mat.\n", encoding="utf-8")
    argv = ["score", "-i", "hyp.txt", "-r", "ref.txt", "-b"]
    modules, printed = loaded_by(f"from evalab.cli import main\nmain({argv!r})", cwd=tmp_path)
    assert printed == "48.9"
    assert not modules & (HEAVY | {"rich"}), modules & (HEAVY | {"rich"})


@pytest.mark.parametrize("process", [False, True])
def test_the_collector_is_on_again_after_start_up(tmp_path: Path, process: bool) -> None:
    # start-up runs with the collector off; only the process's one command (the console
    # script) leaves what start-up built out of later collections
    (tmp_path / "hyp.txt").write_text("The cat sat on the mat.\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("The cat sat on a mat.\n", encoding="utf-8")
    argv = ["score", "-i", "hyp.txt", "-r", "ref.txt", "-b"]
    _, printed = loaded_by(
        f"import gc\nfrom evalab.cli import main\nmain({argv!r}, process={process})\n"
        "print(gc.isenabled(), gc.get_freeze_count() > 0)",
        cwd=tmp_path,
    )
    assert printed.splitlines() == ["48.9", f"True {process}"]
