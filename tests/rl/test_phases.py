"""The phases of a training step, each alone: sample, score, train, save."""

from __future__ import annotations

import asyncio
import types

import attrs
import pytest

from mint_envkit import MintEnvkitError
from mint_envkit.rl.datums import Sample
from mint_envkit.rl.sampling import sample_batch
from mint_envkit.rl.train import save_checkpoint, score_batch, train_on_batch


class FakeSamplingClient:
    """Answers every request with ``num_samples`` replies of the tokens [7, 8]."""

    def __init__(self) -> None:
        self.params = []

    async def sample_async(self, *, prompt, num_samples, sampling_params):
        self.params.append(sampling_params)
        seq = types.SimpleNamespace(tokens=[7, 8], logprobs=[-0.1, -0.2], stop_reason="length")
        return types.SimpleNamespace(sequences=[seq] * num_samples)


async def test_sample_batch_rolls_out_every_group_with_the_config_sampling(phase_config):
    train, _ = await phase_config.dataset_builder()
    client = FakeSamplingClient()
    batch = await sample_batch(phase_config, client, train.get_batch(0), salt=3)
    assert batch.requests == len(client.params) >= 1
    assert [len(r.trajectories) for r in batch.rollouts] == [2]
    assert client.params[0].temperature == phase_config.temperature
    assert client.params[0].max_tokens == phase_config.max_tokens


def test_score_batch_gives_advantages_to_groups_with_mixed_rewards(make_group):
    rollouts = [make_group(0, [1.0, 0.0]), make_group(1, [1.0, 1.0]), make_group(2, error="E: x")]
    scored = score_batch(0, rollouts, remove_constant_reward_groups=True)
    assert list(scored.advantages) == [0]
    assert scored.advantages[0] == pytest.approx([0.5, -0.5])
    assert scored.metrics["env/all/reward/total"] == pytest.approx(0.75)
    assert scored.metrics["env/all/rollout_errors"] == 1
    assert scored.metrics["env/all/by_group/dropped"] == 1
    # by default (as tinker-cookbook 0.3.0) a constant group trains with advantages of 0
    kept = score_batch(0, rollouts)
    assert kept.advantages == {0: scored.advantages[0], 1: [0.0, 0.0]}
    assert kept.metrics["env/all/by_group/kept_constant"] == 1


def test_score_batch_refuses_a_step_where_every_group_failed(make_group):
    with pytest.raises(MintEnvkitError, match="every group of step 4 failed; first error: E: x"):
        score_batch(4, [make_group(0, error="E: x"), make_group(1, error="E: y")])


class Done:
    """An SDK future that has finished."""

    def __init__(self, value) -> None:
        self.value = value

    def __await__(self):
        yield from ()
        return self.value


class FakeTrainingClient:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    async def forward_backward_async(self, data, loss_fn, loss_fn_config):
        self.calls.append(("forward_backward", len(data), loss_fn))
        return Done(types.SimpleNamespace(metrics={"loss:sum": 1.5}))

    async def optim_step_async(self, params):
        self.calls.append(("optim_step", params.learning_rate))
        return Done(types.SimpleNamespace(metrics={"grad_norm": 0.25}))

    async def save_state_async(self, name):
        self.calls.append(("save_state", name))
        return Done(types.SimpleNamespace(path=f"tinker://run/{name}"))

    async def save_weights_for_sampler_async(self, name):
        self.calls.append(("save_sampler", name))
        return Done(types.SimpleNamespace(path=f"tinker://run/{name}"))


async def test_train_on_batch_sends_one_forward_backward_and_one_optim_step(phase_config):
    training = FakeTrainingClient()
    samples = [Sample([1, 2], [3, 4], [-0.1, -0.2], 1.0), Sample([1], [5], [-0.3], -1.0)]
    metrics = await train_on_batch(
        training, phase_config, samples, [s.token_advantages() for s in samples]
    )
    assert training.calls == [
        ("forward_backward", 2, "importance_sampling"),
        ("optim_step", phase_config.learning_rate),
    ]
    assert metrics == {
        "optim/lr": phase_config.learning_rate,
        "train/datums": 2,
        "train/datum_tokens": 4,
        "train/turn_fallbacks": 0,
        "train/tokens": 3,
        "train/loss:sum": 1.5,
        "optim/grad_norm": 0.25,
    }


async def test_train_on_batch_without_samples_sends_nothing(phase_config):
    training = FakeTrainingClient()
    metrics = await train_on_batch(training, phase_config, [], [])
    assert training.calls == [] and metrics["train/datums"] == 0


async def test_checkpoints_every_save_every_steps_and_at_the_end(phase_config):
    training = FakeTrainingClient()
    assert await save_checkpoint(training, phase_config, done=1, total=5) is None
    record = await save_checkpoint(training, phase_config, done=2, total=5)
    assert record["name"] == "step000002" and record["step"] == 2
    assert record["state_path"] == "tinker://run/step000002-s0-2"
    assert record["sampler_path"] == "tinker://run/step000002-s0-2-sampler"
    final = await save_checkpoint(training, attrs.evolve(phase_config, save_every=0), 5, 5)
    assert final["name"] == "final"
    assert [c[0] for c in training.calls] == ["save_state", "save_sampler"] * 2


async def test_a_sampler_snapshot_that_never_answers_does_not_hold_the_exit():
    """The snapshot runs in a daemon thread: a dead backend's hanging SDK call can be
    abandoned (cancelled) and no executor thread is left for asyncio.run to wait on."""
    import threading

    from mint_envkit.rollouts.sampler import sampler_snapshot

    release = threading.Event()

    class Hanging:
        def save_weights_and_get_sampling_client(self):
            release.wait(30)
            return "client"

    task = asyncio.ensure_future(sampler_snapshot(Hanging()))
    await asyncio.sleep(0.05)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    stuck = [t for t in threading.enumerate() if t.name == "mint-envkit-sampler-snapshot"]
    assert stuck and all(t.daemon for t in stuck)
    release.set()


async def test_a_sampler_snapshot_returns_the_client_or_raises_its_error():
    from mint_envkit.rollouts.sampler import sampler_snapshot

    class Works:
        def save_weights_and_get_sampling_client(self):
            return "client"

    class Fails:
        def save_weights_and_get_sampling_client(self):
            raise ConnectionError("Connection error.")

    assert await sampler_snapshot(Works()) == "client"
    with pytest.raises(ConnectionError):
        await sampler_snapshot(Fails())
