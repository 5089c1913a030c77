"""The ``MINT_RL_*`` variables: a sweep's grid, overrides and root from the environment.

Example::

    from mint_envkit.sweep import grid_from_env

    grid, overrides = grid_from_env({"MINT_RL_TEMPS": "0.7, 1.0", "MINT_RL_STEPS": "3"})
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.errors import ConfigError
from mint_envkit.rl.config import Config, validate_field

DEFAULT_GRID: Mapping[str, tuple[Any, ...]] = {
    "kl_penalty_coef": (0.0, 0.02),
    "temperature": (0.7, 1.0),
    "group_size": (2, 4),
}
"""The grid :func:`grid_from_env` returns when no ``MINT_RL_*`` list is set (8 configs).

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(dataset_builder=builder, log_path="unused")

    from mint_envkit.sweep._grid import expand_grid

    assert len(expand_grid(config, DEFAULT_GRID)) == 8
"""

DEFAULT_OVERRIDES: Mapping[str, Any] = {"max_steps": 1}
"""The single-valued overrides :func:`grid_from_env` returns by default (1 step per config).

Example::

    assert DEFAULT_OVERRIDES["max_steps"] == 1
"""


@attrs.frozen
class _Var:
    name: str
    field: str
    kind: Callable[[str], Any]
    is_list: bool
    owner: type  # the class whose validator checks the value: Config or DatasetBuilder
    example: str


def _parse_int(text: str) -> int:
    if not re.fullmatch(r"[+-]?\d+", text):
        raise ValueError(f"{text!r} is not an integer")
    return int(text)


def _parse_float(text: str) -> float:
    if not re.fullmatch(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?", text):
        raise ValueError(f"{text!r} is not a number")
    return float(text)


ENV_VARIABLES: tuple[_Var, ...] = (
    _Var("MINT_RL_STEPS", "max_steps", _parse_int, False, Config, "1"),
    _Var("MINT_RL_KL_COEFS", "kl_penalty_coef", _parse_float, True, Config, "0.0,0.02"),
    _Var("MINT_RL_TEMPS", "temperature", _parse_float, True, Config, "0.7,1.0"),
    _Var("MINT_RL_GROUPS", "group_size", _parse_int, True, DatasetBuilder, "2,4"),
    _Var("MINT_RL_BATCH", "batch_size", _parse_int, False, DatasetBuilder, "4"),
    _Var("MINT_RL_MAX_TOKENS", "max_tokens", _parse_int, False, Config, "64"),
    _Var("MINT_RL_LR", "learning_rate", _parse_float, False, Config, "3e-4"),
    _Var("MINT_LORA_RANK", "lora_rank", _parse_int, False, Config, "16"),
)
"""The variables :func:`grid_from_env` reads, with the field each one sets.

Example::

    assert {v.name: v.field for v in ENV_VARIABLES}["MINT_RL_TEMPS"] == "temperature"
