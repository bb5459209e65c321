"""``evalab ablate report --figures DIR``: every figure of the report as PDF, SVG and PNG, the
same figures as the HTML page (same rows, labels and ticks), fonts embedded; refused
before any work where it would replace an input or matplotlib is missing."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from ablation.synth import write_study

from .refusal import assert_refused

pytest.importorskip("matplotlib")


@pytest.fixture(scope="module")
def study(tmp_path_factory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("figures")
    path = write_study(
        folder,
        seeds=[0, 1, 2],
        variants=[("(S)", "shifted $x$ & <b>", {"shift": -3.0})],
        grid={"a": [False, True], "b": [False, True]},
    )
    db = folder / "s.db"
    done = subprocess.run(
        [sys.executable, "-m", "evalab", "ablate", "run", path, "--db", db, "-q", "-j", "2"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return path, db


def svg_texts(path: Path) -> list[str]:
    """The strings of an exported SVG: its glyphs are outlines, each text's string in the
    comment before them."""
    tree = ET.parse(path, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    return [html.unescape((el.text or "").strip()) for el in tree.iter() if el.tag is ET.Comment]


def page_figures(page: str) -> dict[str, str]:
    return dict(re.findall(r'<figure id="figure-([^"]+)">(.*?)</figure>', page, flags=re.S))


def test_every_figure_of_the_page_is_written_as_pdf_svg_and_png(study, tmp_path):
    path, db = study
    figs, page = tmp_path / "figs", tmp_path / "report.html"
    report = ["ablate", "report", path, "--db", db, "-f", "html", "-o", page, "--figures", figs]
    done = subprocess.run(
        [sys.executable, "-m", "evalab", *report],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = page_figures(page.read_text(encoding="utf-8"))
    # the summary; per metric (acc, loss) a forest, a level and an interaction plot
    assert set(shown) == {"summary"} | {
        f"{kind}-{m}" for kind in ("forest", "level", "interaction") for m in ("acc", "loss")
    }
    assert sorted(p.name for p in figs.iterdir()) == sorted(
        f"{name}{suffix}" for name in shown for suffix in (".pdf", ".svg", ".png")
    )
    pdffonts = shutil.which("pdffonts")
    for name, svg in shown.items():
        texts = svg_texts(figs / f"{name}.svg")
        # every row label, panel title and tick of the page's figure is in the exported one
        shown_texts = re.findall(r"<(?:text|tspan) [^>]*>([^<]+)</(?:text|tspan)>", svg)
        assert len(shown_texts) > 10, name
        for text in shown_texts:
            assert html.unescape(text) in texts, (name, text)
        assert (figs / f"{name}.png").read_bytes().startswith(b"\x89PNG")
        pdf = figs / f"{name}.pdf"
        assert pdf.read_bytes().startswith(b"%PDF")
        if pdffonts:
            fonts = subprocess.run([pdffonts, pdf], capture_output=True, text=True, check=True)
            rows = fonts.stdout.splitlines()[2:]
            assert rows, fonts.stdout
            for row in rows:  # embedded TrueType subsets, no Type 3
                assert " yes " in row and "TrueType" in row and "Type 3" not in row, row
    # the page's labels keep what a label says ("$x$" is not mathtext), in the PDF's text too
    assert "shifted $x$ & <b>" in svg_texts(figs / "summary.svg")  # the description's own line
    pdftotext = shutil.which("pdftotext")
    if pdftotext:
        text = subprocess.run(
            [pdftotext, "-layout", figs / "summary.pdf", "-"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        assert "shifted $x$ & <b>" in text and "Summary: Δ acc to the base" in text, text


def test_a_figures_folder_that_would_replace_an_input_is_refused(study, tmp_path):
    path, db = study
    assert_refused(
        ("ablate", "report", path, "--db", db, "--figures", path),
        "--figures",
        watch=(path.parent,),
    )
    # a figure file that is the report's -o: refused before anything is written
    figs = tmp_path / "figs"
    assert_refused(
        ("ablate", "report", path, "--db", db, "-o", figs / "summary.pdf", "--figures", figs),
        "is the same file as --out",
        watch=(path.parent, tmp_path),
    )
    assert not figs.exists()


def test_without_matplotlib_the_option_names_the_extra(study, run_cli, monkeypatch, tmp_path):
    path, db = study
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # import matplotlib raises ImportError
    res = run_cli("ablate", "report", path, "--db", db, "--figures", tmp_path / "figs")
    assert res.exit_code == 2 and res.stdout == ""
    assert res.stderr.strip().count("\n") == 0 and "pip install 'evalab[report]'" in res.stderr
    assert not (tmp_path / "figs").exists()
