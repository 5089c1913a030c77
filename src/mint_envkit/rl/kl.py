"""The KL penalty against a reference model: which model, and how it reaches the advantages.

tinker-cookbook 0.3.0's API and semantics: ``Config(kl_penalty_coef=...,
kl_discount_factor=..., kl_reference_config=KLReferenceConfig(base_model=...,
load_checkpoint_path=...))``. The reference is one sampling client made with both
names, as the cookbook makes it (:func:`open_reference`): the base model alone, or a
checkpoint's weights on that base model (a ``tinker://`` sampler path). It scores
every sampled reply (``compute_logprobs``); each sampled token's penalty is
``coef * (mean_kl - kl)`` with ``kl = behaviour logprob - reference logprob`` and
``mean_kl`` its mean over the batch (logged as ``kl_policy_base``). With
``kl_discount_factor = gamma > 0`` a token's penalty becomes the discounted sum of its
own and every later penalty of its datum, ``sum_k gamma^k penalty[t + k]``, where ``k``
counts the datum's positions (an env's tokens between two turns count, with penalty
0): the cookbook's ``discounted_future_sum_vectorized`` over the datum. The penalty is
added to the token's advantage.

One difference, on purpose: the cookbook also writes the discounted sum into the
positions *before* a reply (the prompt, and an env's tokens between turns), where the
datum has no sampled logprob, so its importance-sampling loss trains those tokens
too; here they keep advantage 0. On every sampled token the advantages are the
cookbook's (``tests/rl/test_kl_cookbook.py`` runs its function on the same inputs).

Example::

    from mint_envkit.rl.datums import Sample

    samples = [Sample(prompt=[1, 2], reply=[3, 4], logprobs=[-1.0, -2.0], advantage=1.0)]
    shaped, mean_kl = kl_shaped_advantages(
        samples, [[1.0, 1.0]], behaviour=[[-1.0, -2.0]], reference=[[-1.5, -1.5]],
        coef=0.1, discount=0.5,
    )
    # penalties [-0.05, 0.05]; discounted [-0.05 + 0.5 * 0.05, 0.05] -> [[0.975, 1.05]]
    KLReferenceConfig(base_model="mint-envkit/tiny-qwen3", load_checkpoint_path=None)
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.rl.advantages import discounted_future_sum, kl_penalties
from mint_envkit.rl.datums import Sample, plan_datums


@attrs.frozen
class KLReferenceConfig:
    """The reference model of the KL penalty: a base model, or a checkpoint on it.

    tinker-cookbook 0.3.0's ``KLReferenceConfig``: ``base_model`` names the model;
    ``load_checkpoint_path`` (a ``tinker://`` sampler path, e.g. the
    ``sampler_path`` of an earlier run's ``checkpoints.jsonl``) makes the reference
    that checkpoint's weights instead of the bare base model. The loop makes one
    sampling client with both names (:func:`open_reference`), as the cookbook does.

    Example::

        KLReferenceConfig(base_model="Qwen/Qwen3-0.6B")
        KLReferenceConfig(base_model="Qwen/Qwen3-0.6B",
                          load_checkpoint_path="tinker://run-1/sampler_weights/final")
    """

    base_model: str = attrs.field()
    load_checkpoint_path: str | None = attrs.field(default=None)

    @base_model.validator
    def _check(self, _attribute: Any, value: Any) -> None:
        if not isinstance(value, str) or not value.strip():
            raise ConfigError(
                f"KLReferenceConfig.base_model must name a model, got {value!r}; "
                "usually the same name as Config.model_name"
            )

    @load_checkpoint_path.validator
    def _check_path(self, _attribute: Any, value: Any) -> None:
        if value is not None and (not isinstance(value, str) or not value.startswith("tinker://")):
            raise ConfigError(
                "KLReferenceConfig.load_checkpoint_path must be a tinker:// sampler path or "
                f"None, got {value!r}; e.g. the sampler_path of a run's checkpoints.jsonl"
            )

    def public_dict(self) -> dict[str, Any]:
        """The reference as JSON-ready data (``config.json``).

        Example::

            KLReferenceConfig(base_model="m").public_dict()
            # {'base_model': 'm', 'load_checkpoint_path': None}
        """
        return {"base_model": self.base_model, "load_checkpoint_path": self.load_checkpoint_path}


async def open_reference(service: Any, reference: KLReferenceConfig) -> Any:
    """The reference's sampling client: ``base_model`` and ``model_path`` in one call.

    The cookbook's call: with ``load_checkpoint_path`` None it is the base model.

    Example::

        # not run: needs a service client
        client = await open_reference(service, config.kl_reference_config)
    """
    return await service.create_sampling_client_async(
        base_model=reference.base_model, model_path=reference.load_checkpoint_path
    )


def discounted_in_datums(
    samples: Sequence[Sample], penalties: Sequence[Sequence[float]], gamma: float
) -> list[list[float]]:
    """Each reply token's discounted sum of its own and the later penalties of its datum.

    The samples that share a datum (:func:`~mint_envkit.rl.datums.plan_datums`: the
    turns of one episode) are one sequence of positions: a turn's penalties, then the
    env's tokens before the next turn (penalty 0, but each one a position the discount
    counts), then the next turn's. ``gamma = 0`` gives the penalties back.

    Example::

        turns = [Sample([1], [2, 3], [-1.0, -1.0], 1.0, episode=0),
                 Sample([1, 2, 3, 9], [4], [-1.0], 1.0, episode=0)]
        discounted_in_datums(turns, [[1.0, 0.0], [1.0]], 0.5)
        # [[1.125, 0.25], [1.0]]: one env token (9) between the turns
    """
    out: list[list[float]] = [[] for _ in samples]
    for group in plan_datums(samples):
        values: list[float] = []
        spans: list[tuple[int, int]] = []
        seen = len(samples[group[0]].prompt)
        for index in group:
            sample = samples[index]
            values += [0.0] * (len(sample.prompt) - seen)
            spans.append((index, len(values)))
            values += list(penalties[index])
            seen = len(sample.prompt) + len(sample.reply)
        summed = discounted_future_sum(values, gamma)
        for index, start in spans:
            out[index] = summed[start : start + len(penalties[index])]
    return out


def kl_shaped_advantages(
    samples: Sequence[Sample],
    token_advantages: Sequence[Sequence[float]],
    behaviour: Sequence[Sequence[float]],
    reference: Sequence[Sequence[float]],
    *,
    coef: float,
    discount: float = 0.0,
) -> tuple[list[list[float]], float]:
    """The advantages with the KL penalty added (discounted when ``discount > 0``); ``mean_kl``.

    ``behaviour`` and ``reference`` hold each sample's reply logprobs under the
    sampler and under the reference (see the module docstring for the rule).

    Example::

        shaped, mean_kl = kl_shaped_advantages(samples, [[1.0, 1.0]], [[-1.0, -2.0]],
                                               [[-1.5, -1.5]], coef=0.1)
        # ([[0.95, 1.05]], 0.0)   samples: the module example's
    """
    penalties, mean_kl = kl_penalties(behaviour, reference, coef)
    if discount > 0:
        penalties = discounted_in_datums(samples, penalties, discount)
    shaped = [
        [a + p for a, p in zip(arow, prow, strict=True)]
        for arow, prow in zip(token_advantages, penalties, strict=True)
    ]
    return shaped, mean_kl
