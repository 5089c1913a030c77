"""The values a run's dataset builder owns, and the check that ``Config`` agrees.

The builder owns the model, the renderer and the episode limits: it renders
the prompts with its model's tokenizer and chat template and sizes each
episode. :class:`~mint_envkit.rl.Config` takes ``model_name`` and
``max_tokens`` from it (:data:`BUILDER_OWNED`); a value given to ``Config``
as well must be the same (:func:`check_builder_owned` says which to change).

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    assert BUILDER_OWNED["max_tokens"] == "max_generation_tokens"
    try:
        check_builder_owned({"model_name": "Qwen/Qwen3-0.6B"}, builder)
    except ConfigError as err:  # Config.model_name is 'Qwen/Qwen3-0.6B' but the dataset builder's ...
        assert "the builder owns it" in str(err)
    else:
        raise AssertionError("a model_name the builder does not have was accepted")
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mint_envkit.errors import ConfigError

BUILDER_OWNED: Mapping[str, str] = {
    "model_name": "model_name",
    "max_tokens": "max_generation_tokens",
}
"""``Config`` field -> the dataset builder's field that owns its value.

Example::

    BUILDER_OWNED["model_name"]  # 'model_name'
"""


def builder_value(builder: Any, config_field: str) -> Any:
    """The builder's value for a builder-owned ``Config`` field (None: it has none).

    Example::

        assert builder_value(builder, "max_tokens") == 64  # the module example's builder.max_generation_tokens
    """
    return getattr(builder, BUILDER_OWNED[config_field], None)


def check_builder_owned(values: Mapping[str, Any], builder: Any) -> None:
    """Raise unless each builder-owned value in ``values`` equals the builder's.

    ``values`` maps ``Config`` fields (keys of :data:`BUILDER_OWNED`) to the
    values given to ``Config``; a builder without the field (or with None)
    leaves the value to ``Config``.

    Raises:
        ConfigError: a value differs from the builder's; the message names both
            places and the fix (set it on the builder, leave it out of ``Config``).

    Example::

        try:
            check_builder_owned({"max_tokens": 128}, builder)  # builder: max_generation_tokens=64
        except ConfigError as err:
            assert str(err).startswith("Config.max_tokens is 128 but the dataset builder's")
        check_builder_owned({"max_tokens": 64}, builder)  # the same value: fine
    """
    for field, value in values.items():
        owned = builder_value(builder, field)
        if owned is not None and owned != value:
            name = BUILDER_OWNED[field]
            raise ConfigError(
                f"Config.{field} is {value!r} but the dataset builder's {name} is {owned!r}; "
                f"the builder owns it: pass {name}={value!r} to the builder and leave "
                f"{field} out of Config (it takes the builder's)"
            )
