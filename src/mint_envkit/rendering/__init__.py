"""The renderer bridge: messages to tokens and back, and the token-level env.

Example::

    # not run: `my_message_env` is your MessageEnv, built elsewhere
    from mint_envkit.rendering import get_renderer, get_tokenizer, EnvFromMessageEnv

    renderer = get_renderer("qwen3", get_tokenizer("mint-envkit/tiny-qwen3"))
    env = EnvFromMessageEnv(renderer, my_message_env)
"""

from mint_envkit.rendering.chat_template import ChatTemplateRenderer, default_renderer_for
from mint_envkit.rendering.renderer import Renderer, get_renderer
from mint_envkit.rendering.token_env import EnvFromMessageEnv, StepResult
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME, get_tokenizer

__all__ = [
    "TINY_MODEL_NAME",
    "ChatTemplateRenderer",
    "EnvFromMessageEnv",
    "Renderer",
    "StepResult",
    "default_renderer_for",
    "get_renderer",
    "get_tokenizer",
]
