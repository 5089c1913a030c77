// mint-envkit view: each run's held-out answers beside the constant-answer baseline.
// A run's `answers` is sweep.held_out_answers(...).as_dict() (see view/load.py): correct before
// and after, baseline, distinct, top_share, truncated, collapse, flag. Any value may be null, and
// an older page's data may lack it: every figure is checked before it is shown. The collapse
// banner is written into the page by view/report.py, so it shows even without JavaScript.
function mevAnswers(deps) {
  "use strict";
  const { RUNS, el, fmt } = deps;
  const HEADERS = ["held-out correct", "baseline", "distinct", "top share", "truncated", "flag"];
  const num = (v) => (typeof v === "number" && Number.isFinite(v) ? v : null);
  const show = (v) => fmt(num(v));
  const of = (run) => (run && run.answers && typeof run.answers === "object" ? run.answers : {});

  function cells(run) {
    const a = of(run);
    const flag = a.flag === "COLLAPSE" ? el("span", { class: "badge bad", text: "COLLAPSE" })
      : typeof a.flag === "string" && a.flag ? el("span", { class: "badge warn", text: a.flag }) : null;
    return [
      el("td", { class: "num", text: `${show(a.correct_before)} → ${show(a.correct_after)}` }),
      ...["baseline", "distinct", "top_share", "truncated"].map((k) => el("td", { class: "num", text: show(a[k]) })),
      el("td", {}, flag),
    ];
  }
  // [step, value] of each finite value; a curve whose steps or values are not lists has none.
  function points(run, key) {
    const metrics = run && typeof run.metrics === "object" && run.metrics ? run.metrics : {};
    const series = metrics.series && typeof metrics.series === "object" ? metrics.series : {};
    const ys = Object.hasOwn(series, key) && Array.isArray(series[key]) ? series[key] : [];
    const steps = Array.isArray(metrics.steps) ? metrics.steps : [];
    const out = [];
    for (let j = 0; j < steps.length; j++) {
      if (num(steps[j]) !== null && num(ys[j]) !== null) out.push([steps[j], ys[j]]);
    }
    return out;
  }
  // The dashed baseline of a `.../correct` chart: its evaluation's answers/baseline_correct;
  // logged once, it spans the run's correctness curve.
  function baseline(run, key, pts) {
    if (!/(^|\/)correct$/.test(key)) return [];
    const base = points(run, key.replace(/correct$/, "answers/baseline_correct"));
    if (base.length !== 1 || !pts.length) return base;
    const y = base[0][1];
    return [[Math.min(pts[0][0], base[0][0]), y], [Math.max(pts[pts.length - 1][0], base[0][0]), y]];
  }
  return {
    HEADERS,
    shown: () => RUNS.some((run) => of(run).known === true),
    cells,
    points,
    baseline,
  };
}
