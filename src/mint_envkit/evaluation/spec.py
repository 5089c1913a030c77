"""What an evaluation runs on: an ENV_SPEC loaded, and its problems as groups of K samples.

An ENV_SPEC is ``MODULE:NAME`` or ``path/to/file.py:NAME`` naming a
:class:`~mint_envkit.DatasetBuilder` or an env class (then the problems come
separately). ``mint-envkit check`` and ``mint-envkit eval`` both load it here.

Example::

    from mint_envkit.evaluation.spec import eval_groups, load_target

    target = load_target("examples/arithmetic_env.py:ArithmeticEnv")
    groups = await eval_groups(target, model_name="mint-envkit/tiny-qwen3", samples=4,
                               problems=[{"question": "What is 2 + 3?", "answer": "5"}])
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.checks import integer
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.local.bounds import temperature_problem

SPLITS = ("test", "train", "all")
"""The splits an evaluation can run on (None picks ``test`` when there is one, else ``train``).

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    await eval_groups(builder, model_name=model, samples=4, split="all")
"""


def load_target(spec: str) -> Any:
    """The object an ENV_SPEC names: ``MODULE:NAME`` or ``path/to/file.py:NAME``.

    A file is imported under a private module name with its folder last on
    ``sys.path`` (its siblings import; a file called ``math.py`` cannot
    replace the real ``math``).

    Raises:
        MintEnvkitError: the spec has no ``:``, the file or module does not
            exist, or it has no such attribute (the message names it).

    Example::

        load_target("examples/arithmetic_env.py:ArithmeticEnv")   # the env class
    """
    if ":" not in spec:
        raise MintEnvkitError(
            f"expected MODULE:NAME (e.g. examples/arithmetic_env.py:ArithmeticEnv or "
            f"my_pkg.envs:builder), got {spec!r}"
        )
    module_ref, name = spec.rsplit(":", 1)
    if module_ref.endswith(".py") or "/" in module_ref:
        path = Path(module_ref)
        if not path.is_file():
            raise MintEnvkitError(f"no such file: {module_ref}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.append(folder)
        private = f"_mint_envkit_check_{path.stem}"
        module_spec = importlib.util.spec_from_file_location(private, path)
        if module_spec is None or module_spec.loader is None:
            raise MintEnvkitError(f"cannot import {module_ref}")
        module = importlib.util.module_from_spec(module_spec)
        sys.modules[private] = module
        module_spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_ref)
        except ImportError as err:
            raise MintEnvkitError(f"cannot import {module_ref}: {err}") from None
    if not hasattr(module, name):
        raise MintEnvkitError(f"{module_ref} has no attribute {name!r}")
    return getattr(module, name)


def _builder(
    target: Any,
    *,
    model_name: str,
    samples: int,
    problems: Sequence[Mapping[str, Any]] | str | None,
    renderer_name: str | None,
) -> DatasetBuilder:
    """``target`` as a builder whose every group holds ``samples`` envs, in problem order."""
    if isinstance(target, str):
        target = load_target(target)
    if isinstance(target, DatasetBuilder):
        if problems is not None:
            raise ConfigError(
                "problems= is for an env class; a DatasetBuilder brings its own problems"
            )
        # fields=None: the builder's problems already carry its field mapping.
        return attrs.evolve(
            target,
            fields=None,
            group_size=samples,
            test_group_size=samples,
            n_epochs=1,
            shuffle=False,
            drop_last=False,
            model_name=model_name,
            renderer_name=renderer_name or target.renderer_name,
        )
    if not callable(target):
        raise ConfigError(f"{target!r} is neither an env class nor a DatasetBuilder")
    if not problems:
        raise ConfigError(
            "evaluating an env class needs problems: a list of dicts (or a .jsonl/.csv/"
            'parquet path), e.g. --problem \'{"question": "What is 2 + 3?", "answer": "5"}\''
        )
    return DatasetBuilder(
        env=target,
        problems=problems,
        batch_size=1,
        group_size=samples,
        model_name=model_name,
        renderer_name=renderer_name or "qwen3",
        shuffle=False,
    )


async def eval_groups(
    target: Any,
    *,
    model_name: str,
    samples: int,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    renderer_name: str | None = None,
    limit: int | None = None,
) -> list[tuple[str, GroupBuilder]]:
    """Every problem of ``split`` as ``(split name, group of samples envs)``, in problem order.

    ``target`` is an ENV_SPEC, a DatasetBuilder or an env class (with
    ``problems``). ``split`` None means ``test`` when the builder holds a test
    split, else ``train``; ``all`` is train then test. ``limit`` keeps the
    first problems of each split.

    Raises:
        ConfigError: ``split`` is unknown, or ``test`` on a builder with no
            test split; an env class without problems.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        groups = await eval_groups(builder, model_name="mint-envkit/tiny-qwen3", samples=4)
        [(split, group.index) for split, group in groups][:2]   # [('test', 0), ('test', 1)]
    """
    if split is not None and split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)} (or None), got {split!r}")
    builder = _builder(
        target,
        model_name=model_name,
        samples=samples,
        problems=problems,
        renderer_name=renderer_name,
    )
    train, test = await builder()
    if split == "test" and test is None:
        raise ConfigError(
            "split 'test' but the builder holds no test split (give it test_problems or "
            "test_fraction); evaluate split 'train' or 'all' instead"
        )
    chosen = split or ("test" if test is not None else "train")
    parts = {"train": [train], "test": [test], "all": [train, test]}[chosen]
    names = {"train": ["train"], "test": ["test"], "all": ["train", "test"]}[chosen]
    out: list[tuple[str, GroupBuilder]] = []
    for name, data in zip(names, parts, strict=True):
        if data is None:
            continue
        groups = data.groups()
        out.extend((name, group) for group in groups[:limit])
    return out


def _check_temperature(_instance: Any, _attribute: Any, value: Any) -> None:
    problem = temperature_problem(value, field="temperature")  # the server's own bound
    if problem is not None:
        raise ConfigError(problem)


def _check_name(_instance: Any, attribute: Any, value: Any) -> None:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{attribute.name} must be a non-empty string, got {value!r}")


def _check_backend(_instance: Any, _attribute: Any, value: Any) -> None:
    if value not in ("auto", "mint", "local"):
        raise ConfigError(f"backend must be 'auto', 'mint' or 'local', got {value!r}")


def _check_url(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not str(value).startswith(("http://", "https://")):
        raise ConfigError(f"base_url must start with http:// or https://, got {value!r}")


@attrs.frozen(kw_only=True)
class EvalSettings:
    """The sampling and backend settings of one evaluation; frozen, validated when built.

    What :func:`~mint_envkit.evaluation.evaluate` checks before it loads a model: the
    same rules as the training :class:`~mint_envkit.rl.Config`'s fields of these names
    (the shared checks of :mod:`mint_envkit.checks`), and the same names, so
    :func:`~mint_envkit.rl.backend.connect` starts a backend for it as for a run.

    Example::

        EvalSettings(model_name="mint-envkit/tiny-qwen3", samples=4, temperature=0.7)
        # EvalSettings(model_name="m", samples=0) raises
        # ConfigError: samples must be an integer >= 1, got 0
    """

    model_name: str = attrs.field(validator=_check_name)
    samples: int = attrs.field(default=4, validator=integer())
    limit: int | None = attrs.field(default=None, validator=integer(none_ok=True))
    temperature: float = attrs.field(default=1.0, validator=_check_temperature)
    max_tokens: int = attrs.field(default=256, validator=integer())
    seed: int = 0
    base_url: str | None = attrs.field(default=None, validator=_check_url)
    backend: str = attrs.field(default="auto", validator=_check_backend)
    max_concurrent_groups: int = attrs.field(default=16, validator=integer())
    top_p: float = 1.0
    top_k: int = -1
    rollout_timeout_s: float | None = None
    # what connect() reads of a run's config: an evaluation has no KL reference
    kl_reference_config: None = None
    local_latency_ms: float = 0.0
    local_batch_invariant: bool = False
