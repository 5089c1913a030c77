"""fp32 logprobs: the final projection and the log-softmax in float32 on every path.

Sampling and the learner (``forward`` / ``compute_logprobs``) both turn the last hidden
state into logprobs here, so in bf16 the two agree to the rounding of the hidden state
alone: the ``lm_head`` matmul over the vocabulary and the log-softmax never run in bf16
(which alone cost 0.016-0.028 nats on a Qwen3-0.6B-shaped body, issue #11).

Example::

    import torch

    from mint_envkit.local.engine import numerics

    model = state.peft  # the package example's tiny model with its LoRA adapters (peft)
    ids, targets = torch.tensor([[2044, 10, 11]]), torch.tensor([[10, 11, 12]])
    hidden = numerics.decoder_of(model)(input_ids=ids).last_hidden_state
    logits = numerics.head_logits(numerics.causal_lm(model).lm_head, hidden)  # float32
    lp = numerics.target_logprobs(model, ids, targets)  # (B, T) float32
    assert logits.dtype == lp.dtype == torch.float32 and lp.shape == (1, 3)
"""

from __future__ import annotations

import math
from typing import Any

import torch
import torch.nn.functional as F


def causal_lm(model: Any) -> Any:
    """The ``transformers`` causal LM inside ``model`` (unwraps a peft model).

    Example::

        causal_lm(model).lm_head  # the transformers model inside the peft one
        assert causal_lm(model) is state.loaded.model
    """
    get_base = getattr(model, "get_base_model", None)
    return get_base() if callable(get_base) else model


def decoder_of(model: Any) -> Any | None:
    """The decoder body (``model.model``) of a causal LM whose head is a plain projection.

    ``None`` when the logits are not ``lm_head(hidden)`` (logit soft-capping or scaling),
    then callers use the model's own logits, upcast.

    Example::

        decoder_of(state.loaded.model).layers[0]  # the Qwen3 body's first layer
    """
    lm = causal_lm(model)
    config = getattr(lm, "config", None)
    for key in ("final_logit_softcapping", "logit_scale", "output_multiplier_scale"):
        if getattr(config, key, None) not in (None, 1, 1.0):
            return None
    body = getattr(lm, getattr(lm, "base_model_prefix", "model"), None)
    if body is None or body is lm or lm.get_output_embeddings() is None:
        return None
    return body


def _lora_delta(layer: Any, x: torch.Tensor) -> torch.Tensor | None:
    """The unmerged LoRA contribution of a peft ``lora.Linear`` head, in float32."""
    if not hasattr(layer, "lora_A") or getattr(layer, "merged", False):
        return None
    if getattr(layer, "disable_adapters", False):
        return None
    delta = None
    for name in layer.active_adapters:
        if name not in layer.lora_A:
            continue
        a = layer.lora_A[name].weight.float()
        b = layer.lora_B[name].weight.float()
        part = F.linear(F.linear(layer.lora_dropout[name](x), a), b) * layer.scaling[name]
        delta = part if delta is None else delta + part
    return delta


def head_logits(head: Any, hidden: torch.Tensor) -> torch.Tensor:
    """``head(hidden)`` computed in float32 (a plain ``nn.Linear`` or a peft LoRA one).

    Any other module falls back to its own output, upcast.

    Example::

        assert head_logits(causal_lm(model).lm_head, hidden[:, -1]).dtype == torch.float32
    """
    base = getattr(head, "base_layer", head)
    wrapped = base is not head
    if not isinstance(base, torch.nn.Linear) or (wrapped and not hasattr(head, "lora_A")):
        return head(hidden).float()
    x = hidden.float()
    bias = None if base.bias is None else base.bias.float()
    logits = F.linear(x, base.weight.float(), bias)
    delta = _lora_delta(head, x) if wrapped else None
    if delta is not None:
        logits = logits + delta
    return logits


def token_logprobs(logits: torch.Tensor, tokens: torch.Tensor) -> torch.Tensor:
    """log_softmax(logits) at ``tokens`` (one per row of ``logits``), without the full log_softmax.

    Example::

        logits = torch.tensor([[0.0, 0.0], [1.0, 0.0]])
        lp = token_logprobs(logits, torch.tensor([0, 1]))
        assert torch.allclose(lp, torch.log_softmax(logits, -1)[[0, 1], [0, 1]])
    """
    picked = logits.gather(-1, tokens.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)


