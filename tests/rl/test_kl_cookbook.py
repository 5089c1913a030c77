"""The KL penalty against tinker-cookbook 0.3.0's own functions, on the same inputs.

The cookbook's ``incorporate_kl_penalty`` (``tinker_cookbook/rl/metrics.py``) runs on
datums built from our samples, with a stand-in reference client that answers the
reference logprobs we give ours; its advantages must equal ours on every sampled token,
with and without ``kl_discount_factor``, single-turn and multi-turn. The defaults are
read from the cookbook's source (``rl/train.py``) with :mod:`ast`. Then a cookbook-style
checkpoint reference (``KLReferenceConfig(base_model=..., load_checkpoint_path=...)``)
runs in our loop against the embedded backend.

tinker-cookbook is installed without its dependencies (``scripts/setup.sh`` with the
``dev`` extra: its pin ``transformers<=5.3.0`` conflicts with ours), so only its
``rl/metrics.py`` is loaded, by file, not the package's ``rl/__init__`` (which needs
``chz``, ``blobfile``, ...).
"""

from __future__ import annotations

import ast
import asyncio
import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest

from mint_envkit import Config, DatasetBuilder, KLReferenceConfig, SingleTurnEnv
from mint_envkit.errors import ConfigError
from mint_envkit.rl.datums import Sample, plan_datums, to_datums
from mint_envkit.rl.kl import kl_shaped_advantages
from mint_envkit.runs.files import RunFiles

COOKBOOK = Path(importlib.util.find_spec("tinker_cookbook").origin).parent


def _cookbook_metrics() -> Any:
    spec = importlib.util.spec_from_file_location("cookbook_rl_metrics", COOKBOOK / "rl/metrics.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Reference:
    """A sampling client whose ``compute_logprobs`` answers given values per sequence."""

    def __init__(self, answers: dict[tuple[int, ...], list[float | None]]) -> None:
        self.answers = answers

    async def compute_logprobs_async(self, model_input: Any) -> list[float | None]:
        return self.answers[tuple(model_input.to_ints())]


# Two single-turn replies to one prompt, and a two-turn episode (env tokens 90, 91 between).
SINGLE = [
    Sample([1, 2, 3], [4, 5, 6], [-0.5, -1.25, -2.0], 0.75, episode=0),
    Sample([1, 2, 3], [7, 8], [-0.25, -3.0], -0.75, episode=1),
]
TURNS = [
    Sample([1, 2], [10, 11], [-1.0, -0.5], 0.5, episode=2),
    Sample([1, 2, 10, 11, 90, 91], [12, 13, 14], [-0.75, -0.1, -2.5], 0.5, episode=2),
]
REFERENCE = {  # each reply token's reference logprob
    0: [-0.75, -1.0, -2.5],
    1: [-0.5, -2.0],
    2: [-1.5, -0.25],
    3: [-0.5, -0.5, -2.0],
}


def _cookbook_advantages(samples: list[Sample], coef: float, gamma: float) -> list[list[float]]:
    """The cookbook's advantages of each sample's reply tokens, from its own function."""
    import tinker

    plan = plan_datums(samples)
    data = to_datums(samples, [s.token_advantages() for s in samples])
    answers: dict[tuple[int, ...], list[float | None]] = {}
    spans: list[list[tuple[int, int]]] = []
    for group, datum in zip(plan, data, strict=True):
        targets = list(datum.loss_fn_inputs["target_tokens"].data)
        mask = [0.0] * len(targets)
        reference: list[float | None] = [None] + [-9.0] * len(targets)  # -9: never used
        datum_spans = []
        for index in group:
            start = len(samples[index].prompt) - 1  # the reply's first target position
            datum_spans.append((index, start))
            for k, value in enumerate(REFERENCE[SAMPLES.index(samples[index])]):
                mask[start + k] = 1.0
                reference[start + k + 1] = value
        spans.append(datum_spans)
        datum.loss_fn_inputs["mask"] = tinker.TensorData(
            data=mask, dtype="float32", shape=[len(mask)]
        )
        answers[(*datum.model_input.to_ints(), targets[-1])] = reference
    metrics = _cookbook_metrics()
    asyncio.run(metrics.incorporate_kl_penalty(data, _Reference(answers), coef, gamma))
    out: list[list[float]] = [[] for _ in samples]
    for datum, datum_spans in zip(data, spans, strict=True):
        values = list(datum.loss_fn_inputs["advantages"].data)
        for index, start in datum_spans:
            out[index] = values[start : start + len(samples[index].reply)]
    return out


SAMPLES = SINGLE + TURNS


@pytest.mark.parametrize("gamma", [0.0, 0.5, 0.9, 1.0])
@pytest.mark.parametrize("samples", [SINGLE, TURNS, SAMPLES], ids=["single", "turns", "both"])
def test_kl_shaped_advantages_equal_the_cookbooks_on_every_sampled_token(samples, gamma):
    coef = 0.05
    ours, mean_kl = kl_shaped_advantages(
        samples,
        [s.token_advantages() for s in samples],
        [s.logprobs for s in samples],
        [REFERENCE[SAMPLES.index(s)] for s in samples],
        coef=coef,
        discount=gamma,
    )
    theirs = _cookbook_advantages(samples, coef, gamma)
    for mine, cookbook in zip(ours, theirs, strict=True):
        assert mine == pytest.approx(cookbook, rel=1e-6, abs=1e-7)  # theirs is float32
    kls = [
        lp - r
        for s in samples
        for lp, r in zip(s.logprobs, REFERENCE[SAMPLES.index(s)], strict=True)
    ]
    assert mean_kl == pytest.approx(sum(kls) / len(kls))


def test_the_discounted_sum_is_the_cookbooks():
    import torch

    values = [0.5, -1.0, 0.0, 2.0, 0.25]
    theirs = _cookbook_metrics().discounted_future_sum_vectorized(
        torch.tensor(values, dtype=torch.float64), 0.9
    )
    from mint_envkit.rl.advantages import discounted_future_sum

    assert discounted_future_sum(values, 0.9) == pytest.approx(theirs.tolist(), rel=1e-12)


def _cookbook_defaults(class_name: str) -> dict[str, Any]:
    """A cookbook class's field defaults, read from ``rl/train.py``'s source."""
    tree = ast.parse((COOKBOOK / "rl/train.py").read_text())
    node = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == class_name)
    return {
        item.target.id: ast.literal_eval(item.value) if item.value is not None else "required"
        for item in node.body
        if isinstance(item, ast.AnnAssign)
        and isinstance(item.target, ast.Name)
        and (item.value is None or isinstance(item.value, ast.Constant))
    }


