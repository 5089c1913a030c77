"""The reward audit on the page: its verdict, probes and findings, and the replies it sampled.

``mint-envkit audit --out DIR`` writes ``DIR/audit.json`` (the report), the learning
run ``DIR/learn/`` and, when it sampled a model, ``DIR/samples.jsonl``: one line per
sampled reply, ``{"problem", "reply", "reward", "correct", "parse_status"}``. The page of
``DIR`` (or of ``DIR/learn``) shows the audit above the runs: the section is markup
written here with every text escaped, so it shows without JavaScript; the samples are
embedded as JSON and drawn by the page like a run's transcripts (each problem's fields
once, then its replies with reward, correct and parse status), folded under a summary
line. A page without ``samples.jsonl`` has no samples; one without ``audit.json`` no
section.

Example::

    from mint_envkit.view.audit import audit_section

    section = audit_section({"target": "examples/yes_no.py:builder", "ok": False,
                             "baseline_correct": 0.65, "probes": [], "findings": []},
                            [{"problem": {"question": "Is 3 > 2?"}, "reply": "yes",
                              "reward": 1.0, "correct": True, "parse_status": "ok"}])
    assert "FAIL" in section and "1 sampled reply to 1 problem" in section
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mint_envkit.checks import is_number
from mint_envkit.view.load import read_lines

AUDIT_FILE = "audit.json"
"""The audit's report in its out_dir (``mint-envkit audit --out DIR``).

Example::

    Path("runs/audit") / AUDIT_FILE   # runs/audit/audit.json
"""

SAMPLES_FILE = "samples.jsonl"
"""The audit's sampled replies, beside :data:`AUDIT_FILE`: one JSON object a line.

Example::

    Path("runs/audit") / SAMPLES_FILE   # runs/audit/samples.jsonl
"""


def find_audit(run_dir: Path) -> tuple[Any, list[dict[str, Any]], list[str]]:
    """The audit beside ``run_dir`` (in it, or in its parent: an audit's ``learn/`` run).

    Returns its record (None when there is none or it is not JSON), its sampled replies
    (``samples.jsonl`` beside it; [] when there are none) and notes about unreadable lines.

    Example::

        # not run: reads files of your own run or data set
        record, samples, notes = find_audit(Path("runs/audit/learn"))
    """
    for folder in (run_dir, run_dir.parent):
        path = folder / AUDIT_FILE
        if path.is_file():
            try:
                record = json.loads(path.read_text("utf-8"))
            except (OSError, ValueError):
                record = None
            notes: list[str] = []
            return record, read_lines(folder / SAMPLES_FILE, notes), notes
    return None, [], []


def _cell(value: Any, percent: bool = False) -> str:
    if not is_number(value) or not math.isfinite(value):
        return "-"
    return f"{100 * value:.1f}%" if percent else f"{value:+.3f}"


def _share(flags: list[Any]) -> str:
    known = [bool(f) for f in flags if isinstance(f, (bool, int, float))]
    return f"{100 * sum(known) / len(known):.0f}%" if known else "-"


def samples_summary(samples: Sequence[Any]) -> str:
    """The line that folds the samples: how many, to how many problems, correct, parse ok.

    Example::

        samples_summary([{"problem": {"q": 1}, "correct": True, "parse_status": "ok"},
                         {"problem": {"q": 1}, "correct": False, "parse_status": "no_match"}])
        # '2 sampled replies to 1 problem: 50% correct, 50% parsed ok'
    """
    lines = [s for s in samples if isinstance(s, dict)]
    problems = len({repr(s.get("problem")) for s in lines})
    correct = _share([s.get("correct") for s in lines])
    parsed = _share([s.get("parse_status") == "ok" for s in lines if "parse_status" in s])
    return (
        f"{len(lines)} sampled repl{'y' if len(lines) == 1 else 'ies'} to {problems} "
        f"problem{'' if problems == 1 else 's'}: {correct} correct, {parsed} parsed ok"
    )


def _samples_part(samples: Sequence[Any]) -> str:
    if not samples:
        return ""
    return (
        '<details class="samples" id="audit-samples"><summary><b>Sampled replies</b> '
        f"{html.escape(samples_summary(samples))} (samples.jsonl)</summary>"
        '<div id="audit-samples-list"></div></details>'
    )


def audit_section(record: Any, samples: Sequence[Any] = ()) -> str:
    """The audit's section of the page (``audit.json`` of ``mint-envkit audit --out``), as markup.

    Every text is escaped; an unreadable record gives "" (or, with ``samples``, a
    section of only the samples). ``samples`` adds the folded list of sampled replies,
    which the page's script draws (see the module docstring).

    Example::

        # not run: reads files of your own run or data set
        audit_section(json.loads(Path("runs/audit/audit.json").read_text()))
    """
    if not isinstance(record, dict) or not isinstance(record.get("probes"), list):
        if not samples:
            return ""
        return f'<section class="banner audit" id="audit"><b>Reward audit</b> {_samples_part(samples)}</section>'
    findings = [f for f in record.get("findings") or [] if isinstance(f, dict)]
    flagged = {str(f.get("probe")): str(f.get("kind", "")).upper() for f in findings}
    rows = "".join(
        f"<tr><td>{html.escape(str(p.get('name')))}</td><td>{html.escape(str(p.get('kind')))}"
        f"</td><td>{_cell(p.get('mean_reward'))}</td><td>{_cell(p.get('correct_rate'), True)}"
        f"</td><td>{html.escape(flagged.get(str(p.get('name')), ''))}</td></tr>"
        for p in record["probes"]
        if isinstance(p, dict)
    )
    items = "".join(
        f"<li><b>{html.escape(str(f.get('kind', '')).upper())}</b> "
        f"{html.escape(str(f.get('message', '')))}</li>"
        for f in findings
    )
    verdict = "PASS: no exploit, no collapse" if record.get("ok") is True else "FAIL"
    kind = "ok" if record.get("ok") is True else "collapse"
    return (
        f'<section class="banner audit {kind}" id="audit"><b>Reward audit</b> '
        f"{html.escape(str(record.get('target', '')))}: {verdict}; best trivial baseline "
        f"{_cell(record.get('baseline_correct'), True)} correct"
        f"<ul>{items}</ul><table><tr><th>probe</th><th>kind</th><th>reward</th>"
        f"<th>correct</th><th>flag</th></tr>{rows}</table>{_samples_part(samples)}</section>"
    )
