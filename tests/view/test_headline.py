"""The headline on the page, in headless Chromium: the final held-out evaluation, the baselines,
one-step configs, an evaluation's checkpoints and the problem an episode played.

Each test asserts on the drawn SVG (a test fails when the final point or the baseline is
missing) and saves a screenshot in its tmp dir (``pytest --basetemp=DIR`` keeps them where
you can look at them).
"""

from __future__ import annotations

import html
import re
import shutil

import pytest

from mint_envkit.runs.files import append_jsonl, append_jsonl_lines
from mint_envkit.view import write_report

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine (apt-get install chromium; .ci/run installs it)",
)


def card(dom: str, key: str) -> str:
    """The markup of one chart: its title, its svg and its key (the dashes, the final marker)."""
    parts = dom.split(f'<div class="chart" data-metric="{key}">')
    assert len(parts) == 2, f"no chart (or two) for {key}"
    return parts[1].split('<div class="chart" data-metric=')[0]


def plot(chart: str) -> str:
    return chart.split("</svg>")[0]


def markers(svg: str, **attrs: str) -> list[dict[str, str]]:
    """The attributes of each marker (<circle> or <path>) whose attributes include ``attrs``."""
    found = []
    for tag in re.findall(r"<(?:circle|path) ([^>]*)>", svg):
        attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        if all(attributes.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items()):
            found.append(attributes)
    return found


def polyline_xs(svg: str, **attrs: str) -> list[list[float]]:
    """The x coordinates of each polyline whose attributes include ``attrs``."""
    lines = []
    for tag in re.findall(r"<polyline ([^>]*)>", svg):
        attributes = dict(re.findall(r'([\w-]+)="([^"]*)"', tag))
        if all(attributes.get(k.rstrip("_").replace("_", "-")) == v for k, v in attrs.items()):
            lines.append([float(p.split(",")[0]) for p in attributes["points"].split()])
    return lines


def text_of(markup: str) -> str:
    return html.unescape(re.sub(r"<[^>]+>", "", markup))


def cx(marker: dict[str, str]) -> float:
    """A marker's x: a circle's cx, a path's first point."""
    if "cx" in marker:
        return float(marker["cx"])
    return float(re.match(r"M([-\d.]+)", marker["d"]).group(1))


def test_the_final_evaluation_is_a_point_after_the_last_step(browser, tmp_path, run_dir, evals):
    evals(run_dir, "healthy")  # test/ at steps 0 and 1, test_final/ at step 1
    with open(run_dir / "metrics.jsonl", "a") as fh:  # the name the loop logs beside the figure
        fh.write('{"step": 1, "test_final/env/all/answers/baseline_name": "constant \'no\'"}\n')
    page = write_report(run_dir)
    dom = browser.dom(page)
    chart = card(dom, "test/env/all/correct")
    svg = plot(chart)
    assert 'data-layout="steps"' in svg
    [final] = markers(svg, class_="final")
    assert final["data-final"] == "run" and final["fill"] == "#fff"  # hollow
    periodic = [cx(m) for m in markers(svg, fill="#2458d6")]
    assert len(periodic) == 2 and cx(final) > max(periodic)  # steps 0 and 1, then the final
    assert "final evaluation (after step 1): 0.575" in text_of(svg)
    # The baseline: dashed, in the run's colour, from the first evaluation to the final one.
    [base] = polyline_xs(svg, data_baseline="run")
    assert 'stroke-dasharray="5 3"' in svg
    assert min(base) == pytest.approx(min(periodic)) and max(base) == pytest.approx(cx(final))
    legend = text_of(chart.split("</svg>", 1)[1])
    assert "baseline: constant 'no'" in legend
    assert "final evaluation (after the last update)" in legend
    # The runs table names the baseline under its figure.
    assert "<div class=\"muted bname\">constant 'no'</div>" in dom
    browser.screenshot(page, tmp_path / "final-and-baseline.png", "", (1200, 1000))


def test_a_baseline_logged_once_spans_the_run(browser, tmp_path, run_maker):
    """The audit's learning run: one eval before the first update, the final after the last."""
    run = run_maker(tmp_path / "learn", steps=2)
    append_jsonl_lines(
        run / "metrics.jsonl",
        [
            {
                "step": 0,
                "test/env/all/correct": 0.15,
                "test/env/all/answers/baseline_correct": 0.575,
            },
            {
                "step": 1,
                "test_final/env/all/correct": 0.575,
                "test_final/env/all/answers/baseline_correct": 0.575,
            },
        ],
    )  # no baseline_name: a run older than the name
    dom = browser.dom(write_report(run))
    chart = card(dom, "test/env/all/correct")
    svg = plot(chart)
    [base] = polyline_xs(svg, data_baseline="learn")
    [own] = [cx(m) for m in markers(svg, fill="#2458d6")]
    [final] = [cx(m) for m in markers(svg, class_="final")]
    assert (min(base), max(base)) == (pytest.approx(own), pytest.approx(final))
    assert max(base) - min(base) > 100  # visible: the chart is 286 units wide
    assert "best trivial baseline" in text_of(chart.split("</svg>", 1)[1])


