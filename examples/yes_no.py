"""A yes/no env whose reward a constant answer can game: the audit's collapse example.

"Is 37 greater than 52? Answer yes or no." The held-out answers are "no" more often
than "yes", so a model that learns to say "no" to everything gains correctness
without learning to compare numbers. Audit it (docs/audit.md):

    mint-envkit audit examples/yes_no.py:builder                 # probes + SmolLM2 samples
    mint-envkit audit examples/yes_no.py:builder --learn 10 --learning-rate 5e-4

Checked offline, with no model and no account:

    python examples/yes_no.py
"""

from __future__ import annotations

import random
import re

from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv

_WORD = re.compile(r"[a-z]+")


def yes_or_no(text: str) -> str | None:
    """The reply's first word when it is "yes" or "no" (any case), else None (unparsed)."""
    words = _WORD.findall(text.lower())
    return words[0] if words and words[0] in ("yes", "no") else None


class YesNoEnv(SingleTurnEnv):
    """Is a greater than b? The first word of the reply is the answer."""

    system_prompt = "Answer the question with one word: yes or no."
    parser = yes_or_no
    reward_correct = 1.0
    reward_incorrect = 0.0


def comparison_problems(n: int, seed: int, share_no: float = 0.575) -> list[dict[str, str]]:
    """``n`` "Is a greater than b?" problems, ``round(share_no * n)`` of them answered "no"."""
    rng = random.Random(seed)
    answers = ["no"] * round(share_no * n) + ["yes"] * (n - round(share_no * n))
    rng.shuffle(answers)
    problems = []
    for answer in answers:
        a, b = sorted(rng.sample(range(10, 100), 2), reverse=answer == "yes")
        problems.append(
            {"question": f"Is {a} greater than {b}? Answer yes or no.", "answer": answer}
        )
    return problems


SMOLLM2 = "mint-envkit/smollm2-135m-instruct"

builder = DatasetBuilder(
    env=YesNoEnv,
    problems=comparison_problems(64, seed=0),
    test_problems=comparison_problems(40, seed=1),
    batch_size=4,
    group_size=4,
    model_name=SMOLLM2,
    seed=0,
    # A reply cut off at the token limit earns no more than a wrong answer.
    context_overflow_reward=YesNoEnv.reward_incorrect,
)
"""64 training and 40 held-out problems for SmolLM2 (its own chat template)."""


if __name__ == "__main__":
    check = DatasetBuilder(
        env=YesNoEnv,
        problems=comparison_problems(1, seed=0),
        batch_size=1,
        group_size=3,
        model_name="mint-envkit/tiny-qwen3",
    )
    report = ScriptedPolicy(["yes", "No, it is not.", "maybe"]).run_sync(check)
    group = report.groups[0]
    print(group.prompt[-1]["content"], "answer:", check.problems[0]["answer"])
    for reply, reward, logs in zip(group.replies, group.rewards, group.logs, strict=True):
        print(f"reply {reply!r:18} reward {reward:+.2f}  parse {logs['parse_status']}")
