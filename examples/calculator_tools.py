"""A calculator tool env: arithmetic word problems solved with a ``calculate`` tool.

The model sees the tool in its system prompt (the chat template's ``tools=``
block, or the renderer's ``# Tools`` block when the template has no tools slot,
as SmolLM2's; docs/tools.md), calls it in its own format (Qwen3:
``<tool_call>{"name": "calculate", "arguments": {"expression": "..."}}</tool_call>``),
gets the result back as a ``tool`` message, and then replies with the final
number, which is parsed and scored.

Rewards: ``1.0`` for a right final answer, ``0.0`` for a wrong or missing one.
A malformed or failing call is not punished by itself: it comes back to the
model as an error message and is counted (``invalid_tool_calls``,
``tool_errors``); it costs a turn.

The tool's evaluator accepts numbers, ``+ - * / **`` and parentheses, nothing
else (no names, no calls, no attributes), at most ``MAX_EXPRESSION_CHARS``
characters, exponents of at most ``MAX_EXPONENT`` and results of at most
``MAX_MAGNITUDE``.

Checked offline, with no model and no account (a policy that calls the tool
right, then one that writes a malformed call):

    python examples/calculator_tools.py
"""

from __future__ import annotations

import ast
import json
import operator
import random

from mint_envkit import DatasetBuilder, Message, Parser, ScriptedPolicy, ToolEnv, tool
from mint_envkit.parsers import as_number

MAX_EXPRESSION_CHARS = 200
MAX_EXPONENT = 64
MAX_MAGNITUDE = 1e30

_BINARY = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_UNARY = {ast.UAdd: operator.pos, ast.USub: operator.neg}


def _evaluate(node: ast.AST) -> int | float:
    if isinstance(node, ast.Expression):
        return _evaluate(node.body)
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _UNARY[type(node.op)](_evaluate(node.operand))
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > MAX_EXPONENT:
            raise ValueError(f"exponent {right} is too large (at most {MAX_EXPONENT})")
        value = _BINARY[type(node.op)](left, right)
        if isinstance(value, complex) or abs(value) > MAX_MAGNITUDE:
            raise ValueError(f"the result is out of range (at most {MAX_MAGNITUDE:g})")
        return value
    raise ValueError(
        f"{ast.dump(node)[:40]} is not allowed: use numbers, + - * / ** and parentheses"
    )


def safe_eval(expression: str) -> int | float:
    """Evaluate an arithmetic expression safely (see the module docstring for the limits).

    Raises:
        ValueError: anything but numbers, ``+ - * / **`` and parentheses, or over a limit.
        ZeroDivisionError: a division by zero.
    """
    if len(expression) > MAX_EXPRESSION_CHARS:
        raise ValueError(f"the expression is longer than {MAX_EXPRESSION_CHARS} characters")
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as err:
        raise ValueError(f"not an arithmetic expression: {err.msg}") from None
    return _evaluate(tree)


@tool
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression and return the result.

    Args:
        expression: numbers with + - * / ** and parentheses, e.g. "(12 + 3) * 4".
    """
    value = safe_eval(expression)
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


only_a_number = Parser.from_function(as_number, name="only_a_number")
"""The final reply is the answer when it is one number alone (not ``first_number``: the
audit showed that restating a word problem then scored as an answer, docs/audit.md)."""


class CalculatorEnv(ToolEnv):
    """Word problems; the model may call ``calculate``, then replies with the number."""

    system_prompt = (
        "Solve the word problem. Use the calculate tool for the arithmetic. "
        "When you know the answer, reply with only the final number."
    )
    tools = [calculate]  # noqa: RUF012 - the API's class attribute
    parser = only_a_number
    max_turns = 4
    max_tool_calls = 4
    tool_timeout_s = 2.0
    optional_fields = {"expression": None}  # noqa: RUF012 - the API's class attribute


_TEMPLATES = (
    (
        "A baker makes {a} trays of {b} rolls and sells {c} rolls. How many rolls are left?",
        "{a} * {b} - {c}",
    ),
    (
        "Tom has {a} marbles, wins {b} more and then gives away {c}. How many does he have?",
        "{a} + {b} - {c}",
    ),
    (
        "{a} friends share {p} stickers each and get {b} more per person. How many in total?",
        "{a} * ({p} + {b})",
    ),
)


def word_problems(n: int = 32, seed: int = 0) -> list[dict[str, str]]:
    """``n`` word problems fixed by ``seed``; each keeps its ``expression`` for scripted checks."""
    rng = random.Random(seed)
    problems = []
    for _ in range(n):
        text, expression = rng.choice(_TEMPLATES)
        a, b, p = rng.randint(2, 40), rng.randint(2, 40), rng.randint(2, 12)
        c = rng.randint(1, a + b)
        values = {"a": a, "b": b, "c": c, "p": p}
        expr = expression.format(**values)
        problems.append(
            {"question": text.format(**values), "answer": calculate(expr), "expression": expr}
        )
    return problems


def make_builder(problems: list[dict[str, str]], group_size: int = 2) -> DatasetBuilder:
    """The dataset of ``problems`` for the tiny model's tokenizer and the qwen3 renderer."""
    return DatasetBuilder(
        env=CalculatorEnv,
        problems=problems,
        batch_size=len(problems),
        group_size=group_size,
        model_name="mint-envkit/tiny-qwen3",
        renderer_name="qwen3",
        shuffle=False,
    )


builder = make_builder(word_problems(8))
"""Eight word problems, for ``mint-envkit check`` / ``audit examples/calculator_tools.py:builder``."""


def tool_call(name: str, arguments: dict[str, str]) -> str:
    """A tool call written the way Qwen3 writes one."""
    return f"<tool_call>\n{json.dumps({'name': name, 'arguments': arguments})}\n</tool_call>"


def solver(problems: list[dict[str, str]]):
    """A scripted policy: call ``calculate`` with the problem's expression, then answer."""
    expressions = {p["question"]: p["expression"] for p in problems}

    def reply(messages: list[Message]) -> str:
        if messages[-1]["role"] == "tool":
            return messages[-1]["content"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        return tool_call("calculate", {"expression": expressions[question]})

    return reply


def malformed_then_answer(messages: list[Message]) -> str:
    """A scripted policy that writes a call whose arguments are not JSON, then gives up."""
    if messages[-1]["role"] == "tool":
        return "I do not know."
    return '<tool_call>\n{"name": "calculate", "arguments": {expression: 2 + 2}}\n</tool_call>'


if __name__ == "__main__":
    problems = word_problems(4)
    for name, policy in (("solver", solver(problems)), ("malformed", malformed_then_answer)):
        report = ScriptedPolicy(policy).run_sync(make_builder(problems))
        print(f"{name}: mean reward {report.mean_reward:+.2f}")
        for key in ("correct", "turns", "tool_calls", "invalid_tool_calls", "tool_errors"):
            print(f"  {key:<20} {report.mean_metrics[key]:.2f}")
