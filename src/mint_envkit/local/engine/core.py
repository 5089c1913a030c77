"""The front of the engine: :class:`Engine` keeps the registries and the lock and delegates.

The work is done by :mod:`.adapters` (LoRA adapters, the merged sampling copy),
:mod:`.training` (forward, losses, optimizer), :mod:`.sampling` (snapshots,
generation) and :mod:`.checkpoints` (files on disk).

Example::

    from mint_envkit.local import Engine

    # the package's example built `engine` and trained `model_id` one step
    assert isinstance(engine, Engine)
    assert engine.model_info(model_id)["step"] == 1
"""

from __future__ import annotations

import functools
import os
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal, TypeVar

from mint_envkit.local.bounds import ENGINE_DEFAULT_MAX_TOKENS
from mint_envkit.local.models.common import ModelLoadError, pin_threads
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, TINY_MODEL_NAMES, cache_dir

from . import adapters, sampling, training
from .budget import DEFAULT_MAX_TOKENS_PER_PASS, Control, check_budget
from .checkpoints import KIND_DIRS, CheckpointStore
from .inputs import check_name
from .records import EngineError, ForwardOutput, LoraSpec, SampledSequence, Snapshot
from .registry import Registry

_F = TypeVar("_F", bound=Callable[..., Any])


def _locked(method: _F) -> _F:
    """Run a public method under the engine lock; turn unexpected errors into server errors."""

    @functools.wraps(method)
    def wrapper(self: Engine, *args: Any, **kwargs: Any) -> Any:
        with self._lock:
            self._control.enter()
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
            finally:
                self._control.leave()

    return wrapper  # type: ignore[return-value]


def default_state_dir() -> Path:
    """Where an engine keeps checkpoints when given no ``state_dir``.

    ``MINT_ENVKIT_STATE_DIR`` when set, else ``<cache dir>/state``.

    Example::

        default_state_dir()  # e.g. PosixPath('/home/me/.cache/mint_envkit/state')
    """
    env = os.environ.get("MINT_ENVKIT_STATE_DIR")
    return Path(env) if env else cache_dir() / "state"