def test_a_run_of_one_step_draws_its_baseline_across(browser, tmp_path, run_maker):
    run = run_maker(tmp_path / "one", steps=1)
    append_jsonl(
        run / "metrics.jsonl",
        {
            "step": 0,
            "test/env/all/correct": 0.4,
            "test/env/all/answers/baseline_correct": 0.5,
            "test_final/env/all/correct": 0.6,
            "test_final/env/all/answers/baseline_correct": 0.5,
        },
    )
    svg = plot(card(browser.dom(write_report(run)), "test/env/all/correct"))
    assert 'data-layout="per-config"' in svg  # one step: a slot for the run
    [base] = polyline_xs(svg, data_baseline="one")
    [before] = markers(svg, fill="#2458d6")
    [after] = markers(svg, class_="final")
    assert min(base) < cx(before) < cx(after) < max(base)


def test_one_step_configs_get_a_slot_each(browser, tmp_path, one_step_sweep):
    page = write_report(one_step_sweep)
    dom = browser.dom(page)
    names = ["lr1e-4", "lr3e-4", "lr9e-4"]
    train = plot(card(dom, "env/all/correct"))
    assert 'data-layout="per-config"' in train
    assert re.findall(r'<g class="slot" data-slot="([^"]+)"', train) == names
    dots = [markers(train, data_run=name) for name in names]
    assert all(len(found) == 1 for found in dots)
    # Told apart by colour and by shape, each with its value above it.
    assert len({d[0]["fill"] for d in dots}) == 3
    assert [d[0]["data-shape"] for d in dots] == ["circle", "square", "triangle"]
    assert re.findall(r'class="vlabel"[^>]*>([^<]+)<', train) == ["0.25", "0.5", "0.75"]
    held_out = card(dom, "test/env/all/correct")
    svg = plot(held_out)
    assert [m["data-final"] for m in markers(svg, class_="final")] == names
    assert len(polyline_xs(svg, stroke_dasharray="5 3")) == 3
    for name in names:  # each slot: before, then final, the baseline across both
        [base] = polyline_xs(svg, data_baseline=name)
        [before] = markers(svg, data_run=name)
        [after] = markers(svg, data_final=name)
        assert min(base) < cx(before) < cx(after) < max(base)
    assert "baseline: constant 'no'" in text_of(held_out.split("</svg>", 1)[1])
    # The legend shows each run's marker.
    legend = re.search(r'<div id="legend">(.*?)</div>', dom, re.S).group(1)
    assert legend.count('class="icon"') == 3
    browser.screenshot(page, tmp_path / "one-step-sweep.png", "", (1200, 1300))


def test_an_evaluation_shows_reward_correct_pass_at_k_and_its_problems(browser, tmp_path, eval_dir):
    page = write_report(eval_dir)
    dom = browser.dom(page)
    table = re.search(r'<table class="runs">(.*?)</table>', dom, re.S).group(1)
    headers = [text_of(h) for h in re.findall(r"<th>(.*?)</th>", table)]
    assert headers[2:9] == [
        "status",
        "reward",
        "correct",
        "pass@1",
        "pass@2",
        "baseline",
        "distinct",
    ]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    cells = [[text_of(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)] for r in rows]
    assert [row[3:7] for row in cells] == [
        ["0.1", "0.3333", "0.3333", "0.6667"],
        ["0.55", "0.6667", "0.6667", "1"],
    ]
    assert cells[0][7] == "0constant '50'"  # the baseline and, under it, its name
    correct = card(dom, "eval/correct")
    svg = plot(correct)
    assert 'data-layout="per-config"' in svg
    assert re.findall(r'data-slot="([^"]+)"', svg) == ["base", "final"]
    assert [len(polyline_xs(svg, data_baseline=n)) for n in ("base", "final")] == [1, 1]
    assert "baseline: constant '50'" in text_of(correct.split("</svg>", 1)[1])
    for key in ("eval/pass@2", "eval/mean_reward"):
        assert re.findall(r'class="vlabel"[^>]*>([^<]+)<', plot(card(dom, key)))
    # Each group shows the problem it played: the secret is in no message.
    secrets = re.findall(r'data-field="secret"><b>secret</b> (\d+)</span>', dom)
    assert secrets == ["37", "64", "7"]
    assert 'data-field="high"><b>high</b> 10</span>' in dom
    found = browser.dom(page, "#run=1&step=0&q=secret")  # the search reads the problem too
    assert found.count('class="episode"') == 6
    browser.screenshot(page, tmp_path / "eval.png", "", (1200, 1500))


