"""The one HTML page shell of every report: doctype, charset, viewport, title, inline CSS
and the Content Security Policy that lets nothing be loaded or run but the page itself
(styles inline, images as ``data:`` URLs, and at most one inline script, allowed by its
SHA-256 hash so that no injected script could run).

Used by the ablation report (:mod:`evalab.report.html`), the ``semsim --explain-html``
page (:mod:`evalab.report.alignment`), the meta-evaluation page
(:mod:`evalab.report.metaeval_html`) and the ``compare`` page
(:mod:`evalab.report.compare_page`).
"""

from __future__ import annotations

import base64
import hashlib
import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from evalab.report.table import Table, cell_parts, numeric_columns

_Shown = TypeVar("_Shown")

#: what every page may load: nothing but its inline styles and data: images
CSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:"


def csp(script: str | None = None) -> str:
    """The policy, allowing ``script`` (by its hash) when given.

    >>> csp()
    "default-src 'none'; style-src 'unsafe-inline'; img-src data:"
    >>> csp("1").endswith("script-src 'sha256-a4ayc/80/OGda4BO/1o/V0etpOqiLx1JwB5S3beHW0s='")
    True
    """
    if script is None:
        return CSP
    digest = base64.b64encode(hashlib.sha256(script.encode("utf-8")).digest()).decode("ascii")
    return f"{CSP}; script-src 'sha256-{digest}'"


def html_table(table: Table, *, base_row: bool = False) -> str:
    """The table as HTML, every string escaped: the caption, the header groups (``colspan``),
    text columns with class ``l`` (left-aligned), bold cells in ``<b>``, a cell's marker in
    ``<sup>``; with ``base_row`` the first row has class ``base``.

    >>> from evalab.report.table import Number, Table
    >>> html_table(Table(["<s>", "x"], [["a&b", Number(1.25, 1, marker="*")]], bold={(0, 1)}))
    '<table><thead><tr><th class="l">&lt;s&gt;</th><th>x</th></tr></thead><tbody><tr><td class="l">a&amp;b</td><td><b>1.2</b><sup>*</sup></td></tr></tbody></table>'
    """
    e = html.escape
    left = [' class="l"' if not n else "" for n in numeric_columns(table)]
    out = ["<table>", *([f"<caption>{e(table.caption)}</caption>"] if table.caption else [])]
    out.append("<thead>")
    if any(g.label for g in table.groups):
        out.append(
            "<tr>"
            + "".join(f'<th colspan="{g.span}">{e(g.label)}</th>' for g in table.groups)
            + "</tr>"
        )
    out.append(
        "<tr>"
        + "".join(f"<th{c}>{e(h)}</th>" for c, h in zip(left, table.header, strict=True))
        + "</tr>"
    )
    out.append("</thead><tbody>")
    for i, row in enumerate(table.body):
        out.append('<tr class="base">' if base_row and i == 0 else "<tr>")
        for j, cell in enumerate(row):
            text, marker = (e(x) for x in cell_parts(cell))
            text = f"<b>{text}</b>" if (i, j) in table.bold and text else text
            out.append(
                f"<td{left[j]}>{text}"
                + (f"<sup>{marker.strip()}</sup>" if marker.strip() else "")
                + "</td>"
            )
        out.append("</tr>")
    out.append("</tbody></table>")
    return "".join(out)


def html_page(title: str, body: Sequence[str], *, css: str, script: str | None = None) -> str:
    """A complete page: ``body`` (trusted, already escaped HTML fragments, one a line) under
    an ``<h1>`` of the escaped ``title``, then ``script`` inline when given.

    >>> page = html_page("<t>", ["<p>x</p>"], css="p{}")
    >>> "<h1>&lt;t&gt;</h1>" in page and "default-src 'none'" in page and "<script" not in page
    True
    """
    e = html.escape
    parts = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f'<meta http-equiv="Content-Security-Policy" content="{csp(script)}">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        f"<title>{e(title)}</title>",
        f"<style>{css}</style></head><body>",
        f"<h1>{e(title)}</h1>",
        *body,
    ]
    if script is not None:
        parts.append(f"<script>{script}</script>")
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"


def segment_rows(
    systems: Sequence[str],
    per_system: Mapping[str, Mapping[int, _Shown]],
    row: Callable[[_Shown], list[Any]],
) -> list[dict[str, list[Any]]]:
    """A page script's data of what is embedded per segment: per system (in ``systems``
    order) the segment index (as a string key) -> ``row`` of its value; a system without
    any gets an empty mapping."""
    return [{str(i): row(v) for i, v in per_system.get(s, {}).items()} for s in systems]
