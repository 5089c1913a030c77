"""Progress lines: timestamped, as work finishes, numbered as the files number it."""

from __future__ import annotations

import io
import re

from mint_envkit.progress import track

STAMP = re.compile(r"^\[\d\d:\d\d:\d\d\] ")


def test_plain_lines_when_not_a_terminal(monkeypatch):
    monkeypatch.setenv("MINT_ENVKIT_PROGRESS_EVERY_S", "3600")  # only the tenths print
    out = io.StringIO()
    with track("eval base", total=10, unit="problems", stream=out) as task:
        for i in range(10):
            task.advance(**{"mean reward": f"{i / 10:+.1f}"})
    lines = out.getvalue().splitlines()
    assert all(STAMP.match(line) for line in lines)
    assert lines[0].endswith("eval base: started (10 problems)")
    # one line as each tenth finishes, not all at the end
    assert [re.search(r"(\d+)/10", line).group(1) for line in lines[1:-1]] == [
        str(i) for i in range(1, 11)
    ]
    assert "ETA" in lines[1] and "mean reward +0.0" in lines[1]
    assert "eval base: finished 10/10 problems" in lines[-1]


def test_a_resumed_task_counts_from_where_it_was_and_shows_its_detail():
    out = io.StringIO()
    with track("train runs/x", total=8, unit="steps", stream=out, done=5) as task:
        task.advance(detail="step 5  reward +0.250  1.0s")
    assert "6/8 steps" in out.getvalue() and "step 5  reward +0.250" in out.getvalue()


def test_off_and_disabled_print_nothing(monkeypatch):
    out = io.StringIO()
    with track("x", 2, stream=out, enabled=False) as task:
        task.advance()
        task.note("hidden")
    monkeypatch.setenv("MINT_ENVKIT_PROGRESS", "off")
    with track("y", 2, stream=out) as task:
        task.advance()
    assert out.getvalue() == "" and task.done == 1
