"""``mint-envkit interpolate``: the grid options, the table and files, and resuming."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest

from mint_envkit.cli import main
from mint_envkit.cli.interpolate import grid_from_args
from mint_envkit.errors import MintEnvkitError
from mint_envkit.rendering import TINY_MODEL_NAME

EXAMPLE = f"{Path(__file__).resolve().parents[2] / 'examples' / 'arithmetic_env.py'}:ArithmeticEnv"
PROBLEMS = ["--problem", '{"question": "What is 2 + 3?", "answer": "5"}']


def test_the_grid_options() -> None:
    def grid(points: list[str], text: str | None) -> list:
        return grid_from_args(argparse.Namespace(point=points, grid=text))

    assert grid([], None) == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert grid([], "0, 1") == [0.0, 1.0]
    assert grid(["0.5,0.25,0.25", "1,0,0"], None) == [(0.5, 0.25, 0.25), (1.0, 0.0, 0.0)]
    with pytest.raises(MintEnvkitError, match="not both"):
        grid(["1,0"], "0.5")
    with pytest.raises(MintEnvkitError, match="--grid 'a,b'"):
        grid([], "a,b")


@pytest.fixture(scope="module")
def checkpoint(tiny_local_server) -> str:
    import mint
    from mint import types

    service = mint.ServiceClient(base_url=tiny_local_server.base_url, api_key="sk-test")
    try:
        tc = service.create_lora_training_client(base_model=TINY_MODEL_NAME, rank=2, seed=3)
        datum = types.Datum(
            model_input=types.ModelInput.from_ints([5, 6, 7]),
            loss_fn_inputs={"target_tokens": [6, 7, 5]},
        )
        tc.forward_backward([datum], "cross_entropy").result()
        tc.optim_step(types.AdamParams(learning_rate=0.05)).result()
        return tc.save_weights_for_sampler("cli-src").result().path
    finally:
        service.holder.close()


def _args(server, out, *more):
    return [
        "interpolate",
        EXAMPLE,
        "--model",
        TINY_MODEL_NAME,
        *PROBLEMS,
        "--samples",
        "2",
        "--max-tokens",
        "4",
        "--base-url",
        server.base_url,
        "--backend",
        "local",
        "--out",
        str(out),
        *more,
    ]


@pytest.mark.integration
def test_interpolate_prints_the_table_and_resumes(tmp_path, tiny_local_server, checkpoint, capsys):
    more = ["--checkpoint", checkpoint, "--checkpoint", TINY_MODEL_NAME, "--grid", "0,1"]
    assert main(_args(tiny_local_server, tmp_path / "mix", *more)) == 0
    out = capsys.readouterr().out
    assert "c1p0-0p0" in out and "c0p0-1p0" in out and "pass@2" in out
    assert (tmp_path / "mix" / "interpolation.csv").is_file()
    tiny_local_server.reset_counts()
    assert main(_args(tiny_local_server, tmp_path / "mix", *more)) == 0
    assert tiny_local_server.request_counts()["interpolate_checkpoints"] == 0


@pytest.mark.integration
def test_a_bad_checkpoint_is_a_usage_error_naming_it(tmp_path, tiny_local_server, capsys):
    missing = "tinker://nope/sampler_weights/x"
    more = ["--checkpoint", missing, "--checkpoint", TINY_MODEL_NAME]
    assert main(_args(tiny_local_server, tmp_path / "bad", *more)) == 2
    assert "source_paths[0]" in capsys.readouterr().err
