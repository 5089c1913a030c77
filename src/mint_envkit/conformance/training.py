"""The training rows of a conformance run: losses that are right, gradients that point right.

A training loop relies on more than answers: on the reported loss being the loss of the
logprobs it returns, on a step lowering that loss, on PPO clipping where the ratio
leaves the clip range and on importance sampling weighting by the ratio. So:

- ``forward`` / ``forward_backward`` with each loss: one logprob per position, and a
  ``loss:sum`` equal to the loss computed from those logprobs (Tinker's formulas,
  :func:`~mint_envkit.conformance.probe.loss_terms`; ``cispo`` and ``dro`` only a finite
  loss: their formulas are not documented);
- ``forward_backward: importance_sampling weights by the ratio``: sampler logprobs set
  so that the ratios are e, 1/e, e^0.5, e^-0.5 and 1, with advantages of both signs;
  the loss must be ``-sum(ratio * A)`` (a loss without the ratio is far from it);
- ``forward_backward: ppo clipping``: the same ratios, chosen so the clip binds on both
  sides (ratio e with A > 0, 1/e with A < 0); the loss must be the clipped one, which
  differs from the unclipped one by far more than the tolerance;
- ``gradient direction: cross_entropy``: on a fresh adapter, one ``forward_backward``
  of weights +1 on the reply and one ``optim_step`` must raise the reply's logprobs
  (lower the loss); ``gradient direction: negated weights``: weights -1, from another
  fresh adapter, must lower them;
- ``optim_step``: the step changes the learner's logprobs.

Example::

    # not run: needs a running backend
    rows = await run_checks(TRAINING_CHECKS, probe, timeout_s=120)
"""

from __future__ import annotations

import math
from typing import Any

from mint_envkit.conformance.probe import (
    AGREEMENT_BOUNDS,
    LEARNING_RATE,
    PPO_CLIP,
    Probe,
    check_loss,
    done,
    inputs_of,
    largest_difference,
    loss_terms,
    output_logprobs,
    reply_logprobs,
)
from mint_envkit.conformance.rows import Check
from mint_envkit.errors import BackendError

LOSSES = ("cross_entropy", "importance_sampling", "ppo", "cispo", "dro")
"""Every ``loss_fn`` of the SDK (tinker 0.22's ``LossFnType``)."""

SERVED_LOSSES = ("cross_entropy", "importance_sampling", "ppo")
"""The losses a training loop relies on (required rows); ``cispo`` and ``dro`` may be refused."""

LOSS_CONFIGS: dict[str, dict[str, float] | None] = {"dro": {"beta": 0.05}}
"""The ``loss_fn_config`` each loss is sent with (Tinker's documented ``dro`` example)."""

RATIO_SHIFTS = (1.0, -1.0, 0.5, -0.5, 0.0)
"""``log ratio`` of the reply's tokens, in turn, in the ratio and clipping rows."""

RATIO_ADVANTAGES = (1.0, -1.0, -1.0, 1.0, 2.0)
"""The advantage of each token, in turn: with :data:`RATIO_SHIFTS` PPO's clip binds on
the first two (ratio e, A > 0: clipped to 1.2; ratio 1/e, A < 0: clipped to 0.8) and not
on the others."""


def _loss_detail(probe: Probe, output: Any, loss_fn: str, backward: bool, datum: Any) -> str:
    where = f"{'forward_backward' if backward else 'forward'} {loss_fn}"
    values = output_logprobs(output, datum.model_input.length, where)
    loss = (output.metrics or {}).get("loss:sum")
    if loss_fn == "cross_entropy" and not backward:
        probe.behaviour = values[len(probe.prompt) - 1 :]
    if loss_fn not in SERVED_LOSSES:
        if loss is None or not math.isfinite(float(loss)):
            raise BackendError(f"{where}: metric loss:sum is {loss!r} (metrics {output.metrics})")
        return f"{len(values)} logprobs, loss:sum {float(loss):.4g}"
    want = check_loss(loss, loss_terms(datum, loss_fn, values), probe.dtype, where)
    return f"{len(values)} logprobs, loss:sum {float(loss):.4g} = the logprobs' loss {want:.4g}"


def _forward(loss_fn: str, backward: bool) -> Check:
    async def check(probe: Probe) -> str:
        client = probe.training
        call = client.forward_backward_async if backward else client.forward_async
        datum = probe.datum(loss_fn)
        output = await done(call([datum], loss_fn, LOSS_CONFIGS.get(loss_fn)))
        return _loss_detail(probe, output, loss_fn, backward, datum)

    name = f"{'forward_backward' if backward else 'forward'}: {loss_fn}"
    return Check(
        name, check, needs=("create_lora_training_client",), required=loss_fn in SERVED_LOSSES
    )


async def _ratio_datum(probe: Probe) -> Any:
    """The reply with sampler logprobs that put each token's ratio where :data:`RATIO_SHIFTS` says."""
    current = await reply_logprobs(probe)
    n = len(current)
    shifts = [RATIO_SHIFTS[i % len(RATIO_SHIFTS)] for i in range(n)]
    advantages = [RATIO_ADVANTAGES[i % len(RATIO_ADVANTAGES)] for i in range(n)]
    return probe.policy_datum([lp - d for lp, d in zip(current, shifts, strict=True)], advantages)


