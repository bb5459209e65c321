"use strict";
// WER/CER alignments on the compare page (evalab.report.word_alignment): the selected
// segment of both systems in jiwer's REF/HYP/marks layout. A segment view of the compare
// page: registered here, called by the page on every selection; every token is set through
// textContent.
(() => {
  const INS = 3, DEL = 2, MARK = [" ", "S", "D", "I"], CLS = ["eq", "sub", "del", "ins"];
  const NAMES = ["equal", "substitution", "deletion", "insertion"];
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };
  const width = s => Array.from(s).length; // code points, as Python's len
  // [reference, hypothesis, type] of every step; a missing side is "*"
  function columns(S, ref, hyp, flat) {
    const out = [];
    for (let k = 0; k < flat.length; k += 5) {
      const [t, r0, r1, h0, h1] = flat.slice(k, k + 5);
      for (let j = 0; j < Math.max(r1 - r0, h1 - h0); j++) {
        out.push([t === INS ? "*" : S[ref[r0 + j]], t === DEL ? "*" : S[hyp[h0 + j]], t]);
      }
    }
    return out;
  }
  function layout(S, one, spaced) {
    const [ref, hyp, flat] = one;
    const rows = ["REF: ", "HYP: ", "     "].map(head => el("div", null, head));
    columns(S, ref, hyp, flat).forEach(([r, h, t], k) => {
      const w = Math.max(width(r), width(h), 1);
      if (r === "*") r = "*".repeat(w); else if (h === "*") h = "*".repeat(w);
      [r, h, MARK[t]].forEach((text, line) => {
        if (spaced && k > 0) rows[line].append(" ");
        const cell = el("span", CLS[t], " ".repeat(w - width(text)) + text);
        if (t) cell.title = NAMES[t];
        rows[line].append(cell);
      });
    });
    const pre = el("pre", "edits");
    pre.append(...rows);
    return pre;
  }
  (window.evalabSegmentViews = window.evalabSegmentViews || []).push(function editAlignment(ctx) {
    const { D, segmentView, embedded } = ctx, box = document.getElementById("edit-alignment"), E = D.edits;
    if (!box || !E) return;
    const note = "Each output aligned to the reference as jiwer aligns it (S: substitution, " +
      "D: deletion, I: insertion; * where a side has no token), on the tokens the metric compares. " +
      embedded(E.limit, E.metric) + "Click a segment to show it.";
    segmentView(box, `Alignment (${E.metric})`, note, "edit-system", (s, sys, i) => {
      const one = E.sys[sys][String(i)];
      s.append(one ? layout(D.strings, one, E.spaced) : el("p", "notes", "no alignment embedded for this segment and system"));
    });
  });
})();
