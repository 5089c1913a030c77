"""The reward audit's section in the viewer page (audit.json beside the run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "auditing"))  # audit_envs

import audit_envs as envs

from mint_envkit.auditing import audit
from mint_envkit.view import write_report
from mint_envkit.view.report import audit_section


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
