// mint-envkit view: the metric charts, and the page's guard against its own errors.
// Bounded work whatever a run wrote: min and max by loops (never a spread of a big array),
// curves longer than MAX_POINTS downsampled (each bucket keeps its lowest and highest point),
// a range of one value or of float noise (0.3 and 0.1 + 0.2) padded, at most MAX_TICKS ticks,
// and only finite numbers drawn. A chart that still fails shows an error note in its place.

// An error note in place of what could not be drawn (class render-error), never a blank page.
function mevFailed(what, err) {
  const node = document.createElement("div");
  node.className = "render-error";
  node.setAttribute("role", "note");
  const why = err && typeof err === "object" && "message" in err ? String(err.message) : String(err);
  node.textContent = `${what} (${why})`;
  return node;
}
// Anything the script did not catch: a note at the top of the page.
window.addEventListener("error", (evt) => {
  const notes = document.getElementById("notes");
  if (notes) notes.append(mevFailed("the page hit an error", evt.error || evt.message));
});

function mevCharts(deps) {
  "use strict";
  const { RUNS, ANSWERS, COLORS, state, el, svg, fmt, selectStep } = deps;
  const MAX_POINTS = 2000;  // buckets of a longer curve; each keeps its min and max point
  const MAX_TICKS = 12;
  const finite = (v) => typeof v === "number" && Number.isFinite(v);
  const own = (obj, key) => (obj && typeof obj === "object" && Object.hasOwn(obj, key) ? obj[key] : undefined);

  // [lo, hi] of the finite numbers in `values` (a loop: 150,000 arguments overflow the stack).
  function extent(values, lo, hi) {
    for (const v of values) {
      if (!finite(v)) continue;
      if (lo === null || v < lo) lo = v;
      if (hi === null || v > hi) hi = v;
    }
    return [lo, hi];
  }
  // A range of one value, of float noise or of denormals, widened around its middle.
  function padded(lo, hi) {
    const span = hi - lo, scale = Math.max(Math.abs(lo), Math.abs(hi));
    if (span > scale * 1e-9 && span > 1e-300) return [lo, hi];
    const mid = lo / 2 + hi / 2;
    const pad = Math.abs(mid) > 1e-300 ? Math.abs(mid) * 0.1 : 1;
    return [Math.min(lo, mid - pad), Math.max(hi, mid + pad)];
  }
  function niceTicks(lo, hi, count) {
    if (!finite(lo) || !finite(hi) || hi < lo) return [];
    const span = hi - lo;
    if (!(span > 0) || !Number.isFinite(span)) return span === 0 ? [lo] : [lo, hi];
    const mag = Math.pow(10, Math.floor(Math.log10(span / Math.max(1, count))));
    if (!(mag > 0) || !Number.isFinite(mag)) return [lo, hi];
    const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => span / s <= count) || mag * 10;
    const first = Math.ceil(lo / step), last = Math.floor(hi / step + 1e-9);
    if (!Number.isFinite(first) || !Number.isFinite(last) || last - first > MAX_TICKS) return [lo, hi];
    const out = [];
    for (let i = 0; i <= last - first; i++) out.push(Number(((first + i) * step).toPrecision(12)));
    return out;
  }
  // At most 2 * MAX_POINTS points: each bucket's lowest and highest, in step order, plus both ends.
  function downsample(pts) {
    if (pts.length <= 2 * MAX_POINTS) return pts;
    const size = Math.ceil(pts.length / MAX_POINTS);
    const out = [pts[0]];
    for (let a = 0; a < pts.length; a += size) {
      const b = Math.min(pts.length, a + size);
      let lo = a, hi = a;
      for (let j = a + 1; j < b; j++) {
        if (pts[j][1] < pts[lo][1]) lo = j;
        if (pts[j][1] > pts[hi][1]) hi = j;
      }
      for (const j of lo === hi ? [lo] : [Math.min(lo, hi), Math.max(lo, hi)]) {
        if (out[out.length - 1] !== pts[j]) out.push(pts[j]);
      }
    }
    if (out[out.length - 1] !== pts[pts.length - 1]) out.push(pts[pts.length - 1]);
    return out;
  }
  function curves(key, notes) {
    const lines = [], baselines = [];  // a correctness chart also draws its baseline, dashed
    RUNS.forEach((run, i) => {
      if (state.hidden.has(i)) return;
      try {
        const pts = ANSWERS.points(run, key).filter((p) => finite(p[0]) && finite(p[1]));
        if (pts.length) lines.push({ i, pts });
        const base = ANSWERS.baseline(run, key, pts).filter((p) => finite(p[0]) && finite(p[1]));
        if (base.length) baselines.push({ i, pts: base });
      } catch (err) {
        notes.push(mevFailed(`${String(own(run, "name"))}: could not read this curve`, err));
      }
    });
    return { lines, baselines };
  }
  function chart(key) {
    const card = el("div", { class: "chart", "data-metric": key });
    try {
      draw(card, key);
    } catch (err) {
      card.append(mevFailed(`could not draw ${key}`, err));
    }
    return card;
  }
  function draw(card, key) {
    const W = 340, H = 170, L = 46, R = 8, T = 6, B = 22;
    const notes = [];
    const { lines, baselines } = curves(key, notes);
    const derived = RUNS.map((r) => own(own(r, "metrics"), "derived")).map((d) => own(d, key)).find(Boolean);
    card.append(el("div", { class: "ctitle", title: derived ? `${key} = ${derived}` : key }, key,
      baselines.length ? el("span", { class: "muted", text: " · dashed: constant-answer baseline" }) : null));
    const value = el("div", { class: "cvalue", text: lines.length ? "" : "no values" });
    card.append(value);
    for (const note of notes) card.append(note);
    if (!lines.length) return;
    let [x0, x1] = [null, null], [y0, y1] = [null, null];
    for (const l of lines) [x0, x1] = extent(l.pts.map((p) => p[0]), x0, x1);
    for (const l of [...lines, ...baselines]) [y0, y1] = extent(l.pts.map((p) => p[1]), y0, y1);
    [x0, x1] = x0 === x1 && x0 - 1 < x1 + 1 ? [x0 - 1, x1 + 1] : padded(x0, x1);  // steps: one either side
    [y0, y1] = padded(y0, y1);
    // Halves, so that a range from -1e308 to 1e308 does not overflow.
    const X = (x) => L + ((x / 2 - x0 / 2) / (x1 / 2 - x0 / 2)) * (W - L - R);
    const Y = (y) => T + (1 - (y / 2 - y0 / 2) / (y1 / 2 - y0 / 2)) * (H - T - B);
    const xy = (p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`;
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": key });
    for (const t of niceTicks(y0, y1, 4)) {
      root.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: Y(t), y2: Y(t) }));
      const label = svg("text", { x: L - 4, y: Y(t) + 3, "text-anchor": "end" });
      label.textContent = fmt(t);
      root.append(label);
    }
    for (const t of niceTicks(x0, x1, 5).filter(Number.isInteger)) {
      const label = svg("text", { x: X(t), y: H - 6, "text-anchor": "middle" });
      label.textContent = String(t);
      root.append(label);
    }
    root.append(svg("line", { stroke: "#98a2b3", x1: L, x2: L, y1: T, y2: H - B }));
    root.append(svg("line", { stroke: "#98a2b3", x1: L, x2: W - R, y1: H - B, y2: H - B }));
    if (finite(state.step) && state.step >= x0 && state.step <= x1) {
      root.append(svg("line", { class: "sel", x1: X(state.step), x2: X(state.step), y1: T, y2: H - B }));
    }
    for (const line of baselines) {
      root.append(svg("polyline", { points: downsample(line.pts).map(xy).join(" "), fill: "none",
        stroke: COLORS[line.i % COLORS.length], "stroke-width": 1.2, "stroke-dasharray": "5 3",
        "data-baseline": RUNS[line.i].name }));
    }
    const drawn = lines.map((line) => ({ i: line.i, pts: downsample(line.pts) }));
    for (const line of drawn) {
      const color = COLORS[line.i % COLORS.length];
      root.append(svg("polyline", { points: line.pts.map(xy).join(" "), fill: "none", stroke: color,
        "stroke-width": 1.6, "data-run": RUNS[line.i].name }));
      if (line.pts.length <= 60) {
        for (const p of line.pts) root.append(svg("circle", { cx: X(p[0]), cy: Y(p[1]), r: 2.2, fill: color }));
      }
    }
    const nearest = (evt) => {
      const box = root.getBoundingClientRect();
      const x = x0 + ((((evt.clientX - box.left) / box.width) * W - L) / (W - L - R)) * (x1 - x0);
      let best = null;
      for (const line of drawn) {
        for (const p of line.pts) if (best === null || Math.abs(p[0] - x) < Math.abs(best - x)) best = p[0];
      }
      return best;
    };
    root.addEventListener("mousemove", (evt) => {
      const s = nearest(evt);
      const parts = drawn.map((l) => { const p = l.pts.find((q) => q[0] === s);
        return p ? `${RUNS.length > 1 ? RUNS[l.i].name + " " : ""}${fmt(p[1])}` : null; }).filter(Boolean);
      value.textContent = `step ${s}: ${parts.join(" · ")}`;
    });
    root.addEventListener("mouseleave", () => { value.textContent = ""; });
    root.addEventListener("click", (evt) => selectStep(nearest(evt)));
    card.append(root);
  }
  return { chart, niceTicks, downsample };
}
