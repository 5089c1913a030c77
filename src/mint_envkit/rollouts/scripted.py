"""ScriptedPolicy: drive envs end to end with fixed replies, no model, no backend.

Run it to check an env before spending money: every group goes through the
same path as training (make_envs, render, parse, step, group rewards), only
the replies come from a script.

Example::

    from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=4, model_name="mint-envkit/tiny-qwen3")
    report = await ScriptedPolicy(["5", "7", "five"]).run(builder)
    for group in report.groups:
        print(group.rewards, group.metrics)   # [1.0, 0.0, 0.0, 1.0] [{'correct': 1.0, ...}, ...]
    assert report.mean_reward == 0.5
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder, ProblemDataset
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError, EnvError
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import SampleRequest
from mint_envkit.rollouts.types import GroupRollout, SampledTokens

ReplyFn = Callable[[list[Message]], str]


@attrs.frozen
class GroupReport:
    """One group under a scripted policy.

    Attributes:
        index: the problem's index.
        prompt: the opening conversation.
        replies: each env's final reply text.
        rewards: each env's total reward.
        metrics: each env's metrics.
        logs: each env's last-step logs (parse status, parsed value...).
        error: why the group failed, or None.

    Example::

        from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv, first_number

        class Sum(SingleTurnEnv):
            parser = first_number

        builder = DatasetBuilder(env=Sum, problems=[{"question": "2 + 3?", "answer": "5"}],
                                 batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
        group = ScriptedPolicy(["5", "6"]).run_sync(builder).groups[0]   # a GroupReport
        assert group.replies == ["5", "6"] and group.rewards[0] > group.rewards[1]
    """

    index: int
    prompt: list[Message]
    replies: list[str]
    rewards: list[float]
    metrics: list[dict[str, float]]
    logs: list[dict[str, Any]]
    error: str | None = None

    @classmethod
    def from_rollout(cls, rollout: GroupRollout) -> GroupReport:
        """Summarise a :class:`GroupRollout`."""
        replies, logs = [], []
        for trajectory in rollout.trajectories:
            last = trajectory.transitions[-1]
            replies.append((last.message or {}).get("content", ""))
            logs.append(dict(last.logs))
        return cls(
            index=rollout.index,
            prompt=rollout.messages,
            replies=replies,
            rewards=rollout.rewards,
            metrics=[t.metrics for t in rollout.trajectories],
            logs=logs,
            error=rollout.error,
        )


@attrs.frozen
class ScriptedReport:
    """Every group a scripted run produced, with overall means.

    Example::

        # report: the module example's
        assert (report.mean_reward, report.mean_metrics["correct"], report.errors) == (0.5, 0.5, [])
    """

    groups: list[GroupReport]

    @property
    def mean_reward(self) -> float:
        """The mean total reward over every env of every group that ran."""
        rewards = [r for g in self.groups for r in g.rewards]
        return sum(rewards) / len(rewards) if rewards else float("nan")

    @property
    def mean_metrics(self) -> dict[str, float]:
        """Each metric's mean over the envs that ran, as the loop reports it: a metric
        some episodes did not log counts as 0 for them when the env declares that
        default (``MessageEnv.metric_defaults``), else its mean is over the episodes that
        logged it, and :attr:`metric_coverage` says how many those were.

        Example::

            # report: the module example's
            report.mean_metrics["correct"], report.metric_coverage["correct"]   # (0.5, 1.0)
        """
        from mint_envkit.rollouts.records import metric_means

        return metric_means([m for g in self.groups for m in g.metrics])[0]

    @property
    def metric_coverage(self) -> dict[str, float]:
        """Each metric's share of the episodes that logged it (1.0: every episode).

        Example::

            # report: the module example's
            report.metric_coverage["parsed"]   # 1.0
        """
        from mint_envkit.rollouts.records import metric_means

        return metric_means([m for g in self.groups for m in g.metrics])[1]

    @property
    def errors(self) -> list[str]:
        """The error of every failed group."""
        return [f"group {g.index}: {g.error}" for g in self.groups if g.error]


class ScriptedPolicy:
    """A policy with scripted replies, for checking envs offline.

    Args:
        replies: a list with one entry per env (env ``i`` of a group gets
            ``replies[i % len(replies)]``): a reply text, given at every turn,
            or a list of reply texts, one per turn (a multi-turn script; an
            episode that asks for more turns than its script has fails with
            :class:`~mint_envkit.ConfigError`). Or a function of the
            conversation so far returning the reply text.
        end_with_stop: append the renderer's stop token, as a model that
            finishes its turn would (default True). With False, replies look
            cut off at the length limit (``stop_reason="length"``).

    Example::

        policy = ScriptedPolicy(lambda messages: "5" if "2 + 3" in messages[-1]["content"] else "0")
        report = await policy.run(builder, max_batches=1)  # builder: the module example's
        assert report.mean_reward == 1.0
        # per-turn scripts: env 0 calls a tool then answers; env 1 answers at once
        ScriptedPolicy([['<tool_call>{"name": "add", "arguments": {"a": 2}}</tool_call>', "5"], "5"])
    """

    def __init__(
        self, replies: Sequence[str | Sequence[str]] | ReplyFn, *, end_with_stop: bool = True
    ) -> None:
        if callable(replies):
            self._fn: ReplyFn | None = replies
            self._replies: list[str | list[str]] = []
        else:
            if isinstance(replies, str) or not all(
                isinstance(r, str)
                or (isinstance(r, list | tuple) and r and all(isinstance(t, str) for t in r))
                for r in replies
            ):
                raise ConfigError(
                    "ScriptedPolicy takes a list of replies (each a string, or a non-empty "
                    f"list of strings, one per turn) or a function of the conversation, got "
                    f"{replies!r}"
                )
            if not replies:
                raise ConfigError("ScriptedPolicy needs at least one reply")
            self._fn = None
            self._replies = [r if isinstance(r, str) else list(r) for r in replies]
        self.end_with_stop = end_with_stop

    async def _reply_text(self, messages: list[Message], position: int, turn: int) -> str:
        if self._fn is None:
            script = self._replies[position % len(self._replies)]
            if isinstance(script, str):
                return script
            if turn >= len(script):
                raise ConfigError(
                    f"the scripted replies of env {position} have {len(script)} turn(s), but "
                    f"its episode asked for turn {turn + 1}; add replies to its script"
                )
            return script[turn]
        text = self._fn([dict(m) for m in messages])
        if inspect.isawaitable(text):
            text = await text
        if not isinstance(text, str):
            raise ConfigError(f"the ScriptedPolicy function must return a str, got {text!r}")
        return text

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        """Answer one sampling request with scripted replies (a rollout sampler)."""
        out = []
        tokenizer = request.renderer.tokenizer
        for position in range(request.num_samples):
            text = await self._reply_text(
                request.messages, request.env_index + position, request.turn
            )
            tokens = list(tokenizer.encode(text, add_special_tokens=False))
            if self.end_with_stop:
                stop = request.renderer.get_stop_sequences()[0]
                out.append(SampledTokens(tokens=[*tokens, stop], logprobs=None, stop_reason="stop"))
            else:
                out.append(SampledTokens(tokens=tokens, logprobs=None, stop_reason="length"))
        return out

    async def run_group(self, group: GroupBuilder) -> GroupReport:
        """Run one group.

        Example::

            train, _ = await builder()  # the module example's builder
            group = await ScriptedPolicy(["5"]).run_group(train.get_batch(0)[0])
            assert group.rewards == [1.0, 1.0, 1.0, 1.0]
        """
        rollouts = await rollout_groups([group], self)
        return GroupReport.from_rollout(rollouts[0])

    async def run(
        self,
        source: DatasetBuilder | ProblemDataset | Sequence[GroupBuilder],
        *,
        max_batches: int | None = None,
        split: str = "train",
        keep_errors: bool = False,
    ) -> ScriptedReport:
        """Run every group of a dataset builder (or dataset, or list of groups).

        Args:
            source: what to run.
            max_batches: run only the first N batches.
            split: ``"train"`` or ``"test"`` when ``source`` is a builder.
            keep_errors: return a report whose failed groups hold their errors (in
                ``report.errors``) instead of raising.

        Raises:
            EnvError: a group failed (an env or its reward raised): the first error and
                its traceback are in the message, so a broken reward is never a silent
                empty report; ``keep_errors=True`` returns them instead.
        """
        if isinstance(source, DatasetBuilder):
            train, test = await source()
            if split not in ("train", "test"):
                raise ConfigError(f"split must be 'train' or 'test', got {split!r}")
            dataset = train if split == "train" else test
            if dataset is None:
                raise ConfigError("this DatasetBuilder has no test split")
            source = dataset
        if isinstance(source, ProblemDataset):
            n = len(source) if max_batches is None else min(max_batches, len(source))
            groups = [g for i in range(n) for g in source.get_batch(i)]
        else:
            groups = list(source)
        rollouts = await rollout_groups(groups, self)
        failed = [r for r in rollouts if r.error is not None]
        if failed and not keep_errors:
            first = failed[0]
            raise EnvError(
                f"{len(failed)} of {len(rollouts)} group(s) failed; group {first.index}: "
                f"{first.error}\n{first.traceback or ''}".rstrip()
                + "\n(pass keep_errors=True to get the report with report.errors instead)"
            )
        return ScriptedReport(groups=[GroupReport.from_rollout(r) for r in rollouts])

    def run_sync(self, source: Any, **kwargs: Any) -> ScriptedReport:
        """:meth:`run` for code without an event loop (scripts, notebooks' cells)."""
        return asyncio.run(self.run(source, **kwargs))
