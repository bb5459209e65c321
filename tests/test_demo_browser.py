"""`evalab demo --quick` end to end, and its HTML report in headless Chromium.

Chromium is driven over the DevTools protocol through ``--remote-debugging-pipe`` (JSON
messages separated by NUL bytes on file descriptors 3 and 4), so the test needs nothing
beyond the standard library and Debian's ``chromium`` package (installed by ``.ci/run``).
It checks what a reader would see: a screenshot that is not blank, every plot present
with a real size and drawn marks, and no console errors, exceptions or blocked resources.
"""

from __future__ import annotations

import base64
import contextlib
import io
import json
import os
import select
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.browser

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--remote-debugging-pipe",
]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        path = shutil.which(name)
        if path:
            return path
    pytest.skip("headless Chromium not installed (Debian: apt-get install chromium)")
    raise AssertionError  # unreachable


class DevTools:
    """A minimal Chrome DevTools protocol client over ``--remote-debugging-pipe``."""

    def __init__(self, binary: str, profile: Path) -> None:
        cmd_r, self._cmd_w = os.pipe()  # we write commands, Chromium reads them on fd 3
        self._out_r, out_w = os.pipe()  # Chromium writes replies and events on fd 4

        def wire_fds() -> None:
            os.dup2(cmd_r, 3)
            os.dup2(out_w, 4)

        self.proc = subprocess.Popen(
            [binary, *CHROMIUM_FLAGS, f"--user-data-dir={profile}", "about:blank"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            # fds 3 and 4 must be exactly these pipes: dup2 them in the child before exec
            preexec_fn=wire_fds,
            close_fds=False,
        )
        os.close(cmd_r)
        os.close(out_w)
        self._buf = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def _read_message(self, deadline: float) -> dict[str, Any]:
        while b"\0" not in self._buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no message from Chromium")
            ready, _, _ = select.select([self._out_r], [], [], left)
            if ready:
                chunk = os.read(self._out_r, 1 << 20)
                if not chunk:
                    raise RuntimeError("Chromium closed the DevTools pipe")
                self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        session: str | None = None,
        timeout: float = 30.0,
    ) -> dict[str, Any]:
        self._next += 1
        msg: dict[str, Any] = {"id": self._next, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = session
        os.write(self._cmd_w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._read_message(deadline)
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str, timeout: float = 30.0) -> dict[str, Any]:
        for ev in self.events:
            if ev.get("method") == method:
                return ev
        deadline = time.monotonic() + timeout
        while True:
            ev = self._read_message(deadline)
            self.events.append(ev)
            if ev.get("method") == method:
                return ev

    def open_page(self, html_path: Path, width: int, height: int) -> str:
        """Load ``html_path`` in a new ``width`` x ``height`` page; its session id."""
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})[
            "sessionId"
        ]
        for domain in ("Runtime.enable", "Log.enable", "Page.enable"):
            self.call(domain, session=session)
        self.call(
            "Emulation.setDeviceMetricsOverride",
            {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
            session=session,
        )
        self.call("Page.navigate", {"url": html_path.resolve().as_uri()}, session=session)
        self.wait_event("Page.loadEventFired")
        return session

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.call("Browser.close", timeout=5)
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._cmd_w)
        os.close(self._out_r)


#: what the page reports about its plots: one entry per <figure>
PLOTS_JS = """
JSON.stringify({
  metrics: document.querySelectorAll('figure').length,
  plots: Array.from(document.querySelectorAll('figure')).map(f => {
    const svg = f.querySelector('svg');
    if (!svg) return {svg: false};
    const r = svg.getBoundingClientRect();
    return {svg: true, width: r.width, height: r.height,
            marks: svg.querySelectorAll('rect, path, line, polyline, polygon').length,
            text: f.textContent || ''};
  }),
  brokenImages: Array.from(document.images).filter(i => !i.complete || i.naturalWidth === 0).length,
  tables: document.querySelectorAll('table').length,
  text: document.body.innerText.length,
})
"""


