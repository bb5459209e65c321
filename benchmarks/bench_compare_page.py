"""The ``evalab compare -f html`` page for 20 systems x 3000 segments: size and time to first render.

Workload: 3000 segments (the 2037 of WMT22 en-de, then the first 963 of de-en, each with
its reference A and source), 20 systems (seeded per-segment mixtures of the real systems
of each pair, as in bench_ranking.py), chrF and BLEU, 4000 resamples (enough for Holm over 190 pairs). The page is written
by the command line (timed), then opened in headless Chromium at 1400 x 900 (Debian's
``chromium``, over the DevTools pipe of tests/test_demo_browser.py); the time to first
render is the page's own ``performance.now()`` (from the start of navigation) when its script has
drawn the ranking and the segment table of the first pair, and when it has drawn the
bucket charts and the n-gram tables too. Switching the pair is timed the same way. No peer draws this
page, so there is no ratio; the load average is printed.

    .venv/bin/python benchmarks/bench_compare_page.py
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
WMT22 = ROOT.parent / "shared" / "wmt22"
BIN = Path(sys.executable).parent
PARTS = (("en-de", "en", "de", 2037), ("de-en", "de", "en", 963))
N_SYSTEMS = 20


def prepare(folder: Path) -> tuple[Path, Path, list[Path]]:
    from evalab.io import read_segments

    refs, srcs, systems = [], [], [[] for _ in range(N_SYSTEMS)]
    for pair, src_lang, tgt, count in PARTS:
        refs += read_segments(WMT22 / "references" / f"generaltest2022.{pair}.ref.A.{tgt}")[:count]
        srcs += read_segments(WMT22 / "sources" / f"generaltest2022.{pair}.src.{src_lang}")[:count]
        real = [
            read_segments(p)[:count]
            for p in sorted((WMT22 / "system-outputs").glob(f"generaltest2022.{pair}.hyp.*.{tgt}"))
        ]
        for k in range(N_SYSTEMS):
            pick = np.random.default_rng(k).integers(len(real), size=count)
            systems[k] += [real[s][i] for i, s in enumerate(pick)]

    def write(name: str, lines: list[str]) -> Path:
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
        return folder / name

    return (
        write("ref.txt", refs),
        write("src.txt", srcs),
        [write(f"sys{k:02d}.txt", s) for k, s in enumerate(systems)],
    )


def main() -> int:
    from tests.test_demo_browser import DevTools, _chromium

    if not WMT22.exists():
        print(f"WMT22 data not found at {WMT22}", file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory() as tmp:
        ref, src, systems = prepare(Path(tmp))
        page = Path(tmp) / "compare.html"
        t0 = time.perf_counter()
        subprocess.run(
            [
                str(BIN / "evalab"),
                "compare",
                "-r",
                str(ref),
                "--source",
                str(src),
                "-i",
                *map(str, systems),
                "-m",
                "chrf",
                "bleu",
                "-n",
                "4000",
                "-q",
                "-f",
                "html",
                "-o",
                str(page),
            ],
            check=True,
        )
        written = time.perf_counter() - t0
        # the DevTools pipes must not be fds 3 and 4 themselves (dup2 onto itself keeps
        # close-on-exec, and Chromium would find them closed): hold the low numbers
        held = [os.open(os.devnull, os.O_RDONLY) for _ in range(3)]
        tools = DevTools(_chromium(), Path(tmp) / "profile")
        for fd in held:
            os.close(fd)
        try:
            session = tools.open_page(page, 1400, 900)

            def js(expression: str) -> object:
                reply = tools.call(
                    "Runtime.evaluate",
                    {"expression": expression, "returnByValue": True, "awaitPromise": True},
                    session=session,
                    timeout=120,
                )
                return reply["result"].get("value")

            while js("typeof window.evalabRendered") != "number":
                time.sleep(0.05)
            paint, first = float(js("window.evalabFirstPaint")), float(js("window.evalabRendered"))  # type: ignore[arg-type]
            switch = float(
                js(
                    "new Promise(done => { const s = document.getElementById('sys-b'); const t = performance.now();"  # type: ignore[arg-type]
                    " s.value = String((+s.value + 1) % 20); s.dispatchEvent(new Event('change'));"
                    " setTimeout(() => done(performance.now() - t), 0); })"
                )
            )
            facts = json.loads(
                str(
                    js(
                        "JSON.stringify({rows: document.querySelectorAll('#segments tr').length,"
                        " width: document.documentElement.clientWidth,"
                        " scroll: document.documentElement.scrollWidth})"
                    )
                )
            )
        finally:
            tools.close()
        size = page.stat().st_size
    load = os.getloadavg()
    print(
        f"{N_SYSTEMS} systems x 3000 segments (WMT22 en-de + de-en), chrF + BLEU, 4000 resamples; "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}"
    )
    print(f"page written by the command line in {written:.2f}s: {size / 1e6:.2f} MB")
    print(
        f"headless Chromium, 1400 px, after navigation start: ranking and segments drawn {paint / 1000:.2f}s, "
        f"buckets and n-grams too {first / 1000:.2f}s; switching system B {switch / 1000:.2f}s (all redrawn); "
        f"{facts['rows'] - 1} segment rows shown, "
        f"scroll width {facts['scroll']} of {facts['width']} px"
    )
    return 0 if facts["scroll"] <= facts["width"] else 1


if __name__ == "__main__":
    sys.exit(main())
