"""Grids of RL configs: checking a grid, expanding it into named configs, applying fields.

A grid maps field names to the values to try. Keys are :class:`Config` fields
(``temperature``, ``kl_penalty_coef``, ``learning_rate``, ...) or fields of the
config's dataset builder (``group_size``, ``batch_size``, ...). Expanding a
grid gives one :class:`GridPoint` per combination, each with a stable,
filesystem-safe name built from its values (``kl0p02-t0p7-g4``).

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(dataset_builder=builder, log_path="unused")

    points = expand_grid(config, {"temperature": [0.7, 1.0], "group_size": [2, 4]})
    assert [p.name for p in points] == ["t0p7-g2", "t0p7-g4", "t1p0-g2", "t1p0-g4"]
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.rl.agreement import BUILDER_OWNED, builder_value
from mint_envkit.rl.config import Config, KLReferenceConfig, uses_kl_reference
from mint_envkit.runs.names import BUILDER_PREFIX, config_name, jsonable, key_order, short_hash

# Config fields a grid cannot vary: the builder is replaced field by field,
# and the sweep owns each run's log_path.
_NOT_GRIDDABLE = {
    "dataset_builder": "vary the builder's fields instead (group_size, batch_size, ...)",
    "log_path": "the sweep sets it to ROOT/<config name>",
}


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
        assert (point.name, point.params) == ("t0p7", {"temperature": 0.7})
        assert point.config.temperature == 0.7
    """

    name: str
    params: Mapping[str, Any]
    config: Config


# A builder field that owns a Config value, by the Config field's name (max_tokens).
_CONFIG_NAME_OF = {owner: field for field, owner in BUILDER_OWNED.items()}


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
    elif key in BUILDER_OWNED and BUILDER_OWNED[key] in builder_fields:
        return key, "builder", BUILDER_OWNED[key]  # the builder owns it; Config takes it
    elif key in _CONFIG_NAME_OF and key in builder_fields:
        return _CONFIG_NAME_OF[key], "builder", key
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


def normalize_grid(base: Config, grid: Mapping[str, Sequence[Any]]) -> dict[str, list[Any]]:
    """Check a grid against ``base`` and put it in canonical form.

    Keys are resolved (``dataset_builder.group_size`` becomes ``group_size``)
    and sorted into name order (:data:`ABBREVIATIONS` first); values become
    lists. Raises :class:`~mint_envkit.errors.ConfigError` for an unknown key
    (listing the valid names), a key given twice, a value list that is empty,
    not a list, or has a value twice.

    Example::


        grid = normalize_grid(config, {"group_size": (2, 4), "temperature": [1.0]})
        assert grid == {"temperature": [1.0], "group_size": [2, 4]}
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
    return {key: out[key] for key in sorted(out, key=key_order)}


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
    fields (``group_size``, ``batch_size``, ``seed``: the data order, ...) with
    ``attrs.evolve(config.dataset_builder, ...)``. The values the builder owns
    (``model_name``; ``max_tokens``, its ``max_generation_tokens``) are set on
    the builder and ``Config`` takes them from it again. Both validate, so an
    invalid combination raises :class:`~mint_envkit.errors.ConfigError` naming
    the field (and ``label``, when given).

    Example::


        config = apply_fields(config, {"max_steps": 3, "batch_size": 8})
        assert config.max_steps == 3 and config.dataset_builder.batch_size == 8
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
            builder = _replace_builder(config.dataset_builder, builder_fields)
            config_fields["dataset_builder"] = builder
            for name in BUILDER_OWNED:  # Config takes the new builder's values
                owned = builder_value(builder, name)
                if owned is not None and name not in config_fields:
                    config_fields[name] = owned
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
        assert [p.name for p in points] == ["kl0p0-g2", "kl0p0-g4", "kl0p02-g2", "kl0p02-g4"]
    """
    grid = normalize_grid(base, grid)
    keys = list(grid)
    combos = [dict(zip(keys, values, strict=True)) for values in itertools.product(*grid.values())]
    names = [config_name(params) for params in combos]
    # Names are injective for ordinary values; sanitised strings (or a
    # case-insensitive filesystem) can still collide: disambiguate with a hash.
    folded = [n.lower() for n in names]
    names = [
        f"{n}-{short_hash(jsonable(p))}" if folded.count(n.lower()) > 1 else n
        for n, p in zip(names, combos, strict=True)
    ]
    if len({n.lower() for n in names}) != len(names):  # pragma: no cover - hash collision
        raise ConfigError("two grid points got the same name; rename or drop a value")
    points = []
    for name, params in zip(names, combos, strict=True):
        fields = dict(params)
        if (
            uses_kl_reference(params.get("kl_penalty_coef"))
            and base.kl_reference_config is None
            and "kl_reference_config" not in params
        ):
            model = params.get("model_name", base.model_name)
            fields["kl_reference_config"] = KLReferenceConfig(base_model=model)
        config = apply_fields(base, fields, label=name)
        points.append(GridPoint(name=name, params=params, config=config))
    return tuple(points)
