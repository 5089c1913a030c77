"""The arithmetic environment of the main job, and its problems.

Checked offline, with no model and no account:

    python examples/arithmetic_env.py
"""

from __future__ import annotations

import random

from mint_envkit import DatasetBuilder, Parser, ScriptedPolicy, SingleTurnEnv
from mint_envkit.parsers import as_number

only_a_number = Parser.from_function(as_number, name="only_a_number")
"""The reply is the answer when it is one number and nothing else ("5", "5.", "1,200").

Not ``first_number``: ``mint-envkit audit`` showed that restating the question ("What
is 7 * 1?") then reads as the answer 7, right on 5% of the main job's problems, so
echoing the question earned more than a wrong answer (docs/audit.md)."""


class ArithmeticEnv(SingleTurnEnv):
    """Asks for a sum or product; the reply must be the number alone."""

    system_prompt = "You are a precise calculator. Reply with only the final number."
    parser = only_a_number
    reward_correct = 1.0
    reward_incorrect = -0.25
    reward_unparsed = -0.25  # never above reward_incorrect, or RL learns to stop answering


def arithmetic_problems(n: int = 64, seed: int = 0) -> list[dict[str, str]]:
    """``n`` two-operand problems (addition and multiplication), fixed by ``seed``."""
    rng = random.Random(seed)
    problems = []
    for _ in range(n):
        a, b = rng.randint(0, 99), rng.randint(0, 99)
        if rng.random() < 0.5:
            problems.append({"question": f"What is {a} + {b}?", "answer": str(a + b)})
        else:
            a, b = a % 13, b % 13
            problems.append({"question": f"What is {a} * {b}?", "answer": str(a * b)})
    return problems


if __name__ == "__main__":
    builder = DatasetBuilder(
        env=ArithmeticEnv,
        problems=[{"question": "What is 2 + 3?", "answer": "5"}],
        batch_size=1,
        group_size=3,
        model_name="mint-envkit/tiny-qwen3",
    )
    report = ScriptedPolicy(["5", "7", "five"]).run_sync(builder)
    group = report.groups[0]
    for reply, reward, logs in zip(group.replies, group.rewards, group.logs, strict=True):
        print(f"reply {reply!r:8} reward {reward:+.2f}  parse {logs['parse_status']}")
