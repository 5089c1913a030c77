"""What the checks of a conformance run share: the probe, its data, the bounds.

:class:`Probe` carries the clients and what earlier rows found (a checkpoint's path, the
logprobs at a saved state) to later rows. The training data is one prompt and one
fixed reply (:meth:`Probe.datum`); the logprobs compared after a step, a save or a
load are the learner's ``forward`` logprobs of that reply (:func:`reply_logprobs`).

Example::

    # not run: needs a running backend
    probe = Probe(service=service, model="mint-envkit/tiny-qwen3", dtype="float32")
    rows = await run_checks(CHECKS, probe, timeout_s=120)
"""

from __future__ import annotations

import asyncio
import math
import threading
import uuid
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from mint_envkit.errors import BackendError
from mint_envkit.rl.datums import Sample, to_datum, to_datums
from mint_envkit.rl.sft import SupervisedExample, supervised_datum

AGREEMENT_BOUNDS: dict[str, tuple[float, float]] = {
    "float32": (1e-4, 1e-5),
    "bfloat16": (0.03, 0.004),
}
"""Per dtype: the largest |sampled - learner| logprob of a token, and the largest
|mean(sampled - learner)| (``optim/kl_sample_train_v1``) that agree. The embedded
engine's own tested bounds (``tests/local/engine/test_engine_numerics.py``,
``TOLERANCE``, measured in ``docs/engine.md``, "fp32 logprobs"); also the tolerance of
"the same weights give the same logprobs" after a load."""

LEARNING_RATE = 1e-3
"""The learning rate of every ``optim_step`` the checks take (Adam's other values: the SDK's)."""

PROMPT_TEXT = "A conformance check asks the server every call a training loop makes."
REPLY_TEXT = " It answers each one, or says it does not serve it."
FALLBACK_PROMPT = list(range(100, 116))
"""Token ids of the prompt (and, reversed, of the reply) when no tokenizer could be loaded."""


@attrs.define
class Probe:
    """The clients and the findings that the rows of one conformance run share.

    Example::

        Probe(service=None, model="mint-envkit/tiny-qwen3", dtype="float32").prompt[:3]
        # [100, 101, 102]: no tokenizer yet
    """

    service: Any
    model: str
    dtype: str
    name: str = attrs.field(factory=lambda: f"conformance-{uuid.uuid4().hex[:8]}")
    tokenizer: Any = None
    training: Any = None
    base: Any = None
    snapshot: Any = None
    sampler_path: str | None = None
    state_path: str | None = None
    at_state: list[float] | None = None
    step_from_state: list[float] | None = None
    snapshot_logprobs: list[float] | None = None
    behaviour: list[float] | None = None
    created: list[str] = attrs.field(factory=list)

    @property
    def prompt(self) -> list[int]:
        """The prompt's tokens: :data:`PROMPT_TEXT` encoded, else :data:`FALLBACK_PROMPT`.

        Example::

            len(Probe(service=None, model="m", dtype="float32").prompt)   # 16
        """
        if self.tokenizer is None:
            return list(FALLBACK_PROMPT)
        return list(self.tokenizer.encode(PROMPT_TEXT, add_special_tokens=False))

    @property
    def reply(self) -> list[int]:
        """The fixed reply's tokens: :data:`REPLY_TEXT` encoded, else the fallback reversed.

        Example::

            Probe(service=None, model="m", dtype="float32").reply[:2]   # [115, 114]
        """
        if self.tokenizer is None:
            return FALLBACK_PROMPT[::-1]
        return list(self.tokenizer.encode(REPLY_TEXT, add_special_tokens=False))

    def datum(self, loss_fn: str) -> Any:
        """The prompt and the reply as a datum for ``loss_fn``.

        ``cross_entropy``: weights 1 on the reply. The policy losses: advantage 1 on the
        reply, and as sampler logprobs the learner's own (:attr:`behaviour`, set by the
        ``forward: cross_entropy`` row; -1 per token before it), so the ratio is about 1.

        Example::

            datum = Probe(service=None, model="m", dtype="float32").datum("ppo")
            sorted(datum.loss_fn_inputs)   # ['advantages', 'logprobs', 'target_tokens']
        """
        if loss_fn == "cross_entropy":
            return supervised_datum(SupervisedExample(self.prompt, self.reply))
        logprobs = self.behaviour or [-1.0] * len(self.reply)
        sample = Sample(prompt=self.prompt, reply=self.reply, logprobs=logprobs, advantage=1.0)
        return to_datums([sample], [[1.0] * len(self.reply)])[0]

    def weighted_datum(self, weight: float) -> Any:
        """The prompt and the reply as a ``cross_entropy`` datum, weight ``weight`` on the reply.

        Example::

            datum = Probe(service=None, model="m", dtype="float32").weighted_datum(-1.0)
            datum.loss_fn_inputs["weights"].data[-1]   # -1.0
        """
        import tinker

        tokens = self.prompt + self.reply
        n = len(tokens) - 1
        weights = [0.0] * (len(self.prompt) - 1) + [weight] * len(self.reply)
        return tinker.Datum(
            model_input=tinker.ModelInput.from_ints(tokens[:-1]),
            loss_fn_inputs={
                "target_tokens": tinker.TensorData(data=tokens[1:], dtype="int64", shape=[n]),
                "weights": tinker.TensorData(data=weights, dtype="float32", shape=[n]),
            },
        )

    def policy_datum(self, sampler_logprobs: Sequence[float], advantages: Sequence[float]) -> Any:
        """The prompt and the reply as a policy-loss datum with these per-reply-token inputs.

        Example::

            probe = Probe(service=None, model="m", dtype="float32")
            datum = probe.policy_datum([-1.0] * 16, [2.0] * 16)
            datum.loss_fn_inputs["advantages"].data[-1]   # 2.0
        """
        return to_datum(self.prompt, self.reply, list(advantages), list(sampler_logprobs))

    def tinker_name(self, what: str) -> str:
        """A checkpoint name of this run: ``conformance-<hex>-<what>``.

        Example::

            Probe(service=None, model="m", dtype="float32").tinker_name("w")   # 'conformance-1a2b3c4d-w'
        """
        return f"{self.name}-{what}"