def _console_errors(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for ev in events:
        method, p = ev.get("method"), ev.get("params", {})
        if method == "Runtime.exceptionThrown":
            errors.append(json.dumps(p.get("exceptionDetails", {}))[:500])
        elif method == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append(json.dumps(p.get("args", []))[:500])
        elif method == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            errors.append(p["entry"].get("text", "")[:500])
    return errors


def inspect_page(html_path: Path, profile: Path) -> tuple[dict[str, Any], bytes, list[str]]:
    """Open ``html_path`` in headless Chromium; (plot facts, PNG screenshot, console errors)."""
    tools = DevTools(_chromium(), profile)
    try:
        session = tools.open_page(html_path, 1280, 1000)
        facts = tools.call(
            "Runtime.evaluate", {"expression": PLOTS_JS, "returnByValue": True}, session=session
        )
        shot = tools.call(
            "Page.captureScreenshot",
            {"format": "png", "captureBeyondViewport": True},
            session=session,
        )
        time.sleep(0.2)  # let late console messages arrive before they are collected
        tools.call("Runtime.evaluate", {"expression": "1"}, session=session)
        return (
            json.loads(facts["result"]["value"]),
            base64.b64decode(shot["data"]),
            _console_errors(tools.events),
        )
    finally:
        tools.close()


def _pixel_stats(png: bytes) -> tuple[tuple[int, int], float, int]:
    from PIL import Image, ImageStat

    img = Image.open(io.BytesIO(png)).convert("RGB")
    grey = img.convert("L")
    colours = img.getcolors(maxcolors=1 << 20)
    return img.size, ImageStat.Stat(grey).stddev[0], len(colours or [])


def test_demo_quick_report_renders_in_headless_chromium(run_cli, tmp_path):
    pytest.importorskip("torch")
    binary = _chromium()  # skip before the runs when Chromium is missing
    assert binary
    out = tmp_path / "demo"
    first = run_cli("demo", "--quick", "--out-dir", out, "--jobs", "2", "--quiet")
    assert first.exit_code == 0, first.stderr
    assert "6 runs, 0 already stored, 6 ok, 0 failed" in first.stderr
    assert "(A) h=1" in first.stdout and "seq_acc" in first.stdout
    for name in ("report.html", "report.md", "studies.db"):
        assert (out / name).is_file(), name
    md = (out / "report.md").read_text(encoding="utf-8")
    assert "### Protocol" in md and "each of 30 training steps" in md
    # the evaluation-time row: marked in the table, explained beside the retrained one
    assert "at eval of base (paired Δ)" in md and "### Retrained or suppressed at evaluation" in md
    # Table 3's layout: the configuration columns the study's [display] names
    assert "| Row | Stage | h | d_k | heads at eval | Seeds |" in md
    assert "| (A) h=1 | trained | 1 | 32 |  | 2/2 |" in md

    # the second invocation finds every run in the database and only re-renders
    again = run_cli("demo", "--quick", "--out-dir", out, "--jobs", "2", "--quiet")
    assert again.exit_code == 0, again.stderr
    assert "6 runs, 6 already stored, 0 ok, 0 failed" in again.stderr
    assert (out / ".evalab-demo.json").is_file()  # what lets the second run replace the reports

    facts, png, errors = inspect_page(out / "report.html", tmp_path / "profile")
    assert errors == [], errors
    assert (
        facts["metrics"] >= 8
    )  # seq_acc, digit_acc, xent, ppl: a forest (1+ panels) and a level plot each
    for plot in facts["plots"]:
        assert plot["svg"], plot
        assert plot["width"] > 100 and plot["height"] > 100, plot
        assert plot["marks"] >= 3, (
            plot
        )  # at least the intervals of the rows (1 head, 1 head at eval)
    for metric in ("seq_acc", "digit_acc", "xent", "ppl"):  # each plot is titled by its metric
        assert sum(metric in p["text"] for p in facts["plots"]) >= 1, (metric, facts["plots"])
    assert facts["brokenImages"] == 0
    assert facts["tables"] >= 1 and facts["text"] > 200
    for metric in ("seq_acc", "digit_acc", "xent", "ppl"):  # a forest plot of Δ per metric
        assert sum(f"Δ {metric} to the base" in p["text"] for p in facts["plots"]) >= 1, metric
    (tmp_path / "report.png").write_bytes(png)  # kept for a look when the test fails
    from tests.report.test_html import check_fits, check_forest_rows, forest_facts

    for width in (1400, 900):  # no column or figure off-screen
        check_fits(out / "report.html", tmp_path / f"profile-{width}", width)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert str(out) not in page and str(Path.home()) not in page  # no absolute path
    # the demo's forest plots (and the summary): every row once, its interval readable
    # (every interval line names its row)
    for width in (1400, 900):
        panels = forest_facts(out / "report.html", tmp_path / f"profile-forest-{width}", width)
        assert len(panels) == 5, panels  # the summary and one forest plot per metric
        check_forest_rows(panels)
    size, spread, colours = _pixel_stats(png)
    assert size[0] >= 1000 and size[1] >= 1000, size  # full page, less a scrollbar
    assert spread > 10.0, f"screenshot looks blank: grey-level sd {spread:.2f}"
    assert colours > 20, f"screenshot has only {colours} colours"
