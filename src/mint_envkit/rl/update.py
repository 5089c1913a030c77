"""One update of the policy: the batch's datums through ``num_substeps`` optimizer steps.

tinker-cookbook's ``train_step``: the datums are split, in order, into
``min(Config.num_substeps, len(datums))`` contiguous minibatches whose sizes
differ by at most one (:func:`substep_slices`); each gets one
``forward_backward`` and one ``optim_step`` with the same Adam parameters.
Every call is submitted before any is awaited (the service runs a client's
requests in order), then ``after_submit`` runs: the loop asks for the next
weight snapshot there, so it holds the weights after the last substep.
:func:`start_update` returns then, with a task for the metrics, so the loop
submits what comes next before the results arrive (awaiting the task gives the metrics). With
``Config.compute_post_kl`` one ``forward`` (no gradient) of every datum is
submitted after that and gives ``kl_pre_post_v1|v2``
(:func:`~mint_envkit.rl.diagnostics.post_kl_metrics`).

**Datums with zero advantages get no backward pass.** A datum whose advantages
are all exactly 0 (a constant-reward group kept with
``Config.remove_constant_reward_groups=False``, a reply masked by
``Config.mask_parse_failures``) adds nothing to the gradient: both losses
weight each token's term by its advantage (importance sampling ``-ratio * A``,
PPO ``-min(ratio * A, clip(ratio) * A)``), so with ``A = 0`` the term is 0 and
its derivative ``-A * d ratio`` is 0 for any finite ratio, and the KL penalty,
which this loop folds into the advantages
(:func:`~mint_envkit.rl.advantages.kl_adjusted_advantages`), is part of what is
checked. Such a datum is measured with a ``forward`` (no gradient) submitted
right after its substep's ``forward_backward``, before the ``optim_step``, so its
learner logprobs are those of the same weights and the diagnostics cover it as before; its loss (0) is left out
of ``train/loss:sum``, which it did not change. A substep whose datums all have
zero advantages still sends its shortest datum through ``forward_backward``, so
its ``optim_step`` sees a gradient of exactly 0 on every parameter (Adam's
moments and step count advance as they would; with no gradient at all the
optimizer would skip the parameters). :func:`backward_split` says which datums go
where; ``train/zero_advantage_datums`` counts them.

**What is exact.** In exact arithmetic the update and every metric are those of
sending every datum through ``forward_backward``. In floating point they are equal
only up to the server's batching: the skip changes which datums share an engine pass,
and a datum's logprobs can round differently with its batch (measured in issue 45 on
another machine: by up to 3.8e-6; 11 of 12 updates bit-identical, one PPO update with 3
substeps differed by 4.5e-4, PPO's clip being a step function of the ratio). On this
machine, with MKL's AVX-512, AVX2 and SSE4.2 kernels, with and without the
``MKL_CBWR`` pin, 1 and 2 threads, the setups of
``tests/rl/test_zero_advantage_skip.py`` gave bit-identical weights and every metric
but ``train/loss:sum`` (relative 8e-8, a float32 sum in another order); that test
holds the skip to a bound that holds on every kernel: the weights' logprobs within
1e-3 of each other (each step moves them by 0.39 or more), each metric within a
relative 1e-5.

Example::

    # not run: needs a training client
    metrics = await (await start_update(training_client, config, samples, token_advantages))
    metrics["train/loss:sum"], metrics.get("kl_pre_post_v1")
"""

from __future__ import annotations

import asyncio
import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mint_envkit.rl.config import Config, adam_params
from mint_envkit.rl.datums import Sample, plan_datums, to_datums
from mint_envkit.rl.diagnostics import learner_logprobs, learner_metrics, post_kl_metrics


