"""Training a LoRA client: datums, the forward pass, the losses, backward, the AdamW step.

Losses are sums over tokens and datums, as Tinker's: ``cross_entropy``,
``importance_sampling`` and ``ppo`` (formulas at ``Engine.forward``).

Gradients accumulate across ``forward(backward=True)`` calls until :func:`optim_step`.

Example::

    from mint_envkit.local.engine import training
    from mint_envkit.local.engine.budget import Control

    # the package example's state, trainer and RL datums
    out = training.forward(state, trainer, data, "importance_sampling", None, backward=True,
                           control=Control(max_tokens_per_pass=4096))
    stats = training.optim_step(trainer, 3e-3, 0.9, 0.95, 1e-12, 0.0, 0.0)
    assert stats["step"] == trainer.step == 2
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Sequence
from typing import Any

import torch

from mint_envkit.checks import is_number

from .adapters import activate
from .budget import Control, release_after
from .inputs import float_list, int_list
from .numerics import all_finite, causal_lm, frozen_head, target_logprobs
from .prefix import (
    PACKED_ROW_MAX_TOKENS,
    SHARED_PREFIX_MIN_TOKENS,
    Unit,
    pack,
    packs_exactly,
    plan,
    shared_logprobs,
    supports,
)
from .records import BaseModelState, EngineError, ForwardOutput, Trainer, context_length

LOGIT_BUDGET = 1 << 23
"""Logits of one micro-batch hold at most this many floats (32 MB in fp32).

