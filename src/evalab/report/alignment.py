"""Drawing BERTScore alignments: plain rows for terminal tables and a self-contained HTML
page with one heat map per segment (cosine of every hypothesis/reference token pair, the
greedy best match of each token outlined), in the spirit of seed 001's arrows.

Every piece of text (tokens, titles) is HTML-escaped; the page has no external assets.
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import TYPE_CHECKING

from evalab.report.page import html_page

if TYPE_CHECKING:
    from evalab.metrics.semantic import Alignment

__all__ = ["alignment_rows", "best_matches", "render_alignment_html"]


def best_matches(
    alignment: Alignment, direction: str = "precision"
) -> list[tuple[int, int, float, float]]:
    """``(source index, best-match index, cosine, weight)`` for every weighted source token:
    the greedy matching BERTScore does, as indices (``alignment_rows`` gives the tokens).

    ``direction="precision"``: hypothesis tokens look for reference tokens;
    ``"recall"``: the other way round. Tokens of weight 0 (special tokens) are skipped
    as sources but can be targets (bert-score matches against them).

    >>> import numpy as np
    >>> from evalab.metrics.semantic import Alignment
    >>> a = Alignment(("a", "b"), ("x", "y"), np.array([[0.5, 0.2], [0.1, 0.9]]), np.array([.5, .5]),
    ...               np.array([1.0, 0.0]), 0.7, 0.9, 0.79)
    >>> best_matches(a), best_matches(a, "recall")
    ([(0, 0, 0.5, 0.5), (1, 1, 0.9, 0.5)], [(0, 0, 0.5, 1.0)])
    """
    if direction not in ("precision", "recall"):
        raise ValueError(f"direction must be 'precision' or 'recall', got {direction!r}")
    sim = alignment.sim if direction == "precision" else alignment.sim.T
    weight = alignment.hyp_weight if direction == "precision" else alignment.ref_weight
    if sim.shape[1] == 0:
        return []
    best = alignment.hyp_best if direction == "precision" else alignment.ref_best
    return [
        (i, int(best[i]), float(sim[i, best[i]]), float(weight[i]))
        for i in range(len(weight))
        if weight[i] > 0
    ]


def alignment_rows(
    alignment: Alignment, direction: str = "precision"
) -> list[tuple[str, str, float, float]]:
    """``(source token, best match, cosine, weight)`` for every weighted source token
    (:func:`best_matches` with the tokens).

    >>> import numpy as np
    >>> from evalab.metrics.semantic import Alignment
    >>> a = Alignment(("a", "b"), ("x",), np.array([[0.5], [0.9]]), np.array([.5, .5]),
    ...               np.array([1.0]), 0.7, 0.9, 0.79)
    >>> alignment_rows(a)
    [('a', 'x', 0.5, 0.5), ('b', 'x', 0.9, 0.5)]
    """
    src, dst = (
        (alignment.hyp_tokens, alignment.ref_tokens)
        if direction == "precision"
        else (alignment.ref_tokens, alignment.hyp_tokens)
    )
    return [(src[i], dst[j], cos, w) for i, j, cos, w in best_matches(alignment, direction)]


_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222}
h1{font-size:1.3em} h2{font-size:1.05em;margin-top:2em}
.scores{color:#555;margin:.3em 0 .8em}
table.heat{border-collapse:collapse;font-size:12px}
table.heat td,table.heat th{border:1px solid #ddd;padding:2px 4px;text-align:center;min-width:2.6em}
table.heat th.col{writing-mode:vertical-rl;transform:rotate(180deg);font-weight:normal;white-space:nowrap}
table.heat th.row{text-align:right;font-weight:normal;white-space:nowrap}
td.best-p{outline:2px solid #c0392b;outline-offset:-2px}
td.best-r{box-shadow:inset 0 0 0 2px #2471a3}
td.best-p.best-r{outline:2px solid #7d3c98}
.special{color:#999}
ul.arrows{columns:2;font-size:13px;padding-left:1.2em}
.legend{font-size:12px;color:#555}
"""


def _cell_colour(value: float) -> str:
    v = min(max(value, 0.0), 1.0)
    light = round(255 - 180 * v)
    return f"rgb({light},{min(255, light + 25)},255)"


def _segment_html(title: str, a: Alignment) -> str:
    e = html.escape
    parts = [f"<h2>{e(title)}</h2>"]
    parts.append(
        f'<div class="scores">P {a.precision:.4f} &middot; R {a.recall:.4f} &middot; F1 {a.f1:.4f}</div>'
    )
    best_p, best_r = a.hyp_best, a.ref_best
    parts.append('<table class="heat"><tr><th></th>')
    for j, tok in enumerate(a.ref_tokens):
        cls = "col special" if a.ref_weight[j] <= 0 else "col"
        parts.append(f'<th class="{cls}" title="reference token {j}">{e(tok)}</th>')
    parts.append("</tr>")
    for i, tok in enumerate(a.hyp_tokens):
        cls = "row special" if a.hyp_weight[i] <= 0 else "row"
        parts.append(f'<tr><th class="{cls}" title="hypothesis token {i}">{e(tok)}</th>')
        for j in range(len(a.ref_tokens)):
            v = float(a.sim[i, j])
            marks = []
            if a.hyp_weight[i] > 0 and best_p[i] == j:
                marks.append("best-p")
            if a.ref_weight[j] > 0 and best_r[j] == i:
                marks.append("best-r")
            cls_attr = f' class="{" ".join(marks)}"' if marks else ""
            parts.append(
                f'<td{cls_attr} style="background:{_cell_colour(v)}" '
                f'title="{e(tok)} / {e(a.ref_tokens[j])}: {v:.3f}">{v:.2f}</td>'
            )
        parts.append("</tr>")
    parts.append("</table>")
    for direction, label in (
        ("precision", "hypothesis &rarr; reference (precision)"),
        ("recall", "reference &rarr; hypothesis (recall)"),
    ):
        rows = alignment_rows(a, direction)
        parts.append(f"<p class=legend>{label}</p><ul class=arrows>")
        for src, dst, cos, _ in rows:
            parts.append(f"<li>{e(src)} &rarr; {e(dst)} <b>{cos:.3f}</b></li>")
        parts.append("</ul>")
    return "\n".join(parts)


def render_alignment_html(
    items: Sequence[tuple[str, Alignment]], title: str = "BERTScore alignments", signature: str = ""
) -> str:
    """A self-contained HTML page: one heat map and arrow list per ``(title, Alignment)``.

    >>> import numpy as np
    >>> from evalab.metrics.semantic import Alignment
    >>> a = Alignment(("<b>",), ("x",), np.array([[0.9]]), np.array([1.0]), np.array([1.0]), .9, .9, .9)
    >>> page = render_alignment_html([("seg 1", a)])
    >>> "&lt;b&gt;" in page and "<b>" not in page.split("<body>")[1].split("P 0.9")[0]
    True
    """
    e = html.escape
    body = [
        f'<p class="legend">{e(signature)}</p>' if signature else "",
        '<p class="legend">Cell: cosine of a hypothesis token (row) and a reference token (column). '
        "Red outline: the row token's best match (precision direction); blue: the column token's "
        "best match (recall direction). Grey tokens have weight 0 (special tokens).</p>",
    ]
    body.extend(_segment_html(t, a) for t, a in items)
    return html_page(title, body, css=_STYLE)