def target_logprobs(model: Any, ids: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """(B, T) float32 logprobs of ``targets`` after ``ids`` (one causal forward, fp32 head).

    Example::

        assert target_logprobs(model, torch.tensor([[1, 2]]), torch.tensor([[2, 3]])).shape == (1, 2)
    """
    body = decoder_of(model)
    if body is None:
        logits = model(input_ids=ids, use_cache=False).logits.float()
    else:
        hidden = body(input_ids=ids, use_cache=False).last_hidden_state
        logits = head_logits(causal_lm(model).get_output_embeddings(), hidden)
    return token_logprobs(logits, targets)


HEAD_CHUNK_LOGITS = 1 << 23
""":func:`head_logprobs` computes at most this many logits at once (32 MB in fp32)."""


def frozen_head(head: Any) -> bool:
    """Whether ``head`` is a plain ``nn.Linear`` that is not trained (no LoRA, no gradient).

    Then :func:`head_logprobs` needs no logits kept for the backward pass.

    Example::

        head = torch.nn.Linear(8, 20)
        assert not frozen_head(head) and frozen_head(head.requires_grad_(False))
    """
    weight = getattr(head, "weight", None)
    return type(head) is torch.nn.Linear and weight is not None and not weight.requires_grad


class _FrozenHeadLogprobs(torch.autograd.Function):
    """log_softmax(hidden @ W.T + b) at the targets, with the gradient to ``hidden`` only.

    ``logp[i, k] = h_i . w_{t_ik} + b_{t_ik} - logsumexp(W h_i + b)`` depends on ``h_i``
    alone, so its gradient is the row ``w_{t_ik} - softmax(W h_i + b) @ W``; the forward
    computes it a chunk of positions at a time (the matmul the backward pass of the
    logits would do) and keeps it instead of the (positions, vocab) logits.
    """

    @staticmethod
    def forward(
        ctx: Any, hidden: Any, weight: Any, bias: Any, targets: Any, grad: bool, need: Any
    ) -> Any:
        w = weight.float()
        b = None if bias is None else bias.float()
        rows = max(1, HEAD_CHUNK_LOGITS // max(1, w.shape[0]))
        out = torch.empty(targets.shape, dtype=torch.float32, device=hidden.device)
        jac = None
        if grad:
            jac = torch.zeros((*targets.shape, w.shape[1]), dtype=torch.float32, device=w.device)
        for start in range(0, hidden.shape[0], rows):
            end = start + rows
            logits = F.linear(hidden[start:end].float(), w, b)
            norm = torch.logsumexp(logits, dim=-1, keepdim=True)
            picked = targets[start:end]
            out[start:end] = logits.gather(-1, picked) - norm
            # the rows whose gradient can be non-zero (all without ``need``)
            at = slice(None) if need is None else need[start:end].nonzero().squeeze(-1)
            if jac is None or (need is not None and not at.numel()):
                continue
            expected = torch.exp(logits[at] - norm[at]) @ w  # softmax @ W, (rows, hidden)
            jac[start:end][at] = w[picked[at]] - expected[:, None, :]
        ctx.save_for_backward(jac if jac is not None else out.new_empty(0))
        ctx.hidden_dtype = hidden.dtype
        return out

    @staticmethod
    def backward(ctx: Any, grad_out: Any) -> Any:
        (jac,) = ctx.saved_tensors
        grad_hidden = (grad_out[..., None] * jac).sum(dim=1).to(ctx.hidden_dtype)
        return grad_hidden, None, None, None, None, None


def head_logprobs(
    head: Any, hidden: torch.Tensor, targets: torch.Tensor, need: torch.Tensor | None = None
) -> torch.Tensor:
    """(positions, k) float32 logprobs of ``targets`` (positions, k) after ``hidden`` (positions, H).

    Each position may score several targets (datums that share it). A frozen plain head
    (:func:`frozen_head`) runs a few positions at a time and keeps no logits for the
    backward pass (its gradient to ``hidden`` is computed on the way, only at positions
    where ``need``, a (positions,) bool tensor, is true, when given: the caller promises
    that the gradient reaching the others is zero); any other head computes all the
    logits with :func:`head_logits` and autograd.

    Example::

        head = causal_lm(model).lm_head
        lp = head_logprobs(head, hidden[0], torch.tensor([[10, 12], [11, 11], [12, 3]]))
        assert lp.shape == (3, 2) and bool((lp <= 0).all())
    """
    if frozen_head(head):
        grad = torch.is_grad_enabled() and hidden.requires_grad
        return _FrozenHeadLogprobs.apply(hidden, head.weight, head.bias, targets, grad, need)
    logits = head_logits(head, hidden)
    return logits.gather(-1, targets) - torch.logsumexp(logits, dim=-1, keepdim=True)


def all_finite(values: Any) -> bool:
    """Whether every number in ``values`` (floats, ``None`` skipped, or a tensor) is finite.

    The engine's results go to JSON, which has no NaN or Infinity: each place that makes
    logprobs or a loss checks them with this and refuses with the cause instead.

    Example::

        assert all_finite([-1.5, None, 0.0]) and not all_finite(torch.tensor([0.0, float("nan")]))
    """
    if torch.is_tensor(values):
        return bool(torch.isfinite(values).all())
    return all(v is None or math.isfinite(v) for v in values)
