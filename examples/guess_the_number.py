"""Guess the number: a worked multi-turn environment.

The env holds a secret whole number (a field of the problem, never drawn inside
the env, so every env of a GRPO group plays the same game). Each turn the model
guesses; the env answers "Higher." or "Lower." until the guess is right or the
turns run out.

Rewards (per turn; an episode's reward is their sum):

- ``1.0`` on the turn that finds the secret (the episode ends);
- ``-0.1`` for a reply with no whole number in it (the game goes on);
- ``0.0`` for a wrong guess;
- ``MAX_TURNS_REWARD`` (``-0.5``) replaces the reward of the last allowed turn
  when the secret was not found by then (``max_turns_reward``); the metric
  ``max_turns_reached`` is then 1.

``max_turns = 7`` is exactly enough for binary search over 1..100
(2**7 = 128 >= 100). ``success_metric = "solved"`` tells the kit which metric says a
game was won (``mint-envkit check``, the audit and the trivial game policies read it).

The hooks: ``setup()`` starts the episode's guess history and checks the
secret lies in the range; ``teardown()`` logs a one-line summary (through
``logging``) and keeps it in ``self.summary``.

Checked offline, with no model and no account (binary search, then a
stubborn policy that always guesses 50):

    python examples/guess_the_number.py
"""

from __future__ import annotations

import itertools
import logging
import re

from mint_envkit import (
    DatasetBuilder,
    Feedback,
    Message,
    MultiTurnEnv,
    ProblemError,
    ScriptedPolicy,
    first_number,
)
from mint_envkit.parsers import as_number

logger = logging.getLogger("guess_the_number")

SOLVED_REWARD = 1.0
UNPARSABLE_REWARD = -0.1
MAX_TURNS_REWARD = -0.5
MAX_TURNS = 7


class GuessTheNumberEnv(MultiTurnEnv):
    """Find the secret in ``[low, high]``; the env says "Higher." or "Lower."."""

    system_prompt = (
        "We play guess the number. Each turn, reply with one whole number only. "
        "I will answer Higher. or Lower. until you find it."
    )
    required_fields = ("secret",)
    optional_fields = {"low": 1, "high": 100}  # noqa: RUF012 - the API's class attribute
    success_metric = "solved"  # what the kit's checks, baselines and claims read
    max_turns = MAX_TURNS
    max_turns_reward = MAX_TURNS_REWARD

    def messages(self) -> list[Message]:
        """The rules, ``few_shot`` (worked games, none by default) and the range; never the
        secret."""
        low, high = self.problem["low"], self.problem["high"]
        return [
            {"role": "system", "content": self.system_prompt},
            *(dict(m) for m in self.few_shot),
            {"role": "user", "content": f"I am thinking of a number between {low} and {high}."},
        ]

    async def setup(self) -> None:
        """Start the episode: an empty guess history; reject a secret outside the range."""
        low, high, secret = self.problem["low"], self.problem["high"], self.problem["secret"]
        if not low <= secret <= high:
            raise ProblemError(f"secret {secret} is outside [{low}, {high}]")
        self.guesses: list[int] = []
        self.summary: dict[str, object] | None = None

    async def respond(self, message: Message) -> Feedback:
        secret = self.problem["secret"]
        parsed = first_number(message["content"])
        number = as_number(parsed.value) if parsed else None
        if number is None or not re.fullmatch(r"-?\d+", number):
            return Feedback(
                reply="Please reply with one whole number.",
                reward=UNPARSABLE_REWARD,
                metrics={"solved": 0.0},
                logs={"guesses": list(self.guesses)},
            )
        guess = int(number)
        self.guesses.append(guess)
        logs = {"guesses": list(self.guesses)}
        if guess == secret:
            return Feedback(reward=SOLVED_REWARD, done=True, metrics={"solved": 1.0}, logs=logs)
        hint = "Higher." if guess < secret else "Lower."
        return Feedback(reply=hint, metrics={"solved": 0.0}, logs=logs)

    async def teardown(self) -> None:
        """Log what happened in this episode (runs once, also after an error)."""
        self.summary = {
            "secret": self.problem["secret"],
            "turns": self.turns,
            "guesses": list(getattr(self, "guesses", [])),
        }
        logger.info("episode over: %s", self.summary)


def binary_search_policy(messages: list[Message]) -> str:
    """Guess the middle of the range still possible, read from the conversation."""
    low, high = (int(x) for x in re.findall(r"-?\d+", messages[1]["content"])[:2])
    for said, answer in itertools.pairwise(messages):
        if said["role"] != "assistant":
            continue
        guess = int(said["content"])
        if answer["content"] == "Higher.":
            low = guess + 1
        elif answer["content"] == "Lower.":
            high = guess - 1
    return str((low + high) // 2)


def constant_policy(messages: list[Message]) -> str:
    """Always guesses 50: it never finds a secret other than 50."""
    return "50"


PROBLEMS = [
    {"secret": 1},
    {"secret": 37},
    {"secret": 50},
    {"secret": 64},
    {"secret": 100},
    {"secret": 7, "low": 1, "high": 10},
]


def make_builder(problems: list[dict] | None = None, group_size: int = 2) -> DatasetBuilder:
    """Every problem in one batch, ``group_size`` envs each, with the tiny offline tokenizer."""
    problems = PROBLEMS if problems is None else problems
    return DatasetBuilder(
        env=GuessTheNumberEnv,
        problems=problems,
        batch_size=len(problems),
        group_size=group_size,
        model_name="mint-envkit/tiny-qwen3",
        shuffle=False,
    )


def main() -> None:
    for name, policy in (("binary search", binary_search_policy), ("always 50", constant_policy)):
        report = ScriptedPolicy(policy).run_sync(make_builder())
        print(f"{name}: mean reward {report.mean_reward:+.2f}")
        for group in report.groups:
            secret = PROBLEMS[group.index]["secret"]
            turns = [int(m["turns"]) for m in group.metrics]
            guesses = group.logs[0].get("guesses")
            print(f"  secret {secret:3}: turns {turns} rewards {group.rewards} guesses {guesses}")
        for error in report.errors:
            print(f"  error: {error}")


if __name__ == "__main__":
    main()
