"""One check that a run's model and renderer names agree, before anything starts.

A run names its model twice (``Config.model_name`` and the dataset builder's
``model_name``) and may name its renderer twice (``Config.renderer_name`` and
the builder's ``renderer_name``, which defaults to the one that fits the model,
:func:`~mint_envkit.rendering.default_renderer_for`). The loop samples with the
builder's groups, so the two must be the same: :func:`check_model_and_renderer`
says which one to change when they are not. :class:`~mint_envkit.rl.Config`
calls it when it is built.

Example::

    check_model_and_renderer("mint-envkit/smollm2-135m-instruct", None, builder)
    # 'chat_template' (the builder's, chosen from the model)
"""

from __future__ import annotations

from typing import Any

from mint_envkit.errors import ConfigError

__all__ = ["check_model_and_renderer"]


def check_model_and_renderer(model_name: str, renderer_name: str | None, builder: Any) -> str:
    """The run's renderer name, once the config's and the builder's names agree.

    ``renderer_name`` None takes the builder's (a builder without one: the
    renderer that fits ``model_name``).

    Raises:
        ConfigError: ``model_name`` differs from ``builder.model_name``, or
            ``renderer_name`` from ``builder.renderer_name``; the message names
            both values.

    Example::

        check_model_and_renderer("mint-envkit/tiny-qwen3", "qwen3", builder)  # 'qwen3'
        check_model_and_renderer("Qwen/Qwen3-0.6B", None, tiny_builder)
        # ConfigError: Config.model_name is 'Qwen/Qwen3-0.6B' but ...
    """
    builder_model = getattr(builder, "model_name", None)
    if builder_model is not None and builder_model != model_name:
        raise ConfigError(
            f"Config.model_name is {model_name!r} but the dataset builder's model_name is "
            f"{builder_model!r}; the builder renders prompts with its model's tokenizer, so "
            "give both the same model"
        )
    builder_renderer = getattr(builder, "renderer_name", None)
    if None not in (renderer_name, builder_renderer) and renderer_name != builder_renderer:
        raise ConfigError(
            f"Config.renderer_name is {renderer_name!r} but the dataset builder's "
            f"renderer_name is {builder_renderer!r}; the loop renders with the builder's, "
            f"so pass renderer_name={renderer_name!r} to the builder too "
            "(or leave Config.renderer_name None)"
        )
    if renderer_name is not None:
        return renderer_name
    if builder_renderer is not None:
        return builder_renderer
    from mint_envkit.rendering.chat_template import default_renderer_for

    return default_renderer_for(model_name)