def substep_slices(count: int, num_substeps: int) -> list[slice]:
    """The minibatches of ``count`` datums: ``min(num_substeps, count)`` contiguous slices.

    Sizes differ by at most one, split where tinker-cookbook's ``split_list``
    splits (edges ``floor(i * count / n)``). No datums, no slices.

    Example::

        substep_slices(5, 2)  # [slice(0, 2), slice(2, 5)]
    """
    n = min(num_substeps, count)
    edges = [i * count // n for i in range(n + 1)] if n else []
    return [slice(edges[i], edges[i + 1]) for i in range(n)]


def zero_advantage_datums(
    plan: Sequence[Sequence[int]], token_advantages: Sequence[Sequence[float]]
) -> set[int]:
    """The datums (positions in ``plan``) whose every token advantage is exactly 0.

    A datum's advantages are its samples' (:func:`~mint_envkit.rl.datums.plan_datums`;
    the env's tokens between turns carry 0 anyway).

    Example::

        zero_advantage_datums([[0], [1, 2], [3]], [[0.0], [0.0, 0.0], [0.0, 0.1], [-0.0]])
        # {0, 3}
    """
    return {
        index
        for index, group in enumerate(plan)
        if all(value == 0.0 for position in group for value in token_advantages[position])
    }


def backward_split(
    part: range, zero: set[int], lengths: Sequence[int]
) -> tuple[list[int], list[int]]:
    """One substep's datums: those that need ``forward_backward``, those a ``forward`` measures.

    The datums of ``part`` not in ``zero`` get the backward pass; the ones in ``zero``
    only a forward, unless every datum of ``part`` is in ``zero``: then the shortest
    (by ``lengths``, the datums' token counts; the first of equals) still gets it, so
    the substep's ``optim_step`` has its gradient of exactly 0.

    Example::

        backward_split(range(0, 4), {1, 2}, [5, 3, 4, 6])   # ([0, 3], [1, 2])
        backward_split(range(0, 3), {0, 1, 2}, [5, 3, 3])   # ([1], [0, 2])
    """
    backward = [i for i in part if i not in zero]
    if not backward and len(part):
        backward = [min(part, key=lambda i: (lengths[i], i))]
    return backward, [i for i in part if i not in backward]


def merge_substep_metrics(per_step: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The service metrics of several substeps as one step's, by each key's reduction suffix.

    ``name:sum`` is summed, ``name:max`` / ``name:min`` take the max / min,
    ``name:mean`` and any other key are averaged over the substeps that
    report it (one substep: its own metrics, unchanged).

    Example::

        merge_substep_metrics([{"loss:sum": 1.0, "grad_norm": 2.0},
                               {"loss:sum": 0.5, "grad_norm": 4.0}])
        # {'loss:sum': 1.5, 'grad_norm': 3.0}
    """
    if len(per_step) == 1:
        return dict(per_step[0])
    values: dict[str, list[Any]] = {}
    for metrics in per_step:
        for key, value in metrics.items():
            values.setdefault(key, []).append(value)
    out: dict[str, Any] = {}
    for key, seen in values.items():
        suffix = key.rsplit(":", 1)[-1] if ":" in key else ""
        if suffix == "sum":
            out[key] = sum(seen)
        elif suffix == "max":
            out[key] = max(seen)
        elif suffix == "min":
            out[key] = min(seen)
        else:
            out[key] = sum(seen) / len(seen)
    return out


async def start_update(
    training: Any,
    config: Config,
    samples: Sequence[Sample],
    token_advantages: Sequence[list[float]],
    *,
    after_submit: Callable[[], None] | None = None,
    sampled: Sequence[Sequence[float]] | None = None,
    skip_zero_advantages: bool = True,
    reference: Sequence[Sequence[float]] | None = None,
) -> asyncio.Task[dict[str, Any]]:
    """Submit the update of ``samples`` (not empty); a task that gathers its metrics.

    Returns once every call is submitted (and ``after_submit`` has run), so the
    caller may submit more before the results arrive: the service runs a client's
    requests in order, so what it submits next sees the updated weights. The task's
    result is the update's metrics:

    Returns ``train/<key>`` (the ``forward_backward`` metrics) and
    ``optim/<key>`` (the ``optim_step`` metrics), each merged over the
    substeps (:func:`merge_substep_metrics`); ``train/zero_advantage_datums`` (when
    any datum's advantages are all 0);
    the sampler-vs-learner diagnostics over every datum (substep ``i``'s learner
    logprobs are those of the weights after ``i`` updates); ``optim/substeps`` when
    ``num_substeps > 1``; and with ``config.compute_post_kl`` the
    ``kl_pre_post_*`` of the behaviour logprobs against the updated weights, and,
    given each sample's KL ``reference`` logprobs, ``kl_post_reference_v1|v2``: the
    same figures of the reference against the updated weights (``v1`` =
    mean(reference - updated), the k1 estimate of KL(reference || updated) on
    replies drawn from the reference, as a first step from a fresh adapter draws
    them; ``v2`` half the mean square): what the KL penalty measures, after the step.
    ``skip_zero_advantages=False`` sends every datum through ``forward_backward``
    (the same update and metrics in exact arithmetic, at the cost of their backward
    passes; equal up to the server's batching in floating point: see the module
    docstring).

    Example::

        # not run: needs a training client
        pending = await start_update(training_client, config, samples, token_advantages)
        # ... submit the next calls here ...
        metrics = await pending
    """
    plan = plan_datums(samples)
    data = to_datums(samples, token_advantages)
    zero = zero_advantage_datums(plan, token_advantages)
    lengths = [datum.model_input.length for datum in data]
    adam = adam_params(config)
    loss = (config.loss_fn, config.loss_fn_config)
    submitted = []
    for part in substep_slices(len(data), config.num_substeps):
        positions = range(part.start, part.stop)
        backward, measured = backward_split(
            positions, zero if skip_zero_advantages else set(), lengths
        )
        fb = await training.forward_backward_async([data[i] for i in backward], *loss)
        forward = None
        if measured:  # the same weights as the forward_backward: before the optim_step
            forward = await training.forward_async([data[i] for i in measured], *loss)
        opt = await training.optim_step_async(adam)
        submitted.append((backward, fb, measured, forward, opt))
    if after_submit is not None:
        after_submit()  # the next snapshot is queued behind the last substep's optim_step
    post = None
    if config.compute_post_kl:
        post = await training.forward_async(data, *loss)
    return asyncio.ensure_future(
        _gather(config, samples, sampled, plan, data, zero, submitted, (post, reference))
    )


async def _gather(
    config: Config,
    samples: Sequence[Sample],
    sampled: Sequence[Sequence[float]] | None,
    plan: Sequence[Sequence[int]],
    data: Sequence[Any],
    zero: set[int],
    submitted: Sequence[tuple[Any, ...]],
    post_kl: tuple[Any, Sequence[Sequence[float]] | None],
) -> dict[str, Any]:
    """The metrics of a submitted update, as its results arrive."""
    fbs, opts = [], []
    outputs: list[Any] = [None] * len(data)
    for backward, fb_future, measured, forward_future, opt_future in submitted:
        fb = await fb_future
        _place(outputs, backward, fb)
        fbs.append(fb)
        if forward_future is not None:
            _place(outputs, measured, await forward_future)
        opts.append(await opt_future)
    metrics: dict[str, Any] = {"train/zero_advantage_datums": len(zero)} if zero else {}
    for key, value in merge_substep_metrics([fb.metrics or {} for fb in fbs]).items():
        metrics[f"train/{key}"] = value
    opt_metrics = [(opt.metrics if opt else None) or {} for opt in opts]
    for key, value in merge_substep_metrics(opt_metrics).items():
        metrics[f"optim/{key}"] = value
    if config.num_substeps > 1:
        metrics["optim/substeps"] = len(submitted)
    if all(output is not None for output in outputs):
        joined = types.SimpleNamespace(loss_fn_outputs=outputs)
        metrics.update(learner_metrics(joined, samples, sampled))
    post, reference = post_kl
    if post is not None:
        updated = learner_logprobs((await post).loss_fn_outputs, samples, plan)
        metrics.update(post_kl_metrics([s.logprobs for s in samples], updated))
        if reference is not None:
            to_reference = post_kl_metrics(reference, updated)
            for name, value in to_reference.items():
                metrics[name.replace("pre_post", "post_reference")] = value
    return metrics


def _place(outputs: list[Any], positions: Sequence[int], result: Any) -> None:
    """Put a call's per-datum outputs at the datums' positions (nothing when it has none)."""
    returned = getattr(result, "loss_fn_outputs", None) or []
    if len(returned) == len(positions):
        for position, output in zip(positions, returned, strict=True):
            outputs[position] = output