It also bounds the activations kept for the backward pass, which grow with the
micro-batch's tokens: on SmolLM2-135M (vocab 49,152) a micro-batch is at most 170
tokens (at 1 << 26: 1,365, cut to the server's 1,024; issue 21, docs/benchmarks.md)."""

ACTIVATION_BUDGET = 1 << 22
"""A shared-prefix training pass holds at most this many ``hidden_size * num_hidden_layers``
units of tokens (SmolLM2-135M: 242 tokens, two of the learning demo's first-step groups;
the built-in tiny models: the server's per-pass limit), which bounds the activations kept
for the backward pass; its logits are not kept. On SmolLM2, twice this budget trained the
demo's first step in 8.9-9.9 s instead of 9.6-10.2 s and held 640 MB more at its peak
(issue 21, docs/benchmarks.md)."""

REQUIRED_INPUTS = {
    "cross_entropy": ("target_tokens",),
    "importance_sampling": ("target_tokens", "logprobs", "advantages"),
    "ppo": ("target_tokens", "logprobs", "advantages"),
}
"""The ``loss_fn_inputs`` each supported loss needs."""


def _check_datum(i: int, datum: Any, loss_fn: str, vocab: int, max_len: int) -> dict[str, list]:
    if not isinstance(datum, dict):
        raise EngineError(f"datum {i} must be a dict, got {type(datum).__name__}")
    tokens = int_list(datum.get("model_input"), f"datum {i} model_input")
    n = len(tokens)
    if n == 0:
        raise EngineError(f"datum {i} has an empty model_input; give at least one token")
    if n > max_len:
        raise EngineError(f"datum {i} has {n} tokens, more than the model's context of {max_len}")
    inputs = datum.get("loss_fn_inputs")
    if not isinstance(inputs, dict):
        raise EngineError(f"datum {i} needs loss_fn_inputs (a dict of per-token arrays)")
    required = REQUIRED_INPUTS[loss_fn]
    missing = [k for k in required if k not in inputs]
    if missing:
        raise EngineError(
            f"datum {i}: loss_fn {loss_fn!r} needs loss_fn_inputs {list(required)}, "
            f"missing {missing}"
        )
    item: dict[str, list[Any]] = {"tokens": tokens}
    item["target_tokens"] = int_list(
        inputs["target_tokens"], f"datum {i} loss_fn_inputs.target_tokens"
    )
    for key in ("weights", "logprobs", "advantages"):
        if key in inputs and inputs[key] is not None:
            item[key] = float_list(inputs[key], f"datum {i} loss_fn_inputs.{key}")
    if loss_fn == "cross_entropy" and "weights" not in item:
        item["weights"] = [1.0] * n
    for key, values in item.items():
        if len(values) != n:
            raise EngineError(
                f"datum {i}: {key} has {len(values)} entries but model_input has {n}; "
                "every per-token array must have one entry per model_input token"
            )
    for key in ("tokens", "target_tokens"):
        bad = [t for t in item[key] if t < 0 or t >= vocab]
        if bad:
            what = "model_input" if key == "tokens" else "target_tokens"
            raise EngineError(
                f"datum {i}: {what} holds token id {bad[0]} outside the vocabulary [0, {vocab})"
            )
    return item


def _check_data(data: Any, loss_fn: str, vocab: int, max_len: int) -> list[dict[str, list]]:
    if not isinstance(data, Sequence) or isinstance(data, (str, bytes)) or not data:
        raise EngineError("data must be a non-empty list of datums")
    return [_check_datum(i, datum, loss_fn, vocab, max_len) for i, datum in enumerate(data)]


def _ppo_clip(loss_fn: str, config: Any) -> tuple[float, float]:
    """``(low, high)`` of the PPO ratio clip from ``loss_fn_config`` (0.8 / 1.2 by default)."""
    config = config or {}
    if not isinstance(config, dict):
        raise EngineError(f"loss_fn_config must be a dict or null, got {config!r}")
    low, high = 0.8, 1.2
    if loss_fn == "ppo":
        low = config.get("clip_low_threshold", 0.8)
        high = config.get("clip_high_threshold", 1.2)
        for key, value in (("clip_low_threshold", low), ("clip_high_threshold", high)):
            if not is_number(value):
                raise EngineError(f"loss_fn_config.{key} must be a number, got {value!r}")
        if not 0 <= low <= 1 <= high:
            raise EngineError(
                f"ppo needs 0 <= clip_low_threshold <= 1 <= clip_high_threshold, got "
                f"{low} and {high}"
            )
    return low, high


def logprobs_batch(
    model: Any, token_lists: list[list[int]], targets: list[list[int]]
) -> torch.Tensor:
    """Padded (B, T) target logprobs of one micro-batch (right padding, causal: no mask needed).

    Example::

        assert logprobs_batch(state.peft, [[1, 2, 3]], [[2, 3, 4]]).shape == (1, 3)
    """
    dev = next(model.parameters()).device
    width = max(len(t) for t in token_lists)
    ids = torch.zeros((len(token_lists), width), dtype=torch.long)
    tgt = torch.zeros((len(token_lists), width), dtype=torch.long)
    for row, (toks, tg) in enumerate(zip(token_lists, targets, strict=True)):
        ids[row, : len(toks)] = torch.tensor(toks)
        tgt[row, : len(tg)] = torch.tensor(tg)
    ids, tgt = ids.to(dev), tgt.to(dev)
    # fp32 head and log-softmax, shared with sampling (engine/numerics.py, issue #11)
    return target_logprobs(model, ids, tgt)


def micro_batches(items: list[dict[str, list]], per_batch: int) -> list[list[dict[str, list]]]:
    """Consecutive datums grouped so that ``rows * longest`` stays within ``per_batch``.

    A datum longer than ``per_batch`` gets a micro-batch of its own.

    Example::

        assert [len(b) for b in micro_batches([{"tokens": [1] * 3}] * 5, per_batch=6)] == [2, 2, 1]
    """
    batches = []
    start = 0
    while start < len(items):
        end, width = start, 0
        while end < len(items):
            width2 = max(width, len(items[end]["tokens"]))
            if end > start and width2 * (end - start + 1) > per_batch:
                break
            width, end = width2, end + 1
        batches.append(items[start:end])
        start = end
    return batches


def _loss(
    chunk: list[dict[str, list]],
    logp: torch.Tensor,
    loss_fn: str,
    clip: tuple[float, float],
    dev: Any,
) -> torch.Tensor:
    """The summed loss of one micro-batch, given its padded learner logprobs."""
    mask = torch.zeros_like(logp, dtype=torch.bool)
    for row, c in enumerate(chunk):
        mask[row, : len(c["tokens"])] = True

    def padded(key: str) -> torch.Tensor:
        out = torch.zeros(logp.shape, dtype=torch.float32)
        for row, c in enumerate(chunk):
            out[row, : len(c[key])] = torch.tensor(c[key], dtype=torch.float32)
        return out.to(dev)

    if loss_fn == "cross_entropy":
        per_token = -padded("weights") * logp
    else:
        adv = padded("advantages")
        ratio = torch.exp(logp - padded("logprobs"))
        if loss_fn == "importance_sampling":
            per_token = -ratio * adv
        else:
            clipped = torch.clamp(ratio, clip[0], clip[1])
            per_token = -torch.minimum(ratio * adv, clipped * adv)
    return torch.where(mask, per_token, torch.zeros_like(per_token)).sum()


def forward(
    base: BaseModelState,
    trainer: Trainer,
    data: Any,
    loss_fn: str,
    loss_fn_config: Any,
    *,
    backward: bool,
    control: Control,
    between: Callable[[], None] | None = None,
    piece_tokens: int | None = None,
) -> ForwardOutput:
    """The learner's logprobs and the loss of ``data``; with ``backward`` add its gradient.

    ``loss_fn`` must be one of ``SUPPORTED_LOSSES`` (the protocol checks it). The
    datums run in micro-batches of at most ``control.max_tokens_per_pass`` padded
    tokens (and the logits budget, and ``piece_tokens`` when given); gradients
    accumulate across them. A cancel between micro-batches puts the gradient back
    as it was before the call. ``between()``, when given, runs after every
    micro-batch but the last (the server runs waiting sample requests there); the
    trainer's adapter is made active again after it. A non-finite loss or logprob is
    refused (EngineError(user); the gradient is left as it was): results go to JSON.

    Example::

        out = forward(state, trainer, data, "ppo", {"clip_high_threshold": 1.3},
                      backward=True, control=Control(max_tokens_per_pass=4096))
        assert len(out.logprobs) == len(data)
    """
    clip = _ppo_clip(loss_fn, loss_fn_config)
    model = base.loaded.model
    items = _check_data(data, loss_fn, base.loaded.vocab_size, context_length(base))
    activate(base, trainer.adapter)
    dev = base.loaded.device
    results: list[list[float]] = []
    total = 0.0
    per_batch = min(
        control.max_tokens_per_pass, max(1, LOGIT_BUDGET // max(1, base.loaded.vocab_size))
    )
    if piece_tokens is not None:
        per_batch = max(1, min(per_batch, piece_tokens))
    grads = {}
    if backward:  # to undo this call's part of the gradient if it is cancelled or fails
        grads = {k: p.grad.clone() for k, p in trainer.params.items() if p.grad is not None}
    try:
        chunks = _passes(
            model,
            items,
            per_batch,
            _shared_budget(base, control.max_tokens_per_pass, per_batch, piece_tokens),
        )
        for index, chunk in enumerate(chunks):
            control.check()
            total += _run_chunk(model, chunk, loss_fn, clip, dev, backward, results)
            if between is not None and index + 1 < len(chunks):
                between()
                activate(base, trainer.adapter)
        if not math.isfinite(total) or not all(all_finite(row) for row in results):
            raise EngineError(
                f"forward of model_id {trainer.model_id} gave a non-finite loss or logprobs "
                f"(loss:sum {total}), so nothing was accumulated: check the datums' inputs (a "
                "sampler logprob far below the learner's makes the importance ratio overflow) "
                "and the weights (a loaded checkpoint that overflows the model)"
            )
    except BaseException:
        if backward:  # a cancelled or failed call leaves no partial gradient behind
            for key, p in trainer.params.items():
                p.grad = grads.get(key)
        raise
    finally:
        release_after(dev, sum(len(i["tokens"]) for i in items), training=True)
    return ForwardOutput(logprobs=results, metrics={"loss:sum": total})


def _shared_budget(base: BaseModelState, per_pass: int, per_batch: int, piece: int | None) -> int:
    """Tokens of one shared-prefix pass: at most ``per_pass`` (the server's limit) and
    ``piece``, and bounded by the activations it keeps for the backward pass
    (:data:`ACTIVATION_BUDGET`) when the head keeps no logits (a frozen plain head,
    :func:`.numerics.frozen_head`), else by ``per_batch`` (the logits budget); a packed
    row (float32) at most :data:`.prefix.PACKED_ROW_MAX_TOKENS` (its attention mask)."""
    lm = causal_lm(base.loaded.model)
    size = getattr(lm.config, "hidden_size", 0) * getattr(lm.config, "num_hidden_layers", 0)
    if not frozen_head(lm.get_output_embeddings()) or size <= 0:
        budget = per_batch
    else:
        budget = min(per_pass, ACTIVATION_BUDGET // size)
        budget = min(budget, piece) if piece is not None else budget
    if packs_exactly(base.loaded.model):
        budget = min(budget, PACKED_ROW_MAX_TOKENS)
    return max(1, budget)


def _passes(
    model: Any, items: list[dict[str, list]], per_batch: int, shared_budget: int
) -> list[Any]:
    """The micro-batches of one call, in datum order: runs of datums sharing a prompt are
    :class:`.prefix.Unit` s (a prefix runs once), consecutive units packed into passes of
    ``shared_budget`` tokens; the other datums padded batches as before."""
    if not supports(model):
        return micro_batches(items, per_batch)
    padded = not packs_exactly(model)
    out: list[Any] = []
    plain: list[dict[str, list]] = []
    units: list[Unit] = []
    for unit in plan(items, shared_budget, SHARED_PREFIX_MIN_TOKENS):
        if unit.shared:
            out.extend(micro_batches(plain, per_batch))
            units.append(unit)
            plain = []
        else:
            out.extend(pack(units, shared_budget, padded=padded))
            plain.extend(unit.items)
            units = []
    return out + pack(units, shared_budget, padded=padded) + micro_batches(plain, per_batch)


def _run_chunk(
    model: Any,
    chunk: list[dict[str, list]] | Unit,
    loss_fn: str,
    clip: tuple[float, float],
    dev: Any,
    backward: bool,
    results: list[list[float]],
) -> float:
    """One micro-batch: its loss (and gradient); append its logprobs to ``results``."""
    with contextlib.nullcontext() if backward else torch.no_grad():
        if isinstance(chunk, list) and chunk and isinstance(chunk[0], Unit):
            key = "weights" if loss_fn == "cross_entropy" else "advantages"
            logp = shared_logprobs(model, chunk, key)
            chunk = [item for unit in chunk for item in unit.items]
        else:
            logp = logprobs_batch(
                model, [c["tokens"] for c in chunk], [c["target_tokens"] for c in chunk]
            )
        loss = _loss(chunk, logp, loss_fn, clip, dev)
        if backward:
            loss.backward()
    logp_cpu = logp.detach().cpu()
    for row, c in enumerate(chunk):
        results.append(logp_cpu[row, : len(c["tokens"])].tolist())
    return float(loss.detach())


def optim_step(
    trainer: Trainer,
    learning_rate: float,
    beta1: float,
    beta2: float,
    eps: float,
    weight_decay: float,
    grad_clip_norm: float,
) -> dict[str, float]:
    """One AdamW step over the adapter parameters with the accumulated gradients, then zero them.

    The protocol checks ``learning_rate`` (finite, >= 0) and ``beta1`` / ``beta2``
    (in [0, 1)); ``eps``, ``weight_decay`` and ``grad_clip_norm`` are checked here
    to be finite numbers >= 0 (the protocol lets infinity through).

    Example::

        optim_step(trainer, 3e-3, 0.9, 0.95, 1e-12, 0.0, 1.0)["grad_norm"]  # before clipping
    """
    finite = {"eps": eps, "weight_decay": weight_decay, "grad_clip_norm": grad_clip_norm}
    for key, value in finite.items():
        if not is_number(value):
            raise EngineError(f"adam_params.{key} must be a number, got {value!r}")
        if not math.isfinite(value) or value < 0:
            raise EngineError(f"adam_params.{key} must be finite and >= 0, got {value!r}")
    params = list(trainer.params.values())
    grads = [p.grad for p in params if p.grad is not None]
    norm = 0.0
    if grads:
        norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
    step = trainer.step + 1
    if not math.isfinite(norm):
        trainer.optimizer.zero_grad(set_to_none=True)
        raise EngineError(
            f"optim_step {step} refused: the accumulated gradient is not finite (norm {norm}); "
            "the loss was probably NaN or infinite (check advantages, logprobs and weights of "
            "the datums, or a learning rate so high that earlier updates blew up). The "
            "weights and optimizer state are unchanged and the gradient was dropped."
        )
    if grad_clip_norm > 0 and grads:
        torch.nn.utils.clip_grad_norm_(params, max_norm=float(grad_clip_norm))
    for group in trainer.optimizer.param_groups:
        group["lr"] = float(learning_rate)
        group["betas"] = (float(beta1), float(beta2))
        group["eps"] = float(eps)
        group["weight_decay"] = float(weight_decay)
    saved = _saved_state(trainer)
    trainer.optimizer.step()
    trainer.optimizer.zero_grad(set_to_none=True)
    if not all(bool(torch.isfinite(p).all()) for p in params):
        _restore_state(trainer, saved)
        raise EngineError(
            f"optim_step {step} refused: the update would make the LoRA weights non-finite "
            f"(learning_rate {learning_rate!r}, gradient norm {norm:.4g}); the learning rate is "
            "likely too high (a LoRA learning rate is usually 1e-5 to 1e-2). The previous "
            "weights and optimizer state are kept; the gradient was dropped."
        )
    trainer.step = step
    return {"grad_norm": norm, "learning_rate": float(learning_rate), "step": step}


def _saved_state(trainer: Trainer) -> tuple[list[torch.Tensor], dict[Any, dict[str, Any]]]:
    """Copies of the adapter weights and the optimizer's per-parameter state."""
    weights = [p.detach().clone() for p in trainer.params.values()]
    state = {
        p: {k: v.clone() if torch.is_tensor(v) else v for k, v in st.items()}
        for p, st in trainer.optimizer.state.items()
    }
    return weights, state


def _restore_state(
    trainer: Trainer, saved: tuple[list[torch.Tensor], dict[Any, dict[str, Any]]]
) -> None:
    """Put back what :func:`_saved_state` copied (a refused update leaves no trace)."""
    weights, state = saved
    with torch.no_grad():
        for p, w in zip(trainer.params.values(), weights, strict=True):
            p.copy_(w)
    trainer.optimizer.state.clear()
    trainer.optimizer.state.update(state)
