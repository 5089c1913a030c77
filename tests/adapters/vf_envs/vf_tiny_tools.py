"""A verifiers ToolEnv: an ``add`` tool, then the sum in ``<answer>`` tags."""

import verifiers as vf
from datasets import Dataset


def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


def correct_answer(parser, completion, answer) -> float:
    """1.0 when the final answer is the sum."""
    return 1.0 if (parser.parse_answer(completion) or "").strip() == answer else 0.0


def load_environment(n: int = 4) -> vf.Environment:
    """Sums of two numbers, with the add tool."""
    rows = [{"question": f"What is {i} + {i + 3}?", "answer": str(2 * i + 3)} for i in range(n)]
    parser = vf.XMLParser(["answer"], answer_field="answer")
    rubric = vf.Rubric(funcs=[correct_answer], parser=parser)
    return vf.ToolEnv(
        dataset=Dataset.from_list(rows),
        tools=[add],
        system_prompt="Call the add tool, then give the sum in <answer></answer> tags.",
        parser=parser,
        rubric=rubric,
        max_turns=3,
    )
