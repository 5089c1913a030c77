"""``to_trl``: a :class:`~mint_envkit.DatasetBuilder` for TRL's ``GRPOTrainer``.

TRL 1.16's experimental environment API: ``GRPOTrainer(environment_factory=...)`` makes
one environment per rollout, calls its ``reset(**row)`` before generating, exposes its
public methods as tools, and, when it defines ``get_reward()``, calls that once per
finished rollout as a reward of weight 1 (the environment owns the reward). The
environment never sees the model's final reply through that API (``get_reward`` takes no
argument; only tool calls reach it), so, like TRL's own ``OpenRewardSpec``, the spec has
``train_dataset``, ``environment_factory`` and ``reward_funcs``: its one reward function
(``mint_envkit_reply``, weight 0 in effect: it returns None) hands each completion's tokens to
its environment, which scores them with the env's own parser, rewards and non-answer rules
(our :class:`~mint_envkit.rendering.EnvFromMessageEnv`, the same tokens our loop would
score) and returns that reward from ``get_reward()``.

Envs whose episode is one reply (``SingleTurnEnv`` and its kin) are supported; a
``MultiTurnEnv`` or ``ToolEnv`` is refused (TRL continues an episode only through tool
calls of its own). Needs the ``trl`` extra (TRL >= 1.16; tested with 1.16.0).

Example::

    # not run: needs the trl extra, a model and minutes of CPU
    from trl import GRPOTrainer
    from mint_envkit.adapters import to_trl

    spec = to_trl(builder)
    trainer = GRPOTrainer(model="path/to/model", args=spec.grpo_config(output_dir="runs/trl"),
                          train_dataset=spec.train_dataset, reward_funcs=spec.reward_funcs,
                          environment_factory=spec.environment_factory)
    trainer.train()
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
from collections.abc import Coroutine, Sequence
from typing import Any

import attrs

from mint_envkit.adapters.extras import require
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.envs.multi_turn import MultiTurnEnv
from mint_envkit.errors import ConfigError
from mint_envkit.rendering.renderer import RENDERERS
from mint_envkit.rendering.token_env import EnvFromMessageEnv


def _run(coro: Coroutine[Any, Any, Any]) -> Any:
    """Run ``coro`` to the end from synchronous code, even under a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with concurrent.futures.ThreadPoolExecutor(1) as pool:
        return pool.submit(asyncio.run, coro).result()


async def _opening(group: GroupBuilder) -> list[Any]:
    (env,) = await attrs.evolve(group, group_size=1).make_envs()
    return await env.initial_messages_async()


def _refuse_multi_turn(env: Any) -> None:
    kind = env if isinstance(env, type) else type(env)
    if issubclass(kind, MultiTurnEnv):
        raise ConfigError(
            f"to_trl takes envs whose episode is one reply; {kind.__name__} is a "
            f"{MultiTurnEnv.__name__} (or a ToolEnv), and TRL's GRPOTrainer continues an "
            "episode only through tool calls of its own. Train it with our loop or to_cookbook"
        )


class MintEnvironment:
    """One rollout's environment for TRL: our env of the row's problem.

    Public methods are TRL's tools, so this class has only ``reset`` and ``get_reward``.

    Example::

        # not run: made by TRL through spec.environment_factory
        env = spec.environment_factory()
        env.reset(**spec.train_dataset[0])
    """

    def __init__(self, groups: Sequence[GroupBuilder]) -> None:
        self._groups = groups
        self._env: EnvFromMessageEnv | None = None
        self._result: Any = None

    def reset(self, **row: Any) -> None:
        """Start the rollout of the row's problem (``problem_index``); the prompt is the
        row's, already the env's opening messages."""
        index = row.get("problem_index")
        if not isinstance(index, int) or not 0 <= index < len(self._groups):
            raise ConfigError(
                f"a row reached MintEnvironment.reset without a valid problem_index "
                f"({index!r}); train on spec.train_dataset, whose rows carry it"
            )
        group = attrs.evolve(self._groups[index], group_size=1)
        (env,) = _run(group.make_envs())
        _refuse_multi_turn(env.message_env)
        _run(env.initial_observation())
        self._env, self._result = env, None

    def _score(self, completion_ids: Sequence[int]) -> Any:
        """Score the completion's tokens with the env (what ``mint_envkit_reply`` hands over)."""
        if self._env is None:
            raise ConfigError("MintEnvironment scored a reply before reset(); TRL resets first")
        tokens = [int(t) for t in completion_ids]
        stops = {t for t in self._env.renderer.get_stop_sequences() if isinstance(t, int)}
        ended = bool(tokens) and tokens[-1] in stops
        extra = {"stop_reason": "stop" if ended else "length"}
        self._result = _run(self._env.step(tokens, extra=extra))
        return self._result

    def get_reward(self) -> float:
        """The env's reward of this rollout's reply (TRL calls it once per rollout)."""
        if self._result is None:
            raise ConfigError(
                "MintEnvironment.get_reward was called before its reply was scored; pass "
                "reward_funcs=spec.reward_funcs to GRPOTrainer (it hands each reply to its env)"
            )
        return float(self._result.reward)


