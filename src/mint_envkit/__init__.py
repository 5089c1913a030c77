"""mint_envkit: building blocks for RL environments for language models.

Write an env in a few lines, check it offline with :class:`ScriptedPolicy`,
train it on the embedded local backend, then on MinT, with the same code.

Example::

    from mint_envkit import SingleTurnEnv, DatasetBuilder, ScriptedPolicy, first_number

    class ArithmeticEnv(SingleTurnEnv):
        system_prompt = "You are a precise calculator. Reply with only the final number."
        parser = first_number
        reward_incorrect = -0.25

    builder = DatasetBuilder(env=ArithmeticEnv,
                             problems=[{"question": "What is 2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=3, model_name="mint-envkit/tiny-qwen3")
    report = ScriptedPolicy(["5", "7", "five"]).run_sync(builder)
    report.groups[0].rewards   # [1.0, -0.25, -0.25]

Importing this package does not import torch (nor the ``mint`` SDK): the
backend and the training loop load them when used.
"""

from mint_envkit.builders import DatasetBuilder, GroupBuilder, ProblemDataset
from mint_envkit.envs import (
    Feedback,
    Message,
    MessageEnv,
    MessageStepResult,
    MultiTurnEnv,
    SingleTurnEnv,
)
from mint_envkit.errors import (
    BackendError,
    ConfigError,
    EnvError,
    MintEnvkitError,
    ProblemError,
    RendererError,
    TokenizerError,
)
from mint_envkit.parsers import (
    Parser,
    ParseResult,
    boxed,
    choice,
    exact,
    first_number,
    last_number,
    same_number,
    strip_thinking,
    xml_tag,
)
from mint_envkit.rendering import (
    TINY_MODEL_NAME,
    ChatTemplateRenderer,
    EnvFromMessageEnv,
    Renderer,
    StepResult,
    default_renderer_for,
    get_renderer,
    get_tokenizer,
)
from mint_envkit.rewards import Reward, RewardBreakdown, gated, valid_format, weighted
from mint_envkit.rl import (
    Config,
    KLReferenceConfig,
    ScriptedPolicy,
    ScriptedReport,
)

__version__ = "0.1.0"
"""The version of mint_envkit (``mint_envkit.__version__``)."""

__all__ = [
    "TINY_MODEL_NAME",
    "BackendError",
    "ChatTemplateRenderer",
    "Config",
    "ConfigError",
    "DatasetBuilder",
    "EnvError",
    "EnvFromMessageEnv",
    "Feedback",
    "GroupBuilder",
    "KLReferenceConfig",
    "Message",
    "MessageEnv",
    "MessageStepResult",
    "MintEnvkitError",
    "MultiTurnEnv",
    "ParseResult",
    "Parser",
    "ProblemDataset",
    "ProblemError",
    "Renderer",
    "RendererError",
    "Reward",
    "RewardBreakdown",
    "ScriptedPolicy",
    "ScriptedReport",
    "SingleTurnEnv",
    "StepResult",
    "TokenizerError",
    "__version__",
    "boxed",
    "choice",
    "default_renderer_for",
    "exact",
    "first_number",
    "gated",
    "get_renderer",
    "get_tokenizer",
    "last_number",
    "same_number",
    "strip_thinking",
    "valid_format",
    "weighted",
    "xml_tag",
]
