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


def test_the_phases_of_a_slow_unit_print_as_they_happen(monkeypatch):
    """Inside a training step: sampling, scoring, training, saving, each as it starts;
    during the first step, and after one that took MINT_ENVKIT_PROGRESS_EVERY_S or more."""
    clock = [1000.0]
    monkeypatch.setattr("mint_envkit.progress.time.monotonic", lambda: clock[0])
    monkeypatch.setenv("MINT_ENVKIT_PROGRESS_EVERY_S", "5")
    out = io.StringIO()
    with track("train runs/x", total=3, unit="steps", stream=out) as task:
        task.phase("step 0: sampling")
        clock[0] += 90
        task.phase("step 0: training")
        clock[0] += 10
        task.phase("step 0: training")  # said again (the loop awaits what it submitted)
        clock[0] += 20
        task.advance(detail="step 0  reward +0.1")  # a 120 s step
        task.phase("step 1: sampling")  # the last step was slow: said
        clock[0] += 1
        task.advance()  # a 1 s step
        task.phase("step 2: sampling")  # the last step was fast: not said
    lines = [STAMP.sub("", line) for line in out.getvalue().splitlines()]
    phases = [line for line in lines if ": step " in line and "into this step" in line]
    assert phases == [
        "train runs/x: step 0: sampling (0s into this step)",
        "train runs/x: step 0: training (1m30s into this step)",
        "train runs/x: step 1: sampling (0s into this step)",
    ]


def test_a_phase_of_an_overlapping_unit_is_timed_from_its_own_start(monkeypatch):
    """The loop samples step 1 while step 0 trains: step 1's phases count from step 1's
    start (they said "2m25s into this step" for a step a second old)."""
    clock = [1000.0]
    monkeypatch.setattr("mint_envkit.progress.time.monotonic", lambda: clock[0])
    out = io.StringIO()
    with track("train runs/x", total=3, unit="steps", stream=out) as task:
        task.phase("step 0: sampling", since=1000.0)
        clock[0] += 145
        task.phase("step 1: sampling", since=clock[0])  # step 0 is still the unit counted
        clock[0] += 70
        task.phase("step 1: scoring", since=1145.0)
        task.phase("step 0: training", since=1000.0)
    lines = [STAMP.sub("", line) for line in out.getvalue().splitlines()]
    assert [line for line in lines if "into this step" in line] == [
        "train runs/x: step 0: sampling (0s into this step)",
        "train runs/x: step 1: sampling (0s into this step)",
        "train runs/x: step 1: scoring (1m10s into this step)",
        "train runs/x: step 0: training (3m35s into this step)",
    ]


def test_the_rate_and_eta_count_from_the_first_unit_however_slow():
    task_out = io.StringIO()
    with track("train", total=4, unit="steps", stream=task_out) as task:
        assert task.pace() == ""  # nothing done yet: no rate to tell
        task.start -= 240  # as if the first step took four minutes
        task.advance()
        pace = task.pace()
    assert pace.startswith("4m00s/step") and "ETA 12m00s" in pace
    assert "4m00s/step, ETA 12m00s" in task_out.getvalue()


def test_say_and_text_table():
    from mint_envkit.progress import say, text_table

    out = io.StringIO()
    say("a choice the kit made", stream=out)
    assert out.getvalue() == "mint_envkit: a choice the kit made\n"
    table = text_table([("name", "value"), ("a", 1), ("longer", 22)], right=(1,), indent="  ")
    assert table.splitlines() == ["  name    value", "  a           1", "  longer     22"]
