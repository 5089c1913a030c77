// mint-envkit view: a reward audit's sampled replies (samples.jsonl beside audit.json), drawn
// like a run's transcripts inside the audit's section (view/audit.py writes the folded
// <details id="audit-samples"> and embeds the lines as mev-audit-samples). Each line is
// {problem, reply, reward, correct, parse_status}; any field may be missing or odd. Replies of
// one problem (consecutive lines) share a group that shows the problem's fields once; PAGE
// replies are drawn at a time. `#samples` in the address opens the list.
function mevSamples(deps) {
  "use strict";
  const { el, fmt, asText, renderMessage, renderProblem } = deps;
  const PAGE = 40;
  const isObj = (v) => v !== null && typeof v === "object" && !Array.isArray(v);

  function groups(lines) {
    const out = [];
    let key = null;
    for (const line of lines) {
      const sample = isObj(line) ? line : { reply: asText(line) };
      const k = JSON.stringify(sample.problem ?? null);
      if (k !== key || !out.length) out.push({ problem: sample.problem, samples: [] });
      key = k;
      out[out.length - 1].samples.push(sample);
    }
    return out;
  }
  function sampleNode(sample, k) {
    const correct = sample.correct === true || sample.correct === 1 ? "right"
      : sample.correct === false || sample.correct === 0 ? "wrong" : null;
    const status = sample.parse_status === null || sample.parse_status === undefined ? "none" : asText(sample.parse_status);
    const reward = typeof sample.reward === "number" ? sample.reward : null;
    const node = el("div", { class: "episode sample", "data-status": status });
    node.append(el("div", { class: "ehead" },
      el("b", { text: `#${k}` }),
      el("span", {}, "reward ", el("span", { class: `reward ${reward > 0 ? "pos" : reward < 0 ? "neg" : ""}`,
        text: reward === null ? asText(sample.reward ?? "–") : (reward > 0 ? "+" : "") + fmt(reward) })),
      el("span", {}, "correct ", el("span", { class: `badge ${correct === "right" ? "ok" : correct ? "bad" : "none"}`,
        text: correct === "right" ? "yes" : correct ? "no" : "–" })),
      el("span", {}, "parse ", el("span", { class: `badge ${status === "ok" ? "ok" : status === "none" ? "none" : "bad"}`,
        text: status }))));
    node.append(renderMessage({ role: "assistant", content: sample.reply ?? "" }, null));
    return node;
  }
  function render(box, lines) {
    const all = groups(lines);
    let shown = 0, drawn = 0;
    const more = el("button", { type: "button", class: "more" });
    const next = () => {
      let budget = PAGE;
      while (drawn < all.length && budget > 0) {
        const g = all[drawn++];
        const node = el("div", { class: "group", "data-sample-group": drawn - 1 });
        node.append(el("div", { class: "ghead" }, el("b", { text: `problem ${drawn}` }),
          ` · ${g.samples.length} repl${g.samples.length === 1 ? "y" : "ies"}`));
        if (g.problem !== undefined && g.problem !== null) node.append(renderProblem(g.problem));
        g.samples.forEach((s, k) => node.append(sampleNode(s, k)));
        box.insertBefore(node, more);
        shown += g.samples.length;
        budget -= g.samples.length;
      }
      const total = lines.length;
      more.textContent = `show more (${shown} of ${total} shown)`;
      more.style.display = drawn < all.length ? "" : "none";
    };
    more.addEventListener("click", next);
    box.append(more);
    next();
  }
  // Draws the embedded samples into the audit's section; a page without them has nothing to do.
  function init() {
    const data = document.getElementById("mev-audit-samples");
    const box = document.getElementById("audit-samples-list");
    if (!data || !box) return;
    const lines = JSON.parse(data.textContent);
    render(box, Array.isArray(lines) ? lines : [lines]);
    if (/(^|[#&])samples(=|&|$)/.test(location.hash)) document.getElementById("audit-samples").open = true;
  }
  return { init };
}
