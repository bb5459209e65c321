"""``evalab compare -f html``: one self-contained page to rank systems and see where two differ.

The page holds the ranking (rank, cluster, score, interval) and a forest plot of every
system's score with its interval, then for any two systems chosen on the page:

* their segments, sortable by the per-segment difference of a chosen metric, with the
  source (when given), the reference and both outputs (paged, 50 segments at a time);
* compare-mt-style buckets: the mean sentence-level score by reference-length bucket, and
  word F-measure by the frequency of the words (in a training file when one is given, else
  in the references), each with a
  95% interval (normal approximation over segments for the means, a 200-resample
  bootstrap over segments for the F-measures);
* n-gram gains and losses (compare-mt's n-gram difference analysis): the 1–4-grams one
  system matches in the reference more often than the other (clipped counts over
  whitespace tokens), the top ``k`` each way.

The data is embedded once, compactly (every distinct string stored once, outputs as
indices, scores rounded to 6 significant digits) in a ``<script type="application/json">``
block, and rendered client-side by one inline script allowed by its SHA-256 hash in the
Content Security Policy (``default-src 'none'``: no network, nothing else runs). Every
string from the inputs reaches the page through ``textContent`` (never as markup), and
``<`` inside the JSON is written as ``\\u003c`` so no input can close the data block.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import TYPE_CHECKING, Any

import numpy as np

from evalab.report.error_spans import PageSpans, page_spans_data, spans_script
from evalab.report.figures import Figure, Group, figure_svg, interval_panel
from evalab.report.page import html_page, segment_rows
from evalab.report.plots import SERIES_COLOURS, Intervals
from evalab.report.word_alignment import EDIT_CSS, EditAlignments, edit_page_data, edit_page_script

if TYPE_CHECKING:
    from evalab.metrics.semantic import Alignment

__all__ = [
    "ALIGNMENT_LIMIT",
    "ComparePage",
    "alignment_segments",
    "ranking_figures",
    "render_compare_page",
]


@dataclass(frozen=True)
class ComparePage:
    """Everything the page shows."""

    title: str
    #: table names of the systems, in input order
    systems: Sequence[str]
    references: Sequence[str]
    sources: Sequence[str] | None
    #: system -> its output segments
    outputs: Mapping[str, Sequence[str]]
    #: metric -> whether higher is better
    higher_is_better: Mapping[str, bool]
    #: metric -> system -> sentence-level score of every segment
    segment_scores: Mapping[str, Mapping[str, np.ndarray]]
    #: the ranking rows of ``compare --rank`` (JSON-ready), best first per metric
    ranking: Sequence[Mapping[str, Any]]
    #: signatures and the clustering rule (footer lines)
    notes: Sequence[str]
    #: word -> count in a training file (``--train``), for the frequency buckets; ``None``: the references
    train_counts: Mapping[str, int] | None = None
    #: n-grams shown each way
    top_k: int = 20
    #: the BERTScore metric whose token alignments are embedded (``None``: no alignments)
    alignment_metric: str | None = None
    #: system -> segment index -> its alignment to the reference (the segments of :func:`alignment_segments`)
    alignments: Mapping[str, Mapping[int, Any]] | None = None
    #: the number of segments per pair whose alignments are embedded (:func:`alignment_segments`)
    alignment_limit: int = 0
    #: the WER/CER alignments of :mod:`evalab.report.word_alignment` (``None``: no such metric)
    edit_alignments: EditAlignments | None = None
    #: a word-level model's error spans (xCOMET), marked in the selected segment's outputs
    error_spans: PageSpans | None = None


#: segments per pair of systems whose token alignments the page embeds (those of largest |Δ|)
ALIGNMENT_LIMIT = 50


def alignment_segments(
    scores: Mapping[str, np.ndarray], limit: int = ALIGNMENT_LIMIT
) -> dict[str, list[int]]:
    """system -> the segments whose alignments the page embeds: for every pair of systems,
    the ``limit`` segments of largest |Δ| (ties: the earlier segment), each system getting the
    segments of every pair it is in. With at most ``limit`` segments: all of them.

    >>> alignment_segments({"a": np.array([1., 2, 3]), "b": np.array([1., 0, 3]), "c": np.array([0., 2, 3])}, 1)
    {'a': [0, 1], 'b': [1], 'c': [0, 1]}
    """
    names = list(scores)
    n = len(next(iter(scores.values()))) if names else 0
    if n <= limit:
        return {s: list(range(n)) for s in names}
    chosen: dict[str, set[int]] = {s: set() for s in names}
    for x, a in enumerate(names):
        for b in names[x + 1 :]:
            gap = np.abs(
                np.nan_to_num(np.asarray(scores[a], float) - np.asarray(scores[b], float), nan=0.0)
            )
            top = np.argsort(-gap, kind="stable")[:limit]
            chosen[a].update(int(i) for i in top)
            chosen[b].update(int(i) for i in top)
    return {s: sorted(chosen[s]) for s in names}


def _round(values: np.ndarray) -> list[float | None]:
    return [
        None if not np.isfinite(v) else float(f"{v:.6g}")
        for v in np.asarray(values, dtype=np.float64)
    ]


def page_data(page: ComparePage) -> dict[str, Any]:
    """The embedded data: a string table and indices into it."""
    table: dict[str, int] = {}

    def ref(text: str) -> int:
        return table.setdefault(text, len(table))

    names = list(page.systems)
    data = {
        "title": page.title,
        "systems": names,
        "topK": page.top_k,
        "metrics": list(page.segment_scores),
        "higher": dict(page.higher_is_better),
        "ref": [ref(t) for t in page.references],
        "src": [ref(t) for t in page.sources] if page.sources is not None else None,
        "out": [[ref(t) for t in page.outputs[s]] for s in names],
        "seg": {m: [_round(per[s]) for s in names] for m, per in page.segment_scores.items()},
        "ranking": [
            {k: r[k] for k in ("system", "metric", "score", "ci_low", "ci_high", "rank", "cluster")}
            for r in page.ranking
        ],
        "notes": list(page.notes),
        "freq": _known_counts(page) if page.train_counts is not None else None,
        "align": _alignment_data(page, ref) if page.alignments is not None else None,
        "edits": _edit_data(page, ref),
        "spans": page_spans_data(page.error_spans, names) if page.error_spans else None,
    }
    data["strings"] = list(table)
    return data


def _alignment_data(page: ComparePage, ref: Callable[[str], int]) -> dict[str, Any]:
    """Per system, segment -> ``[hypothesis tokens, reference tokens, precision matches,
    recall matches]``: tokens as string-table indices, matches as flat ``[source, best
    match, cosine, ...]`` lists (cosines to 3 decimals) from :func:`best_matches`, the same
    greedy matches ``semsim --explain-html`` draws."""
    from evalab.report.alignment import best_matches

    def flat(a: Alignment, direction: str) -> list[float]:
        return [v for i, j, cos, _ in best_matches(a, direction) for v in (i, j, round(cos, 3))]

    def row(a: Alignment) -> list[Any]:
        hyp, ref_tokens = [ref(t) for t in a.hyp_tokens], [ref(t) for t in a.ref_tokens]
        return [hyp, ref_tokens, flat(a, "precision"), flat(a, "recall")]

    return {
        "metric": page.alignment_metric,
        "limit": page.alignment_limit,
        "sys": segment_rows(page.systems, page.alignments or {}, row),
    }


def _edit_data(page: ComparePage, ref: Callable[[str], int]) -> dict[str, Any] | None:
    edits = page.edit_alignments
    return None if edits is None else edit_page_data(edits, page.systems, ref)


def _known_counts(page: ComparePage) -> dict[str, int]:
    """The training counts of the words the page's references and outputs use (the rest never shows)."""
    counts = page.train_counts or {}
    words = {
        w
        for text in [*page.references, *(t for out in page.outputs.values() for t in out)]
        for w in text.split()
    }
    return {w: counts[w] for w in sorted(words) if w in counts}


