"""What an evaluation runs on: an ENV_SPEC loaded, and its problems as groups of K samples.

An ENV_SPEC is ``MODULE:NAME`` or ``path/to/file.py:NAME`` naming a
:class:`~mint_envkit.DatasetBuilder` or an env class (then the problems come
separately), or the name of an installed env package (its DatasetBuilder).
``mint-envkit check``, ``eval`` and ``audit`` all load it here.
:func:`eval_problems` turns any target into :class:`EvalProblems`: the groups, and
the builder's model and reply limit, which an evaluation samples with unless told
otherwise.

Example::

    from mint_envkit.evaluation.spec import eval_problems, load_target

    target = load_target("examples/arithmetic_env.py:ArithmeticEnv")
    chosen = await eval_problems(target, model_name="mint-envkit/tiny-qwen3", samples=4,
                                 problems=[{"question": "What is 2 + 3?", "answer": "5"}])
    len(chosen.pairs), chosen.samples, chosen.max_tokens   # (1, 4, 64)
"""

from __future__ import annotations

import difflib
import importlib
import importlib.util
import inspect
import sys
import traceback
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder, ProblemDataset
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.builders.packages import installed_environments, load_environment, not_installed
from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError, MintEnvkitError

SAMPLES = 4
"""Samples per problem of an evaluation when none is asked (``evaluate``, ``mint-envkit
eval``, the audit's samples, interpolation sweeps): the one default.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    (await eval_problems(builder)).samples == SAMPLES   # True
"""

SPLITS = ("test", "train", "all")
"""The splits an evaluation can run on (None picks ``test`` when there is one, else ``train``).

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    await eval_problems(builder, samples=4, split="all")
"""


def _import_error(path: Path, err: BaseException) -> MintEnvkitError:
    """One line: the env file, the line of it that failed, and the error."""
    line = getattr(err, "lineno", None) if isinstance(err, SyntaxError) else None
    if line is None:
        here = str(path.resolve())
        frames = [f for f in traceback.extract_tb(err.__traceback__) if f.filename == here]
        line = frames[-1].lineno if frames else None
    where = f"{path}:{line}" if line else str(path)
    text = err.msg if isinstance(err, SyntaxError) else str(err)
    return MintEnvkitError(
        f"{where}: {type(err).__name__}: {text} (while importing the env file; fix it and "
        "run again)"
    )


def _close(name: str, names: Sequence[str]) -> str:
    """`` did you mean 'x'?`` for the nearest of ``names``, or nothing."""

    def squash(text: str) -> str:
        return text.replace("_", "-").lower()

    by_squash = {squash(n): n for n in names}
    found = difflib.get_close_matches(squash(name), list(by_squash), n=1, cutoff=0.6)
    return f" did you mean {by_squash[found[0]]!r}?" if found else ""


def _called(found: Any, spec: str, env_args: Mapping[str, Any]) -> Any:
    """``found`` (a load_environment function) called with ``env_args``."""
    if isinstance(found, DatasetBuilder | type) or not callable(found):
        what = "a class" if isinstance(found, type) else f"a {type(found).__name__}"
        raise ConfigError(
            f"env_args are keyword arguments for a load_environment, but {spec} names "
            f"{what}; give an installed env's name or a MODULE:FUNCTION that returns a "
            "DatasetBuilder, or no env_args"
        )
    try:
        inspect.signature(found).bind(**env_args)
    except TypeError as err:
        raise ConfigError(f"{spec} does not take the env args {dict(env_args)!r}: {err}") from None
    except ValueError:  # no signature to check: let the call say
        pass
    try:
        builder = found(**env_args)
    except Exception as err:  # the env's own error, with these arguments
        raise ConfigError(
            f"{spec}(**{dict(env_args)!r}) raised {type(err).__name__}: {err}"
        ) from err
    if not isinstance(builder, DatasetBuilder):
        raise ConfigError(
            f"{spec} returned a {type(builder).__name__}, not a DatasetBuilder; with "
            "--env-args it must return mint_envkit.DatasetBuilder(env=..., problems=...)"
        )
    return builder


