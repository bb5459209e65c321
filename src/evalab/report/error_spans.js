"use strict";
// Error spans (evalab.report.error_spans): the selected segment's two outputs with the
// spans a word-level model (xCOMET) tags, marked by severity. A segment view of the compare
// page: registered here, called by the page with its data and helpers. Every string from
// the inputs is set through textContent, never parsed as markup.
(window.evalabSegmentViews = window.evalabSegmentViews || []).push(function errorSpans(ctx) {
  const { D, S, el, td, tr, segmentView } = ctx;
  const box = document.getElementById("error-spans");
  if (!D.spans) { box.replaceChildren(); return; }
  const note = "The hypothesis characters the model tags as errors, by severity, with the mean " +
    "probability of the tag over the span's tokens. Click a segment to show it.";
  segmentView(box, `Error spans (${D.spans.metric})`, note, "span-system", (s, sys, i) => {
    const chars = Array.from(S[D.out[sys][i]] || ""); // offsets count code points, as Python's
    const flat = D.spans.sys[sys][i] || [];
    const text = el("p", "span-text");
    const table = el("table", "spans");
    table.append(tr(["severity", "span", "confidence"].map((h, k) => el("th", k === 1 ? "l" : "", h))));
    let at = 0;
    for (let k = 0; k < flat.length; k += 4) {
      const [start, end, sev, conf] = flat.slice(k, k + 4), severity = D.spans.severities[sev];
      if (start > at) text.append(document.createTextNode(chars.slice(at, start).join("")));
      const mark = el("mark", `sev-${severity}`, chars.slice(start, end).join(""));
      mark.title = `${severity} (${conf.toFixed(3)})`;
      text.append(mark);
      at = Math.max(at, end);
      table.append(tr([td(severity), td(chars.slice(start, end).join(""), "l"), td(conf.toFixed(3))]));
    }
    if (at < chars.length) text.append(document.createTextNode(chars.slice(at).join("")));
    s.append(text, flat.length ? table : el("p", "notes", "no error span"));
  });
});
