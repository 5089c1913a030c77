"""The viewer draws whatever a run wrote: hostile values, types and sizes, in headless Chromium.

Each page must finish its script (``data-ready``), log no JavaScript error to
the console, draw its charts (an ``<svg>`` per chart) and show no error note,
within a bounded virtual time. The last tests break one run and one step on
purpose: the page shows an error note there and draws everything else.
"""

from __future__ import annotations

import json
import math
import re
import shutil
from pathlib import Path

import pytest

from mint_envkit.view import write_report
from mint_envkit.view.load import load_report_data
from mint_envkit.view.report import render_html

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine (apt-get install chromium; .ci/run installs it)",
)

ERROR_NOTE = 'class="render-error"'  # the note the page shows where it could not draw


def assert_drawn(dom: str, errors: list[str], metrics: list[str]) -> dict[str, str]:
    """The page finished with no JS error and no error note; each metric's chart has an svg."""
    assert errors == []
    assert 'data-ready="1"' in dom, "the page's script did not finish"
    assert ERROR_NOTE not in dom
    charts = {}
    for key in metrics:
        found = re.search(
            rf'<div class="chart" data-metric="{re.escape(key)}">(.*?)</svg>', dom, re.S
        )
        assert found is not None, f"no chart drawn for {key}"
        assert "<svg" in found.group(1) and re.search("<polyline|<circle", found.group(1))
        charts[key] = found.group(1)
    return charts


def _lines(path: Path, records: list[dict]) -> None:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")


def test_values_one_rounding_step_apart_constant_single_and_odd(browser, tmp_path):
    run = tmp_path / "odd-ranges"
    run.mkdir()
    rounding = [0.3, 0.1 + 0.2, 0.3]
    _lines(
        run / "metrics.jsonl",
        [
            {
                "step": s,
                "m/rounding": rounding[s],
                "m/constant": 5.0,
                "m/zero": [0.0, 1e-320, 0.0][s],  # a range of one denormal
                "m/extreme": [-1e308, 1e308, 0.0][s],  # hi - lo overflows
                "m/mixed": ["0.5", math.nan, 1.0][s],  # text and NaN are no values
                **({"m/single": 0.7} if s == 1 else {}),
            }
            for s in range(3)
        ],
    )
    assert 0.1 + 0.2 != 0.3  # the case that sent the tick loop past 2**53
    dom, errors = browser.open(write_report(run))
    charts = assert_drawn(
        dom, errors, ["m/rounding", "m/constant", "m/zero", "m/extreme", "m/mixed", "m/single"]
    )
    for key, chart in charts.items():
        assert "NaN" not in chart and "Infinity" not in chart, key
        assert chart.count("<text") <= 40, key  # a bounded number of tick labels
    assert ">0.3<" in charts["m/rounding"]  # a padded axis around the value


def test_rollout_fields_of_the_wrong_type(browser, tmp_path):
    run = tmp_path / "odd-rollouts"
    run.mkdir()
    _lines(run / "metrics.jsonl", [{"step": 0, "env/all/reward/total": 0.5}])
    system = {"role": "system", "content": "be brief"}
    records = [
        {"step": 0, "group": 0, "member": 0, "prompt": [system], "replies": "x"},
        {"step": 0, "group": 0, "member": 1, "prompt": [system], "replies": ["y"],
         "stop_reasons": "length", "thinking": "t"},
        {"step": 0, "group": 1, "messages": [system, {"role": "assistant", "content": 42}],
         "stop_reasons": "length", "reward": "0.5", "advantage": "-1"},
        {"step": 0, "group": 2, "messages": "plain text messages", "logs": "just text",
         "metrics": [1, 2], "member": {"a": 1}},
        {"step": 0, "group": [3], "prompt": "a string prompt", "replies": {"not": "a list"},
         "tool_calls": 7, "reward": 1},
        {"step": 0, "group": 4, "messages": [None, 5, "s", {"role": "assistant",
         "tool_calls": "not a list", "content": [1, None, {"text": 3}]}]},
        {"step": 0, "group": 5, "error": {"kind": "odd"}, "traceback": ["a", "b"]},
    ]  # fmt: skip
    _lines(run / "rollouts.jsonl", records)
    dom, errors = browser.open(write_report(run))
    assert_drawn(dom, errors, ["env/all/reward/total"])
    assert dom.count('class="episode"') == len(records)
    for text in ("x", "y", "42", "plain text messages", "a string prompt", "length"):
        assert f">{text}<" in dom or text in dom, text
    assert '<pre class="content">x</pre>' in dom  # a string of replies is one reply


def test_150000_points_are_downsampled_keeping_the_extremes(browser, tmp_path):
    run = tmp_path / "long"
    run.mkdir()
    n = 150_000
    values = [math.sin(i / 1000) for i in range(n)]
    values[77_777], values[88_888] = 100.0, -100.0  # one spike each way, kept by the buckets
    (run / "metrics.jsonl").write_text(
        "".join(f'{{"step": {i}, "m/long": {v!r}}}\n' for i, v in enumerate(values)),
        encoding="utf-8",
    )
    dom, errors = browser.open(write_report(run))
    chart = assert_drawn(dom, errors, ["m/long"])["m/long"]
    points = re.search(r'<polyline points="([^"]+)"', chart).group(1).split()
    assert 100 < len(points) <= 5000  # downsampled, not 150,000 points
    ys = [float(p.split(",")[1]) for p in points]
    assert min(ys) == 6.0 and max(ys) == 148.0  # the spike at the top, the dip at the bottom


def test_one_broken_run_and_one_broken_step_show_an_error_note(browser, tmp_path, run_maker):
    sweep = tmp_path / "sweep"
    run_maker(sweep / "good")
    run_maker(sweep / "bad")
    data = load_report_data(sweep)
    bad = next(r for r in data.index["runs"] if r["name"] == "bad")
    good = next(r for r in data.index["runs"] if r["name"] == "good")
    bad["metrics"] = {"steps": "oops", "series": {"env/all/reward/total": 7}}  # not lists
    del data.chunks[good["steps"][0]["chunk"]]  # the good run's first step lost its data
    page = tmp_path / "broken.html"
    page.write_text(render_html(data), encoding="utf-8")
    at = data.index["runs"].index(good)
    dom, errors = browser.open(page, f"#run={at}&step=0")
    assert errors == []
    assert 'data-ready="1"' in dom
    assert ERROR_NOTE in dom
    chart = re.search(r'data-metric="env/all/reward/total">(.*?)</svg>', dom, re.S).group(1)
    assert 'data-run="good"' in chart  # the good run is still drawn
    # Step 1 of the good run is fine: its transcripts are drawn.
    dom, errors = browser.open(page, f"#run={at}&step=1")
    assert errors == [] and 'class="episode"' in dom


def test_forty_one_step_configs_share_a_chart(browser, tmp_path):
    sweep = tmp_path / "wide"
    for k in range(40):
        run = sweep / f"config-with-a-long-name-{k:02d}"
        run.mkdir(parents=True)
        _lines(run / "metrics.jsonl", [{"step": 0, "env/all/reward/total": k / 40}])
    dom, errors = browser.open(write_report(sweep))
    chart = assert_drawn(dom, errors, ["env/all/reward/total"])["env/all/reward/total"]
    assert chart.count('<g class="slot"') == 40
    assert chart.count("<text") <= 40  # the y ticks; no name or value labels in 7-unit slots
