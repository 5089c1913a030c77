"""The two values every rollout reads: how to sample, and where the backend answers.

:class:`SamplingSettings` is what a sampler needs (the reply limit, temperature,
``top_p``, ``top_k``, the seed) and how many groups run at once; :class:`BackendSettings`
says which backend to reach (``auto``, ``mint``, ``local``, a URL) and what an embedded
server loads. The training loop builds both from its :class:`~mint_envkit.Config`
(``config.sampling``, ``config.backend_settings``); an evaluation or an audit builds them
from its arguments. Both are frozen and checked when built, with the same rules as the
``Config`` fields of the same names.

Example::

    from mint_envkit.rollouts import BackendSettings, SamplingSettings

    greedy = SamplingSettings(temperature=1e-3, max_tokens=48)
    greedy.max_tokens, greedy.seed          # (48, 0)
    BackendSettings(backend="local").backend  # 'local'
    # SamplingSettings(temperature=0) raises ConfigError: temperature must be > 0, ...
"""

from __future__ import annotations

from typing import Any

import attrs

from mint_envkit.builders.dataset import DEFAULT_REPLY_LIMIT
from mint_envkit.checks import check_integer, flag, integer, is_integer, number
from mint_envkit.errors import ConfigError
from mint_envkit.local.bounds import temperature_problem

BACKENDS = ("auto", "mint", "local")
"""The backend choices: ``auto`` (MinT when ``MINT_API_KEY`` is set), ``mint``, ``local``.

Example::

    "local" in BACKENDS   # True
"""


def _check_temperature(_instance: Any, attribute: Any, value: Any) -> None:
    problem = temperature_problem(value, field=attribute.name)  # the server's own bound
    if problem is not None:
        raise ConfigError(problem)


def _check_top_k(_instance: Any, attribute: Any, value: Any) -> None:
    if not (is_integer(value) and value == -1):
        check_integer(value, attribute.name, why="or -1 for off")


def _check_backend(_instance: Any, attribute: Any, value: Any) -> None:
    if value not in BACKENDS:
        raise ConfigError(f"{attribute.name} must be 'auto', 'mint' or 'local', got {value!r}")


def _check_url(_instance: Any, attribute: Any, value: Any) -> None:
    if value is not None and not str(value).startswith(("http://", "https://")):
        raise ConfigError(f"{attribute.name} must start with http:// or https://, got {value!r}")


def _models(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    return tuple(sorted(set(value)))


@attrs.frozen(kw_only=True)
class SamplingSettings:
    """How replies are sampled: one value for the loop, evaluations and audits.

    Attributes:
        max_tokens: the reply limit of each sample; None takes the dataset builder's
            ``max_generation_tokens`` (what training samples with).
        temperature, top_p, top_k: the sampling distribution (``top_k`` -1: off).
        seed: seeds every request (with the problem, the env and the turn).
        max_concurrent_groups: how many groups are rolled out at once (None: all).
        rollout_timeout_s: fail a group that has not finished within this many
            seconds (None: no limit).
        fail_fast: re-raise the first env error instead of recording it.

    Example::

        SamplingSettings(temperature=0.7, max_tokens=16).top_p   # 1.0
    """

    max_tokens: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    temperature: float = attrs.field(default=1.0, validator=_check_temperature)
    top_p: float = attrs.field(
        default=1.0, validator=number(low=0, high=1, low_open=True, why="a probability")
    )
    top_k: int = attrs.field(default=-1, validator=_check_top_k)
    seed: int = attrs.field(default=0, validator=integer(least=0))
    max_concurrent_groups: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    rollout_timeout_s: float | None = attrs.field(
        default=None, validator=number(low=0, low_open=True, none_ok=True, why="seconds")
    )
    fail_fast: bool = attrs.field(default=False, validator=flag())

    def reply_limit(self, builder_limit: int | None) -> int:
        """The reply limit to sample with: :attr:`max_tokens`, else ``builder_limit``, else
        the builder's default (:data:`~mint_envkit.builders.dataset.DEFAULT_REPLY_LIMIT`, 64).

        Example::

            SamplingSettings().reply_limit(48), SamplingSettings(max_tokens=16).reply_limit(48)
            # (48, 16)
        """
        if self.max_tokens is not None:
            return self.max_tokens
        return builder_limit if builder_limit is not None else DEFAULT_REPLY_LIMIT


@attrs.frozen(kw_only=True)
class BackendSettings:
    """Where the backend answers, and what an embedded server started for the work loads.

    Attributes:
        backend: ``auto`` (``MINT_ENVKIT_BACKEND``, else MinT when ``MINT_API_KEY`` is
            set, else the embedded backend), ``mint`` or ``local``.
        base_url: an already running backend; None starts the embedded one (local).
        models: the models an embedded server preloads (a name or several).
        local_latency_ms: delay an embedded server adds to each operation.
        local_batch_invariant: an embedded server samples batch-invariantly.
        local_threads: an embedded server's torch threads (None:
            ``MINT_ENVKIT_NUM_THREADS``, else 1).
        preflight_timeout_s: how long the backend may take to answer at start.

    Example::

        BackendSettings(models="mint-envkit/tiny-qwen3").models   # ('mint-envkit/tiny-qwen3',)
    """

    backend: str = attrs.field(default="auto", validator=_check_backend)
    base_url: str | None = attrs.field(default=None, validator=_check_url)
    models: tuple[str, ...] = attrs.field(default=(), converter=_models)
    local_latency_ms: float = attrs.field(default=0.0, validator=number(low=0))
    local_batch_invariant: bool = attrs.field(default=False, validator=flag())
    local_threads: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    preflight_timeout_s: float = attrs.field(default=15.0, validator=number(low=0, low_open=True))
