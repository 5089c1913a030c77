"""The decode loop's model side: prefill and one-token steps over a KV cache, fp32 logits out.

Two backends with one interface (``prefill``, ``expand``, ``select``, ``step``):

- :class:`StaticBackend`, for Qwen3 / Qwen2 / Llama-shaped bodies: a preallocated cache
  (one ``(rows, kv_heads, length, head_dim)`` tensor per layer and a ``(rows, length)``
  mask of filled columns), written in place, attention over the model's own modules.
  Nothing is allocated per token, so with ``static_shapes`` the step can be captured by
  ``torch.compile(mode="reduce-overhead")`` (CUDA graphs).
- :class:`CacheBackend`, for any other causal LM: ``transformers``' own cache
  (``DynamicCache``) and attention, the same mask of filled columns, the prompt's
  logprobs and states from the prefill too.

``StaticBackend`` is kept because it was the faster on the bodies it runs in most of
what ``benchmarks/kv_cache_paths.py`` measured (docs/benchmarks.md, section 13): with
``transformers``' ``DynamicCache`` sampling took 9-14% more CPU time on the tiny model
and 2-6% more on SmolLM2-135M at batch 1 and 8, 2-10% less on SmolLM2 at batch 32,
for the same tokens and logprobs bit for bit on CPU; and it has the compiled CUDA step.

Both compute the final projection and log-softmax inputs in float32 (:mod:`.numerics`).

Example::

    import torch

    from mint_envkit.local.engine.kvcache import backend_for

    model = state.loaded.model  # the tiny Qwen3 model the package's example loaded
    ids = torch.tensor([[0, 2044, 10], [2044, 11, 12]])  # two prompts, left-padded
    mask = torch.tensor([[0, 1, 1], [1, 1, 1]])
    positions = (mask.cumsum(-1) - 1).clamp_min(0)
    be = backend_for(model, static_shapes=False, compile_step=False)
    logits = be.prefill(ids, mask, positions, length=64)  # (prompts, vocab) float32
    be.expand(torch.tensor([0, 0, 1]))  # one row per sample
    tokens, next_positions = torch.tensor([5, 6, 7]), torch.tensor([2, 2, 3])
    logits = be.step(tokens, next_positions, column=ids.shape[1])
    assert logits.shape == (3, 2048) and logits.dtype == torch.float32
"""

from __future__ import annotations

from typing import Any

import torch
import torch.nn.functional as F

from .numerics import causal_lm, decoder_of, head_logits, token_logprobs

STATIC_MODEL_TYPES = frozenset({"qwen3", "qwen2", "llama"})
"""``config.model_type`` values whose bodies :class:`StaticBackend` runs."""


def _rotate_half(x: torch.Tensor) -> torch.Tensor:
    half = x.shape[-1] // 2
    return torch.cat((-x[..., half:], x[..., :half]), dim=-1)


def _prompt_attention(
    filled: torch.Tensor, columns: torch.Tensor, width: int, upto: int
) -> torch.Tensor:
    """The prompt pass's ``(rows, 1, width, upto)`` bool mask: a prompt token attends to the
    filled columns up to its own; a padding token to itself only (no row is all False)."""
    cols = columns[:upto]
    causal = cols[None, :] <= cols[:width, None]
    itself = cols[None, :] == cols[:width, None]
    return ((causal[None] & filled[:, None, :upto]) | itself)[:, None]


_HEAD_CHUNK_TOKENS = 256
"""Prompt positions per fp32 head pass (bounds the (tokens, vocab) logits in memory)."""


