"""The engine's own bounds: a token budget per model pass, cancellation between chunks, memory back.

- **Token budget.** ``forward`` / ``forward_backward`` run their datums in
  micro-batches of at most ``max_tokens_per_pass`` padded tokens (rows x longest);
  gradients accumulate across them (the loss is a sum), so the result equals one big
  batch within float tolerance. Sampling splits a batch into sub-batches whose rows x
  (prompt + max_tokens) stay under the budget; ``compute_logprobs`` runs a long prompt
  in chunks of the budget through the KV cache. One datum longer than the budget still
  runs whole (its activations are needed for its backward).
- **Cancellation.** :meth:`Control.cancel` (``Engine.cancel_running``) marks the call
  that is running now as cancelled; it raises :class:`EngineError` of category
  ``"cancelled"`` at its next check (between micro-batches, sub-batches and decode
  steps), after undoing its partial gradient. Later calls are not affected.
- **Memory back.** After large work, :func:`release_memory` returns freed memory to
  the operating system (glibc ``malloc_trim``; ``torch.cuda.empty_cache`` on CUDA).

Example::

    from mint_envkit.local.engine.budget import Control

    control = Control(max_tokens_per_pass=4096)
    control.enter()  # a call begins
    control.check()  # not cancelled: the call goes on
    assert control.cancel()  # True: a call was running
    try:
        control.check()
    except EngineError as err:
        assert err.category == "cancelled"
    else:
        raise AssertionError("not cancelled")
    control.leave()
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

import attrs
import torch

from mint_envkit.checks import is_integer

from .records import EngineError

DEFAULT_MAX_TOKENS_PER_PASS = 4096
"""Padded tokens per model pass unless the Engine is told otherwise (sized for a laptop)."""

RELEASE_AFTER_TOKENS = 8192
"""Work over this many tokens gives its freed memory back to the OS when it ends."""

CPU_RELEASE_AFTER_TRAIN_TOKENS = 512
"""On CPU a training call over this many tokens gives its freed memory back too: without
it glibc keeps the pages of one step's activations and the next step's land beside them
(the learning demo's peak RSS grew by ~50 MB a step; issue 21). ``malloc_trim`` costs
milliseconds; CUDA keeps :data:`RELEASE_AFTER_TOKENS` (emptying its cache costs more)."""


def release_after(device: torch.device, tokens: int, *, training: bool = False) -> None:
    """:func:`release_memory` when work of ``tokens`` tokens was large enough for it to pay.

    Example::

        release_after(torch.device("cpu"), 600, training=True)  # trims on CPU
    """
    cpu_training = training and device.type != "cuda"
    if tokens > (CPU_RELEASE_AFTER_TRAIN_TOKENS if cpu_training else RELEASE_AFTER_TOKENS):
        release_memory(device)


def check_budget(value: Any) -> int:
    """``max_tokens_per_pass`` as an int >= 16, or EngineError(user) naming it.

    Example::

        assert check_budget(4096) == 4096
    """
    if not is_integer(value) or value < 16:
        raise EngineError(f"max_tokens_per_pass must be an integer >= 16, got {value!r}")
    return value


@attrs.define
class Control:
    """The budget, the batching rule and the cancellation state shared by the engine's loops.

    ``batch_invariant``: sampling batches only requests whose prompts have the same
    length, so a request's logprobs never depend on the requests beside it.

    Example::

        control = Control(max_tokens_per_pass=2048)
        control.enter(); control.check(); control.leave()
    """

    max_tokens_per_pass: int
    batch_invariant: bool = False
    epoch: int = 0  # bumped by cancel()
    started: int = 0  # epoch when the running call began
    depth: int = 0  # nesting of public calls (the engine lock is reentrant)

    def enter(self) -> None:
        """A public call begins (under the engine lock); only the outermost one counts."""
        self.depth += 1
        if self.depth == 1:
            self.started = self.epoch

    def leave(self) -> None:
        """A public call ends."""
        self.depth -= 1

    def cancel(self) -> bool:
        """Cancel the running call (thread-safe, no lock); True if one was running."""
        self.epoch += 1
        return self.depth > 0

    def check(self) -> None:
        """Raise EngineError(category="cancelled") if the running call was cancelled."""
        if self.epoch != self.started:
            raise EngineError(
                "the engine call was cancelled (the server is shutting down or the work was "
                "withdrawn); nothing it would have changed was changed, so retry it",
                "cancelled",
            )


def _malloc_trim() -> None:
    if not sys.platform.startswith("linux"):
        return
    name = ctypes.util.find_library("c")
    if name is None:
        return
    try:
        ctypes.CDLL(name).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        return


def release_memory(device: torch.device) -> None:
    """Give freed memory back: ``malloc_trim`` on glibc, the CUDA cache on CUDA.

    (Tensors are freed by reference counting as soon as a pass ends; this returns
    the freed pages, which glibc would otherwise keep mapped.)

    Example::

        release_memory(torch.device("cpu"))
    """
    if device.type == "cuda":
        torch.cuda.empty_cache()
    else:
        _malloc_trim()