def mint_envkit_reply(
    completion_ids: Sequence[Sequence[int]],
    environments: Sequence[MintEnvironment],
    log_metric: Any = None,
    **_: Any,
) -> list[None]:
    """TRL reward function that hands each completion to its environment to score, and logs
    the env's metrics (``mint_envkit/<name>``); it returns None for every completion (no
    reward of its own: the environment's ``get_reward`` is the reward).

    Example::

        # not run: TRL calls it with the batch
        mint_envkit_reply(completion_ids=[[20, 2045]], environments=[env])   # [None]
    """
    results = [env._score(ids) for env, ids in zip(environments, completion_ids, strict=True)]
    if log_metric is not None:
        names = sorted({k for r in results for k in r.metrics})
        for name in names:
            values = [float(r.metrics[name]) for r in results if name in r.metrics]
            log_metric(f"mint_envkit/{name}", sum(values) / len(values))
    return [None] * len(results)


@attrs.frozen
class TRLSpec:
    """What ``GRPOTrainer`` takes for a builder: ``train_dataset``, ``environment_factory``,
    ``reward_funcs``, and a ``grpo_config`` with the builder's settings.

    Attributes:
        builder: our dataset builder.
        groups: its training problems' groups (in the builder's order).

    Example::

        # not run: needs the trl extra
        spec = to_trl(builder)
        spec.train_dataset[0]["prompt"]   # the env's opening messages
    """

    builder: DatasetBuilder
    groups: tuple[GroupBuilder, ...]

    @functools.cached_property
    def train_dataset(self) -> Any:
        """A ``datasets.Dataset``: per problem, ``prompt`` (the env's opening messages,
        rendered by TRL with the builder's chat template) and ``problem_index``."""
        datasets = require("datasets", extra="trl", purpose="to_trl's train_dataset")
        messages = [_run(_opening(group)) for group in self.groups]
        return datasets.Dataset.from_dict(
            {
                "prompt": [[dict(m) for m in ms] for ms in messages],
                "problem_index": list(range(len(self.groups))),
            }
        )

    @property
    def environment_factory(self) -> Any:
        """A zero-argument callable making one :class:`MintEnvironment` (TRL makes one per
        rollout)."""
        return functools.partial(MintEnvironment, self.groups)

    @property
    def reward_funcs(self) -> list[Any]:
        """``[mint_envkit_reply]``: hands each reply to its environment (see the module)."""
        return [mint_envkit_reply]

    @property
    def chat_template_kwargs(self) -> dict[str, Any]:
        """The chat template options of the builder's renderer (``enable_thinking`` for
        Qwen3), so TRL renders the prompt tokens our renderer renders."""
        return dict(RENDERERS[self.builder.renderer_name])

    def grpo_config(self, **fields: Any) -> Any:
        """TRL's ``GRPOConfig`` with the builder's group size (``num_generations``), reply
        limit (``max_completion_length``) and chat template options; the other fields
        are yours (a different value of those is a :class:`ConfigError`).

        Example::

            # not run: needs the trl extra
            args = spec.grpo_config(output_dir="runs/trl", max_steps=10, learning_rate=1e-5)
        """
        trl = require("trl", extra="trl", purpose="to_trl")
        owned = {
            "num_generations": self.builder.group_size,
            "max_completion_length": self.builder.max_generation_tokens,
            "chat_template_kwargs": self.chat_template_kwargs,
        }
        for name, value in owned.items():
            if name in fields and fields[name] != value:
                raise ConfigError(
                    f"grpo_config({name}={fields[name]!r}) disagrees with the dataset builder's "
                    f"{value!r}; change it on the DatasetBuilder, or leave {name} out"
                )
        return trl.GRPOConfig(**{**fields, **owned})


def to_trl(builder: DatasetBuilder) -> TRLSpec:
    """What TRL's ``GRPOTrainer(environment_factory=...)`` takes for ``builder``'s envs.

    Raises:
        ConfigError: not a :class:`~mint_envkit.DatasetBuilder`, or a multi-turn env.
        MissingExtraError: TRL is not installed (``pip install 'mint-envkit[trl]'``).

    Example::

        # not run: needs the trl extra
        from mint_envkit.adapters import to_trl

        spec = to_trl(builder)
        spec.environment_factory().reset(**spec.train_dataset[0])
    """
    if not isinstance(builder, DatasetBuilder):
        raise ConfigError(
            f"to_trl takes a mint_envkit DatasetBuilder, got {type(builder).__name__}; build "
            "one with DatasetBuilder(env=..., problems=..., batch_size=..., group_size=...)"
        )
    if isinstance(builder.env, type):
        _refuse_multi_turn(builder.env)
    require("trl", extra="trl", purpose="to_trl")
    train, _ = _run(builder())
    groups = tuple(g for i in range(len(train)) for g in train.get_batch(i))
    return TRLSpec(builder=builder, groups=groups)
