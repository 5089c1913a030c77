"""Config names: the stable, filesystem-safe name of each grid point (``kl0p02-t0p7-g4``).

Example::

    assert config_name({"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4}) == (
        "kl0p02-t0p7-g4"
    )
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Mapping
from typing import Any

import attrs

ABBREVIATIONS: Mapping[str, str] = {
    "kl_penalty_coef": "kl",
    "temperature": "t",
    "group_size": "g",
    "batch_size": "b",
    "learning_rate": "lr",
    "lora_rank": "r",
    "max_tokens": "mt",
    "seed": "s",
    "sampling_seed": "ss",
    "max_steps": "steps",
}
"""Short names of common grid keys in config names, in name order.

A key listed here is written as its abbreviation followed by the value
(``kl0p02``); any other key as ``<field>_<value>`` (``loss_fn_ppo``), after
the listed ones, in alphabetical order.

Example::

    assert ABBREVIATIONS["kl_penalty_coef"] == "kl"
"""

BUILDER_PREFIX = "dataset_builder."
"""Prefix of a grid key that names a dataset-builder field only.

Matters when the builder and :class:`Config` share a field name: the plain
key sets both, ``"dataset_builder.<field>"`` only the builder's. (The values
the builder owns, ``model_name`` and ``max_tokens``, are set on the builder
alone and ``Config`` takes them from it; ``seed`` is the builder's data-order
seed, ``sampling_seed`` the config's.)

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rl import Config

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    config = Config(dataset_builder=builder, log_path="unused")

    from mint_envkit.sweep._grid import expand_grid

    # seed is the builder's alone, so the prefixed key is the plain one, named s0, s1
    points = expand_grid(config, {"dataset_builder.seed": [0, 1]})
    assert [p.name for p in points] == ["s0", "s1"]
    assert [p.config.dataset_builder.seed for p in points] == [0, 1]
"""

_MAX_NAME = 120


def key_order(key: str) -> tuple[int, str]:
    """Sort key of a grid key: :data:`ABBREVIATIONS` order first, then alphabetical."""
    order = list(ABBREVIATIONS)
    return (order.index(key), "") if key in ABBREVIATIONS else (len(order), key)


def jsonable(value: Any) -> Any:
    """``value`` as JSON-ready data (attrs instances as dicts, other objects as repr)."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if isinstance(value, Mapping):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    if attrs.has(type(value)):
        return jsonable(attrs.asdict(value, recurse=True))
    return repr(value)


def short_hash(data: Any) -> str:
    """Eight hex digits of the SHA-256 of ``data`` as canonical JSON."""
    canonical = json.dumps(data, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(canonical.encode()).hexdigest()[:8]


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


def format_value(value: Any) -> str:
    """The filesystem-safe token of one grid value in a config name.

    ``.`` becomes ``p`` and ``-`` becomes ``m``; floats below 1e-3 (or from
    1e6) use a short exponent form; every float keeps enough digits to be
    read back exactly, so two different values never share a token.

    Example::

        values = format_value(0.02), format_value(3e-4), format_value(-1), format_value("ppo")
        assert values == ("0p02", "3em04", "m1", "ppo")
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
    return "h" + short_hash(jsonable(value))


def config_name(params: Mapping[str, Any]) -> str:
    """The stable name of one grid point, from its grid values.

    Parts are joined with ``-`` in :data:`ABBREVIATIONS` order, then other
    keys alphabetically; the order of the grid dict does not matter, and the
    same values give the same name in every process. An empty grid gives
    ``"base"``. Very long names are shortened and end with a hash of the
    values.

    Example::

        assert config_name({"kl_penalty_coef": 0.02, "temperature": 0.7, "group_size": 4}) == (
            "kl0p02-t0p7-g4"
        )
        assert config_name({"learning_rate": 3e-4, "loss_fn": "ppo"}) == "lr3em04-loss_fn_ppo"
    """
    parts = []
    for key in sorted(params, key=key_order):
        token = format_value(params[key])
        if key in ABBREVIATIONS:
            parts.append(ABBREVIATIONS[key] + token)
        else:
            field = key[len(BUILDER_PREFIX) :] if key.startswith(BUILDER_PREFIX) else key
            prefix = "db_" if key.startswith(BUILDER_PREFIX) else ""
            parts.append(f"{prefix}{_safe(field)}_{token}")
    name = "-".join(parts) or "base"
    if len(name) > _MAX_NAME:
        name = name[: _MAX_NAME - 9].rstrip("-") + "-" + short_hash(jsonable(dict(params)))
    return name
