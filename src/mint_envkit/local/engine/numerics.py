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
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - torch.logsumexp(logits, dim=-1)
