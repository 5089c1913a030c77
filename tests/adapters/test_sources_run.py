"""A verifiers env and a TextArena game by id through check, audit, eval and a short training run.

``verifiers:ID`` and ``textarena:ID`` are ENV_SPECs of the env sources mint-envkit declares
(``[project.entry-points."mint_envkit.env_sources"]``). The runs share one embedded server
on the tiny model (the module's ``tiny_local_server``).
"""

from __future__ import annotations

import json

import pytest

from mint_envkit import Config
from mint_envkit.adapters import from_textarena, from_verifiers
from mint_envkit.cli import main
from mint_envkit.rendering import TINY_MODEL_NAME
from mint_envkit.rl import run_training
from mint_envkit.rollouts import ScriptedPolicy

vf = pytest.importorskip("verifiers")  # the verifiers and textarena extras (scripts/test.sh)
pytest.importorskip("textarena")

pytestmark = pytest.mark.usefixtures("vf_envs_on_path")


def test_check_and_audit_take_a_verifiers_env_and_a_game_by_id(capsys) -> None:
    assert main(["check", "verifiers:vf-tiny-math", "--groups", "1"]) == 0
    out = capsys.readouterr().out
    assert "reference reply (the env scores it correct): '<answer>" in out
    assert main(["audit", "verifiers:vf-tiny-math", "--sample-model", "none", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    probes = {p["name"]: p for p in record["probes"]}
    assert probes["correct"]["correct_rate"] == 1.0 and probes["wrong"]["correct_rate"] == 0.0
    script = json.dumps(["[4]", "[4]", "[4]"])  # the centre, then twice an occupied cell
    assert main(["check", "textarena:TicTacToe-v0", "--groups", "1", "--reply", script]) == 0
    out = capsys.readouterr().out
    assert "prefix check [qwen3] env 0: ok" in out and "'invalid_moves': 2.0" in out
    # TextArena reads a move as the first [cell] anywhere in the reply: a reply listing
    # every free cell plays the first and wins like the 'first option' policy does (70%)
    assert main(["audit", "textarena:TicTacToe-v0", "--sample-model", "none", "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    assert record["target"] == "textarena:TicTacToe-v0" and record["game"]
    flagged = {f["probe"] for f in record["findings"] if f["kind"] == "exploit"}
    assert flagged == {"lists_every_option", "repeats_feedback"}  # no ending the game skipped
    assert main(["check", "verifiers:vf-no-such-env"]) == 2
    assert "could not load the env 'vf-no-such-env'" in capsys.readouterr().err


@pytest.mark.integration
def test_eval_takes_a_verifiers_env_by_id(tiny_local_server, tmp_path, capsys) -> None:
    argv = ["eval", "verifiers:vf-tiny-math", "--model", TINY_MODEL_NAME, "--samples", "1"]
    argv += ["--max-tokens", "6", "--base-url", tiny_local_server.base_url, "--backend", "local"]
    assert main([*argv, "--out", str(tmp_path / "ev")]) == 0
    assert "on 10 problems x 1 samples" in capsys.readouterr().out
    lines = (tmp_path / "ev" / "results.jsonl").read_text().splitlines()
    assert len(lines) == 10 and all(json.loads(line)["error"] is None for line in lines)
    assert {json.loads(line)["problem"]["answer"] for line in lines} <= {str(n) for n in range(41)}


async def rescored(vf_env, record) -> float:
    """What verifiers' own rollout and rubric give the recorded reply."""
    from verifiers.legacy.clients.client import Client
    from verifiers.legacy.types import Response, ResponseMessage

    class Replay(Client):
        def setup_client(self, config):
            return None

        async def to_native_tool(self, tool):
            return tool

        async def to_native_prompt(self, messages):
            return messages, {}

        async def get_native_response(self, *args, **kwargs):
            return record["replies"][0]

        async def raise_from_native_response(self, response):
            return None

        async def from_native_response(self, text):
            message = ResponseMessage(content=text, finish_reason="stop", is_truncated=False)
            return Response(id="r", created=0, model="m", message=message)

        async def close(self):
            return None

    output = await vf_env.run_rollout(record["problem"], Replay(None), "m", {})
    return output["reward"]


@pytest.mark.integration
@pytest.mark.timeout(300)  # two short runs on the shared server; 120 s is tight under CI's load
async def test_a_verifiers_env_and_a_game_train_for_a_step(tiny_local_server, tmp_path) -> None:
    common = {"model_name": TINY_MODEL_NAME, "batch_size": 2, "group_size": 2}
    builders = {
        "verifiers": from_verifiers(
            "vf-tiny-math",
            env_args={"num_train": 4, "num_eval": 2},
            max_generation_tokens=6,
            score_truncated=True,
            **common,
        ),
        "textarena": from_textarena(
            "TicTacToe-v0", seeds=4, test_seeds=2, max_generation_tokens=4, max_turns=4, **common
        ),
    }
    for name, builder in builders.items():
        config = Config(
            dataset_builder=builder,
            model_name=TINY_MODEL_NAME,
            log_path=str(tmp_path / name),
            learning_rate=1e-3,
            lora_rank=4,
            max_steps=1,
            eval_every=1,
            save_every=0,
            backend="local",
            base_url=tiny_local_server.base_url,
            uncut_evals=False,
        )
        result = await run_training(config)
        assert result.steps == 1, name
        metrics = result.final_metrics
        assert metrics["env/all/rollout_errors"] == 0 and metrics["env/all/episodes"] == 4, name
    records = [json.loads(line) for line in (tmp_path / "verifiers" / "rollouts.jsonl").open()]
    vf_env = vf.load_environment("vf-tiny-math", num_train=4, num_eval=2)
    trained = [r for r in records if r["split"] == "train"]
    assert len(trained) == 4
    for record in trained:  # the sampled replies score what verifiers' own rubric gives them
        if record["metrics"]["parse_error"] == 0.0:  # (no stop token: not scored, by design)
            assert record["reward"] == pytest.approx(await rescored(vf_env, record), abs=1e-9)
    metrics = result.final_metrics  # the game's
    for key in ("won", "draw", "lost", "invalid_moves", "turns"):
        assert f"env/all/{key}" in metrics, key


@pytest.mark.integration
async def test_a_model_can_be_the_opponent(tiny_local_server) -> None:
    """The opponent as a model: the base model here (a checkpoint is one more argument)."""
    import tinker

    from mint_envkit import get_renderer
    from mint_envkit.rendering import get_tokenizer
    from mint_envkit.rollouts import resolve_connection, sampling_client, service_client

    renderer = get_renderer("qwen3", get_tokenizer(TINY_MODEL_NAME))
    async with service_client(resolve_connection("local", tiny_local_server.base_url)) as service:
        model = await sampling_client(service, TINY_MODEL_NAME)  # or (..., "tinker://...")
        replies = []

        async def opponent(observation: str) -> str:
            prompt = renderer.build_generation_prompt([{"role": "user", "content": observation}])
            params = tinker.SamplingParams(
                max_tokens=4, temperature=1.0, seed=len(replies), stop=renderer.get_stop_sequences()
            )
            result = await model.sample_async(prompt=prompt, num_samples=1, sampling_params=params)
            reply, _ = renderer.parse_response(result.sequences[0].tokens)
            replies.append(reply["content"])
            return reply["content"]

        builder = from_textarena(
            "TicTacToe-v0", opponent=opponent, seeds=2, batch_size=2, group_size=1
        )
        report = await ScriptedPolicy(["[4]", "[0]", "[8]", "[2]", "[6]"]).run(builder)
    assert replies and all(isinstance(text, str) for text in replies)
    for group in report.groups:  # the random tiny model's moves are rarely legal: it forfeits
        assert group.rewards[0] in (-1.0, 0.0, 1.0)
