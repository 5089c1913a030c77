"""Grids of RL configs: expansion, stable names, and the ``MINT_RL_*`` variables.

A grid maps field names to the values to try. Keys are :class:`Config` fields
(``temperature``, ``kl_penalty_coef``, ``learning_rate``, ...) or fields of the
config's dataset builder (``group_size``, ``batch_size``, ...). Expanding a
grid gives one :class:`GridPoint` per combination, each with a stable,
filesystem-safe name built from its values (``kl0p02-t0p7-g4``).

Example::

    from mint_envkit.sweep import expand_grid

    points = expand_grid(config, {"temperature": [0.7, 1.0], "group_size": [2, 4]})
    [p.name for p in points]  # ['t0p7-g2', 't0p7-g4', 't1p0-g2', 't1p0-g4']
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools
import json
import math
import os
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.rl.config import Config, KLReferenceConfig

__all__ = [
    "ABBREVIATIONS",
    "BUILDER_PREFIX",
    "DEFAULT_GRID",
    "DEFAULT_OVERRIDES",
    "ENV_VARIABLES",
    "GridPoint",
    "apply_fields",
    "config_name",
    "expand_grid",
    "format_value",
    "grid_from_env",
    "log_root_from_env",
    "normalize_grid",
]

ABBREVIATIONS: Mapping[str, str] = {
    "kl_penalty_coef": "kl",
    "temperature": "t",
    "group_size": "g",
    "batch_size": "b",
    "learning_rate": "lr",
    "lora_rank": "r",
    "max_tokens": "mt",
    "seed": "s",
    "max_steps": "steps",
}
"""Short names of common grid keys in config names, in name order.

A key listed here is written as its abbreviation followed by the value
(``kl0p02``); any other key as ``<field>_<value>`` (``loss_fn_ppo``), after
the listed ones, in alphabetical order.

Example::

    ABBREVIATIONS["kl_penalty_coef"]  # 'kl'
"""

BUILDER_PREFIX = "dataset_builder."
"""Prefix of a grid key that names a dataset-builder field only.

Matters when the builder and :class:`Config` share a field name
(``model_name``, ``renderer_name``, ``seed``): the plain key ``"seed"`` sets
both ``Config.seed`` and the builder's ``seed`` (so a model, its tokenizer
and chat template stay in step), ``"dataset_builder.seed"`` sets only the
builder's.

Example::

    expand_grid(config, {"dataset_builder.seed": [0, 1]})  # names db_seed_0, db_seed_1
"""

DEFAULT_GRID: Mapping[str, tuple[Any, ...]] = {
    "kl_penalty_coef": (0.0, 0.02),
    "temperature": (0.7, 1.0),
    "group_size": (2, 4),
}
"""The grid :func:`grid_from_env` returns when no ``MINT_RL_*`` list is set (8 configs).

Example::

    len(expand_grid(config, DEFAULT_GRID))  # 8
"""

DEFAULT_OVERRIDES: Mapping[str, Any] = {"max_steps": 1}
"""The single-valued overrides :func:`grid_from_env` returns by default (1 step per config).

Example::

    DEFAULT_OVERRIDES["max_steps"]  # 1
