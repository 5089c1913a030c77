"""rollouts.jsonl records and the reward metrics of a step."""

from __future__ import annotations

import attrs
import pytest

from mint_envkit.rollouts.records import progress_line, rollout_metrics, rollout_records


def test_metrics_average_over_the_episodes_of_the_groups_that_ran(make_group):
    rollouts = [
        make_group(0, [1.0, 0.0], correct=[1.0, 0.0], tags=("AddEnv",)),
        make_group(1, [0.5, 0.5], correct=[1.0, 1.0]),
        make_group(2, error="RuntimeError: boom"),
    ]
    metrics = rollout_metrics(rollouts, "env")
    assert metrics["env/all/reward/total"] == pytest.approx(0.5)
    assert metrics["env/all/correct"] == pytest.approx(0.75)
    assert metrics["env/AddEnv/reward/total"] == pytest.approx(0.5)
    assert metrics["env/all/episodes"] == 4
    assert metrics["env/all/rollout_errors"] == 1


def test_metrics_of_a_batch_where_nothing_ran(make_group):
    metrics = rollout_metrics([make_group(0, error="E: x")], "test/env")
    assert metrics["test/env/all/reward/total"] is None
    assert metrics["test/env/all/episodes"] == 0


def test_one_record_per_episode_and_per_failed_group(make_group):
    rollouts = [make_group(3, [1.0, 0.0]), make_group(4, error="RuntimeError: boom")]
    records = rollout_records(7, rollouts, {0: [0.5, -0.5]}, "train")
    assert [(r["group"], r.get("member")) for r in records] == [(3, 0), (3, 1), (4, None)]
    first = records[0]
    assert first["step"] == 7 and first["split"] == "train"
    assert first["replies"] == ["reply 0"] and first["stop_reasons"] == ["stop"]
    assert first["reward"] == 1.0 and first["advantage"] == 0.5
    assert first["parse_status"] == "ok"
    assert records[2]["error"] == "RuntimeError: boom" and records[2]["traceback"]


def test_episodes_of_groups_that_do_not_train_have_no_advantage(make_group):
    records = rollout_records(0, [make_group(0, [1.0, 1.0])], {}, "test")
    assert [r["advantage"] for r in records] == [None, None]


def test_progress_line_names_what_went_wrong():
    quiet = {"env/all/reward/total": 0.5, "time/step": 1.25}
    # numbered as metrics.jsonl numbers it: the first step is 0
    assert progress_line(0, quiet) == "step 0  reward +0.500  1.2s"
    busy = {
        "env/all/reward/total": None,
        "env/all/correct": 0.25,
        "env/all/by_group/dropped": 2,
        "env/all/rollout_errors": 1,
        "time/step": 3.0,
    }
    line = progress_line(1, busy)
    assert line == "step 1  reward n/a  correct 0.25  dropped groups 2  rollout errors 1  3.0s"


def test_turns_count_the_cut_off_episodes_with_their_replies(make_group):
    """15 episodes cut off at their first reply report no ``turns``; one ran 5 turns.

    Averaging only the episode that reported it read 5.0; each cut-off episode had 1 turn.
    """
    group = make_group(0, [0.0] * 16)
    finished = group.trajectories[0]
    step = finished.transitions[0]
    finished.transitions[:] = [attrs.evolve(step, metrics={})] * 4 + [
        attrs.evolve(step, metrics={"turns": 5.0})
    ]
    metrics = rollout_metrics([group], "env")
    assert metrics["env/all/turns"] == pytest.approx((5 + 15 * 1) / 16)


def test_no_turns_metric_when_no_episode_reports_turns(make_group):
    assert "env/all/turns" not in rollout_metrics([make_group(0, [1.0, 0.0])], "env")


def test_a_metric_some_episodes_did_not_log_has_its_coverage_beside_it(make_group):
    one = make_group(0, [1.0, 0.0], correct=[1.0, 0.0])
    one.trajectories[1].transitions[0].metrics.clear()  # the second episode logs nothing
    metrics = rollout_metrics([one], "env")
    assert metrics["env/all/correct"] == 1.0
    assert metrics["env/all/correct/coverage"] == 0.5
    full = rollout_metrics([make_group(1, [1.0, 0.0], correct=[1.0, 0.0])], "env")
    assert "env/all/correct/coverage" not in full
