"use strict";
// The compare page (evalab.report.compare_page): every string from the inputs is set
// through textContent, never parsed as markup.
(() => {
  const D = JSON.parse(document.getElementById("data").textContent);
  const S = D.strings, N = D.ref.length, PAGE = 50, SVGNS = "http://www.w3.org/2000/svg";
  const $ = id => document.getElementById(id);
  const el = (tag, cls, text) => {
    const e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = String(text);
    return e;
  };
  const sv = (tag, attrs, text) => {
    const e = document.createElementNS(SVGNS, tag);
    for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
    if (text !== undefined) e.textContent = String(text);
    return e;
  };
  const num = x => (x === null || x === undefined ? NaN : x);
  const digits = values => (values.some(v => Math.abs(num(v)) > 1.5) ? 2 : 4);
  const fmt = (x, d) => (Number.isFinite(num(x)) ? num(x).toFixed(d) : "-");
  const fill = (select, labels, chosen) => {
    select.replaceChildren(...labels.map((label, i) => { const o = el("option", null, label); o.value = i; return o; }));
    select.value = String(chosen);
  };
  const tokens = i => (S[i] || "").split(/\s+/).filter(Boolean);
  const tr = (cells, cls) => { const r = el("tr", cls); for (const c of cells) r.append(c); return r; };
  const td = (text, cls) => el("td", cls, text);

  // ---- ranking (and its forest plot) --------------------------------------------------
  function renderRanking() {
    const metric = D.metrics[+$("rank-metric").value];
    const rows = D.ranking.filter(r => r.metric === metric);
    const d = digits(rows.map(r => r.score));
    const table = el("table");
    table.append(tr(["rank", "cluster", "system", "score", "95% CI"].map((h, i) => el("th", i === 2 ? "l" : "", h))));
    for (const r of rows) {
      const ci = r.ci_low === null ? "-" : `[${fmt(r.ci_low, d)}, ${fmt(r.ci_high, d)}]`;
      table.append(tr([td(r.rank ?? "-"), td(r.cluster ?? "-"), td(r.system, "l"), td(fmt(r.score, d)), td(ci)],
        (r.cluster || 0) % 2 ? "c-odd" : ""));
    }
    $("ranking").replaceChildren(table);
    // the forest plots are drawn on the server (evalab.report.figures), one per metric
    for (const f of $("forest").children) f.hidden = f.dataset.metric !== $("rank-metric").value;
  }

  // ---- two systems --------------------------------------------------------------------
  const state = { sort: "delta", dir: 1, page: 0, selected: null };
  const pair = () => ({ a: +$("sys-a").value, b: +$("sys-b").value, metric: D.metrics[+$("pair-metric").value] });

  function renderSegments() {
    const { a, b, metric } = pair();
    const sa = D.seg[metric][a], sb = D.seg[metric][b];
    const delta = sa.map((v, i) => num(v) - num(sb[i]));
    const order = Array.from({ length: N }, (_, i) => i);
    if (state.sort === "delta") {
      const key = i => (Number.isFinite(delta[i]) ? delta[i] : Infinity);
      order.sort((i, j) => state.dir * (key(i) - key(j)) || i - j);
    } else if (state.dir < 0) order.reverse();
    const pages = Math.max(1, Math.ceil(N / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const shown = order.slice(state.page * PAGE, (state.page + 1) * PAGE);
    const d = digits(sa.concat(sb));
    const names = [D.systems[a], D.systems[b]];
    const heads = [["#", "id"], [`Δ ${metric} (A − B)`, "delta"], [`A: ${names[0]}`], [`B: ${names[1]}`]];
    if (D.src) heads.push(["source"]);
    heads.push(["reference"], [`output A: ${names[0]}`], [`output B: ${names[1]}`]);
    const table = el("table");
    table.append(tr(heads.map(([h, key]) => {
      const th = el("th", key ? "sort" : (h.startsWith("output") || h === "source" || h === "reference" ? "l" : ""), h);
      if (key) {
        th.dataset.sort = key;
        th.addEventListener("click", () => { state.dir = state.sort === key ? -state.dir : 1; state.sort = key; state.page = 0; renderSegments(); });
      }
      return th;
    })));
    for (const i of shown) {
      const cells = [td(i + 1), td(Number.isFinite(delta[i]) ? (delta[i] > 0 ? "+" : "") + delta[i].toFixed(d) : "-",
        delta[i] > 0 ? "pos" : delta[i] < 0 ? "neg" : ""), td(fmt(sa[i], d)), td(fmt(sb[i], d))];
      if (D.src) cells.push(td(S[D.src[i]], "text"));
      cells.push(td(S[D.ref[i]], "text"), td(S[D.out[a][i]], "text"), td(S[D.out[b][i]], "text"));
      const row = tr(cells, i === state.selected ? "selected" : "");
      row.dataset.segment = i + 1;
      row.addEventListener("click", () => { state.selected = i; renderSegments(); });
      table.append(row);
    }
    const prev = el("button", null, "previous"), next = el("button", null, "next");
    prev.disabled = state.page === 0; next.disabled = state.page >= pages - 1;
    prev.addEventListener("click", () => { state.page--; renderSegments(); });
    next.addEventListener("click", () => { state.page++; renderSegments(); });
    const where = el("span", null, `segments ${state.page * PAGE + 1}–${Math.min(N, (state.page + 1) * PAGE)} of ${N}, ` +
      (state.sort === "delta" ? `by Δ ${state.dir > 0 ? "ascending (B better first)" : "descending (A better first)"}` : "in order"));
    $("pager").replaceChildren(prev, next, where);
    $("segments").replaceChildren(table);
    renderAlignment();
    renderViews();
  }

  // ---- views of the selected segment from other modules (e.g. report/error_spans.js) --
  function renderViews() {
    for (const view of window.evalabSegmentViews || []) view({ D, S, el, td, tr, segmentView, embedded });
  }

  // ---- token alignments (BERTScore) of the selected segment ---------------------------
  // per system, segment -> [hypothesis tokens, reference tokens, precision matches, recall
  // matches]; matches are flat [source, best match, cosine, ...] lists
  const heat = v => { const l = Math.round(255 - 180 * Math.min(Math.max(v, 0), 1)); return `rgb(${l},${Math.min(255, l + 25)},255)`; };
  function matchTable(caption, from, to, flat, cls) {
    const table = el("table", `matches ${cls}`);
    table.append(el("caption", null, caption));
    for (let k = 0; k < flat.length; k += 3) {
      const cos = el("td", "cos", flat[k + 2].toFixed(3));
      cos.style.background = heat(flat[k + 2]);
      table.append(tr([td(S[from[flat[k]]]), td("→"), td(S[to[flat[k + 1]]]), cos]));
    }
    return table;
  }
  // A segment view: its heading and note, then (once a segment is selected) one section per
  // system of the pair, each given to fill(section, system, segment)
  function segmentView(box, title, noteText, cls, fill) {
    const { a, b } = pair(), i = state.selected;
    const head = el("h3", null, title + (i === null ? "" : `: segment ${i + 1}`));
    const note = el("p", "notes", noteText);
    if (i === null) { box.replaceChildren(head, note); return; }
    const row = el("div", "aligns");
    row.append(...[[a, "A"], [b, "B"]].map(([sys, label]) => {
      const s = el("section", cls);
      s.dataset.system = label;
      s.append(el("h4", null, `${label}: ${D.systems[sys]}`));
      fill(s, sys, i);
      return s;
    }));
    box.replaceChildren(head, note, row);
  }
  // "Embedded for the N segments of largest |Δ metric|" where a view holds fewer than all
  const embedded = (limit, metric) =>
    N > limit ? `Embedded for the ${limit} segments of largest |Δ ${metric}| of each pair of systems. ` : "";
  function renderAlignment() {
    const box = $("alignment");
    if (!D.align) { box.replaceChildren(); return; }
    const note = `Each token's greedy best match in the other sentence by cosine, as BERTScore matches them ` +
      `(hypothesis → reference: precision; reference → hypothesis: recall). ` +
      embedded(D.align.limit, D.align.metric) + "Click a segment to show it.";
    segmentView(box, `Token alignments (${D.align.metric})`, note, "align-system", (s, sys, i) => {
      const one = D.align.sys[sys][String(i)];
      if (!one) { s.append(el("p", "notes", "no alignment embedded for this segment and system")); return; }
      const [hyp, ref, prec, rec] = one;
      s.append(matchTable("hypothesis → reference (precision)", hyp, ref, prec, "precision"),
        matchTable("reference → hypothesis (recall)", ref, hyp, rec, "recall"));
    });
  }

  // ---- buckets ------------------------------------------------------------------------
  const LEN_EDGES = [10, 20, 30, 40, 50], FREQ_EDGES = [1, 2, 3, 5, 10, 100, 1000];
  const bucketOf = (v, edges) => { let k = 0; while (k < edges.length && v >= edges[k]) k++; return k; };
  const edgeLabels = (edges, unit) => edges.map((e, k) => (k === 0 ? `<${e}` : e - 1 === edges[k - 1] ? `${e - 1}` : `${edges[k - 1]}–${e - 1}`))
    .concat([`≥${edges[edges.length - 1]}`]).map(s => s + unit);
  const refTokens = D.ref.map(tokens);
  // word frequencies: from a training file when one was given (--train), else the references
  const freq = D.freq ? new Map(Object.entries(D.freq)) : new Map();
  if (!D.freq) for (const toks of refTokens) for (const t of toks) freq.set(t, (freq.get(t) || 0) + 1);
  const FIRST = D.freq ? 0 : 1; // with a training file, reference words it lacks form bucket 0

  function lengthBuckets(sys, metric) {
    const k = LEN_EDGES.length + 1, sum = new Float64Array(k), sq = new Float64Array(k), n = new Float64Array(k);
    const seg = D.seg[metric][sys];
    refTokens.forEach((toks, i) => {
      const v = num(seg[i]);
      if (!Number.isFinite(v)) return;
      const b = bucketOf(toks.length, LEN_EDGES);
      sum[b] += v; sq[b] += v * v; n[b] += 1;
    });
    return Array.from(n, (c, b) => {
      if (!c) return { value: NaN, low: NaN, high: NaN, n: 0 };
      const mean = sum[b] / c, sd = c > 1 ? Math.sqrt(Math.max(0, (sq[b] - c * mean * mean) / (c - 1))) : 0;
      const hw = 1.96 * sd / Math.sqrt(c);
      return { value: mean, low: mean - hw, high: mean + hw, n: c };
    });
  }

  function freqCounts(sys) {
    // per segment and frequency bucket (0 = not in the references): matched, output and reference words
    const k = FREQ_EDGES.length + 1, m = new Float64Array(N * k), h = new Float64Array(N * k), r = new Float64Array(N * k);
    for (let i = 0; i < N; i++) {
      const ref = new Map();
      for (const t of refTokens[i]) ref.set(t, (ref.get(t) || 0) + 1);
      const hyp = new Map();
      for (const t of tokens(D.out[sys][i])) hyp.set(t, (hyp.get(t) || 0) + 1);
      for (const [t, c] of ref) { const b = bucketOf(freq.get(t) || 0, FREQ_EDGES); r[i * k + b] += c; m[i * k + b] += Math.min(c, hyp.get(t) || 0); }
      for (const [t, c] of hyp) h[i * k + bucketOf(freq.get(t) || 0, FREQ_EDGES)] += c;
    }
    return { m, h, r, k };
  }

  function rng(seed) { // mulberry32: a seeded stream, the same intervals on every open
    return () => { seed |= 0; seed = (seed + 0x6d2b79f5) | 0; let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t; return ((t ^ (t >>> 14)) >>> 0) / 4294967296; };
  }

  const freqMemo = new Map();
  function freqBuckets(sys) {
    if (!freqMemo.has(sys)) freqMemo.set(sys, freqBuckets1(sys));
    return freqMemo.get(sys);
  }

  function freqBuckets1(sys) {
    const { m, h, r, k } = freqCounts(sys), B = 200, random = rng(12345);
    const f = (weights, b) => { let mm = 0, tot = 0; for (let i = 0; i < N; i++) { const w = weights ? weights[i] : 1; if (!w) continue; mm += w * m[i * k + b]; tot += w * (h[i * k + b] + r[i * k + b]); } return tot ? 2 * mm / tot : NaN; };
    const draws = [];
    for (let s = 0; s < B; s++) { const w = new Uint16Array(N); for (let i = 0; i < N; i++) w[Math.floor(random() * N)]++; draws.push(w); }
    const out = [];
    for (let b = FIRST; b < k; b++) {
      const resampled = draws.map(w => f(w, b)).filter(Number.isFinite).sort((x, y) => x - y);
      const lower = Math.floor(resampled.length * 0.025);
      let words = 0; for (let i = 0; i < N; i++) words += r[i * k + b];
      out.push({ value: f(null, b), low: resampled[lower], high: resampled[resampled.length - lower - 1], n: words });
    }
    return out;
  }

  function barChart(title, labels, series, unit) {
    const width = 640, height = 260, left = 50, bottom = 60, top = 28, plot = width - left - 10;
    const all = series.flatMap(s => s.values.flatMap(v => [v.value, v.low, v.high])).filter(Number.isFinite);
    const hi = Math.max(0, ...all), lo = Math.min(0, ...all), span = hi - lo || 1;
    const y = v => top + (hi - v) / span * (height - top - bottom);
    const svg = sv("svg", { viewBox: `0 0 ${width} ${height}`, width, role: "img", class: "bucket-chart" });
    svg.append(sv("text", { x: left, y: 16, "font-size": 13, "font-weight": "bold" }, title));
    const group = plot / labels.length, bar = group / (series.length + 1), colours = ["#2471a3", "#c0392b"];
    labels.forEach((label, b) => {
      series.forEach((s, k) => {
        const v = s.values[b], x0 = left + b * group + bar * (k + 0.5);
        if (!Number.isFinite(v.value)) return;
        const rect = sv("rect", { x: x0, width: bar * 0.9, y: Math.min(y(v.value), y(0)), height: Math.abs(y(v.value) - y(0)), fill: colours[k] });
        rect.append(sv("title", {}, `${s.name}, ${label}: ${v.value.toFixed(3)} [${fmt(v.low, 3)}, ${fmt(v.high, 3)}] (${v.n} ${unit})`));
        svg.append(rect);
        if (Number.isFinite(v.low)) svg.append(sv("line", { x1: x0 + bar * 0.45, x2: x0 + bar * 0.45, y1: y(v.low), y2: y(v.high), stroke: "#222" }));
      });
      svg.append(sv("text", { x: left + b * group + group / 2, y: height - bottom + 16, "text-anchor": "middle", "font-size": 11 }, label));
      svg.append(sv("text", { x: left + b * group + group / 2, y: height - bottom + 30, "text-anchor": "middle", "font-size": 10, fill: "#666" },
        `n=${series[0].values[b].n}`));
    });
    svg.append(sv("line", { x1: left, x2: left + plot, y1: y(0), y2: y(0), stroke: "#999" }));
    [lo, hi].forEach(v => svg.append(sv("text", { x: left - 4, y: y(v) + 4, "text-anchor": "end", "font-size": 11 }, v.toFixed(2))));
    series.forEach((s, k) => {
      svg.append(sv("rect", { x: left + k * 300, y: height - 18, width: 10, height: 10, fill: colours[k] }));
      svg.append(sv("text", { x: left + k * 300 + 14, y: height - 9, "font-size": 11 }, s.name));
    });
    return svg;
  }

  function renderBuckets() {
    const { a, b, metric } = pair();
    const names = [`A: ${D.systems[a]}`, `B: ${D.systems[b]}`];
    $("len-chart").replaceChildren(barChart(`mean sentence-level ${metric} by reference length (95% CI)`,
      edgeLabels(LEN_EDGES, " words"), [{ name: names[0], values: lengthBuckets(a, metric) }, { name: names[1], values: lengthBuckets(b, metric) }], "segments"));
    const labels = edgeLabels(FREQ_EDGES, "").map((l, i) => (i ? l : "0"));
    $("freq-chart").replaceChildren(barChart(`word F-measure by frequency in the ${D.freq ? "training file" : "references"} (95% bootstrap CI)`,
      labels.slice(FIRST), [{ name: names[0], values: freqBuckets(a) }, { name: names[1], values: freqBuckets(b) }], "reference words"));
  }

  // ---- n-gram gains and losses -----------------------------------------------------
  const grams = toks => { // every 1- to 4-gram of a segment with its count
    const c = new Map();
    for (let n = 1; n <= 4; n++) for (let j = 0; j + n <= toks.length; j++) { const g = toks.slice(j, j + n).join(" "); c.set(g, (c.get(g) || 0) + 1); }
    return c;
  };
  let refGrams = null;
  const matched = new Map(); // system -> n-gram -> clipped matches over all segments (computed once)
  function matches(sys) {
    if (matched.has(sys)) return matched.get(sys);
    refGrams = refGrams || refTokens.map(grams);
    const counts = new Map();
    for (let i = 0; i < N; i++) {
      const rc = refGrams[i];
      for (const [g, c] of grams(tokens(D.out[sys][i]))) { const m = Math.min(c, rc.get(g) || 0); if (m) counts.set(g, (counts.get(g) || 0) + m); }
    }
    matched.set(sys, counts);
    return counts;
  }

  function renderNgrams() {
    const { a, b } = pair(), ma = matches(a), mb = matches(b);
    const grams = new Set([...ma.keys(), ...mb.keys()]);
    const diffs = [...grams].map(g => [g, ma.get(g) || 0, mb.get(g) || 0]).map(([g, x, y]) => [g, x, y, x - y]);
    const tables = [[`matched more often by A: ${D.systems[a]}`, diffs.filter(r => r[3] > 0).sort((p, q) => q[3] - p[3] || (p[0] < q[0] ? -1 : 1))],
      [`matched more often by B: ${D.systems[b]}`, diffs.filter(r => r[3] < 0).sort((p, q) => p[3] - q[3] || (p[0] < q[0] ? -1 : 1))]];
    $("ngrams").replaceChildren(...tables.map(([title, rows]) => {
      const table = el("table", "ngram-table");
      table.append(el("caption", null, title));
      table.append(tr(["n-gram", "A matches", "B matches", "A − B"].map((h, i) => el("th", i ? "" : "l", h))));
      for (const [g, x, y, d] of rows.slice(0, D.topK)) table.append(tr([td(g, "l"), td(x), td(y), td((d > 0 ? "+" : "") + d)]));
      return table;
    }));
  }

  // ---- wiring ---------------------------------------------------------------------------
  // the segments first; the buckets and n-grams (seconds for 3000 segments) right after
  function renderPair(done) {
    state.page = 0;
    renderSegments();
    setTimeout(() => { renderBuckets(); renderNgrams(); if (done) done(); }, 0);
  }
  fill($("rank-metric"), D.metrics, 0);
  fill($("pair-metric"), D.metrics, 0);
  const first = D.ranking.filter(r => r.metric === D.metrics[0]).map(r => D.systems.indexOf(r.system));
  fill($("sys-a"), D.systems, first[0] ?? 0);
  fill($("sys-b"), D.systems, first[1] ?? Math.min(1, D.systems.length - 1));
  $("rank-metric").addEventListener("change", renderRanking);
  $("pair-metric").addEventListener("change", () => { renderSegments(); renderBuckets(); });
  $("sys-a").addEventListener("change", () => renderPair());
  $("sys-b").addEventListener("change", () => renderPair());
  $("notes").replaceChildren(...D.notes.map(n => el("p", null, n)));
  renderRanking();
  renderPair(() => { window.evalabRendered = performance.now(); });
  window.evalabFirstPaint = performance.now();
})();
