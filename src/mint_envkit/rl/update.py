"""One update of the policy: the batch's datums through ``num_substeps`` optimizer steps.

tinker-cookbook's ``train_step``: the datums are split, in order, into
``min(Config.num_substeps, len(datums))`` contiguous minibatches whose sizes
differ by at most one (:func:`substep_slices`); each gets one
``forward_backward`` and one ``optim_step`` with the same Adam parameters.
Every call is submitted before any is awaited (the service runs a client's
requests in order), then ``after_submit`` runs: the loop asks for the next
weight snapshot there, so it holds the weights after the last substep. With
``Config.compute_post_kl`` one ``forward`` (no gradient) of every datum is
submitted after that and gives ``kl_pre_post_v1|v2``
(:func:`~mint_envkit.rl.diagnostics.post_kl_metrics`).

Example::

    # not run: needs a training client
    metrics = await run_update(training_client, config, samples, token_advantages)
    metrics["train/loss:sum"], metrics.get("kl_pre_post_v1")
"""

from __future__ import annotations

import types
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from mint_envkit.rl.config import Config
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


async def run_update(
    training: Any,
    config: Config,
    samples: Sequence[Sample],
    token_advantages: Sequence[list[float]],
    *,
    after_submit: Callable[[], None] | None = None,
    sampled: Sequence[Sequence[float]] | None = None,
) -> dict[str, Any]:
    """Train on ``samples`` (not empty) with ``config.num_substeps`` optimizer steps.

    Returns ``train/<key>`` (the ``forward_backward`` metrics) and
    ``optim/<key>`` (the ``optim_step`` metrics), each merged over the
    substeps (:func:`merge_substep_metrics`); the sampler-vs-learner
    diagnostics over every datum (substep ``i``'s learner logprobs are those
    of the weights after ``i`` updates); ``optim/substeps`` when
    ``num_substeps > 1``; and with ``config.compute_post_kl`` the
    ``kl_pre_post_*`` of the behaviour logprobs against the updated weights.

    Example::

        # not run: needs a training client
        metrics = await run_update(training_client, config, samples, token_advantages)
    """
    import tinker

    data = to_datums(samples, token_advantages)
    adam = tinker.AdamParams(
        learning_rate=config.learning_rate,
        beta1=config.beta1,
        beta2=config.beta2,
        eps=config.eps,
        weight_decay=config.weight_decay,
        grad_clip_norm=config.grad_clip_norm,
    )
    submitted = []
    for part in substep_slices(len(data), config.num_substeps):
        fb = await training.forward_backward_async(
            data[part], config.loss_fn, config.loss_fn_config
        )
        submitted.append((fb, await training.optim_step_async(adam)))
    if after_submit is not None:
        after_submit()  # the next snapshot is queued behind the last substep's optim_step
    post = None
    if config.compute_post_kl:
        post = await training.forward_async(data, config.loss_fn, config.loss_fn_config)
    fbs, opts = [], []
    for fb_future, opt_future in submitted:
        fbs.append(await fb_future)
        opts.append(await opt_future)
    metrics: dict[str, Any] = {}
    for key, value in merge_substep_metrics([fb.metrics or {} for fb in fbs]).items():
        metrics[f"train/{key}"] = value
    opt_metrics = [(opt.metrics if opt else None) or {} for opt in opts]
    for key, value in merge_substep_metrics(opt_metrics).items():
        metrics[f"optim/{key}"] = value
    if config.num_substeps > 1:
        metrics["optim/substeps"] = len(submitted)
    outputs = [o for fb in fbs for o in (getattr(fb, "loss_fn_outputs", None) or [])]
    if len(outputs) == len(data):
        joined = types.SimpleNamespace(loss_fn_outputs=outputs)
        metrics.update(learner_metrics(joined, samples, sampled))
    if post is not None:
        updated = learner_logprobs((await post).loss_fn_outputs, samples, plan_datums(samples))
        metrics.update(post_kl_metrics([s.logprobs for s in samples], updated))
    return metrics
