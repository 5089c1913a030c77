"""The format the prompt asks for: does a right answer written that way score right?

A reward that reads the answer from another place than the prompt asks for (a rubric
missing its parser that compares the whole reply, a tag spelled differently) pays a
model that does not follow the prompt and never one that does. The probes find the form
the env scores as correct among the usual ones (plain, ``\\boxed{}``, ``<answer>`` ...),
so they see nothing wrong when that form is not the one the prompt asks for.

:func:`requested_forms` reads the forms a prompt asks for (``\\boxed{}``, a tag written
with its closing tag such as ``<answer></answer>``, but no thinking tag; ``Answer:``); :func:`format_finding` writes each problem's answer in them and scores it
through the env: where none scores right while another form of the same answer does, on
most of the problems whose prompt asks for a form, it is an ``unpaid_format`` finding.

Example::

    from mint_envkit.auditing.formats import requested_forms

    requested_forms("Put the final answer in \\\\boxed{}.")   # ['\\\\boxed{{{}}}']
    requested_forms("Think in <think></think>, then answer in <answer></answer>.")
    # ['<answer>{}</answer>']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from mint_envkit.auditing.report import Finding, shown

_TAG = re.compile(r"<([A-Za-z_][\w-]{0,30})>")
_NOT_ANSWERS = frozenset(
    {"think", "thinking", "reasoning", "reflection", "scratchpad", "scratch", "thought",
     "thoughts", "analysis", "plan", "work", "tool_call", "tool_response", "tools"}
)  # fmt: skip


def requested_forms(prompt: str) -> list[str]:
    """The answer forms ``prompt`` asks for, as templates with ``{}`` for the answer.

    Example::

        requested_forms("End with 'Answer: <city>'."), requested_forms("Reply briefly.")
        # (['Answer: {}'], [])
    """
    forms = []
    if "\\boxed" in prompt:
        forms.append("\\boxed{{{}}}")
    for match in _TAG.finditer(prompt):
        name = match.group(1)
        if name.lower() not in _NOT_ANSWERS and f"</{name}>" in prompt:
            forms.append(f"<{name}>{{}}</{name}>")
    if re.search(r"(?<![\w])Answer:", prompt):
        forms.append("Answer: {}")
    return list(dict.fromkeys(forms))


def _prompt_text(messages: Sequence[Any]) -> str:
    texts = [m.get("content") for m in messages if m.get("role") in ("system", "user")]
    return "\n".join(t for t in texts if isinstance(t, str))


async def format_finding(problems: Sequence[Any]) -> Finding | None:
    """The ``unpaid_format`` finding (module docstring), or None.

    ``problems`` are :class:`~mint_envkit.auditing.probes.AuditedProblem` values; only
    those whose env scores some form of the answer right take part.

    Example::

        # not run: `problems` are AuditedProblems, built elsewhere
        (await format_finding(problems)).kind   # 'unpaid_format'
    """
    asked, missed = 0, []
    for problem in problems:
        judge = problem.judge
        if judge.basis is None or judge.reference is None or not problem.answer:
            continue
        forms = requested_forms(_prompt_text(problem.messages))
        if not forms:
            continue
        asked += 1
        replies = [form.format(problem.answer) for form in forms]
        scores = [await judge.score(reply) for reply in replies]
        if any(judge.is_right(score) for score in scores):
            continue
        if judge.is_right(judge.reference) and judge.reference.reply not in replies:
            missed.append((replies[0], judge.reference.reply))
    if not missed or 2 * len(missed) <= asked:
        return None
    asked_for, paid = missed[0]
    return Finding(
        "unpaid_format",
        "correct",
        f"the prompt asks for the answer as {shown(asked_for)}, which scores wrong on "
        f"{len(missed)} of {asked} problems, while {shown(paid)} scores right: a model that "
        "follows the prompt is never paid, one that ignores it is; read the answer where "
        "the prompt asks for it (the reward's parser), or ask for the form the reward reads",
    )
