"""The session and sampling rows of a conformance run.

Each check makes its calls through the SDK, as a training loop would, and verifies the
answers; it returns what it verified (the row's detail) or raises with what was wrong.
The training rows are :mod:`.training`, the sampling distribution's (temperature,
``top_k``, ``top_p``) :mod:`.sampling`, the saves :mod:`.saves`; :mod:`.checks` puts
them in order.

Example::

    # not run: needs a running backend
    rows = await run_checks(SESSION_CHECKS, Probe(service=service, model=model,
                                                  dtype="float32"), 120)
"""

from __future__ import annotations

from typing import Any

from mint_envkit.conformance.probe import (
    AGREEMENT_BOUNDS,
    Probe,
    check_logprobs,
    done,
    in_thread,
    largest_difference,
)
from mint_envkit.conformance.rows import Check
from mint_envkit.errors import BackendError
from mint_envkit.rl.datums import Sample, plan_datums, to_datums
from mint_envkit.rl.diagnostics import learner_logprobs, sample_train_metrics

SEED = 7


def params(**values: Any) -> Any:
    """``tinker.SamplingParams``: 8 tokens at temperature 1, seed 7, unless ``values`` say.

    Example::

        params(max_tokens=1).max_tokens   # 1
    """
    import tinker

    return tinker.SamplingParams(**{"max_tokens": 8, "temperature": 1.0, "seed": SEED, **values})


def prompt_input(probe: Probe) -> Any:
    """The probe's prompt as a ``tinker.ModelInput``.

    Example::

        prompt_input(Probe(service=None, model="m", dtype="float32")).length   # 16
    """
    import tinker

    return tinker.ModelInput.from_ints(probe.prompt)


async def _capabilities(probe: Probe) -> str:
    caps = await probe.service.get_server_capabilities_async()
    names = [m.model_name for m in caps.supported_models or [] if m.model_name]
    if probe.model not in names:
        raise BackendError(f"{probe.model!r} is not among the served models {names}; use --model")
    return f"serves {len(names)} model(s), {probe.model} among them"


async def _create_training(probe: Probe) -> str:
    probe.training = await probe.service.create_lora_training_client_async(
        base_model=probe.model, rank=8, seed=0
    )
    return f"rank 8, run {probe.training.model_id}"


async def _get_tokenizer(probe: Probe) -> str:
    tokenizer = await in_thread(probe.training.get_tokenizer)
    ids = list(tokenizer.encode("hello world", add_special_tokens=False))
    if not ids or "hello" not in tokenizer.decode(ids):
        raise BackendError(f"the tokenizer does not round-trip 'hello world' ({ids})")
    probe.tokenizer = tokenizer
    return f"{type(tokenizer).__name__}, {len(probe.prompt)}-token prompt"


async def _base_sampler(probe: Probe) -> str:
    probe.base = await probe.service.create_sampling_client_async(base_model=probe.model)
    return "a sampling client of the base model"


async def _sample_logprobs(probe: Probe) -> str:
    response = await probe.base.sample_async(prompt_input(probe), 2, params())
    sequences = list(response.sequences)
    if len(sequences) != 2:
        raise BackendError(f"asked for 2 samples, got {len(sequences)}")
    for seq in sequences:
        if not 1 <= len(seq.tokens) <= 8 or seq.stop_reason not in ("stop", "length"):
            raise BackendError(f"a sample of {len(seq.tokens)} tokens, stop {seq.stop_reason!r}")
        check_logprobs(seq.logprobs or [], len(seq.tokens), "sample")
    lengths = "+".join(str(len(s.tokens)) for s in sequences)
    return f"2 samples ({lengths} tokens), a finite logprob <= 0 per token"


def _stop_string(tokenizer: Any, tokens: list[int]) -> str:
    """The text of the first token (after the first) that first appears there, else newline."""
    for i in range(1, len(tokens)):
        text = tokenizer.decode(tokens[i : i + 1])
        if text.strip() and "\ufffd" not in text and text not in tokenizer.decode(tokens[:i]):
            return text
    return "\n"