def load_target(spec: str, *, env_args: Mapping[str, Any] | None = None) -> Any:
    """The object an ENV_SPEC names: ``MODULE:NAME``, ``path/to/file.py:NAME``, or the
    name of an installed env package (no ``:``), whose DatasetBuilder it returns
    (:func:`~mint_envkit.load_environment`, with ``env_args`` as its keyword arguments;
    docs/env-packages.md). With ``env_args``, a ``MODULE:NAME`` must name a function
    that takes them and returns a DatasetBuilder.

    A file is imported under a private module name with its folder last on
    ``sys.path`` (its siblings import; a file called ``math.py`` cannot
    replace the real ``math``), once per version of the file: loading it again
    returns the module imported the first time unless the file changed since (a
    module that runs work at import does it once).

    Raises:
        MintEnvkitError: the spec has no ``:`` and names no installed env (a
            ConfigError listing the installed ones, and the nearest name), the file or
            module does not exist or fails to import (one line: the file, the line, the
            error), or it has no such attribute (the message names it and the nearest);
            an installed env's errors (:func:`~mint_envkit.load_environment`).

    Example::

        load_target("examples/arithmetic_env.py:ArithmeticEnv")   # the env class
    """
    if ":" not in spec:
        if spec not in {env.name for env in installed_environments()}:
            raise ConfigError(
                f"expected MODULE:NAME (e.g. examples/arithmetic_env.py:ArithmeticEnv or "
                f"my_pkg.envs:builder) or the name of an installed env, got {spec!r}: "
                + not_installed(spec)
            )
        return load_environment(spec, **(env_args or {}))
    module_ref, name = spec.rsplit(":", 1)
    if module_ref.endswith(".py") or "/" in module_ref:
        path = Path(module_ref)
        if not path.is_file():
            raise MintEnvkitError(f"no such file: {module_ref}")
        folder = str(path.resolve().parent)
        if folder not in sys.path:
            sys.path.append(folder)
        private = f"_mint_envkit_check_{path.stem}"
        module = sys.modules.get(private)
        stamp = (str(path.resolve()), path.stat().st_mtime_ns, path.stat().st_size)
        if module is None or getattr(module, "__mint_envkit_stamp__", None) != stamp:
            module_spec = importlib.util.spec_from_file_location(private, path.resolve())
            if module_spec is None or module_spec.loader is None:
                raise MintEnvkitError(f"cannot import {module_ref}")
            module = importlib.util.module_from_spec(module_spec)
            module.__mint_envkit_stamp__ = stamp  # type: ignore[attr-defined]
            sys.modules[private] = module
            try:
                module_spec.loader.exec_module(module)
            except Exception as err:
                del sys.modules[private]
                raise _import_error(path, err) from err
            except BaseException:
                del sys.modules[private]
                raise
    else:
        try:
            module = importlib.import_module(module_ref)
        except ImportError as err:
            raise MintEnvkitError(f"cannot import {module_ref}: {err}") from None
    if not hasattr(module, name):
        public = [n for n in dir(module) if not n.startswith("_")]
        raise MintEnvkitError(f"{module_ref} has no attribute {name!r};{_close(name, public)}")
    found = getattr(module, name)
    return found if env_args is None else _called(found, spec, env_args)


@attrs.frozen
class EvalProblems:
    """The problems of one evaluation, as groups, and what they were built with.

    Attributes:
        pairs: ``(split name, group)`` per problem, in problem order.
        split: the split name (``test``, ``train``, ``all``).
        samples: envs per group (K).
        model_name: the model whose tokenizer rendered them (the builder's).
        max_tokens: the builder's reply limit (None when the groups bring none).
        describe: the target in words (for the summary).

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        chosen = await eval_problems(builder, samples=4)
        chosen.max_tokens == builder.max_generation_tokens   # True
    """

    pairs: list[tuple[str, GroupBuilder]]
    split: str
    samples: int
    model_name: str
    max_tokens: int | None
    describe: str


def _describe(target: Any) -> str:
    env = getattr(target, "env", target)
    return f"{getattr(env, '__module__', '?')}.{getattr(env, '__qualname__', repr(env))}"