async def done(call: Awaitable[Any]) -> Any:
    """The result of an SDK call that answers with a future (``forward_async``, ...).

    Example::

        # not run: needs a training client
        output = await done(training.forward_async([datum], "cross_entropy"))
    """
    future = await call
    return await future.result_async()


async def on_sdk_loop(client: Any, call: Awaitable[Any], response: Any) -> Any:
    """Run one of ``mint.mint``'s async calls on the SDK's own event loop; its ``response``.

    ``mint.mint``'s ``*_async`` functions use the SDK's HTTP client, which belongs to the
    SDK's loop (its background thread); ``response`` is the pydantic class of the result.

    Example::

        # not run: needs a training client
        fb = await on_sdk_loop(training, forward_backward_reverse_kl_async(training, ...),
                               ForwardBackwardReverseKLResponse)
    """
    future = await client.holder.run_coroutine_threadsafe(call)
    value = await future
    return value if isinstance(value, response) else response.model_validate(value)


def in_thread(work: Callable[[], Any]) -> Awaitable[Any]:
    """Run a blocking SDK call in a daemon thread; await its result.

    Not the event loop's executor: a call that never returns would keep ``asyncio.run``
    (and so the command) waiting for its thread at exit.

    Example::

        # not run: needs a training client
        tokenizer = await in_thread(training.get_tokenizer)
    """
    loop = asyncio.get_running_loop()
    result: asyncio.Future[Any] = loop.create_future()

    def settle(value: Any, error: BaseException | None) -> None:
        if result.done():
            return
        if error is not None:
            result.set_exception(error)
        else:
            result.set_result(value)

    def target() -> None:
        value, error = None, None
        try:
            value = work()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        loop.call_soon_threadsafe(settle, value, error)

    threading.Thread(target=target, name="mint-envkit-conformance", daemon=True).start()
    return result


def check_logprobs(values: Sequence[Any], count: int, where: str) -> list[float]:
    """``values`` as floats, checked: ``count`` of them, each finite and <= 0.

    Raises:
        BackendError: another count, or a value that is not a log-probability.

    Example::

        check_logprobs([-0.5, -2.0], 2, "sample")   # [-0.5, -2.0]
    """
    if len(values) != count:
        raise BackendError(f"{where}: {len(values)} logprobs for {count} tokens")
    out = [float(v) for v in values]
    bad = [v for v in out if not math.isfinite(v) or v > 1e-4]
    if bad:
        raise BackendError(f"{where}: {bad[0]!r} is not a log-probability")
    return out


def output_logprobs(output: Any, count: int, where: str) -> list[float]:
    """The per-token ``logprobs`` of a one-datum ``forward(_backward)`` output, checked.

    Raises:
        BackendError: not one output, no ``logprobs``, or values that are not logprobs.

    Example::

        # not run: needs a forward output
        output_logprobs(output, len(datum.model_input.to_ints()), "forward")
    """
    outputs = list(getattr(output, "loss_fn_outputs", None) or [])
    if len(outputs) != 1 or "logprobs" not in outputs[0]:
        raise BackendError(f"{where}: expected one output with logprobs, got {outputs!r:.200}")
    values = outputs[0]["logprobs"]
    return check_logprobs(list(getattr(values, "data", values)), count, where)


async def reply_logprobs(probe: Probe, training: Any = None) -> list[float]:
    """The learner's ``forward`` logprobs of the probe's reply tokens (after its prompt).

    Example::

        # not run: needs a training client
        before = await reply_logprobs(probe)
    """
    datum = probe.datum("cross_entropy")
    output = await done((training or probe.training).forward_async([datum], "cross_entropy"))
    every = output_logprobs(output, datum.model_input.length, "forward")
    return every[len(probe.prompt) - 1 :]