async def _sample_stop(probe: Probe) -> str:
    free = (await probe.base.sample_async(prompt_input(probe), 1, params(max_tokens=16))).sequences[
        0
    ]
    stop = _stop_string(probe.tokenizer, list(free.tokens))
    got = await probe.base.sample_async(prompt_input(probe), 1, params(max_tokens=16, stop=[stop]))
    seq = got.sequences[0]
    text, before = (probe.tokenizer.decode(t) for t in (seq.tokens, seq.tokens[:-1]))
    if seq.stop_reason == "stop" and stop in text and stop not in before:
        same = list(seq.tokens) == list(free.tokens[: len(seq.tokens)])
        drawn = "the same draw as without it" if same else "another draw"
        return f"stop {stop!r}: stopped after {len(seq.tokens)} tokens ({drawn})"
    if seq.stop_reason == "length" and len(seq.tokens) == 16 and stop not in text:
        return f"stop {stop!r}: not drawn in 16 tokens (the seed drew another reply)"
    raise BackendError(
        f"stop {stop!r}: {len(seq.tokens)} tokens, stop_reason {seq.stop_reason!r}, text {text!r}"
    )


async def _compute_logprobs(probe: Probe) -> str:
    import tinker

    tokens = probe.prompt + probe.reply
    values = await probe.base.compute_logprobs_async(tinker.ModelInput.from_ints(tokens))
    if len(values) != len(tokens) or values[0] is not None:
        raise BackendError(f"{len(values)} values for {len(tokens)} tokens, first {values[:1]}")
    check_logprobs(values[1:], len(tokens) - 1, "compute_logprobs")
    return f"{len(values)} values for {len(tokens)} tokens, the first None"


async def _topk_prompt_logprobs(probe: Probe) -> str:
    response = await probe.base.sample_async(
        prompt_input(probe),
        1,
        params(max_tokens=1),
        include_prompt_logprobs=True,
        topk_prompt_logprobs=3,
    )
    topk = response.topk_prompt_logprobs
    if topk is None or len(topk) != len(probe.prompt):
        raise BackendError(f"topk_prompt_logprobs: {topk!r:.200} for {len(probe.prompt)} tokens")
    rows = [row for row in topk[1:] if row is not None]
    if len(rows) != len(topk) - 1 or any(not 1 <= len(row) <= 3 for row in rows):
        raise BackendError(
            f"topk_prompt_logprobs: not up to 3 (token, logprob) a token: {topk!r:.200}"
        )
    return f"top 3 at each of {len(rows)} positions"


async def _agreement(probe: Probe) -> str:
    """The sampled logprobs of 4 x 16 tokens against the learner's ``forward`` of them."""
    response = await probe.snapshot.sample_async(prompt_input(probe), 4, params(max_tokens=16))
    samples = [
        Sample(
            prompt=probe.prompt,
            reply=list(s.tokens),
            logprobs=list(s.logprobs or []),
            advantage=0.0,
        )
        for s in response.sequences
    ]
    for s in samples:
        check_logprobs(s.logprobs, len(s.reply), "sample")
    data = to_datums(samples, [[0.0] * len(s.reply) for s in samples])
    output = await done(probe.training.forward_async(data, "importance_sampling"))
    learner = learner_logprobs(output.loss_fn_outputs, samples, plan_datums(samples))
    sampled = [s.logprobs for s in samples]
    worst = max(largest_difference(a, b) for a, b in zip(sampled, learner, strict=True))
    v1 = sample_train_metrics(sampled, learner)["optim/kl_sample_train_v1"]
    max_bound, v1_bound = AGREEMENT_BOUNDS[probe.dtype]
    figures = (
        f"{sum(map(len, sampled))} tokens: max |diff| {worst:.3g} (bound {max_bound:g}), "
        f"kl_sample_train_v1 {v1:.3g} (bound |v1| {v1_bound:g}, {probe.dtype})"
    )
    if worst > max_bound or abs(v1) > v1_bound:
        raise BackendError(f"the sampler and the learner disagree: {figures}")
    return figures


SESSION_CHECKS: tuple[Check, ...] = (
    Check("get_server_capabilities", _capabilities),
    Check("create_lora_training_client", _create_training),
    Check("get_tokenizer", _get_tokenizer, needs=("create_lora_training_client",)),
    Check("create_sampling_client(base_model)", _base_sampler),
    Check("sample: logprobs", _sample_logprobs, needs=("create_sampling_client(base_model)",)),
    Check(
        "sample: stop strings",
        _sample_stop,
        needs=("create_sampling_client(base_model)", "get_tokenizer"),
    ),
    Check("compute_logprobs", _compute_logprobs, needs=("create_sampling_client(base_model)",)),
    Check(
        "sample: topk_prompt_logprobs",
        _topk_prompt_logprobs,
        needs=("create_sampling_client(base_model)",),
        required=False,
    ),
)
"""Sessions, the clients, plain sampling and ``compute_logprobs``."""

AGREEMENT = Check(
    "sampler vs learner logprobs", _agreement, needs=("create_sampling_client(model_path)",)
)
"""The sampled logprobs of the trained weights against the learner's."""