def _builder(
    target: Any,
    *,
    model_name: str | None,
    samples: int,
    problems: Sequence[Mapping[str, Any]] | str | None,
    renderer_name: str | None,
) -> DatasetBuilder:
    """``target`` as a builder whose every group holds ``samples`` envs, in problem order."""
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
            model_name=model_name or target.model_name,
            renderer_name=renderer_name or target.renderer_name,
        )
    if not callable(target):
        raise ConfigError(
            f"{target!r} is neither an env class, a DatasetBuilder nor a list of groups"
        )
    if not problems:
        raise ConfigError(
            "evaluating an env class needs problems: a list of dicts (or a .jsonl/.csv/"
            'parquet path), e.g. --problem \'{"question": "What is 2 + 3?", "answer": "5"}\''
        )
    if not model_name:
        raise ConfigError(
            "evaluating an env class needs model_name= (the model whose tokenizer renders "
            "the prompts), e.g. model_name='mint-envkit/tiny-qwen3'; a DatasetBuilder brings "
            "its own"
        )
    extra = {} if renderer_name is None else {"renderer_name": renderer_name}
    return DatasetBuilder(
        env=target,
        problems=problems,
        batch_size=1,
        group_size=samples,
        model_name=model_name,
        shuffle=False,
        **extra,
    )


def _built(groups: Sequence[GroupBuilder], split: str, limit: int | None) -> EvalProblems:
    """Groups built elsewhere (the loop's test split), evaluated as they are."""
    chosen = list(groups)[:limit]
    if not chosen:
        raise ConfigError("there are no groups to evaluate")
    first = chosen[0]
    return EvalProblems(
        pairs=[(split, g) for g in chosen],
        split=split,
        samples=first.group_size,
        model_name=first.model_name,
        max_tokens=first.max_generation_tokens,
        describe=f"{len(chosen)} groups of {_describe(first.env)}",
    )


async def eval_problems(
    target: Any,
    *,
    model_name: str | None = None,
    samples: int | None = None,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    renderer_name: str | None = None,
    limit: int | None = None,
) -> EvalProblems:
    """Every problem of ``split`` of ``target`` as a group of ``samples`` envs.

    ``target`` is an ENV_SPEC, a DatasetBuilder, an env class (with ``problems``), or
    built groups (a :class:`~mint_envkit.ProblemDataset` or a list of GroupBuilders,
    taken as they are: ``split`` is then only their name, default ``test``).
    ``split`` None means ``test`` when the builder holds a test split, else ``train``;
    ``all`` is train then test. ``limit`` keeps the first problems of each split;
    ``samples`` defaults to :data:`SAMPLES`.

    Raises:
        ConfigError: ``split`` is unknown, or ``test`` on a builder with no test split;
            an env class without problems or ``model_name``; ``samples`` not >= 1.

    Example::

        # not run: `builder` is your DatasetBuilder, built elsewhere
        chosen = await eval_problems(builder, samples=4)
        [(split, group.index) for split, group in chosen.pairs][:2]   # [('test', 0), ('test', 1)]
    """
    check_integer(limit, "limit", none_ok=True, why="None: every problem")
    if isinstance(target, str):
        target = load_target(target)
    if isinstance(target, ProblemDataset):
        target = target.groups()
    if isinstance(target, list | tuple) and all(isinstance(g, GroupBuilder) for g in target):
        return _built(target, split or "test", limit)
    if split is not None and split not in SPLITS:
        raise ConfigError(f"split must be one of {', '.join(SPLITS)} (or None), got {split!r}")
    samples = SAMPLES if samples is None else samples
    check_integer(samples, "samples")
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
    pairs: list[tuple[str, GroupBuilder]] = []
    for name, data in zip(names, parts, strict=True):
        if data is not None:
            pairs.extend((name, group) for group in data.groups()[:limit])
    return EvalProblems(
        pairs=pairs,
        split=chosen,
        samples=samples,
        model_name=builder.model_name,
        max_tokens=builder.max_generation_tokens,
        describe=_describe(target),
    )
