// mint-envkit view: draws the curves and the transcripts of the embedded run data.
// No libraries, no network. Data is only ever put into the page as text nodes.
(function () {
  "use strict";
  const scriptStart = performance.now();  // the browser has read the whole file by now
  const INDEX = JSON.parse(document.getElementById("mev-index").textContent);
  const RUNS = (Array.isArray(INDEX.runs) ? INDEX.runs : []).filter((r) => r && typeof r === "object");
  const ANSWERS = mevAnswers({ RUNS, el, fmt });
  const COLORS = ["#2458d6", "#d92d20", "#039855", "#dc6803", "#7a5af8", "#0e9384", "#c11574",
    "#4e5ba6", "#667085", "#ca8504", "#15b79e", "#e04f16"];
  const PAGE = 40;        // episodes per page
  const CLIP = 6000;      // characters of a message shown before "show all"
  // The charts shown first: a training run's, then an evaluation's (eval/...: pass@K for the
  // largest K it logged; pass@1 is its correct).
  const largestPass = (keys) => keys.filter((k) => /^eval\/pass@\d+$/.test(k))
    .sort((a, b) => Number(b.split("@")[1]) - Number(a.split("@")[1]))[0];
  const DEFAULTS = ["env/all/reward/total", "env/all/correct", "env/all/parse_failure_rate",
    "health/truncated", "health/signal", "env/all/tools/calls_per_episode", "env/all/tools/valid",
    "kl_policy_base", /^(?!.*answers\/).*entropy/, "train/tokens", /(^|\/)tokens/, "time/step",
    "test/env/all/reward/total", "test/env/all/correct", "test/env/all/answers/top_share",
    "eval/correct", largestPass, "eval/mean_reward", "eval/parse_failure_rate", "eval/answers/top_share",
    "eval/answers/success", "eval/tools/calls_per_episode", "eval/tools/calling"];
  const $ = (id) => document.getElementById(id);
  const state = { run: 0, step: null, split: "", rmin: null, rmax: null, status: "",
    errors: false, search: "", page: 0, hidden: new Set(), metrics: [] };
  const chunkCache = new Map();
  const CHARTS = mevCharts({ RUNS, ANSWERS, COLORS, state, el, svg, fmt, selectStep, selectRun });
  const textCache = new WeakMap();

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else node.setAttribute(key, value === true ? "" : String(value));
    }
    append(node, children);
    return node;
  }
  function append(node, children) {
    for (const child of children) {
      if (child === null || child === undefined || child === false) continue;
      if (Array.isArray(child)) append(node, child);
      else node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  }
  function svg(tag, attrs) {
    const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    return node;
  }
  function fmt(v) {
    if (v === null || v === undefined) return "–";
    if (typeof v !== "number") return String(v);
    if (Number.isInteger(v) && Math.abs(v) < 1e6) return String(v);
    const a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e5)) return v.toExponential(2);
    return String(Number(v.toPrecision(4)));
  }
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);
  const asText = (v) => (typeof v === "string" ? v : JSON.stringify(v) ?? String(v));
  // A list where a list is expected; one value (a string of replies) as a list of one.
  const asList = (v) => (Array.isArray(v) ? v : v === null || v === undefined ? [] : [v]);
  const curvesOf = (run) => (isObj(run.metrics) ? run.metrics : {});
  const seriesOf = (run) => (isObj(curvesOf(run).series) ? curvesOf(run).series : {});
  const stepsOf = (run) => (Array.isArray(run.steps) ? run.steps.filter(isObj) : []);
  function signed(v) { return typeof v === "number" ? (v > 0 ? "+" : "") + fmt(v) : fmt(v); }

  // ------------------------------------------------------------------ header
  function renderHeader() {
    $("title").textContent = INDEX.title;
    $("meta").textContent = `${INDEX.kind} · ${INDEX.source} · ${RUNS.length} run` +
      `${RUNS.length === 1 ? "" : "s"} · written ${INDEX.generated_at} by mint-envkit ${INDEX.version}`;
    for (const note of INDEX.notes || []) $("notes").append(el("div", { class: "note", text: note }));
  }
  // The last value of the first of `keys` the run logged (a training run's env/all/..., an
  // evaluation's eval/...).
  function lastValue(run, ...keys) {
    for (const key of keys) {
      const values = asList(seriesOf(run)[key]).filter((v) => typeof v === "number");
      if (values.length) return values[values.length - 1];
    }
    return null;
  }
  function renderRuns() {
    const paramKeys = [...new Set(RUNS.flatMap((r) => Object.keys(isObj(r.params) ? r.params : {})))];
    const held = ANSWERS.shown();
    const isEval = INDEX.kind === "eval";  // an evaluation's checkpoints: no before, no steps
    const passKeys = [...new Set(RUNS.flatMap((r) => Object.keys(seriesOf(r))))]
      .filter((k) => /^eval\/pass@\d+$/.test(k)).sort((a, b) => Number(a.split("@")[1]) - Number(b.split("@")[1]));
    const head = ["", "run", "status", ...paramKeys, ...(isEval ? [] : ["steps"]),
      isEval ? "reward" : "final reward", isEval ? "correct" : "final correct", ...passKeys.map((k) => k.slice(5)),
      ...(held ? ANSWERS.HEADERS.slice(isEval ? 1 : 0) : []), "episodes", ""];
    const rows = RUNS.map((run, i) => { try {
      const episodes = stepsOf(run).reduce((n, s) => n + (Number(s.episodes) || 0), 0);
      const cfg = run.config ? el("details", { class: "fold" }, el("summary", { text: "config" }),
        el("pre", { text: JSON.stringify(run.config, null, 2) })) : null;
      const err = run.error ? el("details", { class: "fold error" },
        el("summary", { text: asText(run.error) }), run.traceback ? el("pre", { text: asText(run.traceback) }) : null) : null;
      return el("tr", {},
        el("td", {}, CHARTS.icon(i)),
        el("td", {}, el("b", { text: run.name }), el("div", { class: "muted", text: run.path })),
        el("td", { text: run.status || "" }),
        paramKeys.map((k) => el("td", { class: "num", text: fmt((run.params || {})[k]) })),
        isEval ? null : el("td", { class: "num", text: asList(curvesOf(run).steps).length }),
        el("td", { class: "num", text: fmt(lastValue(run, "env/all/reward/total", "eval/mean_reward")) }),
        el("td", { class: "num", text: fmt(lastValue(run, "env/all/correct", "eval/correct")) }),
        passKeys.map((k) => el("td", { class: "num", text: fmt(lastValue(run, k)) })),
        held ? ANSWERS.cells(run, !isEval) : null,
        el("td", { class: "num", text: episodes }),
        el("td", {}, cfg, err));
    } catch (e) {
      return el("tr", {}, el("td", { colspan: head.length }, mevFailed(`run ${i}: could not show this run`, e)));
    } });
    $("runs").append(el("table", { class: "runs" },
      el("thead", {}, el("tr", {}, head.map((h) => el("th", { text: h })))), el("tbody", {}, rows)));
  }

  // ------------------------------------------------------------------ curves
  // Every curve; a final evaluation (test_final/x) is also drawn on the chart of test/x.
  function allKeys() {
    const keys = RUNS.flatMap((r) => Object.keys(seriesOf(r)));
    const periodic = keys.filter((k) => k.startsWith("test_final/")).map((k) => "test/" + k.slice(11));
    return [...new Set([...keys, ...periodic])].sort();
  }
  function defaultKeys(keys) {
    const chosen = [];
    for (const want of DEFAULTS) {
      const hit = typeof want === "function" ? want(keys)
        : keys.find((k) => (typeof want === "string" ? k === want : want.test(k)) && !chosen.includes(k));
      if (hit && !chosen.includes(hit)) chosen.push(hit);
    }
    return chosen.length ? chosen : keys.slice(0, 6);
  }
  function renderLegend() {
    const legend = $("legend");
    legend.textContent = "";
    if (RUNS.length < 2) return;
    RUNS.forEach((run, i) => {
      legend.append(el("span", { class: state.hidden.has(i) ? "off" : "", title: "show / hide",
        onclick: () => { state.hidden.has(i) ? state.hidden.delete(i) : state.hidden.add(i);
          renderLegend(); renderCharts(); } },
      CHARTS.icon(i), " ", run.name));
    });
  }
  function renderMetricList() {
    const list = $("metric-list");
    const filter = $("metric-filter").value.toLowerCase();
    list.textContent = "";
    for (const key of allKeys()) {
      if (filter && !key.toLowerCase().includes(filter)) continue;
      const box = el("input", { type: "checkbox", checked: state.metrics.includes(key),
        onchange: (e) => { state.metrics = e.target.checked ? [...state.metrics, key]
          : state.metrics.filter((k) => k !== key); renderCharts(); } });
      list.append(el("label", { title: key }, box, " ", key));
    }
  }
  function renderCharts() {
    const box = $("charts");
    box.textContent = "";
    for (const key of state.metrics) box.append(CHARTS.chart(key));
  }
  // ---------------------------------------------------------------- rollouts
  function chunk(id) {
    if (!chunkCache.has(id)) chunkCache.set(id, JSON.parse($("mev-" + id).textContent));
    return chunkCache.get(id);
  }
  function runSteps() { return stepsOf(RUNS[state.run] || {}); }
  function selectStep(step) {
    const steps = runSteps();
    if (!steps.length) return;
    const found = steps.reduce((a, b) => (Math.abs(b.step - step) < Math.abs(a.step - step) ? b : a));
    state.step = found.step;
    state.page = 0;
    $("f-step").value = String(state.step);
    renderCharts();
    renderRollouts();
  }
  function selectRun(i) {
    if (!Number.isInteger(i) || i < 0 || i >= RUNS.length) return;
    state.run = i;
    state.step = null;
    state.page = 0;
    fillFilters();
    renderCharts();
    renderRollouts();
  }
  function fillFilters() {
    const runSel = $("f-run");
    runSel.textContent = "";
    RUNS.forEach((run, i) => runSel.append(el("option", { value: i, text: run.name })));
    runSel.value = String(state.run);
    runSel.parentElement.style.display = RUNS.length > 1 ? "" : "none";
    const steps = runSteps();
    const stepSel = $("f-step");
    stepSel.textContent = "";
    for (const s of steps) {
      const bits = [`step ${s.step}`, `${s.episodes} ep`];
      if (s.mean_reward !== null) bits.push(`reward ${fmt(s.mean_reward)}`);
      if (s.errors) bits.push(`${s.errors} errors`);
      if (asList(s.splits).some((x) => x !== "train")) bits.push(asList(s.splits).join("+"));
      stepSel.append(el("option", { value: s.step, text: bits.join(" · ") }));
    }
    stepSel.append(el("option", { value: "all", text: "all steps" }));
    if (state.step !== "all" && !steps.some((s) => s.step === state.step)) {
      state.step = steps.length ? steps[0].step : "all";
    }
    stepSel.value = String(state.step);
    const splits = [...new Set(steps.flatMap((s) => asList(s.splits).map(String)))].sort();
    const statuses = [...new Set(steps.flatMap((s) => Object.keys(isObj(s.statuses) ? s.statuses : {})))].sort();
    resetOptions($("f-split"), "all", splits, state.split);
    resetOptions($("f-status"), "any", statuses, state.status);
  }
  function resetOptions(select, anyLabel, values, current) {
    select.textContent = "";
    select.append(el("option", { value: "", text: anyLabel }));
    for (const v of values) select.append(el("option", { value: v, text: v }));
    select.value = values.includes(current) ? current : "";
  }
  function readFilters() {
    const num = (id) => { const v = $(id).value.trim(); return v === "" ? null : Number(v); };
    state.split = $("f-split").value;
    state.rmin = num("f-rmin");
    state.rmax = num("f-rmax");
    state.status = $("f-status").value;
    state.errors = $("f-errors").checked;
    state.search = $("f-search").value.trim().toLowerCase();
    state.page = 0;
  }
  // A record's messages. load.py turned lists of messages into indices into the step's msgs;
  // a field that is not a list (messages or prompt as text) is shown as one message of text.
  function messagesOf(rec, msgs) {
    const resolve = (list, role) => (Array.isArray(list) ? list.map((i) => msgs[i])
      : list === null || list === undefined ? [] : [{ role, content: asText(list) }]);
    if (Array.isArray(rec.messages)) return resolve(rec.messages);
    const out = resolve(rec.messages, "messages").concat(resolve(rec.prompt, "prompt"));
    const thinking = asList(rec.thinking), stops = asList(rec.stop_reasons);
    asList(rec.replies).forEach((content, t) => {
      out.push({ role: "assistant", content, thinking: thinking[t], stop_reason: stops[t] });
    });
    return out;
  }
  function contentText(content) {
    if (content === null || content === undefined) return "";
    if (typeof content === "string") return content;
    if (Array.isArray(content)) {
      return content.map((p) => (p && typeof p.text === "string" ? p.text
        : p && p.type ? `[${p.type}]` : JSON.stringify(p))).join("");
    }
    return JSON.stringify(content);
  }
  function searchText(item) {
    if (!textCache.has(item.rec)) {
      const rec = item.rec;
      const parts = messagesOf(rec, item.msgs).map((m) => (isObj(m) ? [contentText(m.content),
        asText(m.thinking ?? ""), m.tool_calls ? JSON.stringify(m.tool_calls) : ""].join("\n") : asText(m)));
      parts.push(asText(rec.error ?? ""), rec.logs ? JSON.stringify(rec.logs) : "");
      const problem = problemOf(item);
      if (problem !== undefined) parts.push(asText(problem));
      textCache.set(rec, parts.join("\n").toLowerCase());
    }
    return textCache.get(item.rec);
  }
  function keep(item) {
    const rec = item.rec;
    if (state.split && String(rec.split || "train") !== state.split) return false;
    if (state.errors && (rec.error === null || rec.error === undefined)) return false;
    if (state.status && rec.status !== state.status) return false;
    if (state.rmin !== null || state.rmax !== null) {
      if (typeof rec.reward !== "number") return false;
      if (state.rmin !== null && rec.reward < state.rmin) return false;
      if (state.rmax !== null && rec.reward > state.rmax) return false;
    }
    if (state.search && !searchText(item).includes(state.search)) return false;
    return true;
  }
  function items() {
    const steps = state.step === "all" ? runSteps() : runSteps().filter((s) => s.step === state.step);
    const out = [];
    for (const s of steps) {
      let c;
      try {
        c = chunk(s.chunk);
      } catch (err) {  // a step whose data is missing or unreadable: a note, the other steps drawn
        out.push({ rec: { status: "none" }, msgs: [], step: s.step, failed: err });
        continue;
      }
      const msgs = Array.isArray(c && c.msgs) ? c.msgs : [];
      const problems = Array.isArray(c && c.problems) ? c.problems : [];
      for (const rec of asList(c && c.records)) {
        out.push({ rec: isObj(rec) ? rec : { status: "none", messages: [rec] }, msgs, problems, step: s.step });
      }
    }
    return out;
  }
  const groupKey = (it) => `${it.step}|${it.rec.split || "train"}|${it.rec.group}`;

  function renderRollouts() {
    const started = performance.now();
    const all = items();
    const shown = all.filter(keep);
    const pages = Math.max(1, Math.ceil(shown.length / PAGE));
    state.page = Math.min(state.page, pages - 1);
    const page = shown.slice(state.page * PAGE, (state.page + 1) * PAGE);
    const groups = new Set(shown.map(groupKey)).size;
    const where = state.step === "all" ? "all steps" : `step ${state.step}`;
    $("count").textContent = shown.length
      ? `${where}: episodes ${state.page * PAGE + 1}–${state.page * PAGE + page.length} of ` +
        `${shown.length} shown (${groups} group${groups === 1 ? "" : "s"}), ${all.length} recorded`
      : all.length ? `${where}: no episode matches the filters (${all.length} recorded)`
        : `no rollouts recorded for ${RUNS[state.run].name} (its rollouts.jsonl is empty or missing)`;
    for (const id of ["pager-top", "pager-bottom"]) renderPager($(id), pages);
    const box = $("groups");
    box.textContent = "";
    const members = new Map();
    for (const it of all) {
      const key = groupKey(it);
      if (!members.has(key)) members.set(key, []);
      members.get(key).push(it);
    }
    let current = null, body = null;
    for (const it of page) {  // one record or step that cannot be drawn: a note in its place
      if (it.failed) {
        box.append(mevFailed(`step ${it.step}: its rollouts could not be read`, it.failed));
        current = null;
        continue;
      }
      const key = groupKey(it);
      if (key !== current) {
        current = key;
        try {
          body = renderGroup(members.get(key));
        } catch (err) {
          body = { node: el("div", { class: "group" }, mevFailed("could not show this group", err)), prefix: [] };
        }
        box.append(body.node);
      }
      try {
        body.node.append(renderEpisode(it, body.prefix));
      } catch (err) {
        body.node.append(mevFailed("could not show this episode", err));
      }
    }
    const params = new URLSearchParams({ run: state.run, step: state.step });
    if (state.search) params.set("q", state.search);
    if (location.hash.slice(1) !== params.toString()) history.replaceState(null, "", "#" + params);
    document.body.dataset.renderMs = (performance.now() - started).toFixed(1);
  }
  function renderPager(node, pages) {
    node.textContent = "";
    if (pages < 2) return;
    const go = (p) => () => { state.page = p; renderRollouts(); };
    const wanted = new Set([0, pages - 1, state.page - 2, state.page - 1, state.page,
      state.page + 1, state.page + 2].filter((p) => p >= 0 && p < pages));
    node.append(el("button", { type: "button", onclick: go(Math.max(0, state.page - 1)), text: "‹" }));
    let last = -1;
    for (const p of [...wanted].sort((a, b) => a - b)) {
      if (p > last + 1) node.append(el("span", { text: "…" }));
      node.append(el("button", { type: "button", class: p === state.page ? "cur" : "", onclick: go(p),
        text: p + 1 }));
      last = p;
    }
    node.append(el("button", { type: "button", onclick: go(Math.min(pages - 1, state.page + 1)), text: "›" }));
  }
  function sharedPrefix(list) {
    // Message lists are indices into the step's msgs, so equal messages have equal indices.
    const refs = (rec) => (Array.isArray(rec.messages) ? rec.messages : Array.isArray(rec.prompt) ? rec.prompt : []);
    if (!list.length) return [];
    const head = list[0];
    const firstRefs = refs(head.rec);
    const first = messagesOf(head.rec, head.msgs);
    let n = first.findIndex((m) => m && m.role === "assistant");
    if (n < 0) n = first.length;
    n = Math.min(n, firstRefs.length);
    for (const it of list.slice(1)) {
      const seq = refs(it.rec);
      let k = 0;
      while (k < n && k < seq.length && seq[k] === firstRefs[k]) k++;
      n = k;
    }
    return first.slice(0, n);
  }
  // The problem an episode played (load.py stored it once per step: rec.problem is an index).
  function problemOf(item) {
    const ref = item.rec.problem;
    if (ref === null || ref === undefined) return undefined;
    return Number.isInteger(ref) && Array.isArray(item.problems) && ref >= 0 && ref < item.problems.length
      ? item.problems[ref] : ref;
  }
  // Its fields as chips (the secret of a guessing game is in no message); text as it is.
  function renderProblem(problem) {
    const LIMIT = 400;
    const clip = (t) => (t.length > LIMIT ? t.slice(0, LIMIT - 1) + "…" : t);
    const fields = isObj(problem) ? Object.entries(problem) : [["", problem]];
    return el("div", { class: "gproblem" }, el("span", { class: "muted", text: "problem" }),
      fields.map(([k, v]) => { const t = asText(v);
        return el("span", { class: "pfield", title: t.length > LIMIT ? t : null, "data-field": k },
          k ? el("b", { text: k }) : null, k ? " " : null, clip(t)); }));
  }
  function renderGroup(list) {
    const head = list[0];
    const rewards = list.map((it) => it.rec.reward).filter((r) => typeof r === "number");
    const mean = rewards.length ? rewards.reduce((a, b) => a + b, 0) / rewards.length : null;
    const node = el("div", { class: "group", "data-group": head.rec.group, "data-step": head.step });
    node.append(el("div", { class: "ghead" },
      el("b", { text: `group ${head.rec.group}` }),
      ` · step ${head.step} · ${head.rec.split || "train"} · ${list.length} episode${list.length === 1 ? "" : "s"}`,
      mean !== null ? ` · mean reward ${fmt(mean)} · rewards [${rewards.map(fmt).join(", ")}]` : ""));
    const problem = problemOf(head);
    if (problem !== undefined) node.append(renderProblem(problem));
    const prefix = sharedPrefix(list);
    if (prefix.length) {
      node.append(el("div", { class: "gprompt" }, prefix.map((m) => renderMessage(m, null))));
    }
    return { node, prefix };
  }
  function renderEpisode(it, prefix) {
    const rec = it.rec;
    const node = el("div", { class: "episode", "data-status": rec.status });
    if (rec.error !== null && rec.error !== undefined) {
      node.append(el("div", { class: "ehead" }, el("span", { class: "badge bad", text: "group error" })),
        el("pre", { class: "error", text: asText(rec.error) }),
        rec.traceback ? el("details", { class: "fold" }, el("summary", { text: "traceback" }),
          el("pre", { text: asText(rec.traceback) })) : null);
      return node;
    }
    const logs = isObj(rec.logs) ? rec.logs : rec.logs === null || rec.logs === undefined ? {} : { logs: rec.logs };
    const metrics = isObj(rec.metrics) ? rec.metrics : {};
    const parsed = logs.parsed;
    const status = rec.status;
    const rewardClass = typeof rec.reward === "number" ? (rec.reward > 0 ? "pos" : rec.reward < 0 ? "neg" : "") : "";
    node.append(el("div", { class: "ehead" },
      el("b", { text: `#${asText(rec.member ?? "?")}` }),
      el("span", {}, "reward ", el("span", { class: `reward ${rewardClass}`, text: signed(rec.reward) })),
      el("span", { text: `advantage ${signed(rec.advantage)}` }),
      el("span", {}, "parse ", el("span", { class: `badge ${status === "ok" ? "ok" : status === "none" ? "none" : "bad"}`,
        text: String(status) }), parsed !== undefined && parsed !== null ? [" ", el("span", { class: "parsed", title: "parsed value", text: asText(parsed) })] : null),
      Array.isArray(rec.messages) && rec.stop_reasons ? el("span", { class: "muted", text: `stop: ${asList(rec.stop_reasons).map(asText).join(", ")}` }) : null));
    const chips = [];
    if (rec.metrics !== undefined && rec.metrics !== null && !isObj(rec.metrics)) chips.push(el("span", { text: `metrics: ${asText(rec.metrics)}` }));
    for (const [k, v] of Object.entries(metrics)) chips.push(el("span", { text: `${k} ${fmt(v)}` }));
    for (const [k, v] of Object.entries(logs)) {
      if (k === "parsed" || k === "parse_status") continue;
      chips.push(el("span", { text: `${k}: ${typeof v === "string" ? v : JSON.stringify(v)}` }));
    }
    if (chips.length) node.append(el("div", { class: "chips" }, chips));
    const messages = messagesOf(rec, it.msgs).slice(prefix.length);
    const lastAssistant = messages.map((m) => m && m.role).lastIndexOf("assistant");
    const correct = metrics.correct;
    const verdict = correct === 1 ? "answer right" : correct === 0 ? "answer wrong" : "answer";
    messages.forEach((m, i) => node.append(renderMessage(m,
      i === lastAssistant && parsed !== null && parsed !== undefined ? { text: asText(parsed), cls: verdict } : null)));
    if (!Array.isArray(rec.messages) && asList(rec.replies).length > 1) {
      node.append(el("div", { class: "muted", text: "(this run's rollouts.jsonl does not record the env's messages between turns)" }));
    }
    return node;
  }
  function renderMessage(m, answer) {
    if (!isObj(m)) return el("pre", { class: "content", text: asText(m) });
    const role = String(m.role || "message");
    let content = contentText(m.content);
    const thoughts = [];
    if (typeof m.thinking === "string" && m.thinking) thoughts.push(m.thinking);
    content = content.replace(/<think>([\s\S]*?)(<\/think>|$)/g, (_, inner) => { thoughts.push(inner); return ""; });
    const extra = [m.name, m.tool_call_id ? `call ${asText(m.tool_call_id)}` : null, m.stop_reason && m.stop_reason !== "stop" ? `stop: ${asText(m.stop_reason)}` : null]
      .filter(Boolean).join(" · ");
    const node = el("div", { class: `msg ${role}` }, el("div", { class: "role", text: extra ? `${role} · ${extra}` : role }));
    for (const t of thoughts) {
      node.append(el("details", { class: "thinking" }, el("summary", { text: `thinking (${t.length} characters)` }),
        textBlock(t, null)));
    }
    if (content) node.append(textBlock(content, answer));
    else if (!thoughts.length && !Array.isArray(m.tool_calls)) node.append(el("div", { class: "muted", text: "(empty)" }));
    if (Array.isArray(m.tool_calls)) {
      for (const call of m.tool_calls) {
        const fn = (call && call.function) || call || {};
        const args = typeof fn.arguments === "string" ? fn.arguments : JSON.stringify(fn.arguments ?? fn.args ?? {});
        node.append(el("pre", { class: "toolcall", text: `→ ${fn.name || "tool"}(${args})` }));
      }
    }
    return node;
  }
  function textBlock(text, answer) {
    const pre = el("pre", { class: "content" });
    const full = () => { pre.textContent = ""; append(pre, marked(text, answer)); };
    if (text.length > CLIP) {
      append(pre, marked(text.slice(0, CLIP), answer));
      const wrap = el("div", {}, pre, el("button", { type: "button", class: "more",
        text: `show all ${text.length} characters`, onclick: (e) => { full(); e.target.remove(); } }));
      return wrap;
    }
    full();
    return pre;
  }
  function marked(text, answer) {
    const spans = [];
    if (answer && answer.text) {
      const at = text.lastIndexOf(answer.text);
      if (at >= 0) spans.push([at, at + answer.text.length, answer.cls]);
    }
    if (state.search) {
      const lower = text.toLowerCase();
      for (let at = lower.indexOf(state.search); at >= 0; at = lower.indexOf(state.search, at + state.search.length)) {
        spans.push([at, at + state.search.length, "hit"]);
      }
    }
    spans.sort((a, b) => a[0] - b[0]);
    const out = [];
    let pos = 0;
    for (const [a, b, cls] of spans) {
      if (a < pos) continue;
      out.push(text.slice(pos, a), el("mark", { class: cls, text: text.slice(a, b) }));
      pos = b;
    }
    out.push(text.slice(pos));
    return out;
  }

  // ------------------------------------------------------------------ wiring
  function stepBy(delta) {
    const steps = runSteps();
    if (!steps.length) return;
    const at = steps.findIndex((s) => s.step === state.step);
    const next = steps[Math.max(0, Math.min(steps.length - 1, (at < 0 ? 0 : at) + delta))];
    selectStep(next.step);
  }
  function init() {
    // Each part of the page drawn on its own: one that fails shows a note, the others are drawn.
    const guarded = (fn, where) => { try { fn(); } catch (err) { $(where).append(mevFailed("could not draw this part", err)); } };
    guarded(renderHeader, "notes");
    guarded(renderRuns, "runs");
    guarded(() => mevSamples({ el, fmt, asText, renderMessage, renderProblem }).init(), "banners");
    state.metrics = defaultKeys(allKeys());
    const params = new URLSearchParams(location.hash.slice(1));
    const run = Number(params.get("run"));
    if (Number.isInteger(run) && run >= 0 && run < RUNS.length) state.run = run;
    const firstWithSteps = RUNS.findIndex((r) => stepsOf(r).length);
    if (!runSteps().length && firstWithSteps >= 0) state.run = firstWithSteps;
    const step = params.get("step");
    state.step = step === "all" ? "all" : step !== null && step !== "" ? Number(step) : null;
    $("f-search").value = params.get("q") || "";
    readFilters();
    guarded(renderLegend, "legend");
    guarded(renderMetricList, "metric-list");
    guarded(fillFilters, "count");
    guarded(renderCharts, "charts");
    guarded(renderRollouts, "groups");
    $("metric-filter").addEventListener("input", renderMetricList);
    $("f-run").addEventListener("change", (e) => selectRun(Number(e.target.value)));
    $("f-step").addEventListener("change", (e) => { const v = e.target.value;
      state.step = v === "all" ? "all" : Number(v); state.page = 0; renderCharts(); renderRollouts(); });
    $("f-prev").addEventListener("click", () => stepBy(-1));
    $("f-next").addEventListener("click", () => stepBy(1));
    for (const id of ["f-split", "f-status", "f-errors"]) {
      $(id).addEventListener("change", () => { readFilters(); renderRollouts(); });
    }
    let timer = null;
    for (const id of ["f-rmin", "f-rmax", "f-search"]) {
      $(id).addEventListener("input", () => { clearTimeout(timer);
        timer = setTimeout(() => { readFilters(); renderRollouts(); }, 200); });
    }
    document.addEventListener("keydown", (e) => {
      if (e.target instanceof HTMLInputElement || e.target instanceof HTMLSelectElement) return;
      if (e.key === "j") stepBy(1);
      else if (e.key === "k") stepBy(-1);
      else if (e.key === "/") { e.preventDefault(); $("f-search").focus(); }
    });
    document.body.dataset.scriptStartMs = scriptStart.toFixed(1);
    document.body.dataset.readyMs = performance.now().toFixed(1);
    document.body.setAttribute("data-ready", "1");
  }
  init();
})();
