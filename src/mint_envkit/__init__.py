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

The top level holds what you write with: envs, parsers, rewards, tools, builders,
the scripted policy, the loop's config, evaluation and the audit. Plumbing lives in
its subpackage (``mint_envkit.rendering.get_tokenizer``,
``mint_envkit.rollouts.local_backend``, ...; see docs/reference.md). Importing this
package does not import torch (nor the ``mint`` SDK): the names are loaded lazily, on
first access, so ``import mint_envkit.parsers`` loads only the parsers.
"""

import importlib
from typing import Any

_FACE: dict[str, tuple[str, ...]] = {
    "mint_envkit.envs": (
        "AnswerScore",
        "AuditProbe",
        "Feedback",
        "Message",
        "MessageEnv",
        "MessageStepResult",
        "MultiTurnEnv",
        "SingleTurnEnv",
        "ToolEnv",
        "with_thinking",
    ),
    "mint_envkit.parsers": (
        "boxed",
        "choice",
        "exact",
        "first_number",
        "last_number",
        "math_answer",
        "math_equal",
        "Parser",
        "ParseResult",
        "same_number",
        "strip_thinking",
        "xml_tag",
    ),
    "mint_envkit.rewards": (
        "component",
        "correct",
        "gated",
        "math_correct",
        "Reward",
        "RewardBreakdown",
        "RewardContext",
        "valid_format",
        "weighted",
    ),
    "mint_envkit.tools": (
        "McpServer",
        "Tool",
        "tool",
    ),
    "mint_envkit.sandbox": (
        "code_passes",
        "CodeEnv",
        "run_tests",
    ),
    "mint_envkit.judge": (
        "Judge",
        "judged",
        "JudgedEnv",
    ),
    "mint_envkit.rendering": (
        "get_renderer",
        "Renderer",
    ),
    "mint_envkit.builders": (
        "DatasetBuilder",
        "GroupBuilder",
        "load_environment",
        "ProblemDataset",
        "problems_from",
    ),
    "mint_envkit.rollouts": (
        "ScriptedPolicy",
        "ScriptedReport",
    ),
    "mint_envkit.evaluation": (
        "EvalResult",
        "evaluate",
    ),
    "mint_envkit.rl": (
        "Config",
        "KLReferenceConfig",
        "run_training",
    ),
    "mint_envkit.auditing": (
        "audit",
        "AuditReport",
    ),
    "mint_envkit.view": ("write_report",),
    "mint_envkit.errors": (
        "BackendError",
        "ConfigError",
        "EnvError",
        "MintEnvkitError",
        "MissingExtraError",
        "ProblemError",
        "RendererError",
        "RewardOrderWarning",
        "SandboxError",
        "TokenizerError",
        "ToolDefinitionError",
    ),
}
"""The public names, by the module that defines them: the one list of the face.
:func:`__getattr__` imports a name's module on first use; ``__all__`` is made from it."""

_EXPORTS: dict[str, str] = {name: module for module, names in _FACE.items() for name in names}

__version__ = "0.1.0"
"""The version of mint_envkit (``mint_envkit.__version__``)."""

__all__ = sorted([*_EXPORTS, "__version__"])


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
