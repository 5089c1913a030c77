// mint-envkit view: the metric charts, and the page's guard against its own errors.
// Bounded work whatever a run wrote: min and max by loops (never a spread of a big array),
// curves longer than MAX_POINTS downsampled (each bucket keeps its lowest and highest point),
// a range of one value or of float noise (0.3 and 0.1 + 0.2) padded, at most MAX_TICKS ticks,
// and only finite numbers drawn. A chart that still fails shows an error note in its place.
// Each run has a colour and a marker shape; a final held-out evaluation is its shape, larger and
// hollow (class "final"); a baseline is a dashed line in the run's colour. When every run has one
// step (a sweep of one-step configs, an evaluation's checkpoints), a chart has one slot per run
// instead of a step axis: the run's value, its final evaluation beside it, its baseline across.

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
  const { RUNS, ANSWERS, COLORS, state, el, svg, fmt, selectStep, selectRun } = deps;
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
  const SHAPES = ["circle", "square", "triangle", "diamond", "down", "plus"];
  const color = (i) => COLORS[i % COLORS.length];
  const shape = (i) => SHAPES[(i + Math.floor(i / COLORS.length)) % SHAPES.length];
  // A marker of run i's shape at (x, y); a circle is a <circle>, the other shapes a <path>.
  function marker(i, x, y, r, attrs) {
    const kind = shape(i);
    if (kind === "circle") return svg("circle", { cx: x, cy: y, r, ...attrs, "data-shape": kind });
    const f = (v) => v.toFixed(1);
    const d = {
      square: () => { const a = r * 0.9; return `M${f(x - a)},${f(y - a)}h${f(2 * a)}v${f(2 * a)}h${f(-2 * a)}Z`; },
      triangle: () => `M${f(x)},${f(y - 1.2 * r)}L${f(x + 1.1 * r)},${f(y + 0.8 * r)}L${f(x - 1.1 * r)},${f(y + 0.8 * r)}Z`,
      down: () => `M${f(x)},${f(y + 1.2 * r)}L${f(x + 1.1 * r)},${f(y - 0.8 * r)}L${f(x - 1.1 * r)},${f(y - 0.8 * r)}Z`,
      diamond: () => `M${f(x)},${f(y - 1.3 * r)}L${f(x + 1.1 * r)},${f(y)}L${f(x)},${f(y + 1.3 * r)}L${f(x - 1.1 * r)},${f(y)}Z`,
      plus: () => { const a = r * 1.1, b = r * 0.4;
        return `M${f(x - b)},${f(y - a)}h${f(2 * b)}v${f(a - b)}h${f(a - b)}v${f(2 * b)}h${f(b - a)}v${f(a - b)}` +
          `h${f(-2 * b)}v${f(b - a)}h${f(b - a)}v${f(-2 * b)}h${f(a - b)}Z`; },
    }[kind]();
    return svg("path", { d, ...attrs, "data-shape": kind });
  }
  // Run i's colour and marker, for the legend and the runs table.
  function icon(i, hollow = false) {
    const root = svg("svg", { class: "icon", viewBox: "0 0 12 12", width: 12, height: 12,
      style: "width:12px;height:12px", "aria-hidden": "true" });
    root.append(marker(i, 6, 6, 3.6, hollow ? { fill: "#fff", stroke: color(i), "stroke-width": 1.6 }
      : { fill: color(i) }));
    return root;
  }
  function dashIcon() {
    const root = svg("svg", { class: "icon", viewBox: "0 0 18 12", width: 18, height: 12,
      style: "width:18px;height:12px", "aria-hidden": "true" });
    root.append(svg("line", { x1: 1, x2: 17, y1: 6, y2: 6, stroke: "#475467", "stroke-width": 1.4, "stroke-dasharray": "4 2" }));
    return root;
  }
  // Every run of this chart: its own points, its final evaluation, its baseline as logged.
  function curves(key, notes) {
    const out = [];
    RUNS.forEach((run, i) => {
      if (state.hidden.has(i)) return;
      try {
        const ok = (p) => finite(p[0]) && finite(p[1]);
        const pts = ANSWERS.points(run, key).filter(ok);
        const fin = ANSWERS.finals(run, key).filter(ok);
        const base = ANSWERS.baseline(run, key).filter(ok);
        if (pts.length || fin.length) out.push({ i, name: String(own(run, "name")), pts, fin, base });
      } catch (err) {
        notes.push(mevFailed(`${String(own(run, "name"))}: could not read this curve`, err));
      }
    });
    return out;
  }
  // A logged baseline as a step function from lo to hi: each value holds until the next one.
  function stepLine(base, lo, hi) {
    const out = [[Math.min(lo, base[0][0]), base[0][1]]];
    for (let j = 1; j < base.length; j++) out.push([base[j][0], base[j - 1][1]], [base[j][0], base[j][1]]);
    out.push([Math.max(hi, base[base.length - 1][0]), base[base.length - 1][1]]);
    return out;
  }
  // The baseline's value (and name) at x: the latest logged at or before x, else the first.
  function baselineAt(base, x) {
    let found = base[0];
    for (const b of base) if (b[0] <= x) found = b;
    return found;
  }
  const baselineText = (b) => `baseline ${fmt(b[1])}${b[2] ? ` (${b[2]})` : ""}`;
  function chart(key) {
    const card = el("div", { class: "chart", "data-metric": key });
    try {
      draw(card, key);
    } catch (err) {
      card.append(mevFailed(`could not draw ${key}`, err));
    }
    return card;
  }
  // One step per run everywhere: a slot per run, whatever the chart.
  const perConfig = () => RUNS.every((r) => { const s = own(own(r, "metrics"), "steps"); return !Array.isArray(s) || s.length <= 1; });
  function draw(card, key) {
    const W = 340, H = 170, L = 46, R = 8, T = 6, B = 22;
    const notes = [];
    const runs = curves(key, notes);
    const derived = RUNS.map((r) => own(own(r, "metrics"), "derived")).map((d) => own(d, key)).find(Boolean);
    card.append(el("div", { class: "ctitle", title: derived ? `${key} = ${derived}` : key }, key));
    const value = el("div", { class: "cvalue", text: runs.length ? "" : "no values" });
    card.append(value);
    for (const note of notes) card.append(note);
    if (!runs.length) return;
    const slots = perConfig();
    let [y0, y1] = [null, null];
    for (const c of runs) for (const list of [c.pts, c.fin, c.base]) [y0, y1] = extent(list.map((p) => p[1]), y0, y1);
    [y0, y1] = padded(y0, y1);
    const Y = (y) => T + (1 - (y / 2 - y0 / 2) / (y1 / 2 - y0 / 2)) * (H - T - B);  // halves: no overflow
    const root = svg("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": key,
      "data-layout": slots ? "per-config" : "steps" });
    for (const t of niceTicks(y0, y1, 4)) {
      root.append(svg("line", { class: "grid", x1: L, x2: W - R, y1: Y(t), y2: Y(t) }));
      const label = svg("text", { x: L - 8, y: Y(t) + 3, "text-anchor": "end" });
      label.textContent = fmt(t);
      root.append(label);
    }
    // The axes stand off the data by GAP, so a value (or a dashed baseline) at an end of the range
    // is not drawn on top of an axis.
    const GAP = 5;
    root.append(svg("line", { class: "axis", stroke: "#98a2b3", x1: L - GAP, x2: L - GAP, y1: T, y2: H - B + GAP }));
    root.append(svg("line", { class: "axis", stroke: "#98a2b3", x1: L - GAP, x2: W - R, y1: H - B + GAP, y2: H - B + GAP }));
    const geometry = { W, H, L, R, T, B, Y, root, value };
    const hover = slots ? drawSlots(runs, geometry) : drawSteps(runs, geometry);
    root.addEventListener("mousemove", (evt) => { value.textContent = hover.text(hover.at(evt)); });
    root.addEventListener("mouseleave", () => { value.textContent = ""; });
    root.addEventListener("click", (evt) => hover.click(hover.at(evt)));
    card.append(root);
    card.append(chartKey(runs));
  }
  // What the dashes and the hollow markers are, with the baselines' names when logged.
  function chartKey(runs) {
    const items = [];
    const withBase = runs.filter((c) => c.base.length);
    if (withBase.length) {
      const names = [...new Set(withBase.flatMap((c) => c.base.map((b) => b[2]).filter(Boolean)))];
      const what = names.length ? `baseline: ${names.join(" / ")}` : "best trivial baseline";
      items.push(el("span", { class: "kbase" }, dashIcon(), " ", what));
    }
    if (runs.some((c) => c.fin.length)) {
      items.push(el("span", { class: "kfinal" }, icon(runs.find((c) => c.fin.length).i, true),
        " final evaluation (after the last update)"));
    }
    return el("div", { class: "ckey" }, items);
  }
  // x = step; a final evaluation one step after the last; a baseline across its run's steps.
  function drawSteps(runs, g) {
    const { W, H, L, R, T, B, Y, root } = g;
    let [x0, x1] = [null, null];
    for (const c of runs) [x0, x1] = extent([...c.pts, ...c.fin].map((p) => p[0]), x0, x1);
    [x0, x1] = x0 === x1 && x0 - 1 < x1 + 1 ? [x0 - 1, x1 + 1] : padded(x0, x1);  // steps: one either side
    const X = (x) => L + ((x / 2 - x0 / 2) / (x1 / 2 - x0 / 2)) * (W - L - R);
    const xy = (p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`;
    for (const t of niceTicks(x0, x1, 5).filter(Number.isInteger)) {
      const label = svg("text", { x: X(t), y: H - 4, "text-anchor": "middle" });
      label.textContent = String(t);
      root.append(label);
    }
    if (finite(state.step) && state.step >= x0 && state.step <= x1) {
      root.append(svg("line", { class: "sel", x1: X(state.step), x2: X(state.step), y1: T, y2: H - B }));
    }
    const drawn = runs.map((c) => {
      const xs = [...c.pts, ...c.fin].map((p) => p[0]);
      let [lo, hi] = extent(xs, null, null);
      if (lo === hi) [lo, hi] = [x0, x1];  // one step: the baseline spans the chart
      return { ...c, line: [...downsample(c.pts), ...c.fin], lo, hi };
    });
    for (const c of drawn) {
      if (!c.base.length) continue;
      const line = svg("polyline", { points: downsample(stepLine(c.base, c.lo, c.hi)).map(xy).join(" "), fill: "none",
        stroke: color(c.i), "stroke-width": 1.2, "stroke-dasharray": "5 3", "data-baseline": c.name });
      line.append(title(`${c.name}: ${baselineText(c.base[c.base.length - 1])}`));
      root.append(line);
    }
    for (const c of drawn) {
      root.append(svg("polyline", { points: c.line.map(xy).join(" "), fill: "none", stroke: color(c.i),
        "stroke-width": 1.6, "data-run": c.name }));
      if (c.line.length - c.fin.length <= 60) {
        for (const p of c.pts) root.append(marker(c.i, X(p[0]), Y(p[1]), 2.6, { fill: color(c.i) }));
      }
      for (const p of c.fin) {
        const m = marker(c.i, X(p[0]), Y(p[1]), 4.4, { class: "final", fill: "#fff", stroke: color(c.i),
          "stroke-width": 2, "data-final": c.name });
        m.append(title(`${c.name}: final evaluation (after step ${p[0] - 1}): ${fmt(p[1])}`));
        root.append(m);
      }
    }
    const at = (evt) => {
      const box = root.getBoundingClientRect();
      const x = x0 + ((((evt.clientX - box.left) / box.width) * W - L) / (W - L - R)) * (x1 - x0);
      let best = null;
      for (const c of drawn) for (const p of c.line) if (best === null || Math.abs(p[0] - x) < Math.abs(best - x)) best = p[0];
      return best;
    };
    const text = (s) => {
      const parts = [];
      for (const c of drawn) {
        const who = RUNS.length > 1 ? `${c.name} ` : "";
        const p = c.pts.find((q) => q[0] === s), f = c.fin.find((q) => q[0] === s);
        if (p) parts.push(`${who}${fmt(p[1])}`);
        if (f) parts.push(`${who}final ${fmt(f[1])}`);
        if ((p || f) && c.base.length) parts.push(`${who}${baselineText(baselineAt(c.base, s))}`);
      }
      return `step ${s}: ${parts.join(" · ")}`;
    };
    return { at, text, click: (s) => selectStep(s) };
  }
  // One slot per run: its value, its final evaluation to the right, its baseline across the slot.
  function drawSlots(runs, g) {
    const { W, H, L, R, Y, root } = g;
    const slot = (W - L - R) / runs.length;
    const chars = Math.max(3, Math.floor(slot / 6));
    runs.forEach((c, k) => {
      const left = L + k * slot;
      const xs = [...c.pts, ...c.fin].map((p) => p[0]);
      const [lo, hi] = extent(xs, null, null);
      const X = (x) => left + slot * (lo === hi ? 0.5 : 0.3 + (0.4 * (x - lo)) / (hi - lo));
      const group = svg("g", { class: "slot", "data-slot": c.name });
      if (c.i === state.run && runs.length > 1) {
        group.append(svg("rect", { class: "cur", x: left + 1, y: g.T, width: slot - 2, height: H - g.T - g.B }));
      }
      if (slot >= 24) {  // narrower slots (dozens of runs): the name is in the tooltips only
        const label = svg("text", { x: left + slot / 2, y: H - 4, "text-anchor": "middle" });
        label.textContent = c.name.length > chars ? c.name.slice(0, chars - 1) + "…" : c.name;
        label.append(title(c.name));
        group.append(label);
      }
      if (c.base.length) {
        const line = stepLine(c.base, lo, hi).map((p) => [X(p[0]), Y(p[1])]);
        line[0][0] = left + slot * 0.08;
        line[line.length - 1][0] = left + slot * 0.92;
        const dashed = svg("polyline", { points: line.map((p) => `${p[0].toFixed(1)},${p[1].toFixed(1)}`).join(" "),
          fill: "none", stroke: color(c.i), "stroke-width": 1.2, "stroke-dasharray": "5 3", "data-baseline": c.name });
        dashed.append(title(`${c.name}: ${baselineText(c.base[c.base.length - 1])}`));
        group.append(dashed);
      }
      const line = [...c.pts, ...c.fin];
      if (line.length > 1) {
        group.append(svg("polyline", { points: line.map((p) => `${X(p[0]).toFixed(1)},${Y(p[1]).toFixed(1)}`).join(" "),
          fill: "none", stroke: color(c.i), "stroke-width": 1.6, "data-run": c.name }));
      }
      for (const p of c.pts) {
        const m = marker(c.i, X(p[0]), Y(p[1]), 4.2, { fill: color(c.i), "data-run": c.name });
        m.append(title(`${c.name}: ${fmt(p[1])}`));
        group.append(m);
      }
      for (const p of c.fin) {
        const m = marker(c.i, X(p[0]), Y(p[1]), 5, { class: "final", fill: "#fff", stroke: color(c.i),
          "stroke-width": 2, "data-final": c.name });
        m.append(title(`${c.name}: final evaluation (after step ${p[0] - 1}): ${fmt(p[1])}`));
        group.append(m);
      }
      const last = line[line.length - 1];
      if (slot >= 34) {
        const v = svg("text", { class: "vlabel", x: X(last[0]), y: Y(last[1]) - 8, "text-anchor": "middle" });
        v.textContent = fmt(last[1]);
        group.append(v);
      }
      root.append(group);
    });
    const at = (evt) => {
      const box = root.getBoundingClientRect();
      const k = Math.floor(((((evt.clientX - box.left) / box.width) * W) - L) / slot);
      return runs[Math.max(0, Math.min(runs.length - 1, k))];
    };
    const text = (c) => {
      const parts = [...c.pts.map((p) => fmt(p[1])), ...c.fin.map((p) => `final ${fmt(p[1])}`)];
      if (c.base.length) parts.push(baselineText(c.base[c.base.length - 1]));
      return `${c.name}: ${parts.join(" · ")}`;
    };
    return { at, text, click: (c) => selectRun(c.i) };
  }
  function title(text) {
    const node = svg("title", {});
    node.textContent = text;
    return node;
  }
  return { chart, icon, niceTicks, downsample };
}
