"""The viewer in a real browser: headless Chromium runs the page's JavaScript.

``--dump-dom`` prints the DOM after the scripts ran (the ``browser`` fixture of
conftest.py), so these tests see the curves and transcripts the page drew, not just the
data it embeds. Skipped
(with the reason) only where no Chromium can be found; ``.ci/run`` installs
Debian's ``chromium`` when it is missing.

``MINT_ENVKIT_UPDATE_SCREENSHOT=1 python -m pytest tests/view/test_browser.py``
also writes ``docs/img/viewer.png``.
"""

from __future__ import annotations

import html
import os
import re
import shutil
from pathlib import Path

import pytest

from mint_envkit.view import write_report

REPO = Path(__file__).resolve().parents[2]
SCREENSHOT = REPO / "docs" / "img" / "viewer.png"
CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine (apt-get install chromium; .ci/run installs it)",
)


def shown_text(dom_text: str, css_class: str) -> list[str]:
    """The text of every ``<pre class="css_class">`` in the DOM."""
    pattern = rf'<pre class="{css_class}">(.*?)</pre>'
    return [html.unescape(re.sub(r"<[^>]+>", "", m)) for m in re.findall(pattern, dom_text, re.S)]


def test_curves_and_transcripts_are_drawn(browser, run_dir):
    text = browser.dom(write_report(run_dir))
    # One chart per default metric, each with a drawn line.
    for key in ("env/all/reward/total", "env/all/correct", "env/all/parse_failure_rate"):
        assert f'data-metric="{key}"' in text
    assert text.count("<polyline") >= 5
    # Step 0's transcripts: the shared prompt once, each episode's reply, the parsed value marked.
    contents = shown_text(text, "content")
    assert "What is 12 + 45?" in contents
    assert "The answer is 57." in contents
    assert '<mark class="answer right">57</mark>' in text
    # The injected markup is shown as text; it never became an element.
    assert any("</script><script>document.title='pwned'</script>" in c for c in contents)
    assert "<title>run - mint-envkit view</title>" in text
    assert "ValueError: env exploded" in text  # the group whose env raised
    assert 'class="badge bad">no_match<' in text


def test_full_messages_render_thinking_and_tools(browser, run_dir):
    text = browser.dom(write_report(run_dir), "#run=0&step=1")
    assert '<details class="thinking">' in text
    assert "Let me use the calculator tool." in text
    assert "it said 57" in text  # an inline <think> block, folded too
    assert shown_text(text, "toolcall") == ['→ add({"a": 12, "b": 45})']
    assert '<div class="msg tool">' in text
    assert "The sum is " in text


def test_filters_from_the_address(browser, run_dir):
    page = write_report(run_dir)
    every = browser.dom(page, "#run=0&step=all")
    assert every.count('class="episode"') == 5  # 4 episodes + 1 error, both steps
    found = browser.dom(page, "#run=0&step=all&q=refuse")
    assert found.count('class="episode"') == 1
    assert '<mark class="hit">refuse</mark>' in found


def test_a_sweep_overlays_its_runs(browser, demo_sweep):
    page = write_report(demo_sweep)
    text = browser.dom(page)
    runs = re.findall(r'<polyline [^>]*data-run="([^"]+)"', text)
    assert {"kl0p0-t0p7-g4", "kl0p02-t0p7-g4", "kl0p02-t1p0-g4"} <= set(runs)
    assert text.count('class="episode"') == 16  # step 0 of the first run: 4 groups x 4


def test_screenshot(browser, tmp_path, demo_sweep, monkeypatch):
    monkeypatch.chdir(tmp_path)  # the page then names the sweep runs/arithmetic-sweep
    page = write_report(demo_sweep.relative_to(tmp_path))
    shot = browser.screenshot(page, tmp_path / "viewer.png", "#run=2&step=3", (1200, 1500))
    if os.environ.get("MINT_ENVKIT_UPDATE_SCREENSHOT") == "1":
        SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        try:  # a 256-colour palette keeps the committed file small
            from PIL import Image

            Image.open(shot).convert("RGB").quantize(256).save(SCREENSHOT, optimize=True)
        except ImportError:
            shutil.copyfile(shot, SCREENSHOT)


def test_a_run_without_rollouts_says_so(browser, tmp_path):
    run = tmp_path / "metrics-only"
    run.mkdir()
    (run / "metrics.jsonl").write_text('{"step": 0, "env/all/reward/total": 0.5}\n')
    text = browser.dom(write_report(run))
    assert 'data-metric="env/all/reward/total"' in text
    assert "no rollouts recorded for metrics-only" in text


def test_a_collapse_shows_its_banner_answers_and_baseline(browser, sweep_dir, evals):
    evals(sweep_dir / "kl0p0-g2", "collapsed")  # kl0p02-g2 stays an old run without evals
    with pytest.warns(UserWarning, match="no steps recorded"):
        page = write_report(sweep_dir)
    text = browser.dom(page)
    banner = re.search(r'<div class="banner collapse" role="alert"[^>]*>(.*?)</div>', text, re.S)
    assert banner is not None
    assert "Answer collapse" in banner.group(1) and "kl0p0-g2" in banner.group(1)
    # The runs table: the held-out columns beside correctness, a dash where a run has none.
    table = re.search(r'<table class="runs">(.*?)</table>', text, re.S).group(1)
    headers = re.findall(r"<th>(.*?)</th>", table)
    at = headers.index("final correct")
    assert headers[at + 1 : at + 7] == [
        "held-out correct",
        "baseline",
        "distinct",
        "top share",
        "truncated",
        "flag",
    ]
    rows = re.findall(r"<tr>(.*?)</tr>", table.split("<tbody>")[1], re.S)
    cells = [
        [
            html.unescape(re.sub(r"<[^>]+>", "", c))
            for c in re.findall(r"<td[^>]*>(.*?)</td>", r, re.S)
        ]
        for r in rows
    ]
    first, second = (row[at + 1 : at + 7] for row in cells)
    assert first == ["0.475 → 0.575", "0.575", "1", "1", "0", "COLLAPSE"]
    assert second == ["– → –", "–", "–", "–", "–", ""]
    assert '<span class="badge bad">COLLAPSE</span>' in text
    # The held-out correct chart draws the collapsed run's baseline dashed; answers/* are charts.
    chart = re.search(r'data-metric="test/env/all/correct".*?</svg>', text, re.S).group(0)
    assert 'data-baseline="kl0p0-g2"' in chart and 'stroke-dasharray="5 3"' in chart
    assert 'data-metric="test/env/all/answers/top_share"' in text


def test_a_runs_training_health_is_charted_by_default(browser, tmp_path, run_maker):
    """Issue 48 item 3: the viewer draws truncation and signal charts by default (the
    trap: its default charts showed the reward rising and nothing else)."""
    from mint_envkit.runs.files import append_jsonl
    from mint_envkit.runs.record import TrainingHealth

    run = run_maker(tmp_path / "run", steps=1)
    for step, cut in ((1, 0.94), (2, 1.0)):
        health = TrainingHealth(truncated=cut, signal=0.0, advantaged=0.0, grad_norm=0.0)
        append_jsonl(
            run / "metrics.jsonl", {"step": step, "env/all/reward/total": -0.5, **health.metrics()}
        )
    text = browser.dom(write_report(run))
    for key in ("health/truncated", "health/signal"):
        assert f'data-metric="{key}"' in text, key
