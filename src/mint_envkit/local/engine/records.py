"""The engine's records and its error: what its modules hand each other and return.

Public (re-exported by :mod:`mint_envkit.local.engine`): :class:`EngineError`,
:class:`SampledSequence`, :class:`ForwardOutput`, :class:`LoraSpec` and
``SUPPORTED_LOSSES``. Internal: :class:`BaseModelState` (one loaded base model),
:class:`Trainer` (one LoRA training client), :class:`Snapshot` (frozen sampler
weights), and :class:`SampleSpec` (one checked sample request).

Example::

    from mint_envkit.local.engine.records import LoraSpec

    assert LoraSpec(rank=8, train_unembed=False).target_modules()[:2] == ["q_proj", "k_proj"]
"""

from __future__ import annotations

import uuid
from typing import Any, Literal

import attrs
import torch

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.models.common import LoadedModel

from .lpcache import FollowupCache, PromptHiddenCache, PromptLogprobCache

SUPPORTED_LOSSES = ("cross_entropy", "importance_sampling", "ppo")
"""The ``loss_fn`` values :meth:`Engine.forward` accepts."""

LORA_ALPHA = 32.0
"""``lora_alpha`` for every rank (scale ``32 / rank``), Tinker's "LoRA without regret"."""


class EngineError(MintEnvkitError):
    """An engine operation failed; ``category`` says whose fault it is.

    Attributes:
        category: ``"user"`` for bad input (unknown model, model_id, sampler or path,
            bad tokens, bad shapes, bad parameters), ``"server"`` for an internal failure,
            ``"cancelled"`` when ``Engine.cancel_running`` stopped the call (nothing it
            would have changed was changed; retrying it is safe).
        message: a readable message that names the bad value and the fix.

    Example::

        try:
            engine.sample("no-such-sampler", [1, 2])
        except EngineError as err:
            assert err.category == "user"
            assert err.message.startswith("unknown sampler_id 'no-such-sampler'; ")
        else:
            raise AssertionError("no error")
    """

    def __init__(
        self, message: str, category: Literal["user", "server", "cancelled"] = "user"
    ) -> None:
        super().__init__(message)
        self.message = message
        self.category = category


@attrs.frozen
class SampledSequence:
    """One sampled completion.

    Attributes:
        tokens: the generated token ids (a matched stop token or sequence included).
        logprobs: per token, the log probability under the distribution it was drawn from.
        stop_reason: ``"stop"`` if a stop condition matched, ``"length"`` if ``max_tokens`` ran out.

    Example::

        SampledSequence(tokens=[5, 2045], logprobs=[-1.2, -0.3], stop_reason="stop")
    """

    tokens: list[int]
    logprobs: list[float]
    stop_reason: Literal["stop", "length"]


@attrs.frozen
class ForwardOutput:
    """What :meth:`Engine.forward` returns.

    Attributes:
        logprobs: per datum, the learner's log probability of each target token.
        metrics: at least ``"loss:sum"`` (the loss summed over tokens and datums).

    Example::

        out = engine.forward(model_id, data, "cross_entropy", None, backward=False)
        out.metrics["loss:sum"], len(out.logprobs[0])
        assert len(out.logprobs) == len(data)  # one list per datum
    """

    logprobs: list[list[float]]
    metrics: dict[str, float]


