"""Exploit probes: scripted adversarial replies, scored through the env's real path.

Each probe is a way to earn reward without answering (an empty reply, the question
restated, the system prompt echoed, the answer's format with nothing in it, a reply cut
off at the token limit, a long reply within it, the answer only inside thinking, an appeal
to the grader, malformed or repeated tool calls, every answer of the dataset listed, a
range of numbers, every option the prompt offers, a hedge "either A or B", the answer
buried among distractors) or a shortcut that gives an answer without solving (the most
common answer, the first or last number of the question, the right format with a wrong
value); :mod:`mint_envkit.auditing.replies` builds them. An env adds its own
(:meth:`MessageEnv.audit_probes <mint_envkit.MessageEnv.audit_probes>`), and so does the
caller (``audit(builder, probes=...)``, ``mint-envkit audit --probes FILE``). Every reply
runs through the same path as training (render, sample, parse, step, group reward) with
:class:`~mint_envkit.ScriptedPolicy`, so a probe earns exactly what a model writing it
would; a probe sent in several orderings earns, on a problem, the least of them.

Example::

    # not run: `groups` is a list of GroupBuilders, built elsewhere
    from mint_envkit.auditing.probes import run_probes

    results = await run_probes(groups)        # one GroupBuilder per problem
    {r.name: r.mean_reward for r in results}  # {'correct': 1.0, 'wrong': -0.25, 'empty': ...}
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mint_envkit.auditing.replies import (
    ANSWER_SHAPED,
    NON_ANSWER,
    REFERENCE,
    Probe,
    answer_forms,
    probe_replies,
    template_of,
)
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.envs.base import AuditProbe, Message
from mint_envkit.progress import track
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import GroupReport, ScriptedPolicy
from mint_envkit.sandbox.env import CodeEnv


@attrs.frozen
class ProbeResult:
    """One probe over every audited problem.

    Attributes:
        name: the probe (``correct``, ``wrong``, one of :data:`NON_ANSWER` or
            :data:`ANSWER_SHAPED`).
        kind: ``reference``, ``non_answer`` or ``answer_shaped``.
        rewards: the reward of each problem it ran on.
        correct: the env's ``correct`` per problem (None where the env reports none).
        parse_status: the parse status per problem.
        example: one reply it sent (the first problem's), for the report.

    Example::

        # not run: `probe` is a probe result, built elsewhere
        probe.mean_reward, probe.correct_rate
    """

    name: str
    kind: str
    rewards: list[float]
    correct: list[float | None]
    parse_status: list[str | None]
    example: str

    @property
    def mean_reward(self) -> float | None:
        """The mean reward over the problems it ran on (None when it ran on none)."""
        return sum(self.rewards) / len(self.rewards) if self.rewards else None

    @property
    def correct_rate(self) -> float | None:
        """The share of problems the env scored correct (None without ``correct``)."""
        known = [c for c in self.correct if c is not None]
        return sum(known) / len(known) if known else None

    def record(self) -> dict[str, Any]:
        """Its JSON form.

        Example::

            # not run: `probe` is a probe result, built elsewhere
            probe.record()["mean_reward"]
        """
        statuses = Counter(s or "none" for s in self.parse_status)
        return {
            "name": self.name,
            "kind": self.kind,
            "problems": len(self.rewards),
            "mean_reward": self.mean_reward,
            "correct_rate": self.correct_rate,
            "parse_status": dict(statuses),
            "example": self.example,
        }


async def _one(
    group: GroupBuilder, reply: str | Callable[[list[Message]], str], *, stop: bool = True
) -> GroupReport:
    """One scripted episode of ``group``'s problem with ``reply`` at every turn."""
    single = attrs.evolve(group, group_size=1)
    policy = ScriptedPolicy(reply if callable(reply) else [reply], end_with_stop=stop)
    return GroupReport.from_rollout((await rollout_groups([single], policy))[0])


def _outcome(report: GroupReport) -> tuple[float, float | None, str | None]:
    if report.error or not report.rewards:
        return float("nan"), None, f"error: {report.error}"
    metrics, logs = report.metrics[0], report.logs[0]
    correct = metrics.get("correct")
    status = logs.get("parse_status") or logs.get("end")
    return report.rewards[0], None if correct is None else float(correct), status


async def reference_reply(group: GroupBuilder) -> str | None:
    """The first of :func:`~mint_envkit.auditing.replies.answer_forms` that the env scores
    as correct (None if none).

    Each form runs through a fresh episode of the group's problem (rendered, parsed,
    scored) and counts when the env reports ``correct`` = 1.

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        await reference_reply(group)   # '\\boxed{5}' for a boxed env
    """
    text, is_correct = await _best_form(group)
    return text if is_correct else None


async def _best_form(group: GroupBuilder) -> tuple[str | None, bool]:
    """The form the env scores correct, else the one it pays most (ties: the first).

    An env with no ``correct`` metric (a judge, a plain reward function) still shows
    its format by what it pays; ``(None, False)`` without an answer.
    """
    answer = group.problem.get("answer")
    if answer is None:  # a code env: its reference solution, when the env scores it correct
        env = group.make_message_env()
        solution = env.reference_reply() if isinstance(env, CodeEnv) else None
        if solution is not None and _outcome(await _one(group, solution))[1] == 1.0:
            return solution, True
        return None, False
    best: tuple[float, str] | None = None
    for text in answer_forms(answer):
        reward, correct, _status = _outcome(await _one(group, text))
        if correct == 1.0:
            return text, True
        if reward == reward and (best is None or reward > best[0]):
            best = (reward, text)
    return (best[1] if best else None), False


async def _opening(group: GroupBuilder) -> tuple[list[Message], list[Any], list[AuditProbe]]:
    """The problem's opening messages, tool schemas and its env's own probes."""
    envs = await group.make_envs()
    messages = await envs[0].initial_messages_async()
    tools = list(envs[0].tools or [])
    own = list(envs[0].message_env.audit_probes(dict(group.problem)))
    for env in envs:
        await env.message_env.abort()
    return messages, tools, own


def _counter(group: GroupBuilder) -> Callable[[str], int]:
    tokenizer = group.renderer().tokenizer
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


class _Found:
    """Each probe's per-problem rewards, correctness, statuses and examples."""

    def __init__(self) -> None:
        self.slots: dict[str, dict[str, list[Any]]] = {}
        self.kinds: dict[str, str] = {}

    def add(self, probe: Probe, outcomes: list[tuple[float, float | None, str | None]],
            example: str) -> None:  # fmt: skip
        slot = self.slots.setdefault(probe.name, {"rewards": [], "correct": [], "status": [],
                                                  "ex": []})  # fmt: skip
        self.kinds[probe.name] = probe.kind
        rewards = [r for r, _, _ in outcomes]
        if all(r == r for r in rewards):  # not NaN: a failed episode shows by its status only
            slot["rewards"].append(min(rewards))
            known = [c for _, c, _ in outcomes if c is not None]
            slot["correct"].append(min(known) if len(known) == len(outcomes) else None)
        slot["status"].append(outcomes[0][2])
        slot["ex"].append(example)

    def results(self) -> list[ProbeResult]:
        custom = [n for n in self.slots if n not in (*REFERENCE, *ANSWER_SHAPED, *NON_ANSWER)]
        order = [*REFERENCE, *ANSWER_SHAPED, *NON_ANSWER, *custom]
        return [
            ProbeResult(
                name=name,
                kind=self.kinds[name],
                rewards=self.slots[name]["rewards"],
                correct=self.slots[name]["correct"],
                parse_status=self.slots[name]["status"],
                example=next((e for e in self.slots[name]["ex"] if e), ""),
            )
            for name in order
            if name in self.slots
        ]


async def run_probes(
    groups: Sequence[GroupBuilder], extra: Sequence[AuditProbe] = (), *, quiet: bool = False
) -> list[ProbeResult]:
    """Every probe over ``groups`` (one per problem), plus the ``correct`` reference.

    ``extra`` are the caller's probes, tried on every problem beside the env's own
    (:meth:`~mint_envkit.MessageEnv.audit_probes`). Probes that do not apply to a
    problem (no system prompt, no tools, no number in the question, no reference
    answer, fewer than two candidates to list) are left out for it.

    Example::

        # not run: `groups` is a list of GroupBuilders, built elsewhere
        results = await run_probes(groups, [AuditProbe("shout", "FIVE!!!", "answer_shaped")])
        [(r.name, r.mean_reward) for r in results]
    """
    answers = [
        str(g.problem["answer"]).strip() for g in groups if g.problem.get("answer") is not None
    ]
    counts = Counter(answers)
    common = counts.most_common(1)[0][0] if counts else None
    found = _Found()
    with track("audit probes", len(groups), "problems", enabled=not quiet) as task:
        for group in groups:
            reference, _is_correct = await _best_form(group)
            if reference is not None:
                found.add(Probe("correct", "reference", (reference,)),
                          [_outcome(await _one(group, reference))], reference)  # fmt: skip
            messages, tools, own = await _opening(group)
            answer = "" if group.problem.get("answer") is None else str(group.problem["answer"])
            probes = probe_replies(
                dict(group.problem),
                messages,
                tools,
                template=template_of(reference, answer.strip()),
                reference=reference,
                answers=answers,
                common=common,
                reply_limit=group.max_generation_tokens or 64,
                count_tokens=_counter(group),
                extra=[*own, *extra],
            )
            for probe in probes.values():
                reports = [await _one(group, r, stop=probe.stop) for r in probe.replies]
                example = reports[0].replies[0] if reports[0].replies else ""
                found.add(probe, [_outcome(r) for r in reports], example)
            task.advance()
    return found.results()