def next_token_logprobs(head: Any, hidden: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """log_softmax(head(hidden)) at ``targets``, (rows, width) fp32, a few positions at a time.

    Example::

        hidden = model.model(input_ids=ids[1:]).last_hidden_state
        lp = next_token_logprobs(model.lm_head, hidden[:, :-1], ids[1:, 1:])
        assert lp.shape == (1, 2)  # (rows, width - 1)
    """
    rows, width = targets.shape
    out = torch.zeros((rows, width), dtype=torch.float32, device=hidden.device)
    flat_h, flat_t = hidden.reshape(rows * width, -1), targets.reshape(-1)
    flat_out = out.view(-1)
    for start in range(0, rows * width, _HEAD_CHUNK_TOKENS):
        end = start + _HEAD_CHUNK_TOKENS
        flat_out[start:end] = token_logprobs(
            head_logits(head, flat_h[start:end]), flat_t[start:end]
        )
    return out


class StaticBackend:
    """Own attention over a preallocated KV cache (Qwen3 / Qwen2 / Llama bodies).

    Example::

        assert StaticBackend.supports(model)  # True for the built-in tiny Qwen3 models
        assert isinstance(be, StaticBackend)
    """

    def __init__(self, model: Any, *, static_shapes: bool, compile_step: bool) -> None:
        self.body = decoder_of(model)
        self.head = causal_lm(model).get_output_embeddings()
        self.static_shapes = static_shapes or compile_step
        self.keys: list[torch.Tensor] = []
        self.values: list[torch.Tensor] = []
        self.filled = torch.zeros(0)
        self.columns = torch.zeros(0)
        self.prompt_logprobs: torch.Tensor | None = None
        self.prompt_hidden: torch.Tensor | None = None
        self._step = self._decode
        if compile_step:
            self._step = torch.compile(self._decode, mode="reduce-overhead", dynamic=False)

    @staticmethod
    def supports(model: Any) -> bool:
        """Whether ``model``'s body has the layer layout this backend runs.

        Example::

            StaticBackend.supports(model)  # True
        """
        body = decoder_of(model)
        config = getattr(body, "config", None)
        if body is None or getattr(config, "model_type", None) not in STATIC_MODEL_TYPES:
            return False
        if getattr(config, "use_sliding_window", False):
            return False
        needed = ("embed_tokens", "layers", "norm", "rotary_emb")
        return all(hasattr(body, name) for name in needed)

    def _attend(
        self, layer: Any, index: int, x: torch.Tensor, rope: tuple, cols: torch.Tensor, mask: Any
    ) -> torch.Tensor:
        attn = layer.self_attn
        rows, width = x.shape[:2]
        keys, values = self.keys[index], self.values[index]
        head_dim = keys.shape[-1]
        q = attn.q_proj(x).view(rows, width, -1, head_dim)
        k = attn.k_proj(x).view(rows, width, -1, head_dim)
        v = attn.v_proj(x).view(rows, width, -1, head_dim).transpose(1, 2)
        if hasattr(attn, "q_norm"):
            q, k = attn.q_norm(q), attn.k_norm(k)
        cos, sin = (t.unsqueeze(1) for t in rope)
        q, k = q.transpose(1, 2), k.transpose(1, 2)
        q = q * cos + _rotate_half(q) * sin
        k = k * cos + _rotate_half(k) * sin
        keys.index_copy_(2, cols, k.to(keys.dtype))
        values.index_copy_(2, cols, v.to(values.dtype))
        upto = mask.shape[-1]
        k_all, v_all = keys[:, :, :upto], values[:, :, :upto]
        heads, kv_heads = q.shape[1], k_all.shape[1]
        groups = heads // kv_heads
        scale = getattr(attn, "scaling", head_dim**-0.5)
        if groups > 1 and width == 1:
            # one query per row: a kv head's query heads become its query rows (no K/V copy)
            q = q.reshape(rows, kv_heads, groups, head_dim)
            out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, scale=scale)
            out = out.reshape(rows, heads, 1, head_dim)
        else:
            if groups > 1:  # as transformers' repeat_kv: prefill stays bit-identical to it
                k_all = k_all.repeat_interleave(groups, dim=1)
                v_all = v_all.repeat_interleave(groups, dim=1)
            out = F.scaled_dot_product_attention(q, k_all, v_all, attn_mask=mask, scale=scale)
        return attn.o_proj(out.transpose(1, 2).reshape(rows, width, -1))

    def _forward(
        self,
        ids: torch.Tensor,
        positions: torch.Tensor,
        cols: torch.Tensor,
        mask: Any,
        every: bool = False,
        keep_hidden: bool = False,
    ):
        body = self.body
        h = body.embed_tokens(ids)
        rope = body.rotary_emb(h, positions)
        for index, layer in enumerate(body.layers):
            h = h + self._attend(layer, index, layer.input_layernorm(h), rope, cols, mask)
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        if every:  # the logprob of every next prompt token too (fp32 head, in chunks)
            normed = body.norm(h)
            self.prompt_logprobs = next_token_logprobs(self.head, normed[:, :-1], ids[:, 1:])
            return head_logits(self.head, normed[:, -1])
        if keep_hidden:  # the prompt positions' states, for a later compute_logprobs
            self.prompt_hidden = body.norm(h[:, :-1])
        return head_logits(self.head, body.norm(h[:, -1]))

    def prefill(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        length: int,
        prompt_logprobs: bool = False,
        prompt_hidden: bool = False,
    ) -> torch.Tensor:
        """Allocate the cache (``length`` columns), run the left-padded prompts; last logits.

        With ``prompt_logprobs`` it also leaves in ``self.prompt_logprobs`` the (rows,
        width - 1) fp32 logprob of each prompt token after the first (left padding:
        a row's own tokens are its last ones), from the same pass. With ``prompt_hidden``
        (and not ``prompt_logprobs``) it leaves in ``self.prompt_hidden`` the (rows,
        width - 1, hidden) final normed states those logprobs would come from.

        Example::

            assert be.prefill(ids, mask, positions, length=40).shape == (2, 2048)  # (prompts, vocab)
        """
        config = self.body.config
        rows, width = ids.shape
        heads = config.num_key_value_heads
        head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
        weight = self.body.embed_tokens.weight
        shape = (rows, config.num_key_value_heads, length, head_dim)
        self.keys = [weight.new_zeros(shape) for _ in self.body.layers]
        self.values = [weight.new_zeros(shape) for _ in self.body.layers]
        self.filled = torch.zeros((rows, length), dtype=torch.bool, device=ids.device)
        self.filled[:, :width] = mask.bool()
        self._pin()
        self.columns = torch.arange(length, device=ids.device)
        cols = self.columns[:width]
        allowed = _prompt_attention(self.filled, self.columns, width, width)
        self.prompt_hidden = None
        return self._forward(
            ids, positions, cols, allowed, every=prompt_logprobs, keep_hidden=prompt_hidden
        )

    def expand(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` of the cache, in that order (repeats allowed).

        Example::

            be.prefill(ids, mask, positions, length=40)
            be.expand(torch.tensor([0, 0, 0]))  # three samples of prompt 0
            assert be.filled.shape == (3, 40)
        """
        self.keys = [k.index_select(0, index) for k in self.keys]
        self.values = [v.index_select(0, index) for v in self.values]
        self.filled = self.filled.index_select(0, index)
        self._pin()

    def _pin(self) -> None:
        """Mark the cache tensors as fixed addresses (CUDA graphs replay in place)."""
        if self._step is not self._decode:
            for tensor in [*self.keys, *self.values, self.filled]:
                torch._dynamo.mark_static_address(tensor)

    select = expand

    def _decode(self, tokens: torch.Tensor, positions: torch.Tensor, column: torch.Tensor):
        self.filled.index_fill_(1, column, True)
        upto = self.filled.shape[1] if self.static_shapes else None
        mask = self.filled[:, None, None, :upto] if upto else self.filled[:, None, None]
        return self._forward(tokens[:, None], positions[:, None], column, mask)

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, column: int) -> torch.Tensor:
        """Feed one token per row at cache column ``column``; the next logits (float32).

        Example::

            be.prefill(ids, mask, positions, length=40)
            assert be.step(torch.tensor([5, 6]), torch.tensor([2, 3]), column=3).shape == (2, 2048)
        """
        col = self.columns[column : column + 1]
        if self.static_shapes:
            return self._step(tokens, positions, col)
        saved = self.filled
        self.filled = saved[:, : column + 1]
        try:
            return self._step(tokens, positions, col)
        finally:
            self.filled = saved


FULL_ATTENTION_MODEL_TYPES = frozenset({"qwen3", "qwen2", "llama"})
"""``config.model_type`` values whose every layer attends over the whole cache (without a
sliding window): :class:`CacheBackend` hands them its own 4D mask."""


def _full_attention(body: Any) -> bool:
    config = getattr(body, "config", None)
    return (
        getattr(config, "model_type", None) in FULL_ATTENTION_MODEL_TYPES
        and not getattr(config, "use_sliding_window", False)
        and not getattr(body, "has_sliding_layers", False)
    )


class CacheBackend:
    """Any causal LM through ``transformers``' own KV cache: a ``DynamicCache`` (one
    column more per token), or with ``static_shapes`` a ``StaticCache`` preallocated
    for the whole decode and attended over whole. The engine runs the first on the
    layouts :class:`StaticBackend` does not; ``static_shapes`` is the other candidate
    that ``benchmarks/kv_cache_paths.py`` times against it.

    A row's filled columns are a ``(rows, length)`` mask. A full-attention body
    (:data:`FULL_ATTENTION_MODEL_TYPES`) gets it as a 4D boolean mask built here, so
    attention runs the same kernel whatever the padding (``transformers`` drops an
    all-ones mask and then runs another kernel, which rounds otherwise); any other
    model gets the 2D mask and builds its own (sliding windows, ...).

    Example::

        be = CacheBackend(model)
        assert be.prefill(ids, mask, positions, length=40).shape == (2, 2048)
    """

    def __init__(self, model: Any, *, static_shapes: bool = False) -> None:
        self.model = model
        self.body = decoder_of(model)
        self.head = None if self.body is None else causal_lm(model).get_output_embeddings()
        self.own_mask = self.body is not None and _full_attention(self.body)
        self.static_shapes = static_shapes
        self.cache: Any = None
        self.filled = torch.zeros(0, dtype=torch.bool)
        self.columns = torch.zeros(0, dtype=torch.long)
        self.prompt_logprobs: torch.Tensor | None = None
        self.prompt_hidden: torch.Tensor | None = None

    def _run(self, ids: torch.Tensor, positions: torch.Tensor, mask: torch.Tensor) -> Any:
        if self.body is None:
            return self.model(
                input_ids=ids,
                attention_mask=mask,
                position_ids=positions,
                cache=self.cache,
                use_cache=True,
                logits_to_keep=1,
            )
        return self.body(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            cache=self.cache,
            use_cache=True,
        )

    def _last_logits(self, out: Any) -> torch.Tensor:
        if self.body is None:
            return out.logits[:, -1].float()
        return head_logits(self.head, out.last_hidden_state[:, -1])

    def prefill(
        self,
        ids: torch.Tensor,
        mask: torch.Tensor,
        positions: torch.Tensor,
        length: int,
        prompt_logprobs: bool = False,
        prompt_hidden: bool = False,
    ) -> torch.Tensor:
        """Start a cache of ``length`` columns, run the left-padded prompts; last logits.

        With ``prompt_logprobs`` it also leaves in ``self.prompt_logprobs`` the (rows,
        width - 1) fp32 logprob of each prompt token after the first (left padding:
        a row's own tokens are its last ones), from the same pass. With ``prompt_hidden``
        (and not ``prompt_logprobs``) it leaves in ``self.prompt_hidden`` the (rows,
        width - 1, hidden) final normed states those logprobs would come from. A model
        without a plain body and head (:func:`.numerics.decoder_of` is None) leaves both
        None.

        Example::

            assert be.prefill(ids, mask, positions, length=40).shape == (2, 2048)  # (prompts, vocab)
        """
        from transformers import DynamicCache, StaticCache

        config = causal_lm(self.model).config
        rows, width = ids.shape
        if self.static_shapes:
            self.cache = StaticCache(config=config, max_cache_len=length)
        else:
            self.cache = DynamicCache(config=config)
        self.filled = torch.zeros((rows, length), dtype=torch.bool, device=ids.device)
        self.filled[:, :width] = mask.bool()
        self.columns = torch.arange(length, device=ids.device)
        upto = length if self.static_shapes else width
        attend: torch.Tensor = self.filled[:, :upto]
        if self.own_mask:
            attend = _prompt_attention(self.filled, self.columns, width, upto)
        out = self._run(ids, positions, attend)
        self.prompt_logprobs = self.prompt_hidden = None
        if self.body is not None and prompt_logprobs:
            hidden = out.last_hidden_state
            self.prompt_logprobs = next_token_logprobs(self.head, hidden[:, :-1], ids[:, 1:])
        elif self.body is not None and prompt_hidden:
            self.prompt_hidden = out.last_hidden_state[:, :-1]
        return self._last_logits(out)

    def expand(self, index: torch.Tensor) -> None:
        """Keep rows ``index`` of the cache, in that order (repeats allowed).

        Example::

            be.prefill(ids, mask, positions, length=40)
            be.expand(torch.tensor([0, 0, 1]))  # two samples of prompt 0, one of prompt 1
            assert be.filled.shape == (3, 40)
        """
        self.cache.reorder_cache(index)
        self.filled = self.filled.index_select(0, index)

    select = expand

    def step(self, tokens: torch.Tensor, positions: torch.Tensor, column: int) -> torch.Tensor:
        """Feed one token per row at cache column ``column``; the next logits (float32).

        Example::

            be.prefill(ids, mask, positions, length=40)
            assert be.step(torch.tensor([5, 6]), torch.tensor([2, 3]), column=3).shape == (2, 2048)
        """
        self.filled[:, column] = True
        upto = self.filled.shape[1] if self.static_shapes else column + 1  # the keys kept
        attend = self.filled[:, None, None, :upto] if self.own_mask else self.filled[:, :upto]
        return self._last_logits(self._run(tokens[:, None], positions[:, None], attend))


def backend_for(model: Any, *, static_shapes: bool, compile_step: bool) -> Any:
    """The static-cache backend when the model's layout allows it, else the cache one.

    Example::

        backend_for(model, static_shapes=False, compile_step=False)  # a StaticBackend here
    """
    if StaticBackend.supports(model):
        return StaticBackend(model, static_shapes=static_shapes, compile_step=compile_step)
    return CacheBackend(model)