class Engine:
    """Models, LoRA training clients, sampler snapshots and checkpoints, in one process.

    Args:
        state_dir: where checkpoints live; default ``$MINT_ENVKIT_STATE_DIR``, else
            ``cache_dir()/"state"``.
        device: ``"cuda"`` / ``"cpu"``; default CUDA (bf16) when available, else CPU (fp32).
        num_threads: torch intra-op threads, pinned for determinism; default
            ``MINT_ENVKIT_NUM_THREADS``, else 1 (see ``models.common.pin_threads_default``).
        default_model: the base model named first in :attr:`supported_models`.
        max_tokens_per_pass: padded tokens one model pass may hold (micro-batches of
            ``forward``, sub-batches of sampling, chunks of ``compute_logprobs``); bounds
            peak memory. Default ``DEFAULT_MAX_TOKENS_PER_PASS`` (4096), sized for a laptop.
        batch_invariant: sample requests share a batch only with requests whose prompts
            have the same length, so on CPU a request's tokens and logprobs are bit for
            bit those it gets alone, whatever else is sampled at the same time (default
            False: mixed lengths are padded into one batch, which rounds logprobs
            differently at about 1e-7 and is faster when lengths vary). Batches of
            equal-length prompts are invariant either way on CPU; CUDA makes no such promise.

    Example::

        import tempfile

        engine = Engine(state_dir=tempfile.mkdtemp())
        model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=4, seed=0)
        assert engine.model_info(model_id)["lora_rank"] == 4
    """

    def __init__(
        self,
        *,
        state_dir: str | os.PathLike[str] | None = None,
        device: str | None = None,
        num_threads: int | None = None,
        default_model: str = TINY_MODEL_NAME,
        max_tokens_per_pass: int = DEFAULT_MAX_TOKENS_PER_PASS,
        batch_invariant: bool = False,
    ) -> None:
        self.state_dir = Path(state_dir or default_state_dir()).expanduser().resolve()
        self.device = device
        try:
            self.num_threads = pin_threads(num_threads)
        except ModelLoadError as err:
            raise EngineError(str(err), "user") from err
        self.default_model = default_model
        self._lock = threading.RLock()
        if not isinstance(batch_invariant, bool):
            raise EngineError(f"batch_invariant must be True or False, got {batch_invariant!r}")
        self._control = Control(
            max_tokens_per_pass=check_budget(max_tokens_per_pass), batch_invariant=batch_invariant
        )
        self.registry = Registry(device=device, num_threads=self.num_threads)
        """In-memory state (internal: for tests and tools, not a stable API)."""
        self._checkpoints = CheckpointStore(self.state_dir)

    @property
    def max_tokens_per_pass(self) -> int:
        """Padded tokens one model pass may hold (settable; see the constructor).

        Example::

            engine.max_tokens_per_pass = 2048
            assert engine.max_tokens_per_pass == 2048
        """
        return self._control.max_tokens_per_pass

    @max_tokens_per_pass.setter
    def max_tokens_per_pass(self, value: int) -> None:
        self._control.max_tokens_per_pass = check_budget(value)

    def cancel_running(self) -> bool:
        """Cancel the call running now, from any thread (no lock); True if one was running.

        The call raises ``EngineError(category="cancelled")`` at its next check:
        between micro-batches of ``forward``, sub-batches and decode steps of sampling,
        chunks of ``compute_logprobs`` (within about one model pass). It leaves no
        partial gradient; checkpoint writes are atomic and never interrupted. Calls
        queued behind it run normally: stop submitting them first (on SIGTERM).

        Example::

            import threading
            import time

            def cancel_once_running():  # from another thread, e.g. a SIGTERM handler
                while not engine.cancel_running():  # False: no call is running yet
                    time.sleep(0.01)

            threading.Thread(target=cancel_once_running, daemon=True).start()
            try:
                engine.sample(sampler_id, prompt, num_samples=64, max_tokens=1000)
            except EngineError as err:  # at its next check, within one model pass
                assert err.category == "cancelled"
            else:
                raise AssertionError("not cancelled")
        """
        return self._control.cancel()

    @property
    def supported_models(self) -> list[str]:
        """Base model names to advertise: the default, the tiny ones, and every loaded one.

        Example::

            assert Engine().supported_models == [
                "mint-envkit/tiny-qwen3",
                "mint-envkit/tiny-qwen3-small",
            ]
        """
        names = [self.default_model, *sorted(TINY_MODEL_NAMES), *self.registry.bases]
        return list(dict.fromkeys(names))

    # ------------------------------------------------------------------ models and clients

    @_locked
    def ensure_base_model(self, name: str) -> None:
        """Load base model ``name`` (once; later calls are free).

        Raises:
            EngineError: (user) the model is not available locally; the message names it.

        Example::

            engine.ensure_base_model("mint-envkit/tiny-qwen3")
            engine.ensure_base_model("mint-envkit/tiny-qwen3")  # loaded already: free
        """
        self.registry.base(name)

    @_locked
    def tokenizer_dir(self, base_model: str) -> str:
        """An absolute directory ``AutoTokenizer.from_pretrained`` loads offline.

        It is the ``tokenizer_id`` the server returns from ``get_info``.

        Example::

            engine.tokenizer_dir("mint-envkit/tiny-qwen3-small")
            # '/.../mint_envkit/models/tiny-qwen3-small-<hash>'
        """
        return self.registry.base(base_model).loaded.tokenizer_dir

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

            model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=16, seed=0,
                                          train_unembed=False)
            assert engine.model_info(model_id)["step"] == 0
        """
        spec = adapters.lora_spec(
            rank, seed, train_mlp=train_mlp, train_attn=train_attn, train_unembed=train_unembed
        )
        base = self.registry.base(base_model)
        return self.registry.add_trainer(adapters.new_trainer(base, spec, seed))

    @_locked
    def model_info(self, model_id: str) -> dict[str, Any]:
        """What ``get_info`` reports about a training client.

        Example::

            engine.model_info(model_id)
            # {'base_model': 'mint-envkit/tiny-qwen3-small', 'lora_rank': 8,
            #  'tokenizer_dir': '/.../tiny-qwen3-small-<hash>', 'arch': 'qwen3', ...}
            assert engine.model_info(model_id)["lora_rank"] == 8
        """
        base, trainer = self.registry.trainer(model_id)
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

            doomed = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=4, seed=0)
            engine.unload(doomed)
        """
        base, trainer = self.registry.trainer(model_id)
        del self.registry.trainers[model_id]
        adapters.drop_trainer(base, trainer)

    # ------------------------------------------------------------------ training

    @_locked
    def forward(
        self,
        model_id: str,
        data: list[dict[str, Any]],
        loss_fn: str,
        loss_fn_config: dict[str, Any] | None,
        *,
        backward: bool,
        between: Callable[[], None] | None = None,
        piece_tokens: int | None = None,
    ) -> ForwardOutput:
        """Compute the learner's logprobs and the loss; with ``backward`` add its gradient.

        Losses (sums over tokens and datums, as Tinker):

        - ``cross_entropy``: ``-sum(weights * logp)`` (``weights`` default to 1);
        - ``importance_sampling``: ``-sum(exp(logp - sampler_logp) * advantages)``;
        - ``ppo``: ``-sum(min(r * adv, clip(r, low, high) * adv))``, ``r = exp(logp -
          sampler_logp)``, ``low``/``high`` from ``loss_fn_config`` keys
          ``clip_low_threshold`` / ``clip_high_threshold`` (defaults 0.8 / 1.2).

        Gradients accumulate across calls until :meth:`optim_step`. ``piece_tokens``
        caps a micro-batch's padded tokens; ``between()`` runs between micro-batches
        (the server runs waiting sample requests there; see ``training.forward``).

        Example::

            out = engine.forward(model_id, [{"model_input": [1, 2, 3],
                                             "loss_fn_inputs": {"target_tokens": [2, 3, 4],
                                                                "weights": [0, 1, 1]}}],
                                 "cross_entropy", None, backward=True)
            assert out.metrics["loss:sum"] > 0 and len(out.logprobs[0]) == 3
        """
        base, trainer = self.registry.trainer(model_id)
        return training.forward(
            base,
            trainer,
            data,
            loss_fn,
            loss_fn_config,
            backward=backward,
            control=self._control,
            between=between,
            piece_tokens=piece_tokens,
        )

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

        Raises:
            EngineError: (user) a non-finite gradient (the loss was NaN or infinite), or an
                update that would make the weights non-finite (learning rate too high): the
                message names the step; weights, optimizer state and step stay as they were,
                and the gradient is dropped.

        Example::

            stats = engine.optim_step(model_id, learning_rate=3e-3, weight_decay=0.01,
                                      grad_clip_norm=1.0)
            assert set(stats) == {"grad_norm", "learning_rate", "step"}
        """
        _, trainer = self.registry.trainer(model_id)
        return training.optim_step(
            trainer, learning_rate, beta1, beta2, eps, weight_decay, grad_clip_norm
        )

    # ------------------------------------------------------------------ samplers

    @_locked
    def save_for_sampler(self, model_id: str, name: str | None) -> tuple[str, str]:
        """Freeze the current LoRA weights into a new sampler snapshot.

        Returns ``(sampler_id, tinker_path)``; with a ``name`` the snapshot is
        also written to ``tinker://<model_id>/sampler_weights/<name>`` (so
        ``create_sampler(model_path=...)`` works later, also in a new process),
        else the path is ``""``. Later training never changes the snapshot.

        Example::

            sampler_id, path = engine.save_for_sampler(model_id, "step-0010")
            assert path == f"tinker://{model_id}/sampler_weights/step-0010"
        """
        _, trainer = self.registry.trainer(model_id)
        if name is not None:
            check_name(name)
        snap = sampling.snapshot_of(trainer)
        path = ""
        if name is not None:
            path = self._checkpoints.write(trainer, "sampler_weights", name, snap.tensors, False)
            self._checkpoints.snapshots[path] = snap
        return self.registry.add_sampler(snap), path

    @_locked
    def create_sampler(
        self, *, base_model: str | None = None, model_path: str | None = None
    ) -> str:
        """Make a sampler on the plain base model or on saved weights; return its ``sampler_id``.

        Exactly one of ``base_model`` (the KL reference) and ``model_path`` (a
        ``tinker://`` path from ``save_for_sampler`` / ``save_state``).

        Example::

            ref = engine.create_sampler(base_model="mint-envkit/tiny-qwen3-small")
            _, path = engine.save_for_sampler(model_id, "step-1")
            pol = engine.create_sampler(model_path=path)  # tinker://<model_id>/sampler_weights/step-1
        """
        if (base_model is None) == (model_path is None):
            raise EngineError("create_sampler needs exactly one of base_model or model_path")
        if base_model is not None:
            name = self.registry.base(base_model).loaded.name
            snap = Snapshot(base=name, spec=None, tensors=None, source=base_model)
            return self.registry.add_sampler(snap)
        assert model_path is not None
        return self.registry.add_sampler(self._checkpoints.snapshot(model_path, self.registry.base))

    @_locked
    def release_sampler(self, sampler_id: str) -> None:
        """Forget a sampler snapshot (frees its tensors). Unknown ids raise EngineError(user).

        Example::

            doomed, _ = engine.save_for_sampler(model_id, None)
            engine.release_sampler(doomed)
        """
        self.registry.sampler(sampler_id)
        del self.registry.samplers[sampler_id]

    @_locked
    def sample(
        self,
        sampler_id: str,
        prompt: list[int],
        *,
        num_samples: int = 1,
        max_tokens: int = ENGINE_DEFAULT_MAX_TOKENS,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        seed: int | None = None,
        stop: list[str] | list[int] | list[list[int]] | str | None = None,
    ) -> list[SampledSequence]:
        """Sample ``num_samples`` completions of ``prompt`` in one batched pass with a KV cache.

        The prompt is run once; its cache is repeated for every row and all rows
        step together; a row that stops is dropped from the batch. Each returned logprob is that of the distribution the token was drawn
        from (temperature-scaled, renormalised after ``top_k`` / ``top_p``
        truncation; ``top_k=-1`` and ``top_p=1`` mean none). ``stop`` holds
        token ids, token sequences or strings (matched in the decoded
        completion); the matched stop is included in ``tokens``.

        Example::

            seqs = engine.sample(sampler_id, prompt, num_samples=4, max_tokens=32,
                                 temperature=1.0, seed=0, stop=[2045])
            [s.stop_reason for s in seqs]  # e.g. ['length', 'stop', 'stop', 'length']
            assert all(s.stop_reason == "stop" or len(s.tokens) == 32 for s in seqs)
        """
        base, snap = self.registry.sampler(sampler_id)
        spec = sampling.sample_spec(
            base,
            prompt,
            num_samples=num_samples,
            max_tokens=max_tokens,
            temperature=temperature,
            top_p=top_p,
            top_k=top_k,
            seed=seed,
            stop=stop,
        )
        return sampling.generate(base, snap, [spec], self._control)[0]

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

            out = engine.sample_many([(sampler_id, [2044, 10], {"num_samples": 4}),
                                      (sampler_id, [2044, 12], {"seed": 1})])
            assert [len(seqs) for seqs in out] == [4, 1]
        """
        return sampling.sample_many(requests, self.registry.sampler, self._control)

    @_locked
    def compute_logprobs(self, sampler_id: str, prompt: list[int]) -> list[float | None]:
        """Per-token logprobs of ``prompt`` under the sampler's weights; the first is ``None``.

        Example::

            engine.compute_logprobs(sampler_id, [2044, 10, 11])  # [None, -7.6, -7.9]
        """
        return sampling.compute_logprobs(*self.registry.sampler(sampler_id), prompt, self._control)

    # ------------------------------------------------------------------ checkpoints

    @_locked
    def save_state(
        self, model_id: str, name: str, *, kind: Literal["state", "sampler"] = "state"
    ) -> str:
        """Write the LoRA weights (and, for ``kind="state"``, the optimizer state and step).

        Returns ``tinker://<model_id>/weights/<name>`` (or ``.../sampler_weights/<name>``).
        The write is atomic; an existing checkpoint of that name is replaced.

        Example::

            path = engine.save_state(model_id, "step-0100")
            assert path == f"tinker://{model_id}/weights/step-0100"
        """
        _, trainer = self.registry.trainer(model_id)
        check_name(name)
        if kind not in KIND_DIRS:
            raise EngineError(f"kind must be 'state' or 'sampler', got {kind!r}")
        return self._checkpoints.write(trainer, KIND_DIRS[kind], name, None, kind == "state")

    @_locked
    def load_state(self, model_id: str, path: str, *, with_optimizer: bool) -> None:
        """Load saved LoRA weights (and optionally optimizer state and step) into ``model_id``.

        Without the optimizer, the optimizer restarts from scratch.

        Example::

            path = engine.save_state(model_id, "step-0100")
            engine.load_state(model_id, path, with_optimizer=True)
        """
        _, trainer = self.registry.trainer(model_id)
        self._checkpoints.load_into(trainer, path, with_optimizer=with_optimizer)

    @_locked
    def create_lora_from_state(self, path: str, *, with_optimizer: bool) -> str:
        """A new training client with the checkpoint's base model and LoRA shape, loaded from it.

        Example::

            path = engine.save_state(model_id, "step-0100")
            new_id = engine.create_lora_from_state(path, with_optimizer=True)
            assert engine.model_info(new_id)["step"] == engine.model_info(model_id)["step"]
        """
        meta, _, _ = self._checkpoints.read(path, with_optimizer=False)
        base = self.registry.base(meta["base_model"])
        trainer = adapters.new_trainer(base, LoraSpec.from_json(meta["lora"]), 0)
        model_id = self.registry.add_trainer(trainer)
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
            # ['tinker://<model_id>/weights/step-0100', ...]
        """
        return self._checkpoints.list(model_id)

    @_locked
    def delete_checkpoint(self, path: str) -> None:
        """Delete a checkpoint; an unknown path raises EngineError(user).

        Samplers already made from it keep working (they hold their own copy).

        Example::

            _, path = engine.save_for_sampler(model_id, "step-0010")
            engine.delete_checkpoint(path)
        """
        self._checkpoints.delete(path)

    @_locked
    def weights_info(self, path: str) -> dict[str, Any]:
        """``{"base_model", "is_lora", "lora_rank", "train_mlp", "train_attn", "train_unembed"}``.

        Tinker's ``WeightsInfoResponse``: the LoRA flags of the run that saved the
        checkpoint, so a client rebuilt from it (also after a restart) is the same shape.

        Example::

            path = engine.save_state(model_id, "step-0100")
            assert engine.weights_info(path) == {
                "base_model": "mint-envkit/tiny-qwen3-small", "is_lora": True, "lora_rank": 8,
                "train_mlp": True, "train_attn": True, "train_unembed": True,
            }
        """
        return self._checkpoints.weights_info(path)
