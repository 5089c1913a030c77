"""What every base-model loader shares: the error, the loaded-model record, device and threads.

Example::

    from mint_envkit.local.models.common import default_device, pin_threads

    device, dtype = default_device()  # (device(type='cpu'), torch.float32) without a GPU
    assert dtype == (torch.bfloat16 if device.type == "cuda" else torch.float32)
    pin_threads()                     # 1 (MINT_ENVKIT_NUM_THREADS, when set)
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs
import torch

from mint_envkit.errors import MintEnvkitError


class ModelLoadError(MintEnvkitError):
    """A base model cannot be found or loaded; the engine turns it into a user EngineError.

    Example::

        from mint_envkit.local.models.loader import load_base_model

        try:
            load_base_model("someone/not-downloaded")
        except ModelLoadError as err:
            message = str(err)  # "model 'someone/not-downloaded' is not available locally: ..."
            assert message.startswith("model 'someone/not-downloaded' is not available locally")
        else:
            raise AssertionError("the backend never downloads")
    """


@attrs.frozen
class LoadedModel:
    """A base model in memory with what the engine needs to know about it.

    Attributes:
        name: the name it was asked for (a tiny name, a hub id, or an absolute directory).
        model: the ``transformers`` causal LM, in eval mode, on ``device``.
        model_dir: the directory it was loaded from.
        tokenizer_dir: an absolute directory that ``AutoTokenizer.from_pretrained`` loads offline.
        vocab_size: the number of rows of the output layer (valid token ids are below it).
        arch: ``config.model_type`` (``"qwen3"`` for the tiny models).
        device: the torch device.

    Example::

        from mint_envkit.local.models.loader import load_base_model

        loaded = load_base_model("mint-envkit/tiny-qwen3-small")
        assert (loaded.vocab_size, loaded.arch) == (2048, "qwen3")
    """

    name: str
    model: Any
    model_dir: str
    tokenizer_dir: str
    vocab_size: int
    arch: str
    device: torch.device


def default_device(device: str | None = None) -> tuple[torch.device, torch.dtype]:
    """The device and dtype models run in: CUDA in bf16 when available, else CPU in fp32.

    Example::

        default_device()       # (device(type='cpu'), torch.float32) on a machine without a GPU
        assert default_device("cpu") == (torch.device("cpu"), torch.float32)  # forced
    """
    if device is None:
        device = "cuda" if torch.cuda.is_available() else "cpu"
    dev = torch.device(device)
    dtype = torch.bfloat16 if dev.type == "cuda" else torch.float32
    return dev, dtype


def pin_threads(num_threads: int | None = None) -> int:
    """Pin torch's intra-op thread count and return it.

    Default: :func:`pin_threads_default` (``$MINT_ENVKIT_NUM_THREADS``, else 1).
    A fixed thread count keeps CPU reductions, and so results, reproducible.

    Example::

        assert pin_threads() == pin_threads_default()   # 1 unless MINT_ENVKIT_NUM_THREADS is set
        assert pin_threads(2) == 2 == torch.get_num_threads()
        pin_threads()   # back to the default
    """
    n = max(1, int(num_threads if num_threads is not None else pin_threads_default()))
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    return n


def pin_threads_default() -> int:
    """The thread count used when none is given: ``MINT_ENVKIT_NUM_THREADS``, else 1 on CPU.

    One thread: on a 2-core machine whose cores are shared with other work,
    torch with one thread per core was measured 10-15x slower than with one
    thread on the tiny models (OpenMP threads wait on each other), and about
    as fast when the machine was idle. Raise it (``--threads``) for a real
    model on CPU.

    Example::

        pin_threads_default()  # 1 (MINT_ENVKIT_NUM_THREADS, when set)
    """
    env = os.environ.get("MINT_ENVKIT_NUM_THREADS", "").strip()
    if env:
        try:
            return max(1, int(env))
        except ValueError:
            raise ModelLoadError(
                f"MINT_ENVKIT_NUM_THREADS must be a whole number, got {env!r}"
            ) from None
    return 1


def check_tokenizer_path(path: str) -> str:
    """Return ``path`` if the tinker SDK can load a tokenizer from it, else raise.

    ``tinker``'s ``get_tokenizer`` rewrites a model name with exactly two ``/``
    to ``org/model`` and cuts a name at the first ``:``; a directory path like
    that would be misread.

    Example::

        check_tokenizer_path("/home/me/.cache/mint_envkit/models/tiny-qwen3-abc")  # fine
        try:
            check_tokenizer_path("/data/tok")   # exactly two '/': the SDK reads 'data/tok'
        except ModelLoadError as err:
            assert "would be misread by the tinker SDK" in str(err)
        else:
            raise AssertionError("raises ModelLoadError")
    """
    if path.count("/") == 2 or ":" in path:
        raise ModelLoadError(
            f"tokenizer directory {path!r} would be misread by the tinker SDK (a path with "
            "exactly two '/' or with ':'); set MINT_ENVKIT_CACHE to a deeper directory "
            "without ':' (for example /tmp/mint/cache), or move the model directory."
        )
    return path


def build_cached_dir(target: Path, build: Callable[[Path], None], *, done: str) -> Path:
    """Build a cache directory once, safely when several processes race to build it.

    ``build(tmp)`` writes into a fresh temporary directory beside ``target``,
    which is then renamed into place in one step, so a reader never sees a half
    written directory. ``done`` is the file whose presence marks a finished
    directory; when another process wins the race, its directory is kept.

    Example::

        # e.g. build_cached_dir(root / "my-model-abc123", model.save_pretrained, done="model.safetensors")
        write = lambda tmp: (tmp / "model.safetensors").write_text("weights")
        target = build_cached_dir(Path("cache") / "my-model-abc123", write, done="model.safetensors")
        assert sorted(p.name for p in target.iterdir()) == ["model.safetensors"]
        assert build_cached_dir(target, None, done="model.safetensors") == target   # built once
    """
    if (target / done).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=target.parent))
    try:
        build(tmp)
        try:
            tmp.rename(target)
        except OSError:
            # Another process won the race; its build is identical.
            if not (target / done).is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target