"""


def _parse_var(var: _Var, raw: str) -> Any:
    shown = f"{var.name}={raw!r}"
    items = [item.strip() for item in raw.split(",")] if var.is_list else [raw.strip()]
    if not any(items):
        default = ""
        if var.field in DEFAULT_GRID:
            default = ", or unset it for the default " + ",".join(
                str(v) for v in DEFAULT_GRID[var.field]
            )
        raise ConfigError(f"{shown}: empty; give a value such as {var.example}{default}")
    values: list[Any] = []
    for item in items:
        if not item:
            raise ConfigError(
                f"{shown}: empty item in the list; write values separated by commas, "
                f"such as {var.example}"
            )
        try:
            value = var.kind(item) + 0  # + 0 turns -0.0 into 0.0
        except ValueError as err:
            plural = "comma-separated list" if var.is_list else "value"
            raise ConfigError(f"{shown}: {err}; use a {plural} such as {var.example}") from None
        if not math.isfinite(value):  # pragma: no cover - the regexes reject inf/nan
            raise ConfigError(f"{shown}: {item!r} is not a finite number")
        try:
            validate_field(var.owner, var.field, value)
        except ConfigError as err:
            raise ConfigError(
                f"{shown}: {item!r} is invalid: {err}; e.g. {var.name}={var.example}"
            ) from None
        if value in values:
            raise ConfigError(
                f"{shown}: {item!r} repeats the value {value!r}; list each value once"
            )
        values.append(value)
    return values if var.is_list else values[0]


def grid_from_env(
    environ: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """The sweep grid and single-valued overrides from the ``MINT_RL_*`` variables.

    Lists (comma-separated, whitespace ignored): ``MINT_RL_KL_COEFS`` (floats
    >= 0 -> ``kl_penalty_coef``), ``MINT_RL_TEMPS`` (floats > 0 ->
    ``temperature``), ``MINT_RL_GROUPS`` (ints >= 1 -> ``group_size``).
    Single values (overrides): ``MINT_RL_STEPS`` (int >= 1 -> ``max_steps``),
    ``MINT_RL_BATCH`` (int >= 1 -> ``batch_size``), ``MINT_RL_MAX_TOKENS``
    (int >= 1 -> ``max_tokens``), ``MINT_RL_LR`` (float > 0 ->
    ``learning_rate``), ``MINT_LORA_RANK`` (int >= 1 -> ``lora_rank``). The
    sweep root, ``MINT_LOG_ROOT``, is read by :func:`log_root_from_env`.

    Unset variables take ``defaults`` (field name -> value; a list for the
    three grid fields), then :data:`DEFAULT_GRID` / :data:`DEFAULT_OVERRIDES`:
    kl ``[0.0, 0.02]`` x temperature ``[0.7, 1.0]`` x group size ``[2, 4]``,
    1 step: 8 configs. A bad value raises
    :class:`~mint_envkit.errors.ConfigError` naming the variable and the value;
    an empty list, an empty item and a repeated value are errors too.

    Example::

        grid, overrides = grid_from_env({"MINT_RL_TEMPS": "0.7, 1.0", "MINT_RL_STEPS": "3"})
        assert grid == {"kl_penalty_coef": [0.0, 0.02], "temperature": [0.7, 1.0],
                        "group_size": [2, 4]}
        assert overrides == {"max_steps": 3}
    """
    environ = os.environ if environ is None else environ
    known = {v.field: v for v in ENV_VARIABLES}
    merged: dict[str, Any] = {**DEFAULT_GRID, **DEFAULT_OVERRIDES}
    for field, value in (defaults or {}).items():
        if field not in known:
            raise ConfigError(
                f"grid_from_env defaults: unknown field {field!r}; valid: {', '.join(known)}"
            )
        if known[field].is_list and (
            isinstance(value, (str, bytes)) or not isinstance(value, Sequence)
        ):
            raise ConfigError(f"grid_from_env defaults[{field!r}] must be a list, got {value!r}")
        merged[field] = list(value) if known[field].is_list else value
    grid: dict[str, list[Any]] = {}
    overrides: dict[str, Any] = {}
    for var in ENV_VARIABLES:
        raw = environ.get(var.name)
        value = _parse_var(var, raw) if raw is not None else merged.get(var.field)
        if value is None:
            continue
        if var.is_list:
            grid[var.field] = list(value)
        else:
            overrides[var.field] = value
    return grid, overrides


def log_root_from_env(
    environ: Mapping[str, str] | None = None, default: str | os.PathLike[str] | None = None
) -> str:
    """The sweep root: ``MINT_LOG_ROOT`` when set (``~`` expanded), else ``default``.

    Raises :class:`~mint_envkit.errors.ConfigError` when ``MINT_LOG_ROOT`` is
    set but blank, or when neither is given.

    Example::

        assert log_root_from_env({}, default="runs/arithmetic-sweep") == "runs/arithmetic-sweep"
        assert log_root_from_env({"MINT_LOG_ROOT": "runs/x"}, default="runs/y") == "runs/x"
    """
    environ = os.environ if environ is None else environ
    raw = environ.get("MINT_LOG_ROOT")
    if raw is not None:
        if not raw.strip():
            raise ConfigError(
                f"MINT_LOG_ROOT={raw!r}: empty; give a directory such as runs/my-sweep"
            )
        return os.path.expanduser(raw.strip())
    if default is None:
        raise ConfigError(
            "no sweep root: set MINT_LOG_ROOT (e.g. MINT_LOG_ROOT=runs/my-sweep) "
            "or pass a default root"
        )
    return os.fspath(default)