"""

# Config fields a grid cannot vary: the builder is replaced field by field,
# and the sweep owns each run's log_path.
_NOT_GRIDDABLE = {
    "dataset_builder": "vary the builder's fields instead (group_size, batch_size, ...)",
    "log_path": "the sweep sets it to ROOT/<config name>",
}
_MAX_NAME = 120


@attrs.frozen
class GridPoint:
    """One combination of a grid: its name, its grid values, and the full config.

    Attributes:
        name: stable, filesystem-safe name built from ``params``
            (``kl0p02-t0p7-g4``); the run's subdirectory under the sweep root.
        params: the grid values of this point, ``{field: value}`` in name order.
        config: the base config with these values applied (``log_path`` is the
            base's until a :class:`~mint_envkit.sweep.Sweep` places it).

    Example::

        point = expand_grid(config, {"temperature": [0.7]})[0]
        point.name, point.params  # ('t0p7', {'temperature': 0.7})
    """

    name: str
    params: Mapping[str, Any]
    config: Config


# ---------------------------------------------------------------- grid keys


def _builder_fields(builder: Any) -> tuple[str, ...]:
    cls = type(builder)
    if attrs.has(cls):
        return tuple(f.name for f in attrs.fields(cls) if f.init)
    if dataclasses.is_dataclass(builder):
        return tuple(f.name for f in dataclasses.fields(builder) if f.init)
    return ()


def _config_fields() -> tuple[str, ...]:
    return tuple(f.name for f in attrs.fields(Config))


def _valid_names(base: Config) -> list[str]:
    config_fields = [f for f in _config_fields() if f not in _NOT_GRIDDABLE]
    builder = [
        f if f not in config_fields else BUILDER_PREFIX + f
        for f in _builder_fields(base.dataset_builder)
    ]
    return config_fields + builder


def _resolve_key(base: Config, key: Any) -> tuple[str, str, str]:
    """Return (canonical key, target, field); target is 'config', 'builder' or 'both'."""
    if not isinstance(key, str) or not key.strip():
        raise ConfigError(f"grid keys must be field names (strings), got {key!r}")
    key = key.strip()
    config_fields = set(_config_fields())
    builder_fields = set(_builder_fields(base.dataset_builder))
    if key in _NOT_GRIDDABLE:
        raise ConfigError(f"grid key {key!r} cannot be varied: {_NOT_GRIDDABLE[key]}")
    if key.startswith(BUILDER_PREFIX):
        field = key[len(BUILDER_PREFIX) :]
        if field in builder_fields:
            canonical = key if field in config_fields else field
            return canonical, "builder", field
    elif key in config_fields:
        return key, ("both" if key in builder_fields else "config"), key
    elif key in builder_fields:
        return key, "builder", key
    builder_name = type(base.dataset_builder).__name__
    hint = ""
    if not builder_fields:
        hint = (
            f" (the dataset builder {builder_name} is not an attrs or dataclass "
            "instance, so none of its fields can be varied)"
        )
    raise ConfigError(
        f"grid key {key!r} is neither a Config field nor a field of the dataset builder "
        f"{builder_name}{hint}; valid names: {', '.join(_valid_names(base))}"
    )


def _key_order(key: str) -> tuple[int, str]:
    order = list(ABBREVIATIONS)
    return (order.index(key), "") if key in ABBREVIATIONS else (len(order), key)


def normalize_grid(base: Config, grid: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """Check a grid against ``base`` and put it in canonical form.

    Keys are resolved (``dataset_builder.group_size`` becomes ``group_size``)
    and sorted into name order (:data:`ABBREVIATIONS` first); values become
    lists. Raises :class:`~mint_envkit.errors.ConfigError` for an unknown key
    (listing the valid names), a key given twice, a value list that is empty,
    not a list, or has a value twice.

    Example::

        normalize_grid(config, {"group_size": (2, 4), "temperature": [1.0]})
        # {'temperature': [1.0], 'group_size': [2, 4]}
    """
    if not isinstance(grid, Mapping):
        raise ConfigError(
            f"grid must be a mapping of field name to a list of values, got {type(grid).__name__}"
        )
    out: dict[str, list[Any]] = {}
    for key, values in grid.items():
        canonical, _target, _field = _resolve_key(base, key)
        if canonical in out:
            raise ConfigError(
                f"grid key {key!r} names the same field as another key ({canonical!r}); "
                "give each field once"
            )
        if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range)):
            raise ConfigError(
                f"grid[{key!r}] must be a list of values, got {values!r}; "
                f"for a single value write [{values!r}]"
            )
        values = list(values)
        if not values:
            raise ConfigError(f"grid[{key!r}] is empty; give at least one value")
        for i, value in enumerate(values):
            for earlier in values[:i]:
                if earlier == value:
                    raise ConfigError(
                        f"grid[{key!r}] has the value {value!r} twice "
                        f"(as {earlier!r} and {value!r}); list each value once"
                    )
        out[canonical] = values
    for key in out:
        if key.startswith(BUILDER_PREFIX) and key[len(BUILDER_PREFIX) :] in out:
            field = key[len(BUILDER_PREFIX) :]
            raise ConfigError(
                f"grid keys {field!r} and {key!r} both set the dataset builder's {field}; "
                f"keep one ({field!r} sets Config.{field} and the builder's)"
            )
    return {key: out[key] for key in sorted(out, key=_key_order)}


# -------------------------------------------------------------------- names


def _shortest_sci(value: float) -> tuple[str, int]:
    for digits in range(17):
        text = f"{value:.{digits}e}"
        if float(text) == value:
            mantissa, exponent = text.split("e")
            return mantissa, int(exponent)
    mantissa, exponent = f"{value:.17e}".split("e")
    return mantissa, int(exponent)


def _safe(text: str) -> str:
    text = text.replace(".", "p").replace("-", "m")
    return re.sub(r"[^A-Za-z0-9_]", "_", text)


def _short_hash(data: Any) -> str:
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


def format_value(value: Any) -> str:
    """The filesystem-safe token of one grid value in a config name.

    ``.`` becomes ``p`` and ``-`` becomes ``m``; floats below 1e-3 (or from
    1e6) use a short exponent form; every float keeps enough digits to be
    read back exactly, so two different values never share a token.

    Example::

        format_value(0.02), format_value(3e-4), format_value(-1), format_value("ppo")
        # ('0p02', '3em04', 'm1', 'ppo')
    """
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return _safe(str(value))
    if isinstance(value, float):
        if not math.isfinite(value):
            return _safe(str(value))
        magnitude = abs(value)
        if value != 0 and (magnitude < 1e-3 or magnitude >= 1e6):
            mantissa, exponent = _shortest_sci(value)
            sign = "m" if exponent < 0 else ""
            return f"{_safe(mantissa)}e{sign}{abs(exponent):02d}"
        return _safe(repr(value))
    if isinstance(value, str):
        return _safe(value) or "empty"
    return "h" + _short_hash(_jsonable(value))


def config_name(params: Mapping[str, Any]) -> str:
    """The stable name of one grid point, from its grid values.

    Parts are joined with ``-`` in :data:`ABBREVIATIONS` order, then other
    keys alphabetically; the order of the grid dict does not matter, and the
    same values give the same name in every process. An empty grid gives
    ``"base"``. Very long names are shortened and end with a hash of the
    values.

    Example::

        config_name({"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4})
        # 'kl0p02-t0p7-g4'
        config_name({"learning_rate": 3e-4, "loss_fn": "ppo"})  # 'lr3em04-loss_fn_ppo'
    """
    parts = []
    for key in sorted(params, key=_key_order):
        token = format_value(params[key])
        if key in ABBREVIATIONS:
            parts.append(ABBREVIATIONS[key] + token)
        else:
            field = key[len(BUILDER_PREFIX) :] if key.startswith(BUILDER_PREFIX) else key
            prefix = "db_" if key.startswith(BUILDER_PREFIX) else ""
            parts.append(f"{prefix}{_safe(field)}_{token}")
    name = "-".join(parts) or "base"
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - 9].rstrip("-") + "-" + _short_hash(_jsonable(dict(params)))
    return name


# ---------------------------------------------------------------- applying


def _jsonable(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): _jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    if attrs.has(type(value)):
        return _jsonable(attrs.asdict(value, recurse=True))
    return repr(value)


def _replace_builder(builder: Any, fields: Mapping[str, Any]) -> Any:
    if attrs.has(type(builder)):
        return attrs.evolve(builder, **fields)
    if dataclasses.is_dataclass(builder) and not isinstance(builder, type):
        return dataclasses.replace(builder, **fields)
    raise ConfigError(
        f"cannot set {', '.join(fields)} on the dataset builder {type(builder).__name__}: "
        "it is not an attrs or dataclass instance"
    )


def apply_fields(config: Config, fields: Mapping[str, Any], *, label: str = "") -> Config:
    """Return ``config`` with ``fields`` set; builder fields go to its dataset builder.

    Config fields are applied with ``attrs.evolve(config, ...)``, builder
    fields (``group_size``, ``batch_size``, ...) with
    ``attrs.evolve(config.dataset_builder, ...)``; a field both have
    (``model_name``, ``seed``) is set on both, unless written
    ``dataset_builder.<field>`` (builder only). Both validate, so an invalid
    combination raises :class:`~mint_envkit.errors.ConfigError` naming the
    field (and ``label``, when given).

    Example::

        apply_fields(config, {"max_steps": 3, "batch_size": 8})
    """
    config_fields: dict[str, Any] = {}
    builder_fields: dict[str, Any] = {}
    for key, value in fields.items():
        _canonical, target, field = _resolve_key(config, key)
        if target in ("config", "both"):
            config_fields[field] = value
        if target in ("builder", "both"):
            builder_fields[field] = value
    where = f"config {label} " if label else ""
    shown = ", ".join(f"{k}={v!r}" for k, v in fields.items())
    try:
        if builder_fields:
            config_fields["dataset_builder"] = _replace_builder(
                config.dataset_builder, builder_fields
            )
        return attrs.evolve(config, **config_fields)
    except ConfigError as err:
        raise ConfigError(f"{where}({shown}) is invalid: {err}") from err
    except (TypeError, ValueError) as err:
        raise ConfigError(f"{where}({shown}) is invalid: {type(err).__name__}: {err}") from err


def expand_grid(base: Config, grid: Mapping[str, Sequence[Any]]) -> tuple[GridPoint, ...]:
    """Every combination of ``grid`` applied to ``base``, with stable unique names.

    The order is the product of the grid in name order (the last key varies
    fastest). When a point has ``kl_penalty_coef > 0`` and ``base`` has no
    ``kl_reference_config``, the point gets
    ``KLReferenceConfig(base_model=<its model_name>)``. Every config is built
    (and so validated) here: an invalid combination raises
    :class:`~mint_envkit.errors.ConfigError` naming the point and the field.

    Example::

        points = expand_grid(config, {"kl_penalty_coef": [0.0, 0.02], "group_size": [2, 4]})
        [p.name for p in points]  # ['kl0p0-g2', 'kl0p0-g4', 'kl0p02-g2', 'kl0p02-g4']
    """
    grid = normalize_grid(base, grid)
    keys = list(grid)
    combos = [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
    names = [config_name(params) for params in combos]
    # Names are injective for ordinary values; sanitised strings (or a
    # case-insensitive filesystem) can still collide: disambiguate with a hash.
    folded = [n.lower() for n in names]
    names = [
        f"{n}-{_short_hash(_jsonable(p))}" if folded.count(n.lower()) > 1 else n
        for n, p in zip(names, combos, strict=True)
    ]
    if len({n.lower() for n in names}) != len(names):  # pragma: no cover - hash collision
        raise ConfigError("two grid points got the same name; rename or drop a value")
    points = []
    for name, params in zip(names, combos, strict=True):
        fields = dict(params)
        kl = params.get("kl_penalty_coef")
        if (
            isinstance(kl, (int, float))
            and kl > 0
            and base.kl_reference_config is None
            and "kl_reference_config" not in params
        ):
            model = params.get("model_name", base.model_name)
            fields["kl_reference_config"] = KLReferenceConfig(base_model=model)
        config = apply_fields(base, fields, label=name)
        points.append(GridPoint(name=name, params=params, config=config))
    return tuple(points)


# ------------------------------------------------------ environment variables


@attrs.frozen
class _Var:
    name: str
    field: str
    kind: Callable[[str], Any]
    is_list: bool
    minimum: float
    exclusive: bool
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
    _Var("MINT_RL_STEPS", "max_steps", _parse_int, False, 1, False, "1"),
    _Var("MINT_RL_KL_COEFS", "kl_penalty_coef", _parse_float, True, 0, False, "0.0,0.02"),
    _Var("MINT_RL_TEMPS", "temperature", _parse_float, True, 0, True, "0.7,1.0"),
    _Var("MINT_RL_GROUPS", "group_size", _parse_int, True, 1, False, "2,4"),
    _Var("MINT_RL_BATCH", "batch_size", _parse_int, False, 1, False, "4"),
    _Var("MINT_RL_MAX_TOKENS", "max_tokens", _parse_int, False, 1, False, "64"),
    _Var("MINT_RL_LR", "learning_rate", _parse_float, False, 0, True, "3e-4"),
    _Var("MINT_LORA_RANK", "lora_rank", _parse_int, False, 1, False, "16"),
)
"""The variables :func:`grid_from_env` reads, with the field each one sets.

Example::

    {v.name: v.field for v in ENV_VARIABLES}["MINT_RL_TEMPS"]  # 'temperature'
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
        too_small = value <= var.minimum if var.exclusive else value < var.minimum
        if too_small:
            bound = f"> {var.minimum:g}" if var.exclusive else f">= {var.minimum:g}"
            raise ConfigError(
                f"{shown}: {item!r} must be {bound} ({var.field}); e.g. {var.name}={var.example}"
            )
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
        grid  # {'kl_penalty_coef': [0.0, 0.02], 'temperature': [0.7, 1.0], 'group_size': [2, 4]}
        overrides  # {'max_steps': 3}
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

        log_root_from_env({}, default="runs/arithmetic-sweep")  # 'runs/arithmetic-sweep'
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
