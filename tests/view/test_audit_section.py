"""The reward audit's section in the viewer page (audit.json beside the run, samples.jsonl
beside it): the markup (view/audit.py) and, in headless Chromium, the sampled replies."""

from __future__ import annotations

import html
import json
import re
import shutil
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parents[1] / "auditing"))  # audit_envs

import audit_envs as envs

from mint_envkit.auditing import audit
from mint_envkit.view import write_report
from mint_envkit.view.audit import audit_section, samples_summary

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
needs_chromium = pytest.mark.skipif(
    CHROMIUM is None,
    reason="no Chromium on this machine (apt-get install chromium; .ci/run installs it)",
)


async def test_an_audit_beside_a_run_is_shown_above_it(tmp_path):
    report = await audit(envs.judge_builder, out_dir=tmp_path)
    run = tmp_path / "learn"
    run.mkdir()
    (run / "metrics.jsonl").write_text(json.dumps({"step": 0, "env/all/reward/total": 0.5}))
    page = write_report(tmp_path).read_text()
    assert page.index("Reward audit") < page.index('<script type="application/json"')
    assert "FAIL" in page and "as much as a correct reply" in page
    assert "<td>appeal</td><td>non_answer</td><td>+1.000</td>" in page
    assert report.exploits[0].probe == "appeal"
    # the run's own page finds the audit in its parent folder
    assert "Reward audit" in write_report(run).read_text()


def test_the_section_escapes_text_and_tolerates_odd_records():
    record = {
        "target": "<script>x</script>",
        "ok": True,
        "baseline_correct": "n/a",
        "probes": [{"name": "<b>", "kind": None, "mean_reward": float("nan")}, "junk"],
        "findings": [{"kind": "warning", "probe": "<b>", "message": "<i>careful</i>"}],
    }
    html = audit_section(record)
    assert "<script>x" not in html and "&lt;script&gt;x" in html
    assert "&lt;i&gt;careful" in html and "PASS" in html
    assert "<td>-</td>" in html  # NaN and strings as figures show '-'
    assert audit_section({"probes": "no"}) == "" and audit_section(None) == ""


def test_a_run_without_an_audit_has_no_section(tmp_path):
    (tmp_path / "metrics.jsonl").write_text(json.dumps({"step": 0, "env/all/reward/total": 0.5}))
    assert "Reward audit" not in write_report(tmp_path).read_text()


@needs_chromium
def test_the_audit_page_shows_its_sampled_replies(browser, tmp_path, audit_dir):
    page = write_report(audit_dir)
    dom = browser.dom(page, "#samples")
    section = re.search(
        r'<section class="banner audit collapse" id="audit">(.*?)</section>', dom, re.S
    )
    assert section is not None
    samples = re.search(r'<details class="samples" id="audit-samples" open="">(.*)</details>',
                        section.group(1), re.S)  # fmt: skip
    assert samples is not None, "#samples opens the list"
    text = samples.group(1)
    summary = "6 sampled replies to 3 problems: 33% correct, 50% parsed ok (samples.jsonl)"
    assert summary in html.unescape(re.sub(r"<[^>]+>", "", text))
    assert text.count('data-sample-group="') == 3  # one group per problem, its fields once
    assert text.count('data-field="question"') == 3 and text.count('class="episode sample"') == 6
    assert "<b>answer</b> yes</span>" in text
    assert text.count('class="badge ok">yes<') == 2  # correct: the two right "no"s
    assert text.count('class="badge bad">no<') == 4
    assert text.count('class="badge bad">no_match<') == 3
    # The injected markup in a reply stayed text.
    assert "maybe &lt;/script&gt;&lt;script&gt;document.title='pwned'" in text
    assert "<title>audit-yes-no - mint-envkit view</title>" in dom
    # The learning run is still below, with its final evaluation.
    assert 'data-final="learn"' in dom
    browser.screenshot(page, tmp_path / "audit-samples.png", "#samples", (1200, 1400))


def test_an_audit_without_samples_has_none_and_samples_without_a_report_show(
    tmp_path, run_maker, audit_maker
):
    page = write_report(audit_maker(tmp_path / "plain", samples=False)).read_text()
    plain = page.split("<script")[0]  # the markup, not the page's own code
    assert "Reward audit" in plain and 'id="audit-samples"' not in plain
    assert 'id="mev-audit-samples"' not in page
    only = tmp_path / "only"
    run_maker(only / "learn")
    (only / "audit.json").write_text("{torn")
    (only / "samples.jsonl").write_text('{"reply": "5"}\n{"reply": "6", "corr\n')
    with pytest.warns(UserWarning, match=r"samples.jsonl: skipped 1 unreadable line"):
        page = write_report(only).read_text()
    head = page.split("<script")[0]
    assert 'id="audit-samples"' in head and "1 sampled reply to 1 problem" in head


def test_the_samples_summary_counts_what_it_can_read():
    assert samples_summary([]) == "0 sampled replies to 0 problems: - correct, - parsed ok"
    odd = [{"problem": [1], "correct": "yes"}, "junk", {"problem": [1], "correct": 1}]
    assert samples_summary(odd) == "2 sampled replies to 1 problem: 100% correct, - parsed ok"


@needs_chromium
def test_odd_samples_show_as_written(browser, tmp_path, audit_maker):
    audit = audit_maker(tmp_path / "odd", samples=False)
    (audit / "samples.jsonl").write_text(
        '{"reward": "n/a", "correct": "yes", "problem": "plain text"}\n[1, 2]\n'
    )
    with pytest.warns(UserWarning, match=r"samples.jsonl: skipped 1 unreadable line"):
        page = write_report(audit)
    dom = browser.dom(page, "#samples")
    sample = re.search(r'<div class="episode sample"(.*?)</div></div></div>', dom, re.S).group(1)
    assert 'class="reward ">n/a<' in sample and 'class="badge none">–<' in sample
    assert "(empty)" in sample  # no reply
    assert '<span class="pfield" data-field="">plain text</span>' in dom
