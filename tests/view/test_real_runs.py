"""The headline on pages of real files: a tiny training run and an evaluation of a multi-turn
env, written by the loop and by ``evaluate`` on the embedded backend, opened in Chromium.

The other view tests write the files by hand, as these writers do; these check that the
writers still write what the page reads (the final evaluation's keys, the baseline and its
name, an evaluation's results.jsonl and run folders).
"""

from __future__ import annotations

import re
import shutil
import sys
from pathlib import Path

import attrs
import pytest

from mint_envkit import Config, DatasetBuilder, run_training
from mint_envkit.evaluation import evaluate_many
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import BackendSettings, SamplingSettings
from mint_envkit.view import write_report
from shared_envs import YesNoEnv, yes_no_problems

sys.path.insert(0, str(Path(__file__).parents[2] / "examples"))  # guess_the_number

import guess_the_number

CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(
        CHROMIUM is None,
        reason="no Chromium on this machine (apt-get install chromium; .ci/run installs it)",
    ),
]


def chart(dom: str, key: str) -> str:
    return dom.split(f'<div class="chart" data-metric="{key}">')[1].split("</svg>")[0]


async def test_a_training_run_shows_its_final_evaluation_and_baseline(
    browser, tmp_path, tiny_local_server
):
    builder = DatasetBuilder(
        env=YesNoEnv,
        problems=yes_no_problems(no=2, yes=2),
        test_problems=yes_no_problems(no=3, yes=1),
        batch_size=2,
        group_size=2,
        model_name=TINY_MODEL_NAME,
    )
    log_path = tmp_path / "run"
    await run_training(
        Config(
            dataset_builder=attrs.evolve(builder, max_generation_tokens=4),
            model_name=TINY_MODEL_NAME,
            log_path=str(log_path),
            learning_rate=1e-3,
            lora_rank=4,
            max_steps=2,
            eval_every=2,  # one eval before the first update, the final one after the last
            save_every=0,
            base_url=tiny_local_server.base_url,
            backend="local",
        )
    )
    page = write_report(log_path)
    dom = browser.dom(page)
    svg = chart(dom, "test/env/all/correct")
    assert 'data-layout="steps"' in svg
    assert re.search(r'class="final"[^>]*data-final="run"', svg)
    assert "final evaluation (after step 1)" in svg
    points = re.search(r'<polyline points="([^"]+)"[^>]*data-baseline="run"', svg).group(1)
    xs = [float(p.split(",")[0]) for p in points.split()]
    assert max(xs) - min(xs) > 100  # across the run, from step 0 to the final evaluation
    assert "baseline: constant &#39;no&#39;" in dom or "baseline: constant 'no'" in dom
    browser.screenshot(page, tmp_path / "real-run.png", "", (1200, 1100))


async def test_an_evaluation_of_a_guessing_game_shows_its_secrets(
    browser, tmp_path, tiny_local_server
):
    out = tmp_path / "eval"
    await evaluate_many(
        guess_the_number.make_builder(),
        samples=2,
        split="train",
        sampling=SamplingSettings(max_tokens=4),
        backend=BackendSettings(base_url=tiny_local_server.base_url, backend="local"),
        out_dir=str(out),
    )
    page = write_report(out)
    dom = browser.dom(page)
    secrets = re.findall(r'data-field="secret"><b>secret</b> (\d+)</span>', dom)
    assert secrets == [str(p["secret"]) for p in guess_the_number.PROBLEMS]
    table = re.search(r'<table class="runs">(.*?)</table>', dom, re.S).group(1)
    assert "<th>reward</th>" in table and "<th>steps</th>" not in table
    row = re.findall(r"<td[^>]*>(.*?)</td>", table.split("<tbody>")[1], re.S)
    assert re.fullmatch(r"-?\d[\d.e-]*", row[3]), row  # the mean reward, not "–"
    assert 'data-layout="per-config"' in chart(dom, "eval/mean_reward")
    browser.screenshot(page, tmp_path / "real-eval.png", "", (1200, 1300))
