"""The engine of the embedded backend: models, LoRA training, sampling and checkpoints.

Plain synchronous Python (torch + transformers + peft), no HTTP. The server
(``mint_envkit.local.server``) calls it from one worker thread; every public
method also takes a lock, so calls never overlap.

What it keeps:

- one base model in memory per name, shared by every LoRA client on it: the
  model is wrapped once by ``peft`` and every training client is a named peft
  adapter on it (``set_adapter`` switches between them);
- per training client (``model_id``): its adapter, an AdamW optimizer over the
  adapter parameters only, the step count;
- sampler snapshots (``sampler_id``): frozen copies of adapter tensors (never
  shared with a training adapter), or ``None`` for the plain base model. To
  sample, a snapshot is copied into a scratch adapter of the same LoRA shape;
- checkpoints under ``state_dir/<model_id>/{weights,sampler_weights}/<name>/``
  (``adapter_model.safetensors`` + ``adapter_config.json`` in peft's format,
  ``optimizer.safetensors`` for training state, ``meta.json`` with the base
  model, LoRA config and step), addressed by ``tinker://<model_id>/<kind>/<name>``.

Conventions kept (see docs of the Tinker wire protocol): losses are sums over
tokens and datums; sampled logprobs are those of the distribution each token
was drawn from; a sampler never changes after it is made; gradients accumulate
across ``forward(backward=True)`` calls until ``optim_step``.

LoRA scale: ``lora_alpha = 32`` for every rank (scale ``32 / rank``), the
convention of Tinker's "LoRA without regret", so a learning rate transfers
across ranks.

Example::

    from mint_envkit.local.engine import Engine

    engine = Engine(state_dir="/tmp/mint-state")
    model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=8, seed=0)
    sampler = engine.save_for_sampler(model_id, None)[0]
    seqs = engine.sample(sampler, [2044, 10, 11], num_samples=4, max_tokens=8, seed=1)
    data = [{"model_input": [2044, 10, 11] + s.tokens[:-1],
             "loss_fn_inputs": {"target_tokens": [10, 11] + s.tokens,
                                "logprobs": [0.0, 0.0] + s.logprobs,
                                "advantages": [0.0, 0.0] + [1.0] * len(s.tokens)}}
            for s in seqs]
    out = engine.forward(model_id, data, "importance_sampling", None, backward=True)
    engine.optim_step(model_id, learning_rate=3e-3)
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import functools
import json
import math
import os
import re
import shutil
import tempfile
import threading
import uuid
import warnings
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

import attrs
import torch

from mint_envkit.errors import MintEnvkitError
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, TINY_MODEL_NAMES, cache_dir

from .models import LoadedModel, ModelLoadError, load_base_model, pin_threads, resolve_model_name

__all__ = [
    "SUPPORTED_LOSSES",
    "Engine",
    "EngineError",
    "ForwardOutput",
    "LoraSpec",
    "SampledSequence",
]

SUPPORTED_LOSSES = ("cross_entropy", "importance_sampling", "ppo")
"""The ``loss_fn`` values :meth:`Engine.forward` accepts."""

_LORA_ALPHA = 32.0
_MERGED_COPY_MAX_PARAMS = 200_000_000
"""Base models up to this size keep a merged plain copy for sampling (about 3x faster)."""
_NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")
_KIND_DIRS = {"state": "weights", "sampler": "sampler_weights"}
_CHECKPOINT_TYPES = {"weights": "training", "sampler_weights": "sampler"}
_FORMAT_VERSION = 1
# Logits of one micro-batch hold at most this many floats (256 MB in fp32).
_LOGIT_BUDGET = 1 << 26

_F = TypeVar("_F", bound=Callable[..., Any])


class EngineError(MintEnvkitError):
    """An engine operation failed; ``category`` says whose fault it is.

    Attributes:
        category: ``"user"`` for bad input (unknown model, model_id, sampler or path,
            bad tokens, bad shapes, bad parameters), ``"server"`` for an internal failure.
        message: a readable message that names the bad value and the fix.

    Example::

        try:
            engine.sample("no-such-sampler", [1, 2])
        except EngineError as err:
            err.category  # 'user'
            err.message   # "unknown sampler_id 'no-such-sampler'; ..."
    """

    def __init__(self, message: str, category: Literal["user", "server"] = "user") -> None:
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
    """

    logprobs: list[list[float]]
    metrics: dict[str, float]