def _terms_without(datum: Any, values: list[float], loss_fn: str) -> list[float]:
    """The terms of the loss a faulty server computes instead (the fault the row catches)."""
    if loss_fn == "ppo":
        return loss_terms(datum, "importance_sampling", values)  # no clip
    return [-a for a in inputs_of(datum, "advantages")]  # no ratio: every ratio 1


async def _ratio_row(probe: Probe, loss_fn: str) -> str:
    datum = await _ratio_datum(probe)
    output = await done(probe.training.forward_backward_async([datum], loss_fn))
    where = f"forward_backward {loss_fn}"
    values = output_logprobs(output, datum.model_input.length, where)
    want = math.fsum(loss_terms(datum, loss_fn, values))
    other = math.fsum(_terms_without(datum, values, loss_fn))
    what = "unclipped" if loss_fn == "ppo" else "without the ratio"
    if abs(want - other) < 0.1:
        raise BackendError(
            f"{where}: could not test: the loss {what} ({other:.4g}) is too near the right "
            f"one ({want:.4g}) at these logprobs"
        )
    check_loss(
        (output.metrics or {}).get("loss:sum"),
        loss_terms(datum, loss_fn, values),
        probe.dtype,
        where,
    )
    if loss_fn == "ppo":
        return (
            f"ratios e^{{+-1, +-0.5, 0}}: loss:sum {want:.4g}, clipped to [{PPO_CLIP[0]}, "
            f"{PPO_CLIP[1]}] (unclipped it would be {other:.4g})"
        )
    return f"ratios e^{{+-1, +-0.5, 0}}: loss:sum {want:.4g} = -sum(ratio * A) (not {other:.4g})"


async def _ratio(probe: Probe) -> str:
    return await _ratio_row(probe, "importance_sampling")


async def _clipping(probe: Probe) -> str:
    return await _ratio_row(probe, "ppo")


async def _direction(probe: Probe, weight: float) -> str:
    """One step of weight ``weight`` on the reply from a fresh adapter; how the reply moved."""
    import tinker

    training = await probe.service.create_lora_training_client_async(
        base_model=probe.model, rank=8, seed=0
    )
    before = await reply_logprobs(probe, training)
    await done(training.forward_backward_async([probe.weighted_datum(weight)], "cross_entropy"))
    await done(training.optim_step_async(tinker.AdamParams(learning_rate=LEARNING_RATE)))
    after = await reply_logprobs(probe, training)
    moved = (math.fsum(after) - math.fsum(before)) / len(before)
    bound = AGREEMENT_BOUNDS[probe.dtype][1]
    loss = f"the reply's loss {-math.fsum(before):.4g} -> {-math.fsum(after):.4g}"
    if weight > 0 and moved <= bound:
        raise BackendError(
            f"a step on weights +1 did not raise the reply's logprobs ({loss}, mean change "
            f"{moved:+.3g}, needs > {bound:g}): the gradient does not descend the loss"
        )
    if weight < 0 and moved >= -bound:
        raise BackendError(
            f"a step on weights -1 did not lower the reply's logprobs ({loss}, mean change "
            f"{moved:+.3g}, needs < -{bound:g}): the gradient ignores the weights' sign"
        )
    return f"learning rate {LEARNING_RATE:g}: {loss}, the mean logprob {moved:+.3g} a token"


async def _descends(probe: Probe) -> str:
    return await _direction(probe, 1.0)


async def _negated(probe: Probe) -> str:
    return await _direction(probe, -1.0)


async def _optim_step(probe: Probe) -> str:
    import tinker

    before = await reply_logprobs(probe)
    await done(
        probe.training.forward_backward_async([probe.datum("cross_entropy")], "cross_entropy")
    )
    result = await done(
        probe.training.optim_step_async(tinker.AdamParams(learning_rate=LEARNING_RATE))
    )
    moved = largest_difference(await reply_logprobs(probe), before)
    if moved == 0.0:
        raise BackendError("the reply's logprobs are the same after the step: no update")
    metrics = sorted((getattr(result, "metrics", None) or {}).keys())
    return (
        f"learning rate {LEARNING_RATE:g}: logprobs moved by up to {moved:.3g}; metrics {metrics}"
    )


_TRAINING = ("create_lora_training_client",)

TRAINING_CHECKS: tuple[Check, ...] = (
    *(_forward(loss, backward=False) for loss in LOSSES),
    *(_forward(loss, backward=True) for loss in LOSSES),
    Check("forward_backward: importance_sampling weights by the ratio", _ratio, needs=_TRAINING),
    Check("forward_backward: ppo clipping", _clipping, needs=_TRAINING),
    Check("gradient direction: cross_entropy", _descends, needs=_TRAINING),
    Check("gradient direction: negated weights", _negated, needs=_TRAINING),
    Check("optim_step", _optim_step, needs=_TRAINING),
)
"""The training rows, in order."""
