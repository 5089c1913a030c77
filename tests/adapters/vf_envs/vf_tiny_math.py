"""A small verifiers env, laid out as a hub env's module: ``load_environment(**kwargs)``.

Arithmetic questions answered in ``<answer>`` tags (verifiers' XMLParser), rewarded by a
rubric of three plain functions: the answer check, the parser's format reward and a
length penalty. ``vf.load_environment("vf-tiny-math")`` imports this module by its id
(the tests put this folder on ``sys.path``, as ``pip install`` of an env package would).
"""

import random

import verifiers as vf
from datasets import Dataset

SYSTEM_PROMPT = "Answer with the number alone inside <answer></answer> tags."


def _rows(n: int, seed: int) -> list[dict]:
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(1, 20), rng.randint(1, 20)
        rows.append({"question": f"What is {a} + {b}?", "answer": str(a + b), "info": {"a": a}})
    return rows


def correct_answer(parser, completion, answer) -> float:
    """1.0 when the parsed answer is the reference."""
    return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0


def short_reply(completion) -> float:
    """A penalty for long replies: -0.01 per character past 40."""
    text = completion[-1]["content"] or ""
    return -0.01 * max(0, len(text) - 40)


def load_environment(num_train: int = 40, num_eval: int = 10, seed: int = 0) -> vf.Environment:
    """The tiny math env: ``num_train`` training and ``num_eval`` eval rows."""
    parser = vf.XMLParser(["answer"], answer_field="answer")
    rubric = vf.Rubric(
        funcs=[correct_answer, parser.get_format_reward_func(), short_reply],
        weights=[1.0, 0.25, 1.0],
        parser=parser,
    )
    return vf.SingleTurnEnv(
        dataset=Dataset.from_list(_rows(num_train, seed)),
        eval_dataset=Dataset.from_list(_rows(num_eval, seed + 1)) if num_eval else None,
        system_prompt=SYSTEM_PROMPT,
        parser=parser,
        rubric=rubric,
    )
