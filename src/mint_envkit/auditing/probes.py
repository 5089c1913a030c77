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

Each reply is judged twice: by the env (:func:`~mint_envkit.rollouts.judging.is_right`:
its ``correct``, else earning the correct reply's reward) and by the audit's strict
comparison (:mod:`mint_envkit.auditing.strict`) of the value the env read with the
reference; a reply the env scores right that is not the answer is recorded as a
:class:`Disagreement`, and one the env raised on as an error, never a crash.

Example::

    # not run: `groups` is a list of GroupBuilders, built elsewhere
    from mint_envkit.auditing.probes import run_probes

    results = await run_probes(await audited_problems(groups))   # one GroupBuilder per problem
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
    PADDED,
    REFERENCE,
    probe_replies,
)
from mint_envkit.auditing.strict import (
    Strict,
    case_matters,
    lowest_terms_asked,
    strict_verdict,
)
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.envs.base import AuditProbe, Message, MessageEnv, success_name
from mint_envkit.errors import ConfigError
from mint_envkit.judge.scoring import judges_of
from mint_envkit.progress import track
from mint_envkit.rollouts.judging import (
    BY_CORRECT,
    PARTIAL_SHARE,
    ProblemJudge,
    ReplyScore,
    answer_text,
    reward_share,
)
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import GroupReport, ScriptedPolicy
from mint_envkit.rollouts.settings import SamplingSettings
from mint_envkit.sandbox.env import CodeEnv

GENERATED = "generated"
"""The kind of a generated probe's row (:mod:`mint_envkit.auditing.generated`).

Example::

    GENERATED   # 'generated'
"""


@attrs.frozen
class Disagreement:
    """A reply the env scores right while the strict comparison says it is not the answer.

    Attributes:
        problem: the audited problem's position.
        reply: the reply sent.
        value: what the strict comparison read (the env's parsed value, else the text put
            in the env's format).
        answer: the reference answer.
        why: the strict comparison's words (``no finite number``, ``other text``...).
        declared: the env's declaration that accepts it (``audit_equivalent`` or its
            ``audit_lenient`` reason), None when undeclared (a finding).
        unreadable: the strict comparison could not read the value as one of the
            answer's kind (``nan`` for a number), rather than reading another value.

    Example::

        Disagreement(0, "nan", "nan", "0.5", "no finite number", None, unreadable=True)
    """

    problem: int
    reply: str
    value: str
    answer: str
    why: str
    declared: str | None = None
    unreadable: bool = False


