"""Our envs behind tinker-cookbook 0.3.0's interfaces (``Env``, ``EnvGroupBuilder``,
``RLDataset``, ``RLDatasetBuilder``); :func:`mint_envkit.adapters.to_cookbook` makes them.

Nothing is re-implemented: each cookbook ``Env`` runs one of our
:class:`~mint_envkit.rendering.EnvFromMessageEnv` (the same renderer, prompt tokens, stop
tokens, parse rules, non-answer rewards and metrics as our loop), and each group is one
of our :class:`~mint_envkit.GroupBuilder` (the same problem check and group rewards).
What the cookbook adds is its own: sampling, advantages, datums, the update, its logs.
This module imports ``tinker_cookbook`` (the ``cookbook`` extra).

Example::

    # not run: needs the cookbook extra
    from mint_envkit.adapters import to_cookbook

    dataset_builder = to_cookbook(builder)          # a MintDatasetBuilder
    train, test = await dataset_builder()           # cookbook RLDatasets
    envs = await train.get_batch(0)[0].make_envs()  # CookbookEnv, one per rollout
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import chz
from tinker_cookbook.rl import types as cb

from mint_envkit.builders.dataset import DatasetBuilder, ProblemDataset
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.errors import ConfigError
from mint_envkit.rendering.token_env import EnvFromMessageEnv
from mint_envkit.rollouts.run import conversation, fill_metric_defaults
from mint_envkit.rollouts.types import SampledTokens, Trajectory, Transition


def _log_value(value: Any) -> str | int | float:
    """A cookbook log value (``str | int | float``): ours may hold lists and dicts."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int | float | str):
        return value
    return repr(value)


class CookbookEnv(cb.Env):
    """One of our token-level envs as a cookbook ``Env`` (single use, like the cookbook's).

    ``initial_observation`` and ``step`` are our env's; at the end of the episode the
    env's ``metric_defaults`` fill the metrics no step logged, as our loop does. The
    transitions are kept (``transitions``) for the group reward.

    Example::

        # not run: `group` is one of our GroupBuilders
        env = CookbookEnv((await group.make_envs())[0])
        observation, stop = await env.initial_observation()
    """

    def __init__(self, env: EnvFromMessageEnv) -> None:
        self.env = env
        self.transitions: list[Transition] = []
        self.messages: list[Any] = []
        self._ob: list[int] = []

    async def initial_observation(self) -> tuple[Any, list[int] | list[str]]:
        observation, stop = await self.env.initial_observation()
        self._ob = observation.to_ints()
        return observation, stop

    async def step(self, action: list[int], *, extra: Any = None) -> cb.StepResult:
        stop_reason = str((extra or {}).get("stop_reason", "stop"))
        result = await self.env.step(list(action), extra={"stop_reason": stop_reason})
        self.transitions.append(
            Transition(
                ob=self._ob,
                ac=SampledTokens(list(action), None, stop_reason),
                reward=float(result.reward),
                episode_done=result.episode_done,
                metrics=dict(result.metrics),
                logs=dict(result.logs),
                message=result.message,
            )
        )
        if result.episode_done:
            fill_metric_defaults(self.env, self.transitions)
            self.messages = conversation(self.env, result.message)
        else:
            self._ob = result.next_observation.to_ints()
        return cb.StepResult(
            reward=float(result.reward),
            episode_done=result.episode_done,
            next_observation=result.next_observation,
            next_stop_condition=list(result.next_stop_condition),
            metrics={k: float(v) for k, v in self.transitions[-1].metrics.items()},
            logs={k: _log_value(v) for k, v in result.logs.items()},
        )

    def trajectory(self, sampled: cb.Trajectory | None = None) -> Trajectory:
        """This episode as our :class:`~mint_envkit.rollouts.Trajectory` (with the sampled
        logprobs of ``sampled``, the cookbook's record of it, when given)."""
        transitions = list(self.transitions)
        if sampled is not None:
            transitions = [
                Transition(
                    ob=t.ob,
                    ac=SampledTokens(list(s.ac.tokens), s.ac.maybe_logprobs, str(s.ac.stop_reason)),
                    reward=t.reward,
                    episode_done=t.episode_done,
                    metrics=t.metrics,
                    logs=t.logs,
                    message=t.message,
                )
                for t, s in zip(transitions, sampled.transitions, strict=False)
            ]
        return Trajectory(transitions=transitions, messages=list(self.messages))


