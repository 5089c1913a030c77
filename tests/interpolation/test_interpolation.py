"""Interpolation sweeps: checkpoints mixed on a grid, each mix evaluated, resumable."""

from __future__ import annotations

import json
from typing import Any

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation import evaluate
from mint_envkit.interpolation import interpolation_sweep
from mint_envkit.interpolation.run import interpolation_grid
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rollouts import BackendSettings, SamplingSettings
from mint_envkit.runs.files import read_jsonl
from shared_envs import ArithmeticEnv

PROBLEMS = [{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(3)]


def test_the_grid_reads_numbers_as_two_checkpoint_mixes_and_checks_every_point() -> None:
    assert interpolation_grid([0, 0.25, 1.0], 2) == [(1.0, 0.0), (0.75, 0.25), (0.0, 1.0)]
    assert interpolation_grid([(0.2, 0.3, 0.5)], 3) == [(0.2, 0.3, 0.5)]
    for grid, count, word in (
        ([], 2, "non-empty"),
        ([0.5], 3, "grid[0]"),
        ([(0.5, 0.5)], 3, "grid[0]"),
        ([0.5, float("nan")], 2, "grid[1]"),
        ([(0.5, float("inf"))], 2, "grid[0][1]"),
        ([0.5, 0.5], 2, "repeats"),
        ([True], 2, "grid[0]"),
    ):
        with pytest.raises(ConfigError, match=word.replace("[", r"\[")):
            interpolation_grid(grid, count)


@pytest.fixture(scope="module")
def two_checkpoints(tiny_local_server: Any) -> list[str]:
    import mint
    from mint import types

    service = mint.ServiceClient(base_url=tiny_local_server.base_url, api_key="sk-test")
    paths = []
    try:
        for seed, tokens in ((1, [5, 6, 7, 8]), (2, [9, 3, 9, 3])):
            tc = service.create_lora_training_client(
                base_model=TINY_MODEL_NAME, rank=2, seed=seed, train_unembed=False
            )
            datum = types.Datum(
                model_input=types.ModelInput.from_ints(tokens),
                loss_fn_inputs={"target_tokens": [*tokens[1:], tokens[0]]},
            )
            tc.forward_backward([datum], "cross_entropy").result()
            tc.optim_step(types.AdamParams(learning_rate=0.05)).result()
            paths.append(tc.save_weights_for_sampler(f"mix-src-{seed}").result().path)
    finally:
        service.holder.close()
    return paths


def _options(server: Any) -> dict[str, Any]:
    return {
        "model_name": TINY_MODEL_NAME,
        "samples": 2,
        "sampling": SamplingSettings(max_tokens=6),
        "problems": PROBLEMS,
        "backend": BackendSettings(base_url=server.base_url, backend="local"),
    }


@pytest.mark.integration
async def test_a_sweep_evaluates_every_point_and_resumes(
    tmp_path, tiny_local_server, two_checkpoints
) -> None:
    root = tmp_path / "soup"
    options = _options(tiny_local_server)
    result = await interpolation_sweep(
        ArithmeticEnv, checkpoints=two_checkpoints, grid=[0.0, 0.5, 1.0], root=root, **options
    )
    assert [p.status for p in result.points] == ["ok", "ok", "ok"]
    assert [p.coefficients for p in result.points] == [(1.0, 0.0), (0.5, 0.5), (0.0, 1.0)]
    assert all(p.path and "/sampler_weights/interp-" in p.path for p in result.points)
    for p in result.points:
        assert set(p.figures) >= {"mean_reward", "pass@1", "pass@2", "baseline"}
    table = result.table()
    assert "c1p0-0p0" in table and "pass@2" in table and "mean_reward" in table
    csv = (root / "interpolation.csv").read_text().splitlines()
    assert len(csv) == 4 and csv[0].startswith("point,c0,c1,mean_reward")
    assert (root / "interpolation.png").stat().st_size > 0
    assert json.loads((root / "interpolation.json").read_text())["checkpoints"] == two_checkpoints

    # the point (1, 0) is the first checkpoint: same samples, same figures as evaluating it
    direct = await evaluate(ArithmeticEnv, checkpoint=two_checkpoints[0], **options)
    assert result.points[0].figures["mean_reward"] == pytest.approx(direct.mean_reward)

    # again, with one more point: only that point runs
    tiny_local_server.reset_counts()
    again = await interpolation_sweep(
        ArithmeticEnv, checkpoints=two_checkpoints, grid=[0.0, 0.25, 0.5, 1.0], root=root, **options
    )
    assert tiny_local_server.request_counts()["interpolate_checkpoints"] == 1
    assert len(read_jsonl(root / "results.jsonl")) == 4
    assert [p.name for p in again.points] == ["c1p0-0p0", "c0p75-0p25", "c0p5-0p5", "c0p0-1p0"]
    assert again.points[0] == result.points[0]

    # another sweep in the same root is refused
    with pytest.raises(ConfigError, match="other checkpoints or settings"):
        await interpolation_sweep(
            ArithmeticEnv, checkpoints=two_checkpoints[::-1], grid=[0.5], root=root, **options
        )


@pytest.mark.integration
async def test_a_refused_interpolation_stops_the_sweep_with_the_reason(
    tmp_path, tiny_local_server, two_checkpoints
) -> None:
    missing = "tinker://nope/sampler_weights/x"
    with pytest.raises(ConfigError, match="source_paths\\[1\\]"):
        await interpolation_sweep(
            ArithmeticEnv,
            checkpoints=[two_checkpoints[0], missing],
            grid=[0.5],
            root=tmp_path / "bad",
            **_options(tiny_local_server),
        )
    with pytest.raises(ConfigError, match="two or more different"):
        await interpolation_sweep(
            ArithmeticEnv,
            checkpoints=[two_checkpoints[0]],
            grid=[(1.0,)],
            root=tmp_path / "one",
            **_options(tiny_local_server),
        )
