"""Issue 48 item 1: a game's evaluations, before/after claim, baseline and collapse use
its success metric beside the reward, with the trivial game policies as the baseline."""

from __future__ import annotations

import re

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder
from mint_envkit.evaluation.figures import headline
from mint_envkit.rl.evals import evaluate_split, run_claim
from mint_envkit.runs import RunFiles
from mint_envkit.runs.record import FINAL, TEST, Figures
from shared_envs import COLOURS, ColourGameEnv, TextClient, colour_problems


def always_red(prompt: str, _limit: int) -> str:
    return "red"


def colours_in_order(prompt: str, _limit: int) -> str:
    """Each turn the next colour: the game's feedback so far says how many were said."""
    game = prompt.rsplit("Which colour am I thinking of?", 1)[-1]
    return COLOURS[len(re.findall(r"Not \w+\.", game)) % len(COLOURS)]


def _config(tmp_path) -> Config:
    builder = DatasetBuilder(
        env=ColourGameEnv,
        problems=colour_problems(2),
        test_problems=colour_problems(6),
        batch_size=1,
        group_size=1,
        model_name="mint-envkit/tiny-qwen3",
        max_generation_tokens=8,
    )
    return Config(dataset_builder=builder, log_path=str(tmp_path / "run"), eval_every=1)


async def test_a_games_before_after_line_names_its_success_metric_and_reward(tmp_path):
    """The trap: the loop's line for a game read "held-out correct n/a -> n/a (n/a: format
    ... n/a)": it ignored the episode reward and the env's own success metric."""
    config = _config(tmp_path)
    files = RunFiles(config.log_path)
    files.ensure()
    _train, test = await config.dataset_builder()
    before = await evaluate_split(config, files, test, TextClient(always_red), step=0)
    after = await evaluate_split(
        config, files, test, TextClient(colours_in_order), step=0, final=True, current=before
    )
    files.append_metrics({"step": 0, **before, **after})

    first = Figures.from_metrics({"step": 0, **before}, TEST)
    assert first.answers.success_metric == "solved"
    assert first.answers.success == pytest.approx(1 / 6)  # only the red game is won
    assert first.answers.baseline_name == "options in order"
    assert first.answers.baseline_correct == pytest.approx(4 / 6)
    assert first.answers.beats_baseline is False and first.answers.collapse is True
    last = Figures.from_metrics({"step": 0, **after}, FINAL)
    assert last.answers.success == pytest.approx(4 / 6)

    line = run_claim(config, files).line()
    assert "n/a" not in line, line
    assert line.startswith("held-out solved 16.7% -> 66.7% (+50.0 points), mean reward ")
    assert "at 8 tokens (base truncated 0.0%)" in line
    assert "after does not beat the best trivial game policy 66.7% (options in order)" in line
    shown = headline(first)
    assert shown.startswith(
        "solved 16.7% (best trivial game policy 66.7%, options in order: does not beat it), "
        "mean reward "
    )
    assert "answers collapse: solved 0.167 does not beat the best trivial baseline" in shown


def test_a_figures_summary_keeps_the_success_metric():
    figures = Figures(mean_reward=-0.25)
    figures = attrs.evolve(
        figures, answers=attrs.evolve(figures.answers, success_metric="won", success=0.5)
    )
    again = Figures.from_summary(figures.summary())
    assert (again.answers.success_metric, again.answers.success) == ("won", 0.5)
