"""Message-level environments: the code a user writes.

Example::

    from mint_envkit.envs import SingleTurnEnv

    class ArithmeticEnv(SingleTurnEnv):
        system_prompt = "You are a precise calculator. Reply with only the final number."
"""

from mint_envkit.envs.base import AuditProbe, Message, MessageEnv, MessageStepResult, Metrics
from mint_envkit.envs.multi_turn import Feedback, MultiTurnEnv
from mint_envkit.envs.reasoning_gym import ReasoningGymEnv, reasoning_gym_problems
from mint_envkit.envs.scoring import AnswerScore, with_thinking
from mint_envkit.envs.single_turn import SingleTurnEnv
from mint_envkit.envs.tool_env import ToolEnv

__all__ = [
    "AnswerScore",
    "AuditProbe",
    "Feedback",
    "Message",
    "MessageEnv",
    "MessageStepResult",
    "Metrics",
    "MultiTurnEnv",
    "ReasoningGymEnv",
    "SingleTurnEnv",
    "ToolEnv",
    "reasoning_gym_problems",
    "with_thinking",
]
