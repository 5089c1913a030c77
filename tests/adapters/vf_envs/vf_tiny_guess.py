"""A multi-turn verifiers env: guess a number, told "higher" or "lower" after each guess.

Its ``env_response`` reads the guess with the parser and answers; ``setup_state`` keeps
the guesses in the state, the rubric reads them back (``state``), and the episode stops
when the guess is right (``final_env_response``) or after ``max_turns`` guesses.
"""

import verifiers as vf
from datasets import Dataset


class GuessEnv(vf.MultiTurnEnv):
    async def setup_state(self, state, **kwargs):
        state["guesses"] = []
        return state

    async def env_response(self, messages, state, **kwargs):
        guess = self.parser.parse_answer(messages)
        secret = int(state["answer"])
        try:
            value = int(str(guess).strip())
        except ValueError:
            return [vf.UserMessage(content="Reply with a number in <guess></guess> tags.")]
        state["guesses"].append(value)
        if value == secret:
            reply = [vf.UserMessage(content="Correct!")]
            state["final_env_response"] = reply
            return reply
        return [vf.UserMessage(content="Higher." if value < secret else "Lower.")]


def solved(parser, completion, answer) -> float:
    """1.0 when the last guess is the secret."""
    return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0


def fewer_guesses(state) -> float:
    """0.1 per turn left unused of five (turns, not parsed guesses: a reply that never
    guesses must not keep the bonus; the audit caught that in a first version)."""
    return 0.1 * max(0, 5 - len(state["trajectory"]))


def load_environment(n: int = 12, max_turns: int = 4) -> vf.Environment:
    """Secrets 1..10; ``max_turns`` guesses."""
    rows = [
        {
            "question": "Guess my number from 1 to 10, in <guess></guess> tags.",
            "answer": str(1 + i % 10),
        }
        for i in range(n)
    ]
    parser = vf.XMLParser(["guess"], answer_field="guess")
    rubric = vf.Rubric(funcs=[solved, fewer_guesses], weights=[1.0, 1.0], parser=parser)
    return GuessEnv(
        dataset=Dataset.from_list(rows), parser=parser, rubric=rubric, max_turns=max_turns
    )
