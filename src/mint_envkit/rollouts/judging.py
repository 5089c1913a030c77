"""Is this reply right? One rule, and the env's whole scoring path to apply it.

A trivial policy's guess, an audit probe and a sampled reply are judged the same way:
the reply runs through the env as a model's reply would (the env's parser, its check, its
reward; :func:`step_reply` at the message level, or the audit's token-level episodes),
which gives a :class:`ReplyScore`, and :func:`is_right` decides: the env's ``correct``
when it reports one, else whether the reply earns what the correct reply earns (a
plain-function reward reports no ``correct``; :data:`BY_REWARD` says so in reports).

:class:`ProblemJudge` does it for one problem: it finds the form the env scores as
correct (the first of :func:`answer_forms`: ``5``, ``\\boxed{5}``, ``<answer>5</answer>``
...), and judges a guess by writing it in that form and scoring it.

Example::

    # not run: `group` is a GroupBuilder of an env whose parser reads `\\boxed{}`
    from mint_envkit.rollouts.judging import ProblemJudge

    judge = await ProblemJudge.prepare(group)
    judge.template, judge.basis          # ('\\\\boxed{{}}', 'correct')
    await judge.right("5"), await judge.right("6")   # (True, False)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

import attrs

from mint_envkit.envs.base import MessageEnv

if TYPE_CHECKING:
    from mint_envkit.rollouts.answers import AnswerGroup
    from mint_envkit.rollouts.types import GroupRollout

TIE = 1e-9
"""Rewards this close are equal (the rule of :func:`is_right`, the audit's comparisons).

Example::

    abs(1.0 - (1.0 - 1e-12)) <= TIE   # True
"""

BY_CORRECT = "correct"
"""The basis of a verdict taken from the env's own ``correct``.

Example::

    BY_CORRECT   # 'correct'
"""

BY_REWARD = "reward"
"""The basis of a verdict for an env that reports no ``correct``: the reply earns the
correct reply's reward.

Example::

    BY_REWARD   # 'reward'
"""


@attrs.frozen
class ReplyScore:
    """What the env's scoring path said of one reply.

    Attributes:
        reply: the reply text sent.
        reward: its reward; None when the env raised.
        correct: the env's ``correct``; None when it reports none.
        parsed: the value the env's parser read (its ``parsed`` log), None when it logs
            none or the parse failed.
        status: the parse status (``ok``, ``no_match``, ``truncated``...), or
            ``error: <exception>`` when the env raised.
        error: the exception the env raised (``ValueError: could not convert...``), or None.

    Example::

        ReplyScore("5", reward=1.0, correct=True, parsed="5", status="ok")
    """

    reply: str
    reward: float | None
    correct: bool | None = None
    parsed: str | None = None
    status: str | None = None
    error: str | None = None

    @classmethod
    def failed(cls, reply: str, err: BaseException | str) -> ReplyScore:
        """The score of a reply the env raised on.

        Example::

            ReplyScore.failed("25/49", ValueError("bad")).status   # 'error: ValueError: bad'
        """
        text = err if isinstance(err, str) else f"{type(err).__name__}: {err}"
        return cls(reply, None, None, None, f"error: {text}", text)

    @classmethod
    def of_step(
        cls, reply: str, reward: float, metrics: Any, logs: Any, *, success: str = "correct"
    ) -> ReplyScore:
        """From a scored step's (or a whole episode's) reward, metrics and logs;
        ``success`` names the metric that says it succeeded (a game's ``solved``, see
        :attr:`~mint_envkit.MessageEnv.success_metric`).

        Example::

            ReplyScore.of_step("5", 1.0, {"correct": 1.0}, {"parse_status": "ok", "parsed": "5"})
            ReplyScore.of_step("red", 1.0, {"solved": 1.0}, {}, success="solved").correct   # True
        """
        correct = metrics.get(success)
        status = logs.get("parse_status") or logs.get("end")
        parsed = logs.get("parsed")
        if parsed is not None and status not in (None, "ok"):
            parsed = None
        return cls(
            reply=reply,
            reward=float(reward),
            correct=None if correct is None else float(correct) > 0.5,
            parsed=None if parsed is None else str(parsed),
            status=status,
        )


def is_right(score: ReplyScore, right_reward: float | None) -> bool | None:
    """THE rule of "is this reply right", for probes, baselines and evaluations.

    The env's ``correct`` when it reports one; else whether the reply earns at least the
    correct reply's reward ``right_reward`` (within :data:`TIE`); None when the env raised
    or neither is known.

    Example::

        is_right(ReplyScore("5", 1.0, correct=True), None)   # True
        is_right(ReplyScore("5", 0.8), right_reward=0.8)     # True: a plain-function reward
        is_right(ReplyScore("6", 0.2), right_reward=0.8)     # False
    """
    if score.error is not None or score.reward is None:
        return None
    if score.correct is not None:
        return score.correct
    if right_reward is None:
        return None
    return score.reward >= right_reward - TIE


PARTIAL_SHARE = 0.5
"""A reply that is not right but earns at least this share of the correct reply's reward
gets partial credit; a trivial reply that does so on most problems is flagged.

