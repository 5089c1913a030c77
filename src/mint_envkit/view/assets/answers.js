// mint-envkit view: each run's held-out answers beside the best trivial baseline.
// A run's `answers` is sweep.held_out_answers(...).as_dict() plus `baseline_name` (see
// view/load.py): correct before and after, baseline, distinct, top_share, truncated, collapse,
// flag. Any value may be null, and an older page's data may lack it: every figure is checked
// before it is shown. The collapse and truncation banners are written into the page by
// view/report.py, so they show even without JavaScript. When the run's base model was cut
// off, `cut_off` holds the cut-off pair (before, after, truncated, max_tokens) and the
// figures are those measured where nothing is cut off (at `max_tokens`): the headline is that
// pair, the cut-off one beside it with its warning.
// What a chart reads besides its own curve: the final held-out evaluation of a `test/...` chart
// (its `test_final/...` value, drawn one step after the step it was logged at: its weights are
// those after that step's update) and the baseline of a `.../correct` chart
// (`.../answers/baseline_correct`, with the name in `.../answers/baseline_name` when logged).
function mevAnswers(deps) {
  "use strict";
  const { RUNS, el, fmt } = deps;
  const HEADERS = ["held-out correct", "baseline", "distinct", "top share", "truncated", "flag"];
  const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const show = (v) => fmt(num(v));
  const of = (run) => (run && run.answers && typeof run.answers === "object" ? run.answers : {});
  const curvesOf = (run) => (run && typeof run.metrics === "object" && run.metrics ? run.metrics : {});
  const own = (obj, key) => (obj && typeof obj === "object" && Object.hasOwn(obj, key) ? obj[key] : undefined);

  const pct = (v) => (num(v) === null ? "n/a" : `${(100 * v).toFixed(0)}%`);
  // The cut-off pair beside the headline: its figures and the warning, in words.
  function cutOff(a) {
    const cut = a.cut_off && typeof a.cut_off === "object" ? a.cut_off : null;
    if (!cut) return null;
    const at = num(cut.max_tokens) === null ? "" : ` at ${cut.max_tokens} tokens`;
    const where = num(a.max_tokens) === null ? "no reply limit where it is not was measured"
      : `the figures above are at ${a.max_tokens} tokens, where it is not`;
    return el("div", { class: "cutoff", title: typeof cut.line === "string" ? cut.line : null },
      el("span", { class: "badge warn", text: `BASE TRUNCATED ${pct(cut.truncated)}` }),
      el("span", { class: "muted", text: ` cut off${at}: ${show(cut.before)} → ${show(cut.after)}; ${where}` }));
  }
  // The cells of the held-out columns; an evaluation's page has no "before" (before: false).
  function cells(run, before = true) {
    const a = of(run);
    const flag = a.flag === "COLLAPSE" ? el("span", { class: "badge bad", text: "COLLAPSE" })
      : typeof a.flag === "string" && a.flag ? el("span", { class: "badge warn", text: a.flag }) : null;
    const name = typeof a.baseline_name === "string" && a.baseline_name ? a.baseline_name : null;
    return [
      before ? el("td", { class: "num held" }, `${show(a.correct_before)} → ${show(a.correct_after)}`, cutOff(a)) : null,
      el("td", { class: "num", title: name }, show(a.baseline),
        name ? el("div", { class: "muted bname", text: name }) : null),
      ...["distinct", "top_share", "truncated"].map((k) => el("td", { class: "num", text: show(a[k]) })),
      el("td", {}, flag),
    ];
  }
  // [step, value] of each finite value; a curve whose steps or values are not lists has none.
  function points(run, key) {
    const metrics = curvesOf(run);
    const series = metrics.series && typeof metrics.series === "object" ? metrics.series : {};
    const ys = Object.hasOwn(series, key) && Array.isArray(series[key]) ? series[key] : [];
    const steps = Array.isArray(metrics.steps) ? metrics.steps : [];
    const out = [];
    for (let j = 0; j < steps.length; j++) {
      if (num(steps[j]) !== null && num(ys[j]) !== null) out.push([steps[j], ys[j]]);
    }
    return out;
  }
  // step -> text of a text figure (answers/baseline_name), for the tooltips.
  function texts(run, key) {
    const metrics = curvesOf(run);
    const values = own(metrics.texts, key);
    const steps = Array.isArray(metrics.steps) ? metrics.steps : [];
    const out = new Map();
    if (!Array.isArray(values)) return out;
    for (let j = 0; j < steps.length; j++) {
      if (num(steps[j]) !== null && typeof values[j] === "string") out.set(steps[j], values[j]);
    }
    return out;
  }
  const finalKey = (key) => (key.startsWith("test/") ? "test_final/" + key.slice(5) : null);
  // The final held-out evaluation of a `test/...` chart: [step + 1, value].
  function finals(run, key) {
    const fk = finalKey(key);
    return fk ? points(run, fk).map(([s, y]) => [s + 1, y]) : [];
  }
  // The baseline of a `.../correct` chart as logged: [x, value, name or null] in x order, the
  // final evaluation's one step after its line, like its correctness.
  function baseline(run, key) {
    if (!/(^|\/)correct$/.test(key)) return [];
    const bk = key.replace(/correct$/, "answers/baseline_correct");
    const named = (k, shift) => {
      const names = texts(run, k.replace(/baseline_correct$/, "baseline_name"));
      return points(run, k).map(([s, y]) => [s + shift, y, names.get(s) ?? null]);
    };
    const out = named(bk, 0);
    if (finalKey(bk)) out.push(...named(finalKey(bk), 1));
    return out.sort((a, b) => a[0] - b[0]);
  }
  return {
    HEADERS,
    shown: () => RUNS.some((run) => of(run).known === true),
    cells,
    points,
    finals,
    baseline,
    finalKey,
  };
}
