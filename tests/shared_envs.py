"""Envs shared by the tests: import them, do not redefine them in a test file.

``tests/`` is on ``sys.path`` while pytest runs (it holds the root ``conftest.py``
and has no ``__init__.py``), so every test module can write::

    from shared_envs import ArithmeticEnv

    env = ArithmeticEnv(question="What is 2 + 3?", answer="5")

A test that needs other rewards subclasses it in the test (``class StrictEnv(ArithmeticEnv)``).
The class lives in a module (not inside a fixture) so that envs built from it pickle.
"""

from __future__ import annotations

import re

from mint_envkit import Feedback, MultiTurnEnv, SingleTurnEnv, exact, first_number
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition

__all__ = [
    "ARITHMETIC_PROBLEM",
    "COLOURS",
    "ArithmeticEnv",
    "ColourGameEnv",
    "YesNoEnv",
    "colour_problems",
    "yes_no_problems",
]

ARITHMETIC_PROBLEM = {"question": "What is 2 + 3?", "answer": "5"}
"""One problem for :class:`ArithmeticEnv`; copy it before changing it."""


class ArithmeticEnv(SingleTurnEnv):
    """The tests' single-turn env: a numeric answer read with ``first_number``.

    Rewards: correct 1.0, incorrect -0.25, unparsed -0.5 (three distinct values, so a
    test can tell the three outcomes apart).
    """

    system_prompt = "You are a precise calculator. Reply with only the final number."
    parser = first_number
    reward_correct = 1.0
    reward_incorrect = -0.25
    reward_unparsed = -0.5


class YesNoEnv(SingleTurnEnv):
    """A categorical env: "Is a greater than b? Answer yes or no.", the whole reply (``exact``).

    Its problems come from :func:`yes_no_problems`; the answer figures' tests use it.
    """

    parser = exact()


def yes_no_problems(no: int = 23, yes: int = 17) -> list[dict[str, str]]:
    """``no`` problems answered "no", then ``yes`` answered "yes" (default: 57.5% "no" of 40)."""
    problems = []
    for i in range(no + yes):
        a, b = (10 + i, 60 + i) if i < no else (60 + i, 10 + i)
        question = f"Is {a} greater than {b}? Answer yes or no."
        problems.append({"question": question, "answer": "yes" if a > b else "no"})
    return problems


COLOURS = ("red", "orange", "yellow", "green", "blue", "purple")
"""The colours of :class:`ColourGameEnv`, in the order its prompt offers them."""


class ColourGameEnv(MultiTurnEnv):
    """The tests' game: guess the colour (``self.answer``) in 4 turns.

    The move is the first colour the reply names. Rewards: +1.0 on the turn that names the
    answer (``solved`` 1.0, the episode ends), 0.0 for another colour, -0.1 for a reply
    naming none (the game goes on), -0.5 for the last turn without a win
    (``max_turns_reward``): an honest losing game earns -0.5, naming 4 distinct colours
    wins 4 of 6 games.
    """

    system_prompt = "We play a game: guess my colour. Reply with one colour each turn."
    required_fields = ("question", "answer")
    success_metric = "solved"
    max_turns = 4
    max_turns_reward = -0.5
    wrong_move_reward = 0.0

    async def respond(self, message):
        named = re.findall("|".join(COLOURS), message["content"].lower())
        if not named:
            return Feedback(reply="Name a colour.", reward=-0.1, metrics={"solved": 0.0})
        if named[0] == self.answer:
            return Feedback(reward=1.0, done=True, metrics={"solved": 1.0})
        return Feedback(
            reply=f"Not {named[0]}.", reward=self.wrong_move_reward, metrics={"solved": 0.0}
        )


def colour_problems(n: int = 6) -> list[dict[str, str]]:
    """``n`` games of :class:`ColourGameEnv`, the answers cycling through :data:`COLOURS`."""
    question = "Which colour am I thinking of? Options: " + ", ".join(COLOURS) + "."
    return [{"question": question, "answer": COLOURS[i % len(COLOURS)]} for i in range(n)]


def hand_made_rollout(
    index: int,
    rewards: list[float] | None = None,
    *,
    error: str | None = None,
    correct: list[float] | None = None,
    tags: tuple[str, ...] = (),
) -> GroupRollout:
    """One group's rollout built by hand: each episode one transition, prompt ``[1, 2, 3]``,
    a two-token reply with logprobs ``[-0.5, -0.25]``, the given reward."""
    messages = [{"role": "user", "content": f"problem {index}"}]
    if error is not None:
        return GroupRollout(index, messages, [], error=error, traceback="Traceback ...")
    trajectories = []
    for member, reward in enumerate(rewards or []):
        metrics = {} if correct is None else {"correct": correct[member]}
        reply = SampledTokens(tokens=[10 + member, 11], logprobs=[-0.5, -0.25], stop_reason="stop")
        transition = Transition(
            ob=[1, 2, 3],
            ac=reply,
            reward=reward,
            episode_done=True,
            metrics=metrics,
            logs={"parse_status": "ok"},
            message={"role": "assistant", "content": f"reply {member}"},
        )
        trajectories.append(Trajectory(transitions=[transition]))
    return GroupRollout(index, messages, trajectories, tags=list(tags))


class TextClient:
    """A stand-in for a ``mint`` sampling client: ``reply(prompt_text, max_tokens)`` gives
    each reply's text (decoded prompt in, text out), encoded with ``model_name``'s renderer;
    a reply longer than ``max_tokens`` is cut off there (``stop_reason`` ``length``)."""

    def __init__(self, reply, model_name: str = "mint-envkit/tiny-qwen3") -> None:
        from mint_envkit import get_renderer

        self.reply = reply
        self.renderer = get_renderer("qwen3", model_name)
        self.calls = 0

    async def sample_async(self, prompt, num_samples, sampling_params):
        from types import SimpleNamespace

        self.calls += 1
        tokenizer = self.renderer.tokenizer
        text = tokenizer.decode(prompt.to_ints())
        limit = sampling_params.max_tokens
        out = []
        for _ in range(num_samples):
            tokens = list(tokenizer.encode(self.reply(text, limit), add_special_tokens=False))
            tokens += self.renderer.get_stop_sequences()
            reason = "stop" if len(tokens) <= limit else "length"
            tokens = tokens[:limit]
            out.append(
                SimpleNamespace(tokens=tokens, logprobs=[0.0] * len(tokens), stop_reason=reason)
            )
        return SimpleNamespace(sequences=out)
