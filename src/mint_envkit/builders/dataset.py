"""Dataset builders: problems to seeded batches of groups.

Example::

    # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[{"question": "What is 2 + 3?", "answer": "5"}, ...],
        batch_size=2, group_size=4,
        model_name="mint-envkit/tiny-qwen3", renderer_name="qwen3", seed=0,
    )
    train, test = await builder()
    groups = train.get_batch(0)          # list[GroupBuilder]
    envs = await groups[0].make_envs()   # group_size envs, one problem
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.builders.group import (
    RENDERER_FROM_MODEL,
    GroupBuilder,
    _check_env,
    _check_renderer,
    _resolve_non_answer_rewards,
)
from mint_envkit.builders.sources import ProblemSource, is_source_like, problems_from
from mint_envkit.checks import integer, number
from mint_envkit.envs.problem import bind_problem
from mint_envkit.errors import ConfigError, ProblemError

Problems = Sequence[Mapping[str, Any]] | Callable[[], Any]

DEFAULT_REPLY_LIMIT = 64
"""The reply limit when nothing sets one: :attr:`DatasetBuilder.max_generation_tokens`'s
default, which the run's ``Config.max_tokens`` and every evaluation read (one default).

Example::

    DEFAULT_REPLY_LIMIT   # 64
"""


def _problems(value: Any) -> Any:
    if isinstance(value, ProblemSource):
        return value
    if is_source_like(value):  # a jsonl/csv/parquet path or a datasets.Dataset: read lazily
        return problems_from(value)
    if callable(value):
        return value
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence | tuple | list):
        raise ConfigError(
            f"problems must be a sequence of dicts or a function returning one, got "
            f"{type(value).__name__}"
        )
    return tuple(value)


@attrs.frozen
class ProblemDataset:
    """Batches of :class:`GroupBuilder`, in a fixed (seeded) order.

    Example::

        # not run: `train` is a built dataset, built elsewhere
        len(train)            # number of batches
        train.get_batch(0)    # list[GroupBuilder], batch_size of them
    """

    batches: tuple[tuple[GroupBuilder, ...], ...]

    def get_batch(self, index: int) -> list[GroupBuilder]:
        """The groups of batch ``index`` (0-based).

        Raises:
            IndexError: ``index`` is outside ``0 .. len(self) - 1``.
        """
        if not 0 <= index < len(self.batches):
            raise IndexError(
                f"batch {index} does not exist; this dataset has {len(self.batches)} batches "
                f"(0..{len(self.batches) - 1})"
            )
        return list(self.batches[index])

    def __len__(self) -> int:
        return len(self.batches)

    def groups(self) -> list[GroupBuilder]:
        """Every group of every batch, in order."""
        return [group for batch in self.batches for group in batch]


@attrs.frozen(kw_only=True)
class DatasetBuilder:
    """Turns problems into seeded batches of groups. Frozen and picklable.

    Attributes:
        env: a :class:`~mint_envkit.MessageEnv` subclass (or a function
            ``(**problem) -> MessageEnv``).
        problems: a sequence of dicts, or a function (sync or async) that
            returns one (a loader), or (read lazily, batch by batch) a
            ``.jsonl``/``.csv``/``.parquet`` path, a ``datasets.Dataset`` or a
            :func:`~mint_envkit.builders.sources.problems_from` source.
        fields: with a path or a dataset, maps env fields to its columns
            (``{"question": "problem"}``) or is a function ``row -> problem``.
        batch_size: groups per batch (per training step).
        group_size: envs per group (rollouts of the same problem).
        model_name, renderer_name: the tokenizer and chat template
            (``renderer_name`` defaults to the one that fits the model,
            :func:`~mint_envkit.rendering.default_renderer_for`). The builder
            owns them: the run's ``Config.model_name`` is this one.
        seed: the data-order seed: fixes the split and the shuffle; the same
            seed gives the same batches in any process (sampling has its own,
            ``Config.sampling_seed``).
        shuffle: shuffle each epoch (default True).
        n_epochs: passes over the problems.
        test_problems: a held-out test split, or None.
        test_fraction: alternatively, hold out this fraction of ``problems``
            (chosen with ``seed``).
        test_group_size: envs per test group (default 1).
        drop_last: drop a final partial batch (default False: nothing lost).
        max_generation_tokens: the reply limit of each sample (default 64,
            :data:`DEFAULT_REPLY_LIMIT`). The builder owns it: the run's
            ``Config.max_tokens`` only reads it back, and each group reserves
            that many tokens for a reply in a ``max_trajectory_tokens`` context.
        max_trajectory_tokens, failed_parse_reward,
            context_overflow_reward, score_truncated: passed to each group.
            ``failed_parse_reward`` and ``context_overflow_reward`` may not exceed
            the env's wrong-answer reward (``ConfigError`` when the builder is
            made); unset, they are -1.0 / -0.1, or that reward when it is lower.

    Raises:
        ProblemError (when called): a problem misses a field the env needs,
            naming the problem's index and the field.

    Example::

        # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
        train, test = await DatasetBuilder(env=ArithmeticEnv, problems=problems,
                                           batch_size=2, group_size=4,
                                           model_name="mint-envkit/tiny-qwen3")()
    """

    env: Callable[..., Any] = attrs.field(validator=_check_env)
    problems: Problems = attrs.field(converter=_problems)
    batch_size: int = attrs.field(validator=integer())
    group_size: int = attrs.field(validator=integer())
    model_name: str
    renderer_name: str = attrs.field(default=RENDERER_FROM_MODEL, validator=_check_renderer)
    seed: int = 0
    shuffle: bool = True
    n_epochs: int = attrs.field(default=1, validator=integer())
    test_problems: Sequence[Mapping[str, Any]] | None = attrs.field(
        default=None, converter=attrs.converters.optional(tuple)
    )
    test_fraction: float = attrs.field(default=0.0, validator=number(low=0, high=1, high_open=True))
    test_group_size: int = attrs.field(default=1, validator=integer())
    drop_last: bool = False
    max_trajectory_tokens: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    max_generation_tokens: int = attrs.field(default=DEFAULT_REPLY_LIMIT, validator=integer())
    failed_parse_reward: float | None = None
    context_overflow_reward: float | None = None
    score_truncated: bool = False
    fields: Any = None

    def __attrs_post_init__(self) -> None:
        _resolve_non_answer_rewards(self)
        if self.fields is not None:
            if not isinstance(self.problems, ProblemSource) or self.problems.fields is not None:
                raise ConfigError(
                    "fields= maps the columns of a file or datasets.Dataset given as problems; "
                    "pass problems='train.jsonl' (or a Dataset) without fields of its own"
                )
            object.__setattr__(self, "problems", attrs.evolve(self.problems, fields=self.fields))
        if self.test_problems is not None and self.test_fraction:
            raise ConfigError(
                "give either test_problems or test_fraction, not both "
                f"(test_fraction={self.test_fraction})"
            )

    async def load_problems(self) -> list[dict[str, Any]]:
        """The problems as a list of dicts (calling the loader if one was given)."""
        source = self.problems
        if callable(source):
            source = source()
            if inspect.isawaitable(source):
                source = await source
        problems = list(source)
        for index, problem in enumerate(problems):
            if not isinstance(problem, Mapping):
                raise ProblemError(
                    f"problem {index} must be a dict of fields, got {type(problem).__name__} "
                    f"{problem!r}"
                )
        return [dict(p) for p in problems]

    def _validate(self, problems: Sequence[Mapping[str, Any]], split: str) -> None:
        required = getattr(self.env, "required_fields", None)
        optional = getattr(self.env, "optional_fields", {})
        if required is None:
            return
        name = getattr(self.env, "__name__", "env")
        for index, problem in enumerate(problems):
            try:
                bind_problem(name, tuple(required), optional, problem)
            except ProblemError as err:
                raise ProblemError(f"{split}problem {index}: {err}") from None

    def _group(self, problem: Mapping[str, Any], index: int, group_size: int) -> GroupBuilder:
        return GroupBuilder(
            problem=problem,
            env=self.env,
            group_size=group_size,
            model_name=self.model_name,
            renderer_name=self.renderer_name,
            max_trajectory_tokens=self.max_trajectory_tokens,
            max_generation_tokens=self.max_generation_tokens,
            failed_parse_reward=self.failed_parse_reward,
            context_overflow_reward=self.context_overflow_reward,
            score_truncated=self.score_truncated,
            index=index,
        )

    async def __call__(self) -> tuple[ProblemDataset, ProblemDataset | None]:
        """Build ``(train, test)``; ``test`` is None without a test split."""
        if isinstance(self.problems, ProblemSource):
            from mint_envkit.builders.lazy import build_lazy

            return build_lazy(self)
        problems = await self.load_problems()
        if not problems:
            raise ProblemError("the dataset has no problems; give at least one")
        self._validate(problems, "")
        from mint_envkit.builders.lazy import build_listed

        # a list is an in-memory source: one split, one seeded order, one batching
        return build_listed(self, problems)

    def describe(self) -> dict[str, Any]:
        """A JSON-ready summary (for ``config.json``).

        Example::

            # not run: `builder` is your DatasetBuilder, built elsewhere
            builder.describe()["env"]  # 'examples.rl_hyperparameters.ArithmeticEnv'
        """
        env = self.env
        return {
            "env": f"{getattr(env, '__module__', '?')}.{getattr(env, '__qualname__', repr(env))}",
            "n_problems": None if callable(self.problems) else len(self.problems),
            "n_test_problems": None if self.test_problems is None else len(self.test_problems),
            "test_fraction": self.test_fraction,
            "batch_size": self.batch_size,
            "group_size": self.group_size,
            "model_name": self.model_name,
            "renderer_name": self.renderer_name,
            "seed": self.seed,
            "shuffle": self.shuffle,
            "n_epochs": self.n_epochs,
            "max_trajectory_tokens": self.max_trajectory_tokens,
            "max_generation_tokens": self.max_generation_tokens,
            "failed_parse_reward": self.failed_parse_reward,
            "context_overflow_reward": self.context_overflow_reward,
            "score_truncated": self.score_truncated,
        }