async def train_step(probe: Probe, training: Any = None) -> list[float]:
    """One ``forward_backward`` (cross_entropy) and ``optim_step``; the reply's logprobs after.

    Example::

        # not run: needs a training client
        after = await train_step(probe)
    """
    import tinker

    client = training or probe.training
    await done(client.forward_backward_async([probe.datum("cross_entropy")], "cross_entropy"))
    await done(client.optim_step_async(tinker.AdamParams(learning_rate=LEARNING_RATE)))
    return await reply_logprobs(probe, client)


def largest_difference(a: Sequence[float], b: Sequence[float]) -> float:
    """max |a_i - b_i| (0 for empty sequences).

    Example::

        largest_difference([-1.0, -2.0], [-1.0, -2.5])   # 0.5
    """
    return max((abs(x - y) for x, y in zip(a, b, strict=True)), default=0.0)


def same_logprobs(got: Sequence[float], want: Sequence[float], probe: Probe, what: str) -> float:
    """Check ``got`` equals ``want`` within the dtype's bound; return the largest difference.

    Raises:
        BackendError: they differ by more than the bound (:data:`AGREEMENT_BOUNDS`).

    Example::

        probe = Probe(service=None, model="m", dtype="float32")
        same_logprobs([-1.0], [-1.0], probe, "after load_state")   # 0.0
    """
    bound = AGREEMENT_BOUNDS[probe.dtype][0]
    diff = largest_difference(got, want)
    if diff > bound:
        raise BackendError(
            f"{what}: the reply's logprobs differ by up to {diff:.3g} (bound {bound:g}, "
            f"{probe.dtype})"
        )
    return diff


PPO_CLIP = (0.8, 1.2)
"""The PPO ratio clip the rows send ``ppo`` with (no ``loss_fn_config``: Tinker's defaults)."""

LOSS_TOLERANCE: dict[str, float] = {"float32": 1e-4, "bfloat16": 2e-2}
"""Per dtype: how far (relative to the sum of the terms' sizes) a reported ``loss:sum`` may
be from the loss computed from the returned logprobs."""


def inputs_of(datum: Any, key: str) -> list[float]:
    """A datum's ``loss_fn_inputs[key]`` as floats.

    Example::

        inputs_of(Probe(service=None, model="m", dtype="float32").weighted_datum(1.0),
                  "weights")[-1]   # 1.0
    """
    values = datum.loss_fn_inputs[key]
    return [float(v) for v in getattr(values, "data", values)]


def loss_terms(datum: Any, loss_fn: str, logprobs: Sequence[float]) -> list[float]:
    """Each position's term of Tinker's loss, from the learner's ``logprobs`` of the datum.

    ``cross_entropy``: ``-w * lp``; ``importance_sampling``: ``-exp(lp - lp_sampler) * A``;
    ``ppo``: ``-min(r * A, clip(r, 0.8, 1.2) * A)`` with ``r = exp(lp - lp_sampler)``.
    The loss is their sum (``loss:sum``).

    Example::

        datum = Probe(service=None, model="m", dtype="float32").weighted_datum(1.0)
        sum(loss_terms(datum, "cross_entropy", [-0.5] * 31))   # 8.0: 16 reply tokens
    """
    if loss_fn == "cross_entropy":
        return [-w * lp for w, lp in zip(inputs_of(datum, "weights"), logprobs, strict=True)]
    sampler = inputs_of(datum, "logprobs")
    advantages = inputs_of(datum, "advantages")
    terms = []
    for lp, old, a in zip(logprobs, sampler, advantages, strict=True):
        ratio = math.exp(lp - old)
        if loss_fn == "importance_sampling":
            terms.append(-ratio * a)
        else:
            clipped = min(max(ratio, PPO_CLIP[0]), PPO_CLIP[1])
            terms.append(-min(ratio * a, clipped * a))
    return terms


def check_loss(reported: Any, terms: Sequence[float], dtype: str, where: str) -> float:
    """Check a reported ``loss:sum`` against the sum of ``terms``; return that sum.

    Raises:
        BackendError: no finite loss, or one farther from the sum than
            :data:`LOSS_TOLERANCE` allows.

    Example::

        check_loss(8.0, [4.0, 4.0], "float32", "forward cross_entropy")   # 8.0
    """
    if reported is None or not math.isfinite(float(reported)):
        raise BackendError(f"{where}: metric loss:sum is {reported!r}")
    want = math.fsum(terms)
    allowed = LOSS_TOLERANCE[dtype] * math.fsum(abs(t) for t in terms) + 1e-6
    if abs(float(reported) - want) > allowed:
        raise BackendError(
            f"{where}: loss:sum {float(reported):.6g}, but the returned logprobs give "
            f"{want:.6g} (tolerance {allowed:.2g})"
        )
    return want