@attrs.frozen
class LoraSpec:
    """The shape of a LoRA adapter: rank and which layers it adapts.

    Example::

        spec = LoraSpec(rank=8, train_mlp=True, train_attn=True, train_unembed=False)
        spec.target_modules()  # ['q_proj', 'k_proj', 'v_proj', 'o_proj', 'gate_proj', ...]
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
            lora_alpha=_LORA_ALPHA,
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
            "alpha": _LORA_ALPHA,
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
class _Base:
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


@attrs.define(eq=False)
class _Trainer:
    model_id: str
    base: str
    spec: LoraSpec
    adapter: str
    params: dict[str, torch.nn.Parameter]
    optimizer: torch.optim.AdamW
    step: int = 0


@attrs.frozen
class _SampleSpec:
    """One validated sample request (see ``Engine._sample_spec``)."""

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
class _Snapshot:
    base: str
    spec: LoraSpec | None
    tensors: dict[str, torch.Tensor] | None
    source: str  # model_id or path, for messages
    # Identifies the tensors for the caches of loaded weights; unlike id(), never
    # reused after a released snapshot is garbage collected.
    key: str = attrs.field(factory=lambda: uuid.uuid4().hex)


def _locked(method: _F) -> _F:
    """Run a public method under the engine lock; turn unexpected errors into server errors."""

    @functools.wraps(method)
    def wrapper(self: Engine, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            try:
                return method(self, *args, **kwargs)
            except EngineError:
                raise
            except ModelLoadError as err:
                raise EngineError(str(err), "user") from err
            except Exception as err:
                raise EngineError(
                    f"internal error in {method.__name__}: {type(err).__name__}: {err}", "server"
                ) from err

    return wrapper  # type: ignore[return-value]


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _int_list(value: Any, what: str) -> list[int]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise EngineError(f"{what} must be a list of token ids, got {type(value).__name__}")
    out: list[int] = []
    for i, x in enumerate(value):
        if _is_int(x) or (isinstance(x, float) and x.is_integer()):
            out.append(int(x))
        else:
            raise EngineError(f"{what}[{i}] must be an integer token id, got {x!r}")
    return out


def _float_list(value: Any, what: str) -> list[float]:
    if isinstance(value, (str, bytes)) or not isinstance(value, Sequence):
        raise EngineError(f"{what} must be a list of numbers, got {type(value).__name__}")
    out: list[float] = []
    for i, x in enumerate(value):
        if isinstance(x, bool) or not isinstance(x, (int, float)) or not math.isfinite(x):
            raise EngineError(f"{what}[{i}] must be a finite number, got {x!r}")
        out.append(float(x))
    return out


def _check_name(name: Any, what: str = "checkpoint name") -> str:
    if (
        not isinstance(name, str)
        or not _NAME_RE.match(name)
        or name in (".", "..")
        or name.startswith(".")
    ):
        raise EngineError(
            f"invalid {what} {name!r}: use 1-128 characters from [A-Za-z0-9._-], not starting "
            "with '.', with no '/', '..' or NUL (names cannot leave the state directory)"
        )
    return name


def _now_iso(ts: float) -> str:
    return _dt.datetime.fromtimestamp(ts, tz=_dt.UTC).isoformat()


def _dir_size(path: Path) -> int:
    return sum(f.stat().st_size for f in path.rglob("*") if f.is_file())


class Engine:
    """Models, LoRA training clients, sampler snapshots and checkpoints, in one process.

    Args:
        state_dir: where checkpoints live; default ``$MINT_ENVKIT_STATE_DIR``, else
            ``cache_dir()/"state"``.
        device: ``"cuda"`` / ``"cpu"``; default CUDA (bf16) when available, else CPU (fp32).
        num_threads: torch intra-op threads, pinned for determinism; default
            ``MINT_ENVKIT_NUM_THREADS``, else 1 (see ``models.pin_threads_default``).
        default_model: the base model named first in :attr:`supported_models`.

    Example::

        engine = Engine(state_dir="/tmp/mint-state")
        model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=4, seed=0)
        engine.model_info(model_id)["lora_rank"]  # 4
    """

    def __init__(
        self,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        device: str | None = None,
        num_threads: int | None = None,
        default_model: str = TINY_MODEL_NAME,
    ) -> None:
        if state_dir is None:
            env = os.environ.get("MINT_ENVKIT_STATE_DIR")
            state_dir = env if env else cache_dir() / "state"
        self.state_dir = Path(state_dir).expanduser().resolve()
        self.device = device
        try:
            self.num_threads = pin_threads(num_threads)
        except ModelLoadError as err:
            raise EngineError(str(err), "user") from err
        self.default_model = default_model
        self._lock = threading.RLock()
        self._bases: dict[str, _Base] = {}
        self._trainers: dict[str, _Trainer] = {}
        self._samplers: dict[str, _Snapshot] = {}
        self._path_snapshots: dict[str, _Snapshot] = {}

    # ------------------------------------------------------------------ models

    @property
    def supported_models(self) -> list[str]:
        """Base model names to advertise: the default, the tiny ones, and every loaded one.

        Example::

            Engine().supported_models  # ['mint-envkit/tiny-qwen3', 'mint-envkit/tiny-qwen3-small']
        """
        names = [self.default_model, *sorted(TINY_MODEL_NAMES), *self._bases]
        return list(dict.fromkeys(names))

    def _base(self, name: Any) -> _Base:
        if not isinstance(name, str) or not name.strip():
            raise EngineError(
                f"base_model must be a non-empty model name, got {name!r}; try {TINY_MODEL_NAME!r}"
            )
        key = resolve_model_name(name)
        base = self._bases.get(key)
        if base is None:
            pin_threads(self.num_threads)
            try:
                loaded = load_base_model(key, device=self.device)
            except ModelLoadError as err:
                raise EngineError(str(err), "user") from err
            base = _Base(loaded=loaded)
            self._bases[key] = base
        return base

    @_locked
    def ensure_base_model(self, name: str) -> None:
        """Load base model ``name`` (once; later calls are free).

        Raises:
            EngineError: (user) the model is not available locally; the message names it.

        Example::

            engine.ensure_base_model("mint-envkit/tiny-qwen3")
        """
        self._base(name)

    @_locked
    def tokenizer_dir(self, base_model: str) -> str:
        """An absolute directory ``AutoTokenizer.from_pretrained`` loads offline.

        It is the ``tokenizer_id`` the server returns from ``get_info``.

        Example::

            engine.tokenizer_dir("mint-envkit/tiny-qwen3")  # '/.../models/tiny-qwen3-<hash>'
        """
        return self._base(base_model).loaded.tokenizer_dir

    def _tokenizer(self, base: _Base) -> Any:
        if base.tokenizer is None:
            from mint_envkit.rendering.tokenizer import get_tokenizer

            base.tokenizer = get_tokenizer(base.loaded.tokenizer_dir)
        return base.tokenizer

    # ------------------------------------------------------------------ LoRA clients

    def _adapter_params(self, base: _Base, adapter: str) -> dict[str, torch.nn.Parameter]:
        marker = f".{adapter}."
        params = {
            name.replace(marker, "."): p
            for name, p in base.peft.named_parameters()
            if marker in name
        }
        if not params:
            raise EngineError(f"adapter {adapter} has no parameters", "server")
        return params

    def _add_adapter(self, base: _Base, adapter: str, spec: LoraSpec, seed: int) -> None:
        from peft import get_peft_model

        config = spec.peft_config()
        with torch.random.fork_rng(devices=[]), warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            warnings.simplefilter("ignore", UserWarning)
            torch.manual_seed(seed)
            if base.peft is None:
                self._make_merged_copy(base)
                base.peft = get_peft_model(base.loaded.model, config, adapter_name=adapter)
            else:
                base.peft.add_adapter(adapter, config)
        base.loaded.model.eval()

    def _make_merged_copy(self, base: _Base) -> None:
        """Keep a plain copy of a small base model for fast sampling (see ``_Base.merged``)."""
        import copy

        model = base.loaded.model
        n_params = sum(p.numel() for p in model.parameters())
        if n_params > _MERGED_COPY_MAX_PARAMS:
            return  # a large model samples through peft rather than double its memory
        base.merged = copy.deepcopy(model).eval()
        for p in base.merged.parameters():
            p.requires_grad_(False)
        base.merged_content = "base"

    @contextlib.contextmanager
    def _use_sampler(self, snap: _Snapshot) -> Iterator[Any]:
        """The model to sample ``snap`` with: the merged copy when there is one."""
        base = self._bases[snap.base]
        if base.merged is None:
            with self._use_snapshot(snap) as model:
                yield model
            return
        want = "base" if snap.tensors is None else snap.key
        if base.merged_content != want:
            self._merge_into_copy(base, snap)
            base.merged_content = want
        yield base.merged

    def _merge_into_copy(self, base: _Base, snap: _Snapshot) -> None:
        modules = dict(base.merged.named_modules())
        with torch.no_grad():
            for path, original in base.merged_originals.items():
                modules[path].weight.copy_(original)  # back to the base weights, no drift
            if snap.tensors is None or snap.spec is None:
                return
            scale = _LORA_ALPHA / snap.spec.rank
            for key, a in snap.tensors.items():
                if ".lora_A." not in key and not key.endswith(".lora_A.weight"):
                    continue
                path = key.removeprefix("base_model.model.").removesuffix(".lora_A.weight")
                b = snap.tensors[key.replace("lora_A", "lora_B")]
                layer = modules[path]
                if path not in base.merged_originals:
                    base.merged_originals[path] = layer.weight.detach().clone()
                delta = (b.to(layer.weight.dtype) @ a.to(layer.weight.dtype)) * scale
                layer.weight.add_(delta)

    def _activate(self, base: _Base, adapter: str) -> None:
        if base.peft.active_adapter != adapter:
            base.peft.set_adapter(adapter)

    @_locked
    def create_lora(
        self,
        base_model: str,
        *,
        rank: int = 32,
        seed: int | None = None,
        train_mlp: bool = True,
        train_attn: bool = True,
        train_unembed: bool = True,
    ) -> str:
        """Create a LoRA training client on ``base_model`` and return its ``model_id``.

        ``seed`` makes the LoRA initialisation deterministic (B is zero, so the
        model starts equal to the base model); ``None`` picks a random one.

        Example::

            model_id = engine.create_lora("mint-envkit/tiny-qwen3", rank=16, seed=0,
                                          train_unembed=True)
        """
        if not _is_int(rank) or rank < 1 or rank > 4096:
            raise EngineError(f"LoRA rank must be an integer from 1 to 4096, got {rank!r}")
        if seed is not None and not _is_int(seed):
            raise EngineError(f"seed must be an integer or None, got {seed!r}")
        flags = {"train_mlp": train_mlp, "train_attn": train_attn, "train_unembed": train_unembed}
        for key, value in flags.items():
            if not isinstance(value, bool):
                raise EngineError(f"{key} must be true or false, got {value!r}")
        if not (train_mlp or train_attn or train_unembed):
            raise EngineError(
                "at least one of train_mlp, train_attn, train_unembed must be true "
                "(otherwise the LoRA adapter has nothing to train)"
            )
        base = self._base(base_model)
        spec = LoraSpec(rank=rank, **flags)
        return self._new_trainer(base, spec, seed)

    def _new_trainer(self, base: _Base, spec: LoraSpec, seed: int | None) -> str:
        if seed is None:
            seed = int.from_bytes(os.urandom(4), "little")
        model_id = str(uuid.uuid4())
        adapter = "t_" + model_id.replace("-", "")
        self._add_adapter(base, adapter, spec, int(seed) % (2**63))
        params = self._adapter_params(base, adapter)
        optimizer = torch.optim.AdamW(list(params.values()), lr=0.0, foreach=False)
        self._trainers[model_id] = _Trainer(
            model_id=model_id,
            base=base.loaded.name,
            spec=spec,
            adapter=adapter,
            params=params,
            optimizer=optimizer,
        )
        return model_id

    def _trainer(self, model_id: Any) -> _Trainer:
        trainer = self._trainers.get(model_id) if isinstance(model_id, str) else None
        if trainer is None:
            raise EngineError(
                f"unknown model_id {model_id!r}; create one with create_lora (or "
                "create_lora_from_state) first; unloaded models cannot be used again"
            )
        return trainer

    @_locked
    def model_info(self, model_id: str) -> dict[str, Any]:
        """What ``get_info`` reports about a training client.

        Example::

            engine.model_info(model_id)
            # {'base_model': 'mint-envkit/tiny-qwen3', 'lora_rank': 32,
            #  'tokenizer_dir': '/.../tiny-qwen3-<hash>', 'arch': 'qwen3', ...}
        """
        trainer = self._trainer(model_id)
        base = self._bases[trainer.base]
        return {
            "base_model": trainer.base,
            "lora_rank": trainer.spec.rank,
            "tokenizer_dir": base.loaded.tokenizer_dir,
            "arch": base.loaded.arch,
            "train_mlp": trainer.spec.train_mlp,
            "train_attn": trainer.spec.train_attn,
            "train_unembed": trainer.spec.train_unembed,
            "step": trainer.step,
        }

    @_locked
    def unload(self, model_id: str) -> None:
        """Drop a training client (its adapter and optimizer); its samplers stay usable.

        Example::

            engine.unload(model_id)
        """
        trainer = self._trainer(model_id)
        base = self._bases[trainer.base]
        del self._trainers[model_id]
        trainer.optimizer.state.clear()
        if len(base.peft.peft_config) > 1:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", UserWarning)  # "active adapter deleted"
                base.peft.delete_adapter(trainer.adapter)
        # else: peft cannot delete its last adapter; it stays, unused.

    # ------------------------------------------------------------------ forward / backward

    def _validate_data(
        self, data: Any, loss_fn: str, vocab: int, max_len: int
    ) -> list[dict[str, list[Any]]]:
        if not isinstance(data, Sequence) or isinstance(data, (str, bytes)) or not data:
            raise EngineError("data must be a non-empty list of datums")
        required = {
            "cross_entropy": ("target_tokens",),
            "importance_sampling": ("target_tokens", "logprobs", "advantages"),
            "ppo": ("target_tokens", "logprobs", "advantages"),
        }[loss_fn]
        out = []
        for i, datum in enumerate(data):
            if not isinstance(datum, dict):
                raise EngineError(f"datum {i} must be a dict, got {type(datum).__name__}")
            tokens = _int_list(datum.get("model_input"), f"datum {i} model_input")
            n = len(tokens)
            if n == 0:
                raise EngineError(f"datum {i} has an empty model_input; give at least one token")
            if n > max_len:
                raise EngineError(
                    f"datum {i} has {n} tokens, more than the model's context of {max_len}"
                )
            inputs = datum.get("loss_fn_inputs")
            if not isinstance(inputs, dict):
                raise EngineError(f"datum {i} needs loss_fn_inputs (a dict of per-token arrays)")
            missing = [k for k in required if k not in inputs]
            if missing:
                raise EngineError(
                    f"datum {i}: loss_fn {loss_fn!r} needs loss_fn_inputs {list(required)}, "
                    f"missing {missing}"
                )
            item: dict[str, list[Any]] = {"tokens": tokens}
            item["target_tokens"] = _int_list(
                inputs["target_tokens"], f"datum {i} loss_fn_inputs.target_tokens"
            )
            for key in ("weights", "logprobs", "advantages"):
                if key in inputs and inputs[key] is not None:
                    item[key] = _float_list(inputs[key], f"datum {i} loss_fn_inputs.{key}")
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
                        f"datum {i}: {what} holds token id {bad[0]} outside the vocabulary "
                        f"[0, {vocab})"
                    )
            out.append(item)
        return out

    def _logprobs_batch(self, model: Any, token_lists: list[list[int]], targets: list[list[int]]):
        """Padded (B, T) target logprobs of one micro-batch (right padding, causal: no mask needed)."""
        dev = next(model.parameters()).device
        width = max(len(t) for t in token_lists)
        ids = torch.zeros((len(token_lists), width), dtype=torch.long)
        tgt = torch.zeros((len(token_lists), width), dtype=torch.long)
        for row, (toks, tg) in enumerate(zip(token_lists, targets, strict=True)):
            ids[row, : len(toks)] = torch.tensor(toks)
            tgt[row, : len(tg)] = torch.tensor(tg)
        ids, tgt = ids.to(dev), tgt.to(dev)
        logits = model(input_ids=ids, use_cache=False).logits.float()
        picked = logits.gather(-1, tgt.unsqueeze(-1)).squeeze(-1)
        return picked - torch.logsumexp(logits, dim=-1)

    @_locked
    def forward(
        self,
        model_id: str,
        data: list[dict[str, Any]],
        loss_fn: str,
        loss_fn_config: dict[str, Any] | None,
        *,
        backward: bool,
    ) -> ForwardOutput:
        """Compute the learner's logprobs and the loss; with ``backward`` add its gradient.

        Losses (sums over tokens and datums, as Tinker):

        - ``cross_entropy``: ``-sum(weights * logp)`` (``weights`` default to 1);
        - ``importance_sampling``: ``-sum(exp(logp - sampler_logp) * advantages)``;
        - ``ppo``: ``-sum(min(r * adv, clip(r, low, high) * adv))``, ``r = exp(logp -
          sampler_logp)``, ``low``/``high`` from ``loss_fn_config`` keys
          ``clip_low_threshold`` / ``clip_high_threshold`` (defaults 0.8 / 1.2).

        Gradients accumulate across calls until :meth:`optim_step`.

        Example::

            out = engine.forward(model_id, [{"model_input": [1, 2, 3],
                                             "loss_fn_inputs": {"target_tokens": [2, 3, 4],
                                                                "weights": [0, 1, 1]}}],
                                 "cross_entropy", None, backward=True)
            out.metrics["loss:sum"]
        """
        trainer = self._trainer(model_id)
        if loss_fn not in SUPPORTED_LOSSES:
            raise EngineError(
                f"loss_fn {loss_fn!r} is not supported by the local backend; "
                f"use one of {list(SUPPORTED_LOSSES)}"
            )
        config = loss_fn_config or {}
        if not isinstance(config, dict):
            raise EngineError(f"loss_fn_config must be a dict or null, got {config!r}")
        low, high = 0.8, 1.2
        if loss_fn == "ppo":
            low = config.get("clip_low_threshold", 0.8)
            high = config.get("clip_high_threshold", 1.2)
            for key, value in (("clip_low_threshold", low), ("clip_high_threshold", high)):
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    raise EngineError(f"loss_fn_config.{key} must be a number, got {value!r}")
            if not 0 <= low <= 1 <= high:
                raise EngineError(
                    f"ppo needs 0 <= clip_low_threshold <= 1 <= clip_high_threshold, got "
                    f"{low} and {high}"
                )
        base = self._bases[trainer.base]
        model = base.loaded.model
        max_len = int(getattr(model.config, "max_position_embeddings", 1 << 30))
        items = self._validate_data(data, loss_fn, base.loaded.vocab_size, max_len)
        self._activate(base, trainer.adapter)
        dev = base.loaded.device

        results: list[list[float]] = []
        total = 0.0
        per_batch = max(1, _LOGIT_BUDGET // max(1, base.loaded.vocab_size))
        start = 0
        while start < len(items):
            end, width = start, 0
            while end < len(items):
                width2 = max(width, len(items[end]["tokens"]))
                if end > start and width2 * (end - start + 1) > per_batch:
                    break
                width, end = width2, end + 1
            chunk = items[start:end]
            start = end
            ctx = contextlib.nullcontext() if backward else torch.no_grad()
            with ctx:
                logp = self._logprobs_batch(
                    model, [c["tokens"] for c in chunk], [c["target_tokens"] for c in chunk]
                )
                mask = torch.zeros_like(logp, dtype=torch.bool)
                for row, c in enumerate(chunk):
                    mask[row, : len(c["tokens"])] = True

                def padded(
                    key: str, rows: list[dict[str, list[Any]]] = chunk, shape: Any = logp.shape
                ) -> torch.Tensor:
                    out = torch.zeros(shape, dtype=torch.float32)
                    for row, c in enumerate(rows):
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
                        clipped = torch.clamp(ratio, low, high)
                        per_token = -torch.minimum(ratio * adv, clipped * adv)
                loss = torch.where(mask, per_token, torch.zeros_like(per_token)).sum()
                if backward:
                    loss.backward()
            total += float(loss.detach())
            logp_cpu = logp.detach().cpu()
            for row, c in enumerate(chunk):
                results.append(logp_cpu[row, : len(c["tokens"])].tolist())
        return ForwardOutput(logprobs=results, metrics={"loss:sum": total})

    # ------------------------------------------------------------------ optimizer

    @_locked
    def optim_step(
        self,
        model_id: str,
        *,
        learning_rate: float,
        beta1: float = 0.9,
        beta2: float = 0.95,
        eps: float = 1e-12,
        weight_decay: float = 0.0,
        grad_clip_norm: float = 0.0,
    ) -> dict[str, float]:
        """One AdamW step over the LoRA parameters with the accumulated gradients, then zero them.

        ``grad_clip_norm`` 0 turns clipping off. Returns ``{"grad_norm", "learning_rate", "step"}``
        (``grad_norm`` is the global norm before clipping).

        Example::

            engine.optim_step(model_id, learning_rate=3e-3, weight_decay=0.01, grad_clip_norm=1.0)
        """
        trainer = self._trainer(model_id)
        values = {
            "learning_rate": learning_rate,
            "beta1": beta1,
            "beta2": beta2,
            "eps": eps,
            "weight_decay": weight_decay,
            "grad_clip_norm": grad_clip_norm,
        }
        for key, value in values.items():
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise EngineError(f"adam_params.{key} must be a number, got {value!r}")
            if not math.isfinite(value) or value < 0:
                raise EngineError(f"adam_params.{key} must be finite and >= 0, got {value!r}")
        for key in ("beta1", "beta2"):
            if values[key] >= 1:
                raise EngineError(f"adam_params.{key} must be in [0, 1), got {values[key]!r}")
        params = list(trainer.params.values())
        grads = [p.grad for p in params if p.grad is not None]
        if grads:
            norm = float(torch.linalg.vector_norm(torch.stack([g.norm() for g in grads])))
        else:
            norm = 0.0
        if grad_clip_norm > 0 and grads and math.isfinite(norm):
            torch.nn.utils.clip_grad_norm_(params, max_norm=float(grad_clip_norm))
        for group in trainer.optimizer.param_groups:
            group["lr"] = float(learning_rate)
            group["betas"] = (float(beta1), float(beta2))
            group["eps"] = float(eps)
            group["weight_decay"] = float(weight_decay)
        if math.isfinite(norm):
            trainer.optimizer.step()
        trainer.optimizer.zero_grad(set_to_none=True)
        trainer.step += 1
        return {"grad_norm": norm, "learning_rate": float(learning_rate), "step": trainer.step}

    # ------------------------------------------------------------------ samplers

    def _snapshot_of(self, trainer: _Trainer) -> _Snapshot:
        tensors = {k: p.detach().clone() for k, p in trainer.params.items()}
        return _Snapshot(
            base=trainer.base, spec=trainer.spec, tensors=tensors, source=trainer.model_id
        )

    def _register_sampler(self, snap: _Snapshot) -> str:
        sampler_id = "sampler-" + uuid.uuid4().hex
        self._samplers[sampler_id] = snap
        return sampler_id

    @_locked
    def save_for_sampler(self, model_id: str, name: str | None) -> tuple[str, str]:
        """Freeze the current LoRA weights into a new sampler snapshot.

        Returns ``(sampler_id, tinker_path)``; with a ``name`` the snapshot is
        also written to ``tinker://<model_id>/sampler_weights/<name>`` (so
        ``create_sampler(model_path=...)`` works later, also in a new process),
        else the path is ``""``. Later training never changes the snapshot.

        Example::

            sampler_id, path = engine.save_for_sampler(model_id, "step-0010")
        """
        trainer = self._trainer(model_id)
        if name is not None:
            _check_name(name)
        snap = self._snapshot_of(trainer)
        path = ""
        if name is not None:
            path = self._write_checkpoint(trainer, "sampler_weights", name, snap.tensors, False)
            self._path_snapshots[path] = snap
        return self._register_sampler(snap), path

    @_locked
    def create_sampler(
        self, *, base_model: str | None = None, model_path: str | None = None
    ) -> str:
        """Make a sampler on the plain base model or on saved weights; return its ``sampler_id``.

        Exactly one of ``base_model`` (the KL reference) and ``model_path`` (a
        ``tinker://`` path from ``save_for_sampler`` / ``save_state``).

        Example::

            ref = engine.create_sampler(base_model="mint-envkit/tiny-qwen3")
            pol = engine.create_sampler(model_path="tinker://<model_id>/sampler_weights/step-1")
        """
        if (base_model is None) == (model_path is None):
            raise EngineError("create_sampler needs exactly one of base_model or model_path")
        if base_model is not None:
            base = self._base(base_model)
            snap = _Snapshot(base=base.loaded.name, spec=None, tensors=None, source=base_model)
            return self._register_sampler(snap)
        assert model_path is not None
        cached = self._path_snapshots.get(model_path)
        if cached is not None and self._checkpoint_dir(model_path).is_dir():
            return self._register_sampler(cached)
        meta, tensors, _ = self._read_checkpoint(model_path, with_optimizer=False)
        base = self._base(meta["base_model"])
        dev = base.loaded.device
        snap = _Snapshot(
            base=base.loaded.name,
            spec=LoraSpec.from_json(meta["lora"]),
            tensors={k: v.to(dev) for k, v in tensors.items()},
            source=model_path,
        )
        self._path_snapshots[model_path] = snap
        return self._register_sampler(snap)

    @_locked
    def release_sampler(self, sampler_id: str) -> None:
        """Forget a sampler snapshot (frees its tensors). Unknown ids raise EngineError(user).

        Example::

            engine.release_sampler(sampler_id)
        """
        self._sampler(sampler_id)
        del self._samplers[sampler_id]

    def _sampler(self, sampler_id: Any) -> _Snapshot:
        snap = self._samplers.get(sampler_id) if isinstance(sampler_id, str) else None
        if snap is None:
            raise EngineError(
                f"unknown sampler_id {sampler_id!r}; create one with save_for_sampler or "
                "create_sampler first"
            )
        return snap

    @contextlib.contextmanager
    def _use_snapshot(self, snap: _Snapshot) -> Iterator[Any]:
        """Make the base model compute with the snapshot's weights; yield the model."""
        base = self._bases[snap.base]
        model = base.loaded.model
        if snap.spec is None or snap.tensors is None:
            if base.peft is None:
                yield model
            else:
                with base.peft.disable_adapter():
                    yield model
            return
        slot = base.slots.get(snap.spec)
        if slot is None:
            slot = f"s{len(base.slots)}_{uuid.uuid4().hex[:8]}"
            self._add_adapter(base, slot, snap.spec, 0)
            base.slots[snap.spec] = slot
            base.slot_params[slot] = self._adapter_params(base, slot)
        params = base.slot_params[slot]
        if base.slot_content.get(slot) != snap.key:
            if set(params) != set(snap.tensors):
                raise EngineError(
                    f"weights from {snap.source} do not fit base model {snap.base} "
                    "(adapter tensor names differ)"
                )
            with torch.no_grad():
                for key, p in params.items():
                    p.copy_(snap.tensors[key])
            base.slot_content[slot] = snap.key
        self._activate(base, slot)
        yield model

    def _parse_stop(self, stop: Any, vocab: int) -> tuple[set[int], list[list[int]], list[str]]:
        ids: set[int] = set()
        seqs: list[list[int]] = []
        strings: list[str] = []
        if stop is None:
            return ids, seqs, strings
        if isinstance(stop, str):
            stop = [stop]
        if not isinstance(stop, Sequence):
            raise EngineError(
                f"stop must be a string, a list of strings, token ids or token id lists; "
                f"got {stop!r}"
            )
        for i, item in enumerate(stop):
            if _is_int(item):
                ids.add(int(item))
            elif isinstance(item, str):
                if not item:
                    raise EngineError(f"stop[{i}] is an empty string; remove it")
                strings.append(item)
            elif isinstance(item, Sequence):
                seq = _int_list(item, f"stop[{i}]")
                if not seq:
                    raise EngineError(f"stop[{i}] is an empty token sequence; remove it")
                if len(seq) == 1:
                    ids.add(seq[0])
                else:
                    seqs.append(seq)
            else:
                raise EngineError(f"stop[{i}] must be a token id, a token list or a string")
        for t in [*ids, *(t for s in seqs for t in s)]:
            if t < 0 or t >= vocab:
                raise EngineError(f"stop token id {t} is outside the vocabulary [0, {vocab})")
        return ids, seqs, strings

    def _validate_prompt(self, prompt: Any, vocab: int, what: str = "prompt") -> list[int]:
        tokens = _int_list(prompt, what)
        if not tokens:
            raise EngineError(f"{what} is empty; give at least one token")
        bad = [t for t in tokens if t < 0 or t >= vocab]
        if bad:
            raise EngineError(f"{what} holds token id {bad[0]} outside the vocabulary [0, {vocab})")
        return tokens

    @staticmethod
    def _draw(
        logits: torch.Tensor, temperature: float, top_p: float, top_k: int, gen: torch.Generator
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Draw one token per row; return the tokens and their logprobs under the drawn-from law."""
        scaled = logits / temperature
        if 0 < top_k < scaled.shape[-1]:
            kth = torch.topk(scaled, top_k, dim=-1).values[:, -1:]
            scaled = scaled.masked_fill(scaled < kth, float("-inf"))
        if top_p < 1.0:
            sorted_logits, order = torch.sort(scaled, dim=-1, descending=True)
            probs = torch.softmax(sorted_logits, dim=-1)
            before = torch.cumsum(probs, dim=-1) - probs
            drop_sorted = before >= top_p
            drop_sorted[:, 0] = False
            drop = torch.zeros_like(drop_sorted).scatter(-1, order, drop_sorted)
            scaled = scaled.masked_fill(drop, float("-inf"))
        logp = torch.log_softmax(scaled, dim=-1)
        probs = logp.exp()
        if probs.device.type != gen.device.type:
            probs = probs.to(gen.device)
        tokens = torch.multinomial(probs, 1, generator=gen).to(logp.device)
        return tokens.squeeze(-1), logp.gather(-1, tokens).squeeze(-1)

    @_locked
    def sample(
        self,
        sampler_id: str,
        prompt: list[int],
        *,
        num_samples: int = 1,
        max_tokens: int = 16,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        seed: int | None = None,
        stop: list[str] | list[int] | list[list[int]] | str | None = None,
    ) -> list[SampledSequence]:
        """Sample ``num_samples`` completions of ``prompt`` in one batched pass with a KV cache.

        The prompt is run once; its cache is repeated for every row and all rows
        step together; a row that stops is dropped from the batch. Each
        returned logprob is that of the distribution the token was drawn from
        (temperature-scaled, renormalised after ``top_k`` / ``top_p``
        truncation; ``top_k=-1`` and ``top_p=1`` mean none). ``stop`` holds
        token ids, token sequences or strings (matched in the decoded
        completion); the matched stop is included in ``tokens``.

        Example::

            seqs = engine.sample(sampler_id, prompt, num_samples=4, max_tokens=32,
                                 temperature=1.0, seed=0, stop=[2045])
            [s.stop_reason for s in seqs]  # ['stop', 'length', ...]
        """
        snap = self._sampler(sampler_id)
        spec = self._sample_spec(
            self._bases[snap.base],
            prompt,
            num_samples=num_samples,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            seed=seed,
            stop=stop,
        )
        return self._generate(snap, [spec])[0]

    @_locked
    def sample_many(
        self, requests: Sequence[tuple[str, list[int], dict[str, Any]]]
    ) -> list[list[SampledSequence] | EngineError]:
        """Sample several requests at once: one batched pass per sampler.

        Each request is ``(sampler_id, prompt, keyword arguments of sample())``.
        Requests on the same sampler share one padded batch (each keeps its own
        seed, temperature, truncation, stop and max_tokens), so many concurrent
        small requests cost about as much as one large one. A request that is
        invalid gets its :class:`EngineError` in its place; the others still run.

        Example::

            out = engine.sample_many([(sid, p1, {"num_samples": 4}), (sid, p2, {"seed": 1})])
            out[0][0].tokens
        """
        results: list[list[SampledSequence] | EngineError | None] = [None] * len(requests)
        groups: dict[str, list[tuple[int, _SampleSpec]]] = {}
        snaps: dict[str, _Snapshot] = {}
        for index, (sampler_id, prompt, kwargs) in enumerate(requests):
            try:
                snap = snaps.get(sampler_id) or self._sampler(sampler_id)
                snaps[sampler_id] = snap
                spec = self._sample_spec(self._bases[snap.base], prompt, **kwargs)
            except EngineError as err:
                results[index] = err
            except Exception as err:  # a bad keyword, for instance
                results[index] = EngineError(f"invalid sample request: {err}")
            else:
                groups.setdefault(sampler_id, []).append((index, spec))
        for sampler_id, items in groups.items():
            try:
                outs = self._generate(snaps[sampler_id], [spec for _, spec in items])
            except EngineError as err:
                outs = [err] * len(items)
            except Exception as err:
                outs = [EngineError(f"sampling failed: {err}", "server")] * len(items)
            for (index, _), out in zip(items, outs, strict=True):
                results[index] = out
        return results  # type: ignore[return-value]

    def _sample_spec(
        self,
        base: _Base,
        prompt: Any,
        *,
        num_samples: Any = 1,
        max_tokens: Any = 16,
        temperature: Any = 1.0,
        top_p: Any = 1.0,
        top_k: Any = -1,
        seed: Any = None,
        stop: Any = None,
    ) -> _SampleSpec:
        """Validate one request's arguments (EngineError naming the bad one)."""
        vocab = base.loaded.vocab_size
        tokens = self._validate_prompt(prompt, vocab)
        if not _is_int(num_samples) or not 1 <= num_samples <= 4096:
            raise EngineError(f"num_samples must be an integer from 1 to 4096, got {num_samples!r}")
        if not _is_int(max_tokens) or max_tokens < 1:
            raise EngineError(f"max_tokens must be an integer >= 1, got {max_tokens!r}")
        for key, value in (("temperature", temperature), ("top_p", top_p)):
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                raise EngineError(f"{key} must be a number, got {value!r}")
        if not math.isfinite(temperature) or temperature <= 0:
            raise EngineError(
                f"temperature must be > 0, got {temperature!r} (use a small value such as "
                "1e-3 for near-greedy decoding)"
            )
        if not 0 < top_p <= 1:
            raise EngineError(f"top_p must be in (0, 1], got {top_p!r}")
        if not _is_int(top_k) or top_k == 0 or top_k < -1:
            raise EngineError(f"top_k must be -1 (no limit) or >= 1, got {top_k!r}")
        if seed is not None and not _is_int(seed):
            raise EngineError(f"seed must be an integer or null, got {seed!r}")
        max_len = int(getattr(base.loaded.model.config, "max_position_embeddings", 1 << 30))
        if len(tokens) + max_tokens > max_len:
            raise EngineError(
                f"prompt ({len(tokens)} tokens) + max_tokens ({max_tokens}) exceeds the "
                f"model's context of {max_len}"
            )
        stop_ids, stop_seqs, stop_strs = self._parse_stop(stop, vocab)
        if seed is None:
            seed = int.from_bytes(os.urandom(8), "little") >> 1
        return _SampleSpec(
            prompt=tokens,
            num_samples=int(num_samples),
            max_tokens=int(max_tokens),
            temperature=float(temperature),
            top_p=float(top_p),
            top_k=int(top_k),
            seed=int(seed) % (2**63),
            stop_ids=frozenset(stop_ids),
            stop_seqs=tuple(tuple(q) for q in stop_seqs),
            stop_strs=tuple(stop_strs),
        )

    def _generate(
        self, snap: _Snapshot, specs: Sequence[_SampleSpec]
    ) -> list[list[SampledSequence]]:
        """Sample every spec in one batch: prompts left-padded, each request's rows from its cache.

        Each request's prompt runs once; its KV cache is repeated for its rows;
        all rows of all requests step together and a row that stops leaves the
        batch. Every request draws from its own seeded generator, so its tokens
        do not depend on what else is in the batch.
        """
        base = self._bases[snap.base]
        dev = base.loaded.device
        tokenizer = self._tokenizer(base) if any(s.stop_strs for s in specs) else None
        rows = [(r, k) for r, spec in enumerate(specs) for k in range(spec.num_samples)]
        gens = [torch.Generator(device="cpu").manual_seed(spec.seed) for spec in specs]
        out_tokens = [[[] for _ in range(spec.num_samples)] for spec in specs]
        out_lps = [[[] for _ in range(spec.num_samples)] for spec in specs]
        reasons: list[list[Literal["stop", "length"]]] = [
            ["length"] * spec.num_samples for spec in specs
        ]

        def stopped(spec: _SampleSpec, seq: list[int]) -> bool:
            if seq[-1] in spec.stop_ids:
                return True
            for stop in spec.stop_seqs:
                if len(seq) >= len(stop) and tuple(seq[-len(stop) :]) == stop:
                    return True
            if spec.stop_strs:
                window = 4 * max(len(x) for x in spec.stop_strs) + 4
                text = tokenizer.decode(seq[-window:], skip_special_tokens=False)
                return any(x in text for x in spec.stop_strs)
            return False

        with torch.no_grad(), self._use_sampler(snap) as model:
            width = max(len(spec.prompt) for spec in specs)
            ids = torch.zeros((len(specs), width), dtype=torch.long, device=dev)
            mask = torch.zeros((len(specs), width), dtype=torch.long, device=dev)
            for r, spec in enumerate(specs):
                ids[r, width - len(spec.prompt) :] = torch.tensor(spec.prompt, device=dev)
                mask[r, width - len(spec.prompt) :] = 1
            padded = bool((mask == 0).any())
            positions = (mask.cumsum(-1) - 1).clamp(min=0)
            out = model(
                input_ids=ids,
                attention_mask=mask if padded else None,
                position_ids=positions,
                use_cache=True,
                logits_to_keep=1,
            )
            cache = out.cache
            expand = torch.tensor([r for r, _ in rows], dtype=torch.long, device=dev)
            if len(rows) > 1 or len(specs) > 1:
                cache.batch_select_indices(expand)
            logits = out.logits[:, -1, :].float()[expand]
            mask = mask[expand]
            next_pos = mask.sum(-1)
            active = list(range(len(rows)))
            while True:
                tok = torch.empty(len(active), dtype=torch.long, device=dev)
                lp = torch.empty(len(active), dtype=torch.float32, device=dev)
                by_request: dict[int, list[int]] = {}
                for position, row in enumerate(active):
                    by_request.setdefault(rows[row][0], []).append(position)
                for r, positions_of_r in by_request.items():
                    spec = specs[r]
                    index = torch.tensor(positions_of_r, dtype=torch.long, device=dev)
                    drawn, drawn_lp = self._draw(
                        logits[index], spec.temperature, spec.top_p, spec.top_k, gens[r]
                    )
                    tok[index] = drawn
                    lp[index] = drawn_lp
                tok_list, lp_list = tok.tolist(), lp.tolist()
                keep: list[int] = []
                for position, row in enumerate(active):
                    r, k = rows[row]
                    seq = out_tokens[r][k]
                    seq.append(tok_list[position])
                    out_lps[r][k].append(lp_list[position])
                    if stopped(specs[r], seq):
                        reasons[r][k] = "stop"
                    elif len(seq) < specs[r].max_tokens:
                        keep.append(position)
                if not keep:
                    break
                if len(keep) < len(active):
                    index = torch.tensor(keep, dtype=torch.long, device=dev)
                    cache.batch_select_indices(index)
                    tok, mask, next_pos = tok[index], mask[index], next_pos[index]
                    active = [active[p] for p in keep]
                mask = torch.cat([mask, torch.ones_like(mask[:, :1])], dim=-1)
                out = model(
                    input_ids=tok.unsqueeze(-1),
                    attention_mask=mask if padded else None,
                    position_ids=next_pos.unsqueeze(-1),
                    cache=cache,
                    use_cache=True,
                )
                next_pos = next_pos + 1
                cache = out.cache
                logits = out.logits[:, -1, :].float()
        return [
            [
                SampledSequence(tokens=t, logprobs=lps, stop_reason=reason)
                for t, lps, reason in zip(out_tokens[r], out_lps[r], reasons[r], strict=True)
            ]
            for r in range(len(specs))
        ]

    @_locked
    def compute_logprobs(self, sampler_id: str, prompt: list[int]) -> list[float | None]:
        """Per-token logprobs of ``prompt`` under the sampler's weights; the first is ``None``.

        Example::

            engine.compute_logprobs(ref_sampler, [2044, 10, 11])  # [None, -7.6, -7.5]
        """
        snap = self._sampler(sampler_id)
        base = self._bases[snap.base]
        tokens = self._validate_prompt(prompt, base.loaded.vocab_size)
        if len(tokens) == 1:
            return [None]
        with torch.no_grad(), self._use_sampler(snap) as model:
            logp = self._logprobs_batch(model, [tokens[:-1]], [tokens[1:]])
        return [None, *logp[0].cpu().tolist()]

    # ------------------------------------------------------------------ checkpoints

    def _parse_path(self, path: Any) -> tuple[str, str, str]:
        if not isinstance(path, str) or not path.startswith("tinker://"):
            raise EngineError(
                f"checkpoint path must look like tinker://<model_id>/weights/<name> or "
                f"tinker://<model_id>/sampler_weights/<name>, got {path!r}"
            )
        parts = path[len("tinker://") :].split("/")
        if len(parts) != 3 or parts[1] not in _CHECKPOINT_TYPES:
            raise EngineError(
                f"checkpoint path {path!r} must have the form tinker://<model_id>/weights/<name> "
                "or tinker://<model_id>/sampler_weights/<name>"
            )
        model_id, kind, name = parts
        _check_name(model_id, "model_id in checkpoint path")
        _check_name(name)
        return model_id, kind, name

    def _checkpoint_dir(self, path: str) -> Path:
        model_id, kind, name = self._parse_path(path)
        target = (self.state_dir / model_id / kind / name).resolve()
        if self.state_dir not in target.parents:
            raise EngineError(f"checkpoint path {path!r} leaves the state directory")
        return target

    def _write_checkpoint(
        self,
        trainer: _Trainer,
        kind: str,
        name: str,
        tensors: dict[str, torch.Tensor] | None,
        with_optimizer: bool,
    ) -> str:
        from safetensors.torch import save_file

        path = f"tinker://{trainer.model_id}/{kind}/{name}"
        target = self._checkpoint_dir(path)
        target.parent.mkdir(parents=True, exist_ok=True)
        if tensors is None:
            tensors = {k: p.detach() for k, p in trainer.params.items()}
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=target.parent))
        try:
            save_file(
                {k: v.detach().to("cpu", torch.float32).contiguous() for k, v in tensors.items()},
                str(tmp / "adapter_model.safetensors"),
            )
            trainer.spec.peft_config(trainer.base).save_pretrained(str(tmp))
            meta = {
                "format": _FORMAT_VERSION,
                "model_id": trainer.model_id,
                "kind": kind,
                "name": name,
                "base_model": trainer.base,
                "lora": trainer.spec.to_json(),
                "step": trainer.step,
                "has_optimizer": with_optimizer,
            }
            if with_optimizer:
                save_file(self._optimizer_tensors(trainer), str(tmp / "optimizer.safetensors"))
            (tmp / "meta.json").write_text(json.dumps(meta, indent=2))
            if target.exists():
                trash = Path(tempfile.mkdtemp(prefix=".old-", dir=target.parent))
                target.rename(trash / "x")
                tmp.rename(target)
                shutil.rmtree(trash, ignore_errors=True)
                self._path_snapshots.pop(path, None)
            else:
                tmp.rename(target)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
        return path

    @staticmethod
    def _optimizer_tensors(trainer: _Trainer) -> dict[str, torch.Tensor]:
        out: dict[str, torch.Tensor] = {}
        for key, p in trainer.params.items():
            state = trainer.optimizer.state.get(p)
            if not state:
                continue
            for field in ("exp_avg", "exp_avg_sq", "step"):
                value = state[field]
                if not torch.is_tensor(value):
                    value = torch.tensor(float(value))
                out[f"{field}::{key}"] = value.detach().to("cpu", torch.float32).contiguous()
        return out

    def _read_checkpoint(
        self, path: str, *, with_optimizer: bool
    ) -> tuple[dict[str, Any], dict[str, torch.Tensor], dict[str, torch.Tensor]]:
        from safetensors.torch import load_file

        target = self._checkpoint_dir(path)
        meta_file = target / "meta.json"
        if not meta_file.is_file():
            raise EngineError(
                f"no checkpoint at {path!r} (looked in {target}); list them with list_checkpoints"
            )
        meta = json.loads(meta_file.read_text())
        tensors = load_file(str(target / "adapter_model.safetensors"))
        opt: dict[str, torch.Tensor] = {}
        if with_optimizer:
            opt_file = target / "optimizer.safetensors"
            if not meta.get("has_optimizer") or not opt_file.is_file():
                raise EngineError(
                    f"checkpoint {path!r} holds no optimizer state (it was saved for "
                    "sampling); load it without the optimizer, or use a save_state checkpoint"
                )
            opt = load_file(str(opt_file))
        return meta, tensors, opt

    @_locked
    def save_state(
        self, model_id: str, name: str, *, kind: Literal["state", "sampler"] = "state"
    ) -> str:
        """Write the LoRA weights (and, for ``kind="state"``, the optimizer state and step).

        Returns ``tinker://<model_id>/weights/<name>`` (or ``.../sampler_weights/<name>``).
        The write is atomic; an existing checkpoint of that name is replaced.

        Example::

            path = engine.save_state(model_id, "step-0100")
        """
        trainer = self._trainer(model_id)
        _check_name(name)
        if kind not in _KIND_DIRS:
            raise EngineError(f"kind must be 'state' or 'sampler', got {kind!r}")
        return self._write_checkpoint(trainer, _KIND_DIRS[kind], name, None, kind == "state")

    def _check_compatible(self, trainer: _Trainer, meta: dict[str, Any], path: str) -> None:
        spec = LoraSpec.from_json(meta["lora"])
        if resolve_model_name(meta["base_model"]) != trainer.base or spec != trainer.spec:
            raise EngineError(
                f"checkpoint {path!r} (base {meta['base_model']}, {spec}) does not fit model_id "
                f"{trainer.model_id} (base {trainer.base}, {trainer.spec}); use "
                "create_lora_from_state to get a matching training client"
            )

    @_locked
    def load_state(self, model_id: str, path: str, *, with_optimizer: bool) -> None:
        """Load saved LoRA weights (and optionally optimizer state and step) into ``model_id``.

        Without the optimizer, the optimizer restarts from scratch.

        Example::

            engine.load_state(model_id, "tinker://<id>/weights/step-0100", with_optimizer=True)
        """
        trainer = self._trainer(model_id)
        meta, tensors, opt = self._read_checkpoint(path, with_optimizer=with_optimizer)
        self._check_compatible(trainer, meta, path)
        if set(tensors) != set(trainer.params):
            raise EngineError(f"checkpoint {path!r} holds different adapter tensors", "server")
        with torch.no_grad():
            for key, p in trainer.params.items():
                p.copy_(tensors[key])
                p.grad = None
        trainer.optimizer.state.clear()
        if with_optimizer:
            for key, p in trainer.params.items():
                if f"exp_avg::{key}" not in opt:
                    continue
                trainer.optimizer.state[p] = {
                    "step": opt[f"step::{key}"].clone(),
                    "exp_avg": opt[f"exp_avg::{key}"].to(p.device, p.dtype).clone(),
                    "exp_avg_sq": opt[f"exp_avg_sq::{key}"].to(p.device, p.dtype).clone(),
                }
            trainer.step = int(meta.get("step", 0))
        else:
            trainer.step = 0

    @_locked
    def create_lora_from_state(self, path: str, *, with_optimizer: bool) -> str:
        """A new training client with the checkpoint's base model and LoRA shape, loaded from it.

        Example::

            new_id = engine.create_lora_from_state("tinker://<id>/weights/step-0100",
                                                   with_optimizer=True)
        """
        meta, _, _ = self._read_checkpoint(path, with_optimizer=False)
        base = self._base(meta["base_model"])
        model_id = self._new_trainer(base, LoraSpec.from_json(meta["lora"]), 0)
        try:
            self.load_state(model_id, path, with_optimizer=with_optimizer)
        except BaseException:
            self.unload(model_id)
            raise
        return model_id

    @_locked
    def list_checkpoints(self, model_id: str | None = None) -> list[dict[str, Any]]:
        """Checkpoints on disk, of one ``model_id`` or of all, oldest first.

        Each is ``{"checkpoint_id", "checkpoint_type", "tinker_path", "time", "size_bytes"}``
        with ``checkpoint_id`` like ``"weights/step-1"``, ``checkpoint_type`` ``"training"``
        or ``"sampler"`` and ``time`` an ISO 8601 string (UTC).

        Example::

            [c["tinker_path"] for c in engine.list_checkpoints(model_id)]
        """
        if model_id is not None:
            _check_name(model_id, "model_id")
            run_dirs = [self.state_dir / model_id]
        elif self.state_dir.is_dir():
            run_dirs = sorted(p for p in self.state_dir.iterdir() if p.is_dir())
        else:
            run_dirs = []
        out: list[dict[str, Any]] = []
        for run in run_dirs:
            for kind, ctype in _CHECKPOINT_TYPES.items():
                folder = run / kind
                if not folder.is_dir():
                    continue
                for ckpt in folder.iterdir():
                    if ckpt.name.startswith(".") or not (ckpt / "meta.json").is_file():
                        continue
                    mtime = (ckpt / "meta.json").stat().st_mtime
                    out.append(
                        {
                            "checkpoint_id": f"{kind}/{ckpt.name}",
                            "checkpoint_type": ctype,
                            "tinker_path": f"tinker://{run.name}/{kind}/{ckpt.name}",
                            "time": _now_iso(mtime),
                            "size_bytes": _dir_size(ckpt),
                            "_mtime": mtime,
                        }
                    )
        out.sort(key=lambda c: (c["_mtime"], c["tinker_path"]))
        for c in out:
            del c["_mtime"]
        return out

    @_locked
    def delete_checkpoint(self, path: str) -> None:
        """Delete a checkpoint; an unknown path raises EngineError(user).

        Samplers already made from it keep working (they hold their own copy).

        Example::

            engine.delete_checkpoint("tinker://<id>/sampler_weights/step-0010")
        """
        target = self._checkpoint_dir(path)
        if not (target / "meta.json").is_file():
            raise EngineError(f"no checkpoint at {path!r}; list them with list_checkpoints")
        trash = Path(tempfile.mkdtemp(prefix=".del-", dir=target.parent))
        target.rename(trash / "x")
        shutil.rmtree(trash, ignore_errors=True)
        self._path_snapshots.pop(path, None)

    @_locked
    def weights_info(self, path: str) -> dict[str, Any]:
        """``{"base_model", "is_lora", "lora_rank"}`` of a checkpoint.

        Example::

            engine.weights_info("tinker://<id>/weights/step-0100")
            # {'base_model': 'mint-envkit/tiny-qwen3', 'is_lora': True, 'lora_rank': 32}
        """
        target = self._checkpoint_dir(path)
        meta_file = target / "meta.json"
        if not meta_file.is_file():
            raise EngineError(f"no checkpoint at {path!r}; list them with list_checkpoints")
        meta = json.loads(meta_file.read_text())
        return {
            "base_model": meta["base_model"],
            "is_lora": True,
            "lora_rank": int(meta["lora"]["rank"]),
        }
