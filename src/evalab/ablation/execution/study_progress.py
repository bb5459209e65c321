"""Progress of ``run_study`` on stderr: a live bar on a terminal, plain lines otherwise.

Under nohup or a batch scheduler stderr is a file: there a bar would be noise, so each
finished or failed run gets one plain line (row, seed, metrics, time) that a log shows.
"""

from __future__ import annotations

import contextlib
import sys

from evalab.ablation.plan.jobs import AttemptResult
from evalab.ablation.plan.runs import PlannedRun
from evalab.progress import progress_bar


def run_line(done: int, total: int, run: PlannedRun, result: AttemptResult) -> str:
    """The log line of one finished run.

    >>> from evalab.ablation.plan.jobs import Timing
    >>> r = PlannedRun("k", {}, 2, ("(C)",))
    >>> run_line(3, 24, r, AttemptResult("ok", Timing("", "", 1.25), "", {"acc": 79.123456}))
    'run 3/24 ok: (C) seed 2: acc=79.1235 (1.2 s)'
    >>> run_line(4, 24, r, AttemptResult("failed", Timing("", "", 0.3), "", error="RuntimeError: boom"))
    'run 4/24 FAILED: (C) seed 2: RuntimeError: boom (0.3 s)'
    """
    rows = ", ".join(run.rows)
    if result.status == "ok":
        what = (
            "ok: "
            + f"{rows} seed {run.seed}: "
            + " ".join(f"{k}={v:.6g}" for k, v in result.metrics.items())
        )
    else:
        error = (result.error or "failed").splitlines()[0]
        what = f"FAILED: {rows} seed {run.seed}: {error}"
    return f"run {done}/{total} {what} ({result.timing.duration:.1f} s)"


class Progress:
    """done / failed / running / ETA on a terminal; one line per run when stderr is not one."""

    def __init__(self, total: int, name: str, enabled: bool) -> None:
        self.total = total
        self.done = 0
        self.failed = 0
        self.running = 0
        self.bar_on = enabled and sys.stderr.isatty()
        self.lines_on = enabled and not self.bar_on
        if self.bar_on:
            self._start_bar(name)

    def _start_bar(self, name: str) -> None:
        # the one progress bar (evalab.progress), with the runner's own counts beside it
        from rich.progress import TextColumn

        self._stack = contextlib.ExitStack()
        self._advance = self._stack.enter_context(
            progress_bar(
                self.total,
                f"[bold]{name}",
                transient=False,
                fields={"failed": 0, "running": 0},
                extra_columns=(
                    TextColumn(
                        "done · [red]{task.fields[failed]} failed[/] · {task.fields[running]} running"
                    ),
                ),
            )
        )

    def skipped(self, n: int) -> None:
        """Runs found finished in the store."""
        self.done += n
        self._refresh(n)

    def finished(self, run: PlannedRun, result: AttemptResult) -> None:
        """One run finished (ok or failed after its retries)."""
        self.done += 1
        self.failed += result.status == "failed"
        if self.lines_on:
            try:
                sys.stderr.write(run_line(self.done, self.total, run, result) + "\n")
                sys.stderr.flush()
            except OSError:  # the log's reader went away (`| head`): the runs go on
                self.lines_on = False
        self._refresh(1)

    def set_running(self, n: int) -> None:
        self.running = n
        self._refresh(0)

    def _refresh(self, advance: int) -> None:
        if self.bar_on:
            self._advance(advance, failed=self.failed, running=self.running)

    def close(self) -> None:
        if self.bar_on:
            self._stack.close()
