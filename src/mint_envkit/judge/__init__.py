"""LLM-as-judge rewards: ask a judge model a rubric question about a reply, read its verdict.

A :class:`Judge` sends the rubric, the question, the reply (and the reference answer when
there is one) to a judge model and reads its verdict (by default ``<verdict>YES</verdict>``
or ``<verdict>NO</verdict>``, scored 1.0 / 0.0). The judge is any async function
``complete(messages) -> str``; :meth:`Judge.from_sampling_client` builds one from a
``mint``/tinker ``SamplingClient`` and a renderer, so the judge can be any model the
backend serves (the embedded local backend or MinT). This module imports neither torch
nor the SDK.

Judge calls are concurrency-limited (``max_concurrency`` at once per event loop), cached
per (rubric, question, reply, answer) (identical requests in flight share one call), and
never crash a rollout: a call that raises or takes over ``timeout`` seconds gives the
``on_failure`` score with status ``"failed"``, and a verdict that cannot be read (or
scores outside the judge's ``scale``, ``(0, 1)`` by default) gives it with status
``"unparsed"``; both are counted (:attr:`Judge.counts`) and reported as
metrics. The judge's text goes into the episode's logs.

A verdict is a reward two ways: :func:`judged` makes a part of any ``reward_fn`` (beside
an answer check, in :func:`~mint_envkit.rewards.weighted`), so a plain
:class:`~mint_envkit.SingleTurnEnv` or :class:`~mint_envkit.ToolEnv` can be judged;
:class:`JudgedEnv` is a single-turn env scored by its judge alone.

Example::

    from mint_envkit import SingleTurnEnv, boxed, correct, weighted
    from mint_envkit.judge import Judge, JudgedEnv, judged

    async def complete(messages):          # your judge model; here, a fixed verdict
        return "The reply is polite. <verdict>YES</verdict>"

    class PoliteEnv(JudgedEnv):
        judge = Judge(complete, rubric="Is the reply polite?")

    env = PoliteEnv(question="Ask me for a pen.")
    result = await env.step({"role": "assistant", "content": "Could I borrow a pen, please?"})
    result.reward, result.logs["judge_text"]   # 1.0, 'The reply is polite. <verdict>YES</verdict>'

    class PoliteMathEnv(SingleTurnEnv):
        reward_fn = weighted(correct=(correct(boxed), 1.0),
                             polite=(judged(Judge(complete, rubric="Is it polite?")), 0.5))
"""

from mint_envkit.judge.model import Judge, JudgeComplete, JudgeResult
from mint_envkit.judge.scoring import JudgedEnv, judged

__all__ = [
    "Judge",
    "JudgeComplete",
    "JudgeResult",
    "JudgedEnv",
    "judged",
]