@attrs.frozen
class LoraSpec:
    """The shape of a LoRA adapter: rank and which layers it adapts.

    Example::

        spec = LoraSpec(rank=8, train_mlp=True, train_attn=True, train_unembed=False)
        spec.target_modules()  # ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', ...]
        assert "lm_head" not in spec.target_modules()
    """

    rank: int
    train_mlp: bool = True
    train_attn: bool = True
    train_unembed: bool = True

    def target_modules(self) -> list[str]:
        """The peft ``target_modules`` for this spec (module name suffixes)."""
        targets: list[str] = []
        if self.train_attn:
            targets += ["q_proj", "k_proj", "v_proj", "o_proj"]
        if self.train_mlp:
            targets += ["gate_proj", "up_proj", "down_proj"]
        if self.train_unembed:
            targets += ["lm_head"]
        return targets

    def peft_config(self, base_model: str | None = None) -> Any:
        """A ``peft.LoraConfig`` for this spec (alpha 32, no dropout, no bias)."""
        from peft import LoraConfig

        return LoraConfig(
            r=self.rank,
            lora_alpha=LORA_ALPHA,
            lora_dropout=0.0,
            bias="none",
            target_modules=self.target_modules(),
            base_model_name_or_path=base_model,
        )

    def to_json(self) -> dict[str, Any]:
        """A JSON-able dict (the ``lora`` entry of a checkpoint's meta.json)."""
        return {
            "rank": self.rank,
            "train_mlp": self.train_mlp,
            "train_attn": self.train_attn,
            "train_unembed": self.train_unembed,
            "alpha": LORA_ALPHA,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> LoraSpec:
        """Inverse of :meth:`to_json`."""
        return cls(
            rank=int(data["rank"]),
            train_mlp=bool(data["train_mlp"]),
            train_attn=bool(data["train_attn"]),
            train_unembed=bool(data["train_unembed"]),
        )


@attrs.define(eq=False)
class BaseModelState:
    """One base model in memory and what hangs off it (the peft wrapper, sampling slots).

    Example::

        from mint_envkit.local.models.loader import load_base_model

        state = BaseModelState(loaded=load_base_model("mint-envkit/tiny-qwen3-small"))
        assert state.peft is None  # until its first adapter
    """

    loaded: LoadedModel
    peft: Any = None  # peft.PeftModel once the first adapter exists
    slots: dict[LoraSpec, str] = attrs.field(factory=dict)  # scratch sampler adapters
    slot_params: dict[str, dict[str, torch.nn.Parameter]] = attrs.field(factory=dict)
    slot_content: dict[str, str] = attrs.field(factory=dict)  # slot -> key of loaded snapshot
    tokenizer: Any = None
    # A plain copy of the base model whose adapted layers hold W + scale * B @ A of
    # one snapshot: sampling runs one matmul per layer instead of peft's three.
    merged: Any = None
    merged_originals: dict[str, torch.Tensor] = attrs.field(factory=dict)
    merged_content: Any = None  # key of the merged snapshot; "base" for none
    # Prompt logprobs from one-token samples' prefill passes, for compute_logprobs.
    prompt_logprobs: PromptLogprobCache = attrs.field(factory=PromptLogprobCache)
    # Per sampled sequence its T=1 logprobs and next logits (engine/lpcache.py).
    followups: FollowupCache = attrs.field(factory=FollowupCache)
    # Per sampled prompt its prefill's hidden states, for that compute_logprobs's prompt part.
    prompt_hidden: PromptHiddenCache = attrs.field(factory=PromptHiddenCache)


@attrs.define(eq=False)
class Trainer:
    """One LoRA training client: its adapter on a base model, its optimizer and step.

    Example::

        trainer.params  # {'base_model.model....lora_A.weight': Parameter, ...}
        assert all(".lora_A." in name or ".lora_B." in name for name in trainer.params)
    """

    model_id: str
    base: str
    spec: LoraSpec
    adapter: str
    params: dict[str, torch.nn.Parameter]
    optimizer: torch.optim.AdamW
    step: int = 0
    gain: float = 1.0  # how many trained deltas its weights may hold (interpolate.py)


@attrs.frozen
class SampleSpec:
    """One checked sample request (see :func:`.sampling.sample_spec`).

    Example::

        from mint_envkit.local.engine.sampling import sample_spec

        spec = sample_spec(state, [2044, 10], num_samples=2, seed=0)
        assert (spec.prompt, spec.num_samples, spec.seed) == ([2044, 10], 2, 0)
    """

    prompt: list[int]
    num_samples: int
    max_tokens: int
    temperature: float
    top_p: float
    top_k: int
    seed: int
    stop_ids: frozenset[int]
    stop_seqs: tuple[tuple[int, ...], ...]
    stop_strs: tuple[str, ...]


@attrs.define(eq=False)
class Snapshot:
    """Frozen sampler weights: adapter tensors of one LoRA shape, or ``None`` for the base.

    Example::

        Snapshot(base="mint-envkit/tiny-qwen3", spec=None, tensors=None, source="base")
    """

    base: str
    spec: LoraSpec | None
    tensors: dict[str, torch.Tensor] | None
    source: str  # model_id or path, for messages
    # Identifies the tensors for the caches of loaded weights; unlike id(), never
    # reused after a released snapshot is garbage collected.
    key: str = attrs.field(factory=lambda: uuid.uuid4().hex)
    adds_nothing: bool = attrs.field(init=False)
    """True when these weights compute what the base model computes: the base itself, or
    LoRA tensors whose every ``lora_B`` is zero (a fresh adapter, before its first step).
    Such a snapshot samples on the base model with no adapter in the way: the same figures
    (the adapter would add exact zeros), without peft's per-layer cost (the demo's first
    eval on SmolLM2-135M: 23.4 s through peft, 19.7 s without it; docs/engine.md)."""

    @adds_nothing.default
    def _adds_nothing(self) -> bool:
        return self.tensors is None or lora_delta_is_zero(self.tensors)


def lora_delta_is_zero(tensors: dict[str, torch.Tensor]) -> bool:
    """Whether LoRA ``tensors`` change nothing: every key is a ``lora_A`` / ``lora_B`` one
    (plain LoRA, not DoRA's magnitudes) and every ``lora_B`` is all zeros.

    Example::

        a, b = torch.ones(2, 4), torch.zeros(4, 2)
        assert lora_delta_is_zero({"x.lora_A.weight": a, "x.lora_B.weight": b})
        assert not lora_delta_is_zero({"x.lora_A.weight": a, "x.lora_B.weight": b + 1e-9})
    """
    kinds = [_lora_kind(key) for key in tensors]
    if not tensors or None in kinds:
        return False
    return not any(
        bool(t.any()) for t, kind in zip(tensors.values(), kinds, strict=True) if kind == "B"
    )


def _lora_kind(key: str) -> str | None:
    for kind in ("A", "B"):
        if (
            f".lora_{kind}." in key
            or f".lora_embedding_{kind}." in key
            or key.endswith(f".lora_embedding_{kind}")
        ):
            return kind
    return None


def context_length(base: BaseModelState) -> int:
    """The base model's context (``max_position_embeddings``; unbounded when it has none).

    Example::

        assert context_length(state) == 4096  # the tiny model's max_position_embeddings
    """
    return int(getattr(base.loaded.model.config, "max_position_embeddings", 1 << 30))