Example::

    reward_share(0.5, 1.0) >= PARTIAL_SHARE   # True
"""


def reward_share(reward: float | None, right_reward: float | None) -> float | None:
    """``reward`` as a share of the correct reply's ``right_reward``; None when either is
    unknown or the correct reply earns nothing above zero (no share to take).

    Example::

        reward_share(0.5, 1.0), reward_share(0.5, 0.0)   # (0.5, None)
    """
    if reward is None or right_reward is None or right_reward <= TIE:
        return None
    return reward / right_reward


def answer_text(answer: Any) -> str:
    """The reference answer as a reply writes it: a structure (dict, list) as JSON, the
    rest through ``str``, stripped.

    Example::

        answer_text({"a": 1}), answer_text(" 5 ")   # ('{"a": 1}', '5')
    """
    if isinstance(answer, dict | list | tuple):
        try:
            return json.dumps(answer, ensure_ascii=False)
        except (TypeError, ValueError):
            return str(answer).strip()
    return str(answer).strip()


def answer_forms(answer: Any) -> list[str]:
    """The usual ways a reply states ``answer``, tried in order to find the env's format.

    Example::

        answer_forms(5)[:2]   # ['5', '\\\\boxed{5}']
    """
    a = answer_text(answer)
    return [a, f"\\boxed{{{a}}}", f"<answer>{a}</answer>", f"The answer is {a}.", f"Answer: {a}"]


def template_of(reference: str | None, answer: str) -> str:
    """The reference reply with the answer replaced by ``{}`` (plain ``{}`` if none).

    Example::

        template_of("\\\\boxed{5}", "5")   # '\\\\boxed{{{}}}'
    """
    if reference is None or not answer or answer not in reference:
        return "{}"
    head, _, tail = reference.rpartition(answer)
    escape = str.maketrans({"{": "{{", "}": "}}"})
    return head.translate(escape) + "{}" + tail.translate(escape)


def _error_text(err: BaseException) -> str:
    return f"{type(err).__name__}: {err}"


async def step_reply(make_env: Callable[[], MessageEnv], reply: str) -> ReplyScore:
    """Score ``reply`` through a fresh env's own step (its prompt, parser, check, reward).

    An env that raises gives :meth:`ReplyScore.failed`; one that wants another turn is
    aborted, and its score has no ``correct`` and the status ``not_done``.

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        score = await step_reply(group.make_message_env, "\\\\boxed{5}")
        score.correct, score.reward
    """
    try:
        env = make_env()
        await env.initial_observation()
        result = await env.step({"role": "assistant", "content": reply})
        if not result.episode_done:
            await env.abort()
            return ReplyScore(reply, float(result.reward), None, None, "not_done")
    except Exception as err:  # a reply that breaks the env is a finding, not a crash
        return ReplyScore.failed(reply, _error_text(err))
    return ReplyScore.of_step(reply, result.reward, result.metrics, result.logs)


Scorer = Callable[[str], Awaitable[ReplyScore]]


@attrs.define
class ProblemJudge:
    """Judges replies to one problem through its env's whole scoring path.

    Make it with :meth:`prepare`. Attributes:
        answer: the problem's reference answer (None: nothing can be judged).
        reference: the score of the form the env scores as correct (else the one it
            pays most; None without an answer).
        basis: :data:`BY_CORRECT` (the env reports ``correct``), :data:`BY_REWARD`
            (it does not: right is earning ``reference``'s reward) or None (the env
            reports ``correct`` but scores no usual form of the answer correct, or
            there is no answer: nothing is judged).
        template: ``reference``'s reply with the answer as ``{}`` (``{}`` without one).

    Example::

        # not run: `group` is a GroupBuilder, built elsewhere
        judge = await ProblemJudge.prepare(group)
        await judge.right("Paris")   # the env's verdict on "Paris" in its own format
    """

    scorer: Scorer
    answer: Any
    reference: ReplyScore | None = None
    basis: str | None = None
    template: str = "{}"
    _seen: dict[str, ReplyScore] = attrs.field(factory=dict)

    @classmethod
    async def prepare(cls, group: Any, scorer: Scorer | None = None) -> ProblemJudge:
        """The judge of ``group``'s problem (a GroupBuilder); ``scorer`` scores one reply
        (default: :func:`step_reply` on a fresh message env).

        Example::

            # not run: `group` is a GroupBuilder, built elsewhere
            judge = await ProblemJudge.prepare(group)
        """
        if scorer is None:

            async def scorer(reply: str) -> ReplyScore:
                return await step_reply(group.make_message_env, reply)

        judge = cls(scorer=scorer, answer=group.problem.get("answer"))
        await judge._find_reference()
        return judge

    async def score(self, reply: str) -> ReplyScore:
        """``reply``'s score (each distinct reply is scored once).

        Example::

            # not run: see the class example
            (await judge.score("\\\\boxed{6}")).reward
        """
        if reply not in self._seen:
            self._seen[reply] = await self.scorer(reply)
        return self._seen[reply]

    async def _find_reference(self) -> None:
        if self.answer is None:
            return
        best: ReplyScore | None = None
        reports_correct = False
        for text in answer_forms(self.answer):
            scored = await self.score(text)
            reports_correct |= scored.correct is not None
            if scored.correct:
                best = scored
                self.basis = BY_CORRECT
                break
            if scored.reward is not None and (best is None or scored.reward > best.reward):
                best = scored
        if best is not None and self.basis is None and not reports_correct:
            self.basis = BY_REWARD
        self.reference = best
        self.template = template_of(None if best is None else best.reply, answer_text(self.answer))

    @property
    def right_reward(self) -> float | None:
        """What the correct reply earns (None when no form of the answer could be scored)."""
        return None if self.reference is None else self.reference.reward

    def is_right(self, score: ReplyScore) -> bool | None:
        """:func:`is_right` of ``score`` against this problem's correct reply (None when
        nothing can be judged: see :attr:`basis`).

        Example::

            # not run: see the class example
            judge.is_right(await judge.score("\\\\boxed{5}"))   # True
        """
        if self.basis is None:
            return None
        return is_right(score, self.right_reward if self.basis == BY_REWARD else None)

    async def right(self, guess: str) -> bool | None:
        """Whether the answer ``guess``, written in the env's format, is right.

        Example::

            # not run: see the class example
            await judge.right("5")   # True
        """
        return self.is_right(await self.score(self.template.format(guess)))


def judges_cheaply(env: Any) -> bool:
    """Whether guesses can be judged through ``env``'s own step without a model or a
    sandbox: a single-answer env (SingleTurnEnv, ToolEnv) whose reward has no async part
    (an LLM judge, a code sandbox). Evaluations judge the others' baselines by ``check``.

    Example::

        # not run: `env` is a message env, built elsewhere
        judges_cheaply(env)   # True for a SingleTurnEnv with a parser and check
    """
    from mint_envkit.envs.scoring import AnswerScoring

    if not isinstance(env, AnswerScoring) or not isinstance(env, MessageEnv):
        return False
    reward = type(env).scoring.reward
    return reward is None or not reward.is_async


async def judge_guesses(
    pairs: Sequence[tuple[AnswerGroup, ProblemJudge | None]],
) -> list[AnswerGroup]:
    """Each answer group with the env's verdicts on its baseline guesses
    (:func:`~mint_envkit.rollouts.baselines.baseline_guesses`), judged by its problem's
    judge; where the env reports no ``correct``, its replies' correctness is whether
    they earn the correct reply's reward (``judged_by`` says which). A group without a
    judge, or whose judge cannot judge (see :attr:`ProblemJudge.basis`), stays as it is.

    Example::

        # not run: `answers` and `judges` come from an evaluation, built elsewhere
        judged = await judge_guesses(list(zip(answers, judges)))
        judged[0].verdicts   # {'Paris': True, 'London': False, ...}
    """
    from mint_envkit.rollouts.baselines import baseline_guesses

    answers = [answer for answer, _judge in pairs]
    out = []
    for (answer, judge), guesses in zip(pairs, baseline_guesses(answers), strict=True):
        if judge is None or judge.basis is None:
            out.append(answer)
            continue
        verdicts = {guess: await judge.right(guess) for guess in sorted(guesses)}
        changes: dict[str, Any] = {"verdicts": verdicts, "judged_by": judge.basis}
        if not answer.correct and judge.basis == BY_REWARD and answer.rewards:
            scores = [ReplyScore("", reward) for reward in answer.rewards]
            changes["correct"] = [judge.is_right(score) for score in scores]
        out.append(attrs.evolve(answer, **changes))
    return out


@attrs.frozen
class PartialCredit:
    """A trivial policy or probe judged by reward: on how many problems a reply of it that
    is not right earns at least :data:`PARTIAL_SHARE` of the correct reply's reward.

    Attributes:
        name: the policy (``constant 'X'``, ``first quoted``) or probe.
        problems: the problems where it did; of: the problems judged.
        share: its mean share of the correct reply's reward on those.
        reply: one such reply, as sent.

    Example::

        PartialCredit("constant '{}'", 6, 6, 0.5, '{"name": "", "age": 0}').most   # True
    """

    name: str
    problems: int
    of: int
    share: float
    reply: str

    @property
    def most(self) -> bool:
        """On more than half of the problems judged."""
        return self.of > 0 and 2 * self.problems > self.of


def _policy_guesses(name: str, prompt: str, guesses: Sequence[str]) -> list[str]:
    """The guesses of trivial policy ``name`` on a problem (of those it was asked)."""
    from mint_envkit.parsers.candidates import prompt_candidates
    from mint_envkit.rollouts.baselines import POSITIONS, constant_name

    head, _, kind = name.partition(" ")
    if head == "constant":
        return [g for g in guesses if constant_name(g) == name]
    offered = [c.text for c in prompt_candidates(prompt).get(kind, [])]
    if head == "uniform":
        return [g for g in offered if g in guesses]
    if head == "last":
        return offered[-1:] if len(offered) >= 2 else []
    index = POSITIONS.index(head) if head in POSITIONS else len(offered)
    return offered[index : index + 1]


async def partial_policies(
    pairs: Sequence[tuple[AnswerGroup, ProblemJudge | None]],
) -> list[PartialCredit]:
    """Each trivial policy (:func:`~mint_envkit.rollouts.baselines.trivial_baselines`)
    judged by the reward its guesses earn as a share of the correct reply's, where they
    are not right (the guesses are scored by each problem's judge, once each).

    Example::

        # not run: `answers` and `judges` come from an audit, built elsewhere
        [p for p in await partial_policies(list(zip(answers, judges))) if p.most]
    """
    from mint_envkit.rollouts.baselines import baseline_guesses, trivial_baselines

    answers = [answer for answer, _judge in pairs]
    scored: dict[int, dict[str, tuple[float | None, str]]] = {}
    for (answer, judge), guesses in zip(pairs, baseline_guesses(answers), strict=True):
        if judge is None or judge.basis is None or judge.right_reward is None:
            continue
        mine = scored.setdefault(id(answer), {})
        for guess in sorted(guesses):
            score = await judge.score(judge.template.format(guess))
            wrong = judge.is_right(score) is False
            mine[guess] = (reward_share(score.reward, judge.right_reward) if wrong else None,
                           score.reply)  # fmt: skip

    def hit(group: AnswerGroup, guess: str) -> float:
        share = scored.get(id(group), {}).get(guess, (None, ""))[0]
        return float(share is not None and share >= PARTIAL_SHARE)

    out = []
    judged = [a for a in answers if id(a) in scored]
    for policy in trivial_baselines(judged, hit):
        problems, shares, reply = 0, [], ""
        for group, per in zip(judged, policy.per_problem, strict=True):
            if per < PARTIAL_SHARE:
                continue
            problems += 1
            mine = scored[id(group)]
            for guess in _policy_guesses(policy.name, group.prompt, list(mine)):
                share, sent = mine.get(guess, (None, ""))
                if share is not None and share >= PARTIAL_SHARE:
                    shares.append(share)
                    reply = reply or sent
        if problems:
            share = sum(shares) / len(shares) if shares else PARTIAL_SHARE
            out.append(PartialCredit(policy.name, problems, len(judged), share, reply))
    return out


async def judged_answers(
    rollouts: Sequence[GroupRollout], groups: Sequence[Any] | None = None
) -> list[AnswerGroup]:
    """:func:`~mint_envkit.rollouts.answers.rollout_answers`, judged the way the env judges.

    Each problem whose env judges cheaply (:func:`judges_cheaply`) gets a
    :class:`ProblemJudge` (its reply forms scored by a fresh env's own step), and
    :func:`judge_guesses` judges the trivial baselines' guesses through it; the others
    keep the env's ``check``. What an evaluation's answer figures read.

    Example::

        # not run: needs an evaluation's rollouts and groups
        answer_figures(await judged_answers(rollouts, groups))["answers/baseline_correct"]
    """
    from mint_envkit.rollouts.answers import answer_pairs

    pairs: list[tuple[AnswerGroup, ProblemJudge | None]] = []
    for answer, group in answer_pairs(rollouts, groups):
        judge = None
        if _makes_envs(group) and answer.reference is not None:
            try:
                cheap = judges_cheaply(group.make_message_env())
            except Exception:  # an env that cannot be made keeps its check
                cheap = False
            if cheap:
                judge = await ProblemJudge.prepare(group)
        pairs.append((answer, judge))
    return await judge_guesses(pairs)


def _makes_envs(group: Any) -> bool:
    return callable(getattr(group, "make_message_env", None)) and isinstance(
        getattr(group, "problem", None), Mapping
    )