@dataclass(frozen=True)
class CookbookGroup(cb.EnvGroupBuilder):
    """One of our :class:`~mint_envkit.GroupBuilder` as a cookbook ``EnvGroupBuilder``.

    Picklable when the group is (a module-level env class or function), as the
    cookbook asks of its builders.

    Example::

        # not run: `group` is one of our GroupBuilders
        envs = await CookbookGroup(group).make_envs()
    """

    group: GroupBuilder

    async def make_envs(self) -> Sequence[cb.Env]:
        return [CookbookEnv(env) for env in await self.group.make_envs()]

    async def compute_group_rewards(
        self, trajectory_group: list[cb.Trajectory], env_group: Sequence[cb.Env]
    ) -> list[tuple[float, cb.Metrics]]:
        envs = [env for env in env_group if isinstance(env, CookbookEnv)]
        if len(envs) != len(env_group):
            raise ConfigError("CookbookGroup scores only the CookbookEnvs its make_envs made")
        ours = [env.trajectory(t) for t, env in zip(trajectory_group, envs, strict=True)]
        rewards = await self.group.compute_group_rewards(ours, [env.env for env in envs])
        return [(float(r), {k: float(v) for k, v in m.items()}) for r, m in rewards]

    def logging_tags(self) -> list[str]:
        return list(self.group.logging_tags())


class CookbookDataset(cb.RLDataset):
    """One of our :class:`~mint_envkit.ProblemDataset` as a cookbook ``RLDataset``: batch
    ``i`` holds the groups of our batch ``i`` (same problems, same order, same seed).

    Example::

        # not run: `train` is one of our ProblemDatasets
        assert len(CookbookDataset(train)) == len(train)
    """

    def __init__(self, dataset: ProblemDataset) -> None:
        self.dataset = dataset

    def get_batch(self, index: int) -> Sequence[cb.EnvGroupBuilder]:
        return [CookbookGroup(group) for group in self.dataset.get_batch(index)]

    def __len__(self) -> int:
        return len(self.dataset)


BUILDER_OWNED = ("model_name", "renderer_name", "max_tokens")
"""The cookbook ``Config`` fields our builder owns (``max_tokens`` is its
``max_generation_tokens``): :meth:`MintDatasetBuilder.train_config` takes them from it."""


@dataclass(frozen=True, eq=False)
class BuilderRef:
    """Our builder inside the cookbook's config; its ``to_dict`` is what the cookbook
    writes for it in ``config.json`` (our builder's own summary, ``describe()``)."""

    builder: DatasetBuilder

    def to_dict(self) -> dict[str, Any]:
        return {"mint_envkit.DatasetBuilder": self.builder.describe()}


@chz.chz
class MintDatasetBuilder(cb.RLDatasetBuilder):
    """Our :class:`~mint_envkit.DatasetBuilder` as a cookbook ``RLDatasetBuilder``.

    Calling it builds our datasets (the same split, shuffle and batches as our loop)
    and returns them as cookbook ``RLDataset``\\ s (the test split, when the builder has
    one, becomes the cookbook's test set).

    Example::

        # not run: needs the cookbook extra
        config = to_cookbook(builder).train_config(log_path="runs/cb", learning_rate=3e-3)
    """

    source: BuilderRef

    @property
    def builder(self) -> DatasetBuilder:
        """Our dataset builder."""
        return self.source.builder

    async def __call__(self) -> tuple[cb.RLDataset, cb.RLDataset | None]:
        train, test = await self.builder()
        return CookbookDataset(train), None if test is None else CookbookDataset(test)

    async def train(self, config: Any) -> dict[str, Any]:
        """Train our :class:`~mint_envkit.Config` (whose ``dataset_builder`` is this builder's)
        with tinker-cookbook's ``rl.train.main``, then evaluate its final checkpoint on the
        test split with our evaluation (:mod:`mint_envkit.adapters.cookbook_train`).

        Example::

            # not run: trains through the cookbook's loop
            await to_cookbook(config.dataset_builder).train(config)
        """
        from mint_envkit.adapters.cookbook_train import train_with_cookbook

        if config.dataset_builder is not self.builder:
            raise ConfigError(
                "train(config): config.dataset_builder is another builder than this one; "
                "call to_cookbook(config.dataset_builder).train(config)"
            )
        return await train_with_cookbook(config)

    def train_config(self, **fields: Any) -> Any:
        """tinker-cookbook's ``rl.train.Config`` for this builder: ``model_name``,
        ``renderer_name`` and ``max_tokens`` are the builder's (a different value is a
        :class:`~mint_envkit.errors.ConfigError`: the envs render and reserve tokens
        with the builder's), the other fields are yours.

        Example::

            # not run: needs the cookbook extra and a backend
            from tinker_cookbook.rl import train

            await train.main(to_cookbook(builder).train_config(log_path="runs/cb",
                                                               learning_rate=3e-3))
        """
        from tinker_cookbook.rl import train

        builder = self.builder
        owned = {
            "model_name": builder.model_name,
            "renderer_name": builder.renderer_name,
            "max_tokens": builder.max_generation_tokens,
        }
        for name, value in owned.items():
            if name in fields and fields[name] != value:
                raise ConfigError(
                    f"train_config({name}={fields[name]!r}) disagrees with the dataset "
                    f"builder's {value!r}; the builder owns it (its envs render and reserve "
                    f"tokens with it): change it on the DatasetBuilder, or leave {name} out"
                )
        return train.Config(**{**fields, **owned, "dataset_builder": self})