def _cluster_group(cluster: int | None) -> Group:
    if cluster is None:
        return Group("no cluster (no interval)", "#000000")
    return Group(f"cluster {cluster}", SERIES_COLOURS[(cluster - 1) % len(SERIES_COLOURS)])


def ranking_figures(
    ranking: Sequence[Mapping[str, Any]], higher_is_better: Mapping[str, bool]
) -> list[Figure]:
    """Per metric, every system's score with its interval, best first, the dot coloured by
    the system's cluster (systems no significant difference separates share one), on an axis
    that fits the scores (zero only when near). Rows are ``compare --rank`` rows.

    >>> rows = [{"metric": "bleu", "system": s, "score": v, "ci_low": v - 1, "ci_high": v + 1,
    ...          "rank": k, "cluster": c, "confidence": 0.95} for k, (s, v, c) in enumerate(
    ...          [("a", 30.0, 1), ("b", 29.5, 1), ("c", 20.0, 2)], start=1)]
    >>> (fig,) = ranking_figures(rows, {"bleu": True})
    >>> fig.panels[0].labels, [g.label for g in fig.panels[0].groups], fig.panels[0].x.lo > 10
    (('1. a', '2. b', '3. c'), ['cluster 1', 'cluster 2'], True)
    """
    out = []
    for metric in dict.fromkeys(r["metric"] for r in ranking):
        rows = [r for r in ranking if r["metric"] == metric]
        clusters = list(dict.fromkeys(r["cluster"] for r in rows))
        confidence: float = next((r["confidence"] for r in rows if r.get("confidence")), 0.95)
        pct = f"{confidence * 100:g}%"
        better = "higher" if higher_is_better.get(metric, True) else "lower"
        panel = interval_panel(
            f"{metric}: score and {pct} CI of every system, best first ({better} is better)",
            [
                f"{r['rank']}. {r['system']}" if r["rank"] is not None else str(r["system"])
                for r in rows
            ],
            [r["score"] for r in rows],
            [Intervals(f"{pct} CI", [r["ci_low"] for r in rows], [r["ci_high"] for r in rows])],
            xlabel=f"{metric} {'↑' if better == 'higher' else '↓'} ({better} is better)",
            groups=[_cluster_group(c) for c in clusters],
            row_groups=[clusters.index(r["cluster"]) for r in rows],
        )
        out.append(Figure(f"ranking-{metric}", f"{metric}: every system's score", (panel,)))
    return out