def test_a_training_record_with_its_problem_shows_it(browser, run_dir):
    lines = (run_dir / "rollouts.jsonl").read_text().splitlines()
    lines[0] = lines[0][:-1] + ', "problem": {"secret": 41, "low": 1, "high": 100}}'
    (run_dir / "rollouts.jsonl").write_text("\n".join(lines) + "\n")
    dom = browser.dom(write_report(run_dir))
    group = re.search(
        r'<div class="group" data-group="3"[^>]*>(.*?)<div class="gprompt">', dom, re.S
    )
    assert "secret 41" in text_of(group.group(1)) and "high 100" in text_of(group.group(1))


def _cut_off_run(run_maker, root, *, uncut: bool):
    """A run whose base model was cut off (77.5% at 16 tokens): 0.125 -> 0.75 there, and,
    with ``uncut``, 0.50 -> 0.75 at 64 tokens where nothing is cut off, as the loop logs it
    (the rows written by the run record)."""
    from mint_envkit.runs.record import (
        FINAL,
        FINAL_UNCUT,
        TEST,
        UNCUT,
        AnswerFigures,
        Figures,
    )

    run = run_maker(root, steps=2)

    def row(split, correct, truncated, max_tokens, baseline, beats):
        answers = AnswerFigures(
            baseline_correct=baseline, baseline_name="constant '4'", beats_baseline=beats
        )
        figures = Figures(max_tokens=max_tokens, answers=answers)
        env = {"correct": correct, "truncated": truncated, "parsed": 1 - truncated}
        return {**figures.metrics(split), **{f"{split}/env/all/{k}": v for k, v in env.items()}}

    first = {"step": 0, **row(TEST, 0.125, 0.775, 16, 0.125, False)}
    last = {"step": 1, **row(FINAL, 0.75, 0.0, 16, 0.125, True)}
    if uncut:
        first.update(row(UNCUT, 0.5, 0.0, 64, 0.125, True))
        last.update(row(FINAL_UNCUT, 0.75, 0.0, 64, 0.125, True))
    append_jsonl_lines(run / "metrics.jsonl", [first, last])
    return run


def test_the_headline_is_the_uncut_before_and_after_with_the_cut_off_figure_beside_it(
    browser, tmp_path, run_maker
):
    run = _cut_off_run(run_maker, tmp_path / "cut", uncut=True)
    page = write_report(run)
    dom = browser.dom(page)
    table = dom.split('<table class="runs"', 1)[1].split("</table>", 1)[0]
    cell = text_of(table.split('class="num held">', 1)[1].split("</td>", 1)[0])
    # the headline: measured where nothing is cut off
    assert cell.startswith("0.5 → 0.75BASE TRUNCATED"), cell
    # beside it: the cut-off figure and its warning, in words
    assert "BASE TRUNCATED 78%" in cell and "cut off at 16 tokens: 0.125 → 0.75" in cell
    assert "the figures above are at 64 tokens, where it is not" in cell
    # the banner says it too (written into the page: it shows without JavaScript)
    banner = text_of(dom.split('class="banner truncated"', 1)[1].split("</div>", 1)[0])
    assert "BASE TRUNCATED 77.5%: this compares reply lengths, not the task" in banner
    assert "where it is not cut off: correct 50.0% -> 75.0%" in banner
    browser.screenshot(page, tmp_path / "uncut-headline.png", "", (1200, 1000))


def test_a_cut_off_run_without_an_uncut_eval_warns_and_not_beyond_noise_is_in_words(
    browser, tmp_path, run_maker
):
    run = _cut_off_run(run_maker, tmp_path / "cut", uncut=False)
    noisy = run_maker(tmp_path / "noisy", steps=2)  # 0.281 against 0.125, not beyond noise
    append_jsonl_lines(
        noisy / "metrics.jsonl",
        [
            {"step": 0, "test/env/all/correct": 0.1},
            {
                "step": 1,
                "test_final/env/all/correct": 0.281,
                "test_final/env/all/answers/baseline_correct": 0.125,
                "test_final/env/all/answers/beats_baseline": 0.0,
            },
        ],
    )
    dom = browser.dom(write_report(run))
    cell = text_of(dom.split('class="num held">', 1)[1].split("</td>", 1)[0])
    assert cell.startswith("0.125 → 0.75BASE") and "BASE TRUNCATED 78%" in cell
    assert "no reply limit where it is not was measured" in cell
    page = write_report(noisy)
    dom = browser.dom(page)
    assert '<span class="badge warn">not beyond noise</span>' in dom
    assert "&lt;= baseline" not in dom
    browser.screenshot(page, tmp_path / "not-beyond-noise.png", "", (1200, 800))
