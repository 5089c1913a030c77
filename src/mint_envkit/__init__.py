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
backend and the training loop load them when used. The names below are loaded
lazily, on first access, so ``import mint_envkit.parsers`` loads only the parsers.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mint_envkit.auditing import (
        AuditReport,
        audit,
        audit_sync,
    )
    from mint_envkit.builders import (
        DatasetBuilder,
        GroupBuilder,
        ProblemDataset,
        problems_from,
    )
    from mint_envkit.envs import (
        AnswerScore,
        Feedback,
        Message,
        MessageEnv,
        MessageStepResult,
        MultiTurnEnv,
        SingleTurnEnv,
        ToolEnv,
        with_thinking,
    )
    from mint_envkit.errors import (
        BackendError,
        ConfigError,
        EnvError,
        MintEnvkitError,
        MissingExtraError,
        ProblemError,
        RendererError,
        SandboxError,
        TokenizerError,
        ToolDefinitionError,
    )
    from mint_envkit.evaluation import (
        EvalResult,
        evaluate,
        evaluate_sync,
    )
    from mint_envkit.judge import (
        Judge,
        JudgedEnv,
        judged,
    )
    from mint_envkit.parsers import (
        Parser,
        ParseResult,
        boxed,
        choice,
        exact,
        first_number,
        last_number,
        math_answer,
        math_equal,
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
    from mint_envkit.rewards import (
        Reward,
        RewardBreakdown,
        RewardContext,
        correct,
        gated,
        math_correct,
        valid_format,
        weighted,
    )
    from mint_envkit.rl import Config, KLReferenceConfig, run_training
    from mint_envkit.rollouts import ScriptedPolicy, ScriptedReport
    from mint_envkit.sandbox import (
        CodeEnv,
        code_passes,
        run_tests,
    )
    from mint_envkit.tools import (
        McpServer,
        Tool,
        tool,
    )
    from mint_envkit.view import (
        write_report,
    )

_EXPORTS: dict[str, str] = {
    "AnswerScore": "mint_envkit.envs",
    "DatasetBuilder": "mint_envkit.builders",
    "GroupBuilder": "mint_envkit.builders",
    "ProblemDataset": "mint_envkit.builders",
    "problems_from": "mint_envkit.builders",
    "Feedback": "mint_envkit.envs",
    "Message": "mint_envkit.envs",
    "MessageEnv": "mint_envkit.envs",
    "MessageStepResult": "mint_envkit.envs",
    "MultiTurnEnv": "mint_envkit.envs",
    "SingleTurnEnv": "mint_envkit.envs",
    "ToolEnv": "mint_envkit.envs",
    "with_thinking": "mint_envkit.envs",
    "BackendError": "mint_envkit.errors",
    "ConfigError": "mint_envkit.errors",
    "SandboxError": "mint_envkit.errors",
    "EnvError": "mint_envkit.errors",
    "MintEnvkitError": "mint_envkit.errors",
    "MissingExtraError": "mint_envkit.errors",
    "ProblemError": "mint_envkit.errors",
    "RendererError": "mint_envkit.errors",
    "TokenizerError": "mint_envkit.errors",
    "ToolDefinitionError": "mint_envkit.errors",
    "AuditReport": "mint_envkit.auditing",
    "audit": "mint_envkit.auditing",
    "audit_sync": "mint_envkit.auditing",
    "EvalResult": "mint_envkit.evaluation",
    "evaluate": "mint_envkit.evaluation",
    "evaluate_sync": "mint_envkit.evaluation",
    "Judge": "mint_envkit.judge",
    "JudgedEnv": "mint_envkit.judge",
    "judged": "mint_envkit.judge",
    "ParseResult": "mint_envkit.parsers",
    "Parser": "mint_envkit.parsers",
    "boxed": "mint_envkit.parsers",
    "choice": "mint_envkit.parsers",
    "exact": "mint_envkit.parsers",
    "first_number": "mint_envkit.parsers",
    "last_number": "mint_envkit.parsers",
    "math_answer": "mint_envkit.parsers",
    "math_equal": "mint_envkit.parsers",
    "same_number": "mint_envkit.parsers",
    "strip_thinking": "mint_envkit.parsers",
    "xml_tag": "mint_envkit.parsers",
    "TINY_MODEL_NAME": "mint_envkit.rendering",
    "ChatTemplateRenderer": "mint_envkit.rendering",
    "EnvFromMessageEnv": "mint_envkit.rendering",
    "Renderer": "mint_envkit.rendering",
    "StepResult": "mint_envkit.rendering",
    "default_renderer_for": "mint_envkit.rendering",
    "get_renderer": "mint_envkit.rendering",
    "get_tokenizer": "mint_envkit.rendering",
    "Reward": "mint_envkit.rewards",
    "RewardBreakdown": "mint_envkit.rewards",
    "RewardContext": "mint_envkit.rewards",
    "correct": "mint_envkit.rewards",
    "gated": "mint_envkit.rewards",
    "math_correct": "mint_envkit.rewards",
    "valid_format": "mint_envkit.rewards",
    "weighted": "mint_envkit.rewards",
    "Config": "mint_envkit.rl",
    "KLReferenceConfig": "mint_envkit.rl",
    "ScriptedPolicy": "mint_envkit.rollouts",
    "ScriptedReport": "mint_envkit.rollouts",
    "run_training": "mint_envkit.rl",
    "McpServer": "mint_envkit.tools",
    "Tool": "mint_envkit.tools",
    "tool": "mint_envkit.tools",
    "CodeEnv": "mint_envkit.sandbox",
    "code_passes": "mint_envkit.sandbox",
    "run_tests": "mint_envkit.sandbox",
    "write_report": "mint_envkit.view",
}
"""Where each public name lives; :func:`__getattr__` imports the module on first use."""

__version__ = "0.1.0"
"""The version of mint_envkit (``mint_envkit.__version__``)."""

__all__ = [
    "TINY_MODEL_NAME",
    "AnswerScore",
    "AuditReport",
    "BackendError",
    "ChatTemplateRenderer",
    "CodeEnv",
    "Config",
    "ConfigError",
    "DatasetBuilder",
    "EnvError",
    "EnvFromMessageEnv",
    "EvalResult",
    "Feedback",
    "GroupBuilder",
    "Judge",
    "JudgedEnv",
    "KLReferenceConfig",
    "McpServer",
    "Message",
    "MessageEnv",
    "MessageStepResult",
    "MintEnvkitError",
    "MissingExtraError",
    "MultiTurnEnv",
    "ParseResult",
    "Parser",
    "ProblemDataset",
    "ProblemError",
    "Renderer",
    "RendererError",
    "Reward",
    "RewardBreakdown",
    "RewardContext",
    "SandboxError",
    "ScriptedPolicy",
    "ScriptedReport",
    "SingleTurnEnv",
    "StepResult",
    "TokenizerError",
    "Tool",
    "ToolDefinitionError",
    "ToolEnv",
    "__version__",
    "audit",
    "audit_sync",
    "boxed",
    "choice",
    "code_passes",
    "correct",
    "default_renderer_for",
    "evaluate",
    "evaluate_sync",
    "exact",
    "first_number",
    "gated",
    "get_renderer",
    "get_tokenizer",
    "judged",
    "last_number",
    "math_answer",
    "math_correct",
    "math_equal",
    "problems_from",
    "run_tests",
    "run_training",
    "same_number",
    "strip_thinking",
    "tool",
    "valid_format",
    "weighted",
    "with_thinking",
    "write_report",
    "xml_tag",
]


def __getattr__(name: str) -> Any:
    """Import a public name's module on first access (PEP 562), so that importing a light
    part (``mint_envkit.parsers``) does not load the heavy ones."""
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mint_envkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
