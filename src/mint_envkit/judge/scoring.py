"""A judge's verdict as a reward: :func:`judged`, a part of any ``reward_fn``, and :class:`JudgedEnv`.

Example::

    # not run: `complete` is your judge's completion function, built elsewhere
    from mint_envkit.judge import Judge, judged
    from mint_envkit.parsers import boxed
    from mint_envkit.rewards import correct, weighted

    class PoliteMathEnv(SingleTurnEnv):
        reward_fn = weighted(correct=(correct(boxed), 1.0),
                             polite=(judged(Judge(complete, rubric="Is it polite?")), 0.5))
"""

from __future__ import annotations

from typing import Any, ClassVar

import attrs

from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.envs.single_turn import SingleTurnEnv
from mint_envkit.errors import ConfigError
from mint_envkit.judge.model import Judge, JudgeResult
from mint_envkit.rewards import PartScore, Reward, RewardContext


def judged(judge: Judge, *, name: str | None = None) -> Reward:
    """A reward part whose score is ``judge``'s verdict on the reply: put it in any ``reward_fn``.

    The judge sees the question (the problem's ``question``, else the prompt's last
    user message), the reply without its thinking, and the reference answer when the
    problem has one, all read from the :class:`~mint_envkit.rewards.RewardContext` the
    env passes down. The part is async: the env's ``step()`` awaits it (a plain call of
    the reward raises :class:`~mint_envkit.errors.ConfigError`; use
    :meth:`~mint_envkit.rewards.Reward.score_async`).

    It is not an answer check: it gives no ``correct`` (that comes from a
    :func:`~mint_envkit.rewards.correct` or ``math_correct`` part; a ``reward_fn`` of
    judged parts alone reports none). Its ``bounds`` are the judge's
    (:attr:`Judge.bounds`: ``(0.0, 1.0)`` by default, unknown with ``scale=None``), so
    the ordering rule holds for it. ``name`` defaults to the judge's name. Metrics:
    ``reward/<name>`` (the verdict), ``judge/<name>/failed``, ``/unparsed``,
    ``/cached``; logs: ``judge/<name>/text`` and ``judge/<name>/status``.

    Example::

        from mint_envkit import SingleTurnEnv, boxed, correct, weighted

        async def complete(messages):  # your judge model; here, a fixed verdict
            return "It is polite. <verdict>YES</verdict>"

        class PoliteMathEnv(SingleTurnEnv):
            reward_fn = weighted(
                correct=(correct(boxed), 1.0),
                polite=(judged(Judge(complete, rubric="Is the reply polite?")), 0.5),
            )
    """
    if not isinstance(judge, Judge):
        raise ConfigError(
            f"judged() needs a Judge, got {judge!r}; e.g. "
            "judged(Judge(complete, rubric='Is the reply polite?'))"
        )

    async def verdict(completion: str, answer: Any, context: RewardContext) -> PartScore:
        result = await judge(context.question, context.completion, context.answer)
        return PartScore(
            result.score,
            metrics={
                "judge/failed": float(result.status == "failed"),
                "judge/unparsed": float(result.status == "unparsed"),
                "judge/cached": float(result.cached),
            },
            logs={"judge/text": result.text, "judge/status": result.status},
        )

    verdict.judge = judge  # type: ignore[attr-defined]  # judges_of() finds it here
    return Reward(name=judge.name if name is None else name, leaf=verdict, bounds=judge.bounds)


def judges_of(env: Any) -> list[Judge]:
    """The judges an env (or env class) asks when it scores: a :class:`JudgedEnv`'s
    ``judge`` and every :func:`judged` part of its ``reward_fn``.

    Example::

        from mint_envkit import SingleTurnEnv, correct, exact, weighted

        async def complete(messages):
            return "<verdict>YES</verdict>"

        polite = Judge(complete, rubric="Is it polite?")

        class PoliteEnv(SingleTurnEnv):
            reward_fn = weighted(right=(correct(exact()), 1.0), polite=(judged(polite), 0.2))

        assert judges_of(PoliteEnv) == [polite] and judges_of(SingleTurnEnv) == []
    """
    cls = env if isinstance(env, type) else type(env)
    found: list[Judge] = []
    own = getattr(cls, "judge", None) if issubclass(cls, JudgedEnv) else None
    if isinstance(own, Judge):
        found.append(own)
    scoring = getattr(cls, "scoring", None)
    reward = getattr(scoring, "reward", None)
    for part in reward.parts() if isinstance(reward, Reward) else ():
        judge = getattr(part.leaf, "judge", None)
        if isinstance(judge, Judge) and judge not in found:
            found.append(judge)
    return found


class JudgedEnv(SingleTurnEnv):
    """A single-turn env scored by a :class:`Judge` (set the class attribute ``judge``).

    The reward is the judge's score (override :meth:`combine` to mix it with the parsed
    answer's reward). Problems need ``question``; ``answer`` is optional and, when given,
    is shown to the judge as the reference. Metrics: the env's own plus
    ``<judge name>/score``, ``/failed``, ``/unparsed``, ``/cached``; logs: the judge's
    text and status. The env's own ``correct`` compares the parsed reply with the
    reference answer; a problem without one has no ``correct`` (the judge's verdict is
    ``<judge name>/score``). A wrong answer earns a NO verdict's 0.0, so the builders
    hold replies without an answer to at most 0.0 (unless :meth:`combine` is overridden).

    Example::

        # not run: `complete` is your judge's completion function, built elsewhere
        class HelpfulEnv(JudgedEnv):
            system_prompt = "Answer helpfully."
            judge = Judge(complete, rubric="Does the reply answer the question?")
    """

    judge: ClassVar[Judge | None] = None
    required_fields: ClassVar[tuple[str, ...]] = ("question",)
    optional_fields: ClassVar[dict[str, Any]] = {"answer": None}

    @classmethod
    def wrong_answer_reward(cls) -> float | None:
        """A NO verdict's 0.0 (the reward is the verdict); None when :meth:`combine` is overridden.

        Example::

            # not run: `PoliteEnv` comes from your own code
            PoliteEnv.wrong_answer_reward()  # 0.0
        """
        return 0.0 if cls.combine is JudgedEnv.combine else None

    @classmethod
    def _wrong_answer_label(cls) -> str:
        return f"{cls.__name__}'s reward for a NO verdict"

    def combine(self, result: MessageStepResult, verdict: JudgeResult) -> float:
        """The episode's reward from the env's own result and the verdict (default: the verdict).

        Example::

            def combine(self, result, verdict):
                return 0.5 * result.reward + 0.5 * verdict.score
        """
        return verdict.score

    async def step(self, message: Message) -> MessageStepResult:
        """Score the reply with the env's parser and the judge, and end the episode."""
        judge = type(self).judge
        if not isinstance(judge, Judge):
            raise ConfigError(
                f"{type(self).__name__}.judge must be a Judge, got {judge!r}; set "
                "judge = Judge(complete, rubric='...') on the class"
            )
        result = await super().step(message)
        content = message.get("content")
        verdict = await judge(
            self.question, content if isinstance(content, str) else "", self.answer
        )
        return attrs.evolve(
            result,
            reward=self.combine(result, verdict),
            metrics={**result.metrics, **verdict.metrics(judge.name)},
            logs={**result.logs, **verdict.logs(judge.name)},
        )