@attrs.frozen
class ProbeResult:
    """One probe over every audited problem.

    Attributes:
        name: the probe (``correct``, ``wrong``, one of :data:`NON_ANSWER` or
            :data:`ANSWER_SHAPED`, a custom one, or a generated family ``gen_...``).
        kind: ``reference``, ``non_answer``, ``answer_shaped`` or ``generated``.
        rewards: the reward of each problem it ran on (not those the env raised on).
        correct: per such problem, 1.0 when the env judged it right (its ``correct``, else
            earning the correct reply's reward), 0.0 when not, None when unknown.
        parse_status: the parse status per problem (``error: ...`` where the env raised).
        example: one reply it sent (the first problem's), for the report.
        errors: ``(reply, exception)`` of each problem where the env raised.
        disagreements: the replies the env scored right that are not the answer.
        tried: a generated probe's number of replies tried (None for the others).
        smallest: a generated row that is the smallest reply found, sent on every
            problem (else its entries are the replies the search tried).
        does: what a game probe does in an episode, in words (empty for the others).
        shares: per problem it ran on, its reward as a share of the correct reply's where
            the env judged it not right (None where it was right, or nothing to share).
        partial: its replies that earned at least
            :data:`~mint_envkit.rollouts.judging.PARTIAL_SHARE` of the correct reply's
            reward without being right (partial credit).

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
    errors: list[tuple[str, str]] = attrs.field(factory=list)
    disagreements: list[Disagreement] = attrs.field(factory=list)
    tried: int | None = None
    smallest: bool = False
    does: str = ""
    shares: list[float | None] = attrs.field(factory=list)
    partial: list[str] = attrs.field(factory=list)

    @property
    def mean_reward(self) -> float | None:
        """The mean reward over the problems it ran on (None when it ran on none)."""
        return sum(self.rewards) / len(self.rewards) if self.rewards else None

    @property
    def mean_share(self) -> float | None:
        """Its mean share of the correct reply's reward where it was not right (None
        when nothing was shared).

        Example::

            # not run: `probe` is a probe result, built elsewhere
            probe.mean_share   # 0.5: half the correct reply's reward, wrong
        """
        known = [s for s in self.shares if s is not None]
        return sum(known) / len(known) if known else None

    @property
    def correct_rate(self) -> float | None:
        """The share of problems the env judged right (None when unknown)."""
        known = [c for c in self.correct if c is not None]
        return sum(known) / len(known) if known else None

    def record(self) -> dict[str, Any]:
        """Its JSON form.

        Example::

            # not run: `probe` is a probe result, built elsewhere
            probe.record()["mean_reward"]
        """
        statuses = Counter(s or "none" for s in self.parse_status)
        out = {
            "name": self.name,
            "kind": self.kind,
            "problems": len(self.rewards),
            "mean_reward": self.mean_reward,
            "correct_rate": self.correct_rate,
            "parse_status": dict(statuses),
            "example": self.example,
            "errors": [{"reply": r, "error": e} for r, e in self.errors],
            "disagreements": [attrs.asdict(d) for d in self.disagreements],
            "mean_share": self.mean_share,
            "partial_credit": len(self.partial),
        }
        if self.tried is not None:
            out["tried"] = self.tried
        if self.does:
            out["does"] = self.does
        return out


@attrs.frozen
class Judged:
    """One reply as the env and the strict comparison saw it.

    Example::

        # not run: see AuditedProblem.judge_reply
        judged = await problem.judge_reply("nan")
        judged.right, judged.disagreement
    """

    score: ReplyScore
    right: bool | None
    disagreement: Disagreement | None = None


async def episode(
    group: GroupBuilder, reply: str | Callable[[list[Message]], str], *, stop: bool = True
) -> ReplyScore:
    """One scripted episode of ``group``'s problem with ``reply`` at every turn, through
    the real path (rendered, sampled as tokens, parsed, stepped, scored).

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        (await episode(group, "5")).reward
    """
    single = attrs.evolve(group, group_size=1)
    policy = ScriptedPolicy(reply if callable(reply) else [reply], end_with_stop=stop)
    report = GroupReport.from_rollout((await rollout_groups([single], policy))[0])
    sent = report.replies[0] if report.replies else (reply if isinstance(reply, str) else "")
    if report.error or not report.rewards:
        return ReplyScore.failed(sent, report.error or "no episode ran")
    success = success_name(group.make_message_env())  # a game's `solved`, else `correct`
    return ReplyScore.of_step(
        sent, report.rewards[0], report.metrics[0], report.logs[0], success=success
    )


def slot_text(reply: str, template: str) -> str:
    """What a reply written in ``template`` (``\\boxed{{{}}}``) puts in its ``{}``; the
    whole reply when it is not in that form.

    Example::

        slot_text("\\\\boxed{nan}", "\\\\boxed{{{}}}"), slot_text("nan", "{}")   # ('nan', 'nan')
    """
    head, _, tail = template.partition("{}")
    head, tail = (
        head.replace("{{", "{").replace("}}", "}"),
        tail.replace("{{", "{").replace("}}", "}"),
    )
    if len(reply) >= len(head) + len(tail) and reply.startswith(head) and reply.endswith(tail):
        return reply[len(head) : len(reply) - len(tail)]
    return reply


@attrs.define
class AuditedProblem:
    """One audited problem: its group, its judge (token-level episodes), its env (for
    its declarations), its opening and its own probes (``failed``: why the env could not
    be built or opened for it, None when it could).

    Make it with :func:`audited_problems`.

    Example::

        # not run: `groups` is a list of GroupBuilders, built elsewhere
        problem = (await audited_problems(groups))[0]
        (await problem.judge_reply("nan")).disagreement
    """

    position: int
    group: GroupBuilder
    judge: ProblemJudge
    env: MessageEnv | None
    messages: list[Message]
    tools: list[Any]
    own: list[AuditProbe]
    failed: str | None = None

    @property
    def prompt_text(self) -> str:
        """The text of every message of the prompt, one after the other."""
        texts = [m.get("content") for m in self.messages]
        return "\n".join(t for t in texts if isinstance(t, str))

    @property
    def case_sensitive(self) -> bool:
        """Whether the strict comparison counts the answer's case here: the prompt writes
        the answer in another case only (:func:`~mint_envkit.auditing.strict.case_matters`)."""
        return case_matters(self.group.problem.get("answer"), self.prompt_text)

    @property
    def lowest_terms(self) -> bool:
        """Whether the strict comparison holds a fraction to lowest terms here: the prompt
        asks for them (:func:`~mint_envkit.auditing.strict.lowest_terms_asked`)."""
        return lowest_terms_asked(self.prompt_text)

    @property
    def answer(self) -> str:
        """The reference answer as a reply writes it (empty without one)."""
        answer = self.group.problem.get("answer")
        return "" if answer is None else answer_text(answer)

    def _declared(self, value: str, strict: Strict) -> str | None:
        env = self.env
        if env is None:
            return None
        try:
            if env.audit_equivalent(value, self.group.problem.get("answer")) is True:
                return f"{type(env).__name__}.audit_equivalent"
        except Exception:  # a declaration that raises declares nothing
            pass
        reason = type(env).audit_lenient
        if strict.same is False and reason:
            return f"{type(env).__name__}.audit_lenient: {reason}"
        return None

    async def judge_reply(
        self, reply: str | Callable[[list[Message]], str], *, stop: bool = True
    ) -> Judged:
        """Score ``reply`` (the env's verdict) and, where the env says right, compare its
        value with the answer strictly.

        Example::

            # not run: see the class example
            judged = await problem.judge_reply("\\\\boxed{5}")
        """
        if isinstance(reply, str) and stop:
            score = await self.judge.score(reply)
        else:
            score = await episode(self.group, reply, stop=stop)
        right = self.judge.is_right(score)
        answer = self.group.problem.get("answer")
        if not right or answer is None:
            return Judged(score, right)
        # the answer the reply gives, as the env's parser read it and as written in the
        # env's format: a parser may canonicalise ("three" -> "3"), a reply may decorate
        written = slot_text(score.reply, self.judge.template)
        value = score.parsed if score.parsed is not None else written
        form = {"case": self.case_sensitive, "lowest": self.lowest_terms}
        strict = strict_verdict(value, answer, **form)
        if strict.same or strict_verdict(written, answer, **form).same:
            return Judged(score, right)
        found = Disagreement(
            self.position,
            score.reply,
            str(value),
            self.answer,
            strict.why,
            self._declared(str(value), strict),
            strict.same is None,
        )
        return Judged(score, right, found)


async def _code_reference(judge: ProblemJudge, group: GroupBuilder) -> None:
    """A code env's problem has no answer to write: its reference ``solution`` (as the env
    reads a reply) is the correct reply, where the env scores it correct."""
    if judge.answer is not None:
        return
    env = group.make_message_env()
    reply = env.reference_reply() if isinstance(env, CodeEnv) else None
    if reply is not None and (scored := await judge.score(reply)).correct:
        judge.reference, judge.basis = scored, BY_CORRECT


async def audited_problems(groups: Sequence[GroupBuilder]) -> list[AuditedProblem]:
    """Each group's :class:`AuditedProblem`: its judge finds the form the env scores as
    correct through token-level episodes.

    Raises:
        ConfigError: the env cannot be built or opened for any problem (a setup error,
            not a finding).

    Example::

        # not run: `groups` is a list of GroupBuilders, built elsewhere
        [p.judge.template for p in await audited_problems(groups)]   # ['\\\\boxed{{{}}}', ...]
    """
    out = []
    for position, group in enumerate(groups):

        async def scorer(reply: str, group: GroupBuilder = group) -> ReplyScore:
            return await episode(group, reply)

        judge = await ProblemJudge.prepare(group, scorer)
        await _code_reference(judge, group)
        messages: list[Message] = []
        tools: list[Any] = []
        own: list[AuditProbe] = []
        env: MessageEnv | None = None
        failed: str | None = None
        try:
            envs = await group.make_envs()
            messages = await envs[0].initial_messages_async()
            tools = list(envs[0].tools or [])
            env = envs[0].message_env
            own = list(env.audit_probes(dict(group.problem)))
            for made in envs:
                await made.message_env.abort()
        except Exception as err:  # an env that cannot open: its episodes say why, row by row
            failed = f"{type(err).__name__}: {err}"
        out.append(AuditedProblem(position, group, judge, env, messages, tools, own, failed))
    if out and all(p.failed for p in out):
        raise ConfigError(
            f"the env cannot be built or opened for any of the {len(out)} audited problems "
            f"(problem 0: {out[0].failed}); fix the env (or its problems' fields), then "
            "audit again"
        )
    return out


def _verdicts(env: MessageEnv | None) -> list[str]:
    """The top verdict of each LLM judge the env asks (where one can be written)."""
    found = [judge.planted_verdict for judge in judges_of(env)] if env is not None else []
    return list(dict.fromkeys(v for v in found if v))


def _counter(group: GroupBuilder) -> Callable[[str], int]:
    tokenizer = group.renderer().tokenizer
    return lambda text: len(tokenizer.encode(text, add_special_tokens=False))


class Found:
    """Each probe's per-problem rewards, verdicts, statuses, examples, errors and
    disagreements, gathered problem by problem.

    Example::

        found = Found()
        # found.add(probe, [judged, ...], example) per problem, then found.results()
    """

    def __init__(self) -> None:
        self.slots: dict[str, dict[str, list[Any]]] = {}
        self.kinds: dict[str, str] = {}

    def add(
        self,
        name: str,
        kind: str,
        judged: Sequence[Judged],
        right_reward: float | None = None,
    ) -> None:
        """One problem's replies of probe ``name`` (its orderings): it earns the least;
        ``right_reward``: what the correct reply earns on the problem (for the share)."""
        slot = self.slots.setdefault(
            name,
            {"rewards": [], "correct": [], "status": [], "ex": [], "err": [], "dis": [],
             "share": [], "partial": []},
        )  # fmt: skip
        self.kinds[name] = kind
        failed = [j for j in judged if j.score.error is not None]
        if failed:
            slot["err"].append((failed[0].score.reply, failed[0].score.error))
        else:
            least = min(judged, key=lambda j: j.score.reward)
            slot["rewards"].append(least.score.reward)
            rights = [j.right for j in judged]
            slot["correct"].append(None if None in rights else float(all(rights)))
            wrong = False in rights
            share = reward_share(least.score.reward, right_reward) if wrong else None
            slot["share"].append(share)
            if share is not None and share >= PARTIAL_SHARE:
                slot["partial"].append(least.score.reply)
            if all(rights) and judged[0].disagreement is not None:
                slot["dis"].append(judged[0].disagreement)
        slot["status"].append(judged[0].score.status)
        slot["ex"].append(judged[0].score.reply)

    def results(self, order: Sequence[str] = ()) -> list[ProbeResult]:
        """The probes' results, the built-in ones first in their order, then ``order``."""
        builtin = (*REFERENCE, *ANSWER_SHAPED, *PADDED, *NON_ANSWER)
        custom = [n for n in self.slots if n not in builtin]
        return [
            ProbeResult(
                name=name,
                kind=self.kinds[name],
                rewards=self.slots[name]["rewards"],
                correct=self.slots[name]["correct"],
                parse_status=self.slots[name]["status"],
                example=next((e for e in self.slots[name]["ex"] if e), ""),
                errors=self.slots[name]["err"],
                disagreements=self.slots[name]["dis"],
                shares=self.slots[name]["share"],
                partial=self.slots[name]["partial"],
            )
            for name in (*builtin, *custom)
            if name in self.slots
        ]