def _forest(page: ComparePage) -> str:
    """The ranking figures, one per metric; the script shows the chosen metric's."""
    figures = ranking_figures(page.ranking, page.higher_is_better)
    drawn = dict.fromkeys(r["metric"] for r in page.ranking)
    index = [list(page.segment_scores).index(m) for m in drawn]  # the metric select's values
    return "".join(
        f'<div class="forest" data-metric="{k}"{"" if k == 0 else " hidden"}>{figure_svg(f)}</div>'
        for k, f in zip(index, figures, strict=True)
    )


def _script() -> str:
    """The page's one script: the segment views of other modules (they register themselves),
    then the page's own."""
    page = resources.files("evalab.report").joinpath("compare_page.js").read_text(encoding="utf-8")
    return edit_page_script() + spans_script() + page


_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em auto;max-width:1360px;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.2em;font-size:.85em;max-width:100%}
th,td{padding:.25em .5em;border-bottom:1px solid #ddd;text-align:right;vertical-align:top}
th{border-bottom:2px solid #333;cursor:default}
th.sort{cursor:pointer;text-decoration:underline dotted}
td.l,th.l{text-align:left}
td.text{text-align:left;white-space:normal;overflow-wrap:anywhere;width:22%}
tr.c-odd td{background:#f5f8fb}
.controls{display:flex;flex-wrap:wrap;gap:1em;align-items:center;margin:.5em 0}
.charts{display:flex;flex-wrap:wrap;gap:1.5em}
.charts figure{margin:0;max-width:100%}
svg{max-width:100%;height:auto}
.notes{color:#555;font-size:.85em;overflow-wrap:anywhere}
.pos{color:#1a7f37}.neg{color:#b42318}
tr[data-segment]{cursor:pointer} tr.selected td{background:#fff4c2}
.aligns{display:flex;flex-wrap:wrap;gap:1.5em}.aligns section{flex:1 1 600px;min-width:0}
table.matches td{text-align:left;overflow-wrap:anywhere}table.matches td.cos{text-align:right;font-variant-numeric:tabular-nums}
mark.sev-minor{background:#fff0a8}mark.sev-major{background:#ffc48a}mark.sev-critical{background:#ff9c9c}
"""


def render_compare_page(page: ComparePage) -> str:
    """The page as one HTML string (see the module docstring)."""
    script = _script()
    payload = json.dumps(
        page_data(page), ensure_ascii=False, separators=(",", ":"), allow_nan=False
    )
    payload = payload.replace("<", "\\u003c")  # no input can end the data block
    return html_page(
        page.title,
        [
            '<h2>Ranking</h2><div class="controls"><label>metric <select id="rank-metric"></select></label></div>',
            f'<div id="ranking"></div><figure id="forest">{_forest(page)}</figure><div class="notes" id="notes"></div>',
            '<h2>Two systems</h2><div class="controls"><label>system A <select id="sys-a"></select></label>'
            '<label>system B <select id="sys-b"></select></label><label>metric <select id="pair-metric"></select></label></div>',
            '<h3>Buckets</h3><div class="charts"><figure id="len-chart"></figure><figure id="freq-chart"></figure></div>',
            '<h3>n-gram gains and losses</h3><div class="charts" id="ngrams"></div>',
            '<h3>Segments</h3><div class="controls" id="pager"></div><div id="segments"></div>',
            '<div id="alignment"></div><div id="edit-alignment"></div><div id="error-spans"></div>',
            f'<script type="application/json" id="data">{payload}</script>',
        ],
        css=_CSS + EDIT_CSS,
        script=script,
    )