def test_our_kl_and_constant_group_defaults_are_the_cookbooks(tmp_path):
    config = _config(tmp_path, None)
    cookbook = _cookbook_defaults("Config")
    for name in ("kl_penalty_coef", "kl_discount_factor", "remove_constant_reward_groups"):
        assert getattr(config, name) == cookbook[name], name
    assert _cookbook_defaults("KLReferenceConfig") == {
        "base_model": "required",
        "load_checkpoint_path": None,
    }
    assert KLReferenceConfig("m").load_checkpoint_path is None


@pytest.mark.parametrize("path", ["/tmp/ckpt", "", 3])
def test_a_reference_checkpoint_must_be_a_tinker_path(path):
    with pytest.raises(ConfigError, match="load_checkpoint_path must be a tinker:// sampler path"):
        KLReferenceConfig(base_model="m", load_checkpoint_path=path)


@pytest.mark.parametrize("gamma", [-0.1, 1.5, float("nan")])
def test_kl_discount_factor_is_in_0_1(tmp_path, gamma):
    with pytest.raises(ConfigError, match=r"Config\.kl_discount_factor"):
        _config(tmp_path, None, kl_discount_factor=gamma)


# ---------------------------------------------------------------- in our loop

MODEL = "mint-envkit/tiny-qwen3-small"


class _ReplyHashEnv(SingleTurnEnv):
    """Reward: a hash of the reply in [0, 1): groups of several sampled replies are never
    constant, so every step trains (and the first run's checkpoint moved)."""

    def score(self, message):
        import zlib

        from mint_envkit import MessageStepResult

        reward = (zlib.crc32(message["content"].encode()) % 1000) / 1000
        return MessageStepResult(reward=reward, episode_done=True, metrics={})


def _config(tmp_path: Path, server: Any, name: str = "run", **overrides: Any) -> Config:
    builder = DatasetBuilder(
        env=_ReplyHashEnv,
        problems=[{"question": f"What is {i} + {i}?", "answer": str(2 * i)} for i in range(4)],
        batch_size=2,
        group_size=4,
        model_name=MODEL,
        seed=0,
        max_generation_tokens=6,
        score_truncated=True,
    )
    fields: dict[str, Any] = {
        "dataset_builder": builder,
        "log_path": str(tmp_path / name),
        "learning_rate": 3e-3,
        "lora_rank": 4,
        "max_steps": 1,
        "base_url": server.base_url if server is not None else None,
        "backend": "local",
        "save_every": 0,
    }
    return Config(**{**fields, **overrides})


@pytest.mark.integration
async def test_a_checkpoint_kl_reference_runs_in_our_loop(tmp_path, server):
    from mint_envkit.rl.train import main

    first = await main(_config(tmp_path, server, "first"))
    checkpoint = RunFiles(first.log_path).checkpoints()[-1]["sampler_path"]
    assert checkpoint.startswith("tinker://")

    def reference_run(name: str, reference: KLReferenceConfig) -> Config:
        return _config(
            tmp_path,
            server,
            name,
            kl_penalty_coef=0.05,
            kl_discount_factor=0.9,
            kl_reference_config=reference,
            compute_post_kl=True,
        )

    base = await main(reference_run("base", KLReferenceConfig(MODEL)))
    trained = await main(
        reference_run("ckpt", KLReferenceConfig(MODEL, load_checkpoint_path=checkpoint))
    )
    on_base = RunFiles(base.log_path).metrics()[0]
    on_checkpoint = RunFiles(trained.log_path).metrics()[0]
    # a fresh adapter samples as the base model: the base reference gives KL ~0, the
    # trained checkpoint a KL the size of a step away (what it was trained to, it is not)
    assert abs(on_base["kl_policy_base"]) < 1e-4
    assert abs(on_checkpoint["kl_policy_base"]) > 1e-3
    for metrics in (on_base, on_checkpoint):
        assert metrics["train/datums"] > 0
        assert {"kl_post_reference_v1", "kl_post_reference_v2"} <= set(metrics)
    # the run repeats the first run's step (same seed and data): after it the policy is
    # nearer the checkpoint than the base model is
    assert on_checkpoint["kl_post_reference_v2"] < on_base["kl_post_reference_v2"]
    written = json.loads((Path(trained.log_path) / "config.json").read_text())
    written = written["kl_reference_config"]
    assert written == {"base_model": MODEL, "load_checkpoint_path": checkpoint}