async def run_probes(
    problems: Sequence[AuditedProblem | GroupBuilder],
    extra: Sequence[AuditProbe] = (),
    *,
    quiet: bool = False,
) -> list[ProbeResult]:
    """Every probe over ``problems`` (one per problem), plus the ``correct`` reference.

    ``extra`` are the caller's probes, tried on every problem beside the env's own
    (:meth:`~mint_envkit.MessageEnv.audit_probes`). Probes that do not apply to a
    problem (no system prompt, no tools, no number in the question, no reference
    answer, fewer than two candidates to list) are left out for it.

    Example::

        # not run: `groups` is a list of GroupBuilders, built elsewhere
        results = await run_probes(groups, [AuditProbe("shout", "FIVE!!!", "answer_shaped")])
        [(r.name, r.mean_reward) for r in results]
    """
    if any(isinstance(p, GroupBuilder) for p in problems):
        problems = await audited_problems(
            [p.group if isinstance(p, AuditedProblem) else p for p in problems]
        )
    answers = [p.answer for p in problems if p.answer]
    counts = Counter(answers)
    common = counts.most_common(1)[0][0] if counts else None
    found = Found()
    with track("audit probes", len(problems), "problems", enabled=not quiet) as task:
        for problem in problems:
            reference = problem.judge.reference
            if reference is not None and problem.judge.basis is not None:
                # the correct reply (or, without `correct`, the form of the answer paid most);
                # none when the env reports `correct` but scores no usual form of it correct
                judged = [await problem.judge_reply(reference.reply)]
                found.add("correct", "reference", judged, problem.judge.right_reward)
            probes = probe_replies(
                dict(problem.group.problem),
                problem.messages,
                problem.tools,
                template=problem.judge.template,
                reference=None if reference is None else reference.reply,
                answers=answers,
                common=common,
                reply_limit=SamplingSettings().reply_limit(problem.group.max_generation_tokens),
                count_tokens=_counter(problem.group),
                extra=[*problem.own, *extra],
                verdicts=_verdicts(problem.env),
            )
            for probe in probes.values():
                judged = [await problem.judge_reply(r, stop=probe.stop) for r in probe.replies]
                found.add(probe.name, probe.kind, judged, problem.judge.right_reward)
            task.advance()
    return found.results()
