"""The message-level environment interface.

A :class:`MessageEnv` talks in chat messages: it gives the opening
conversation, then scores each assistant message. It has the same shape as
tinker-cookbook's ``MessageEnv``, so an existing env drops in.

Example::

    from mint_envkit import MessageEnv, MessageStepResult

    class EchoEnv(MessageEnv):
        async def initial_observation(self):
            return [{"role": "user", "content": "Say hi."}]

        async def step(self, message):
            said_hi = "hi" in message["content"].lower()
            return MessageStepResult(reward=float(said_hi), episode_done=True)
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import Any, ClassVar, TypeAlias

import attrs

from mint_envkit.errors import ConfigError

Message: TypeAlias = dict[str, Any]
"""A chat message: ``{"role": "user", "content": "..."}``.

``role`` is ``system``, ``user``, ``assistant`` or ``tool``; ``content`` is a
string. A parsed assistant reply may also carry ``"thinking"`` (the text of
its ``<think>`` block, kept apart from the content).
"""

Metrics: TypeAlias = dict[str, float]
"""What a step reports besides its reward: name -> number, averaged over episodes in the
loop's logs (``env/all/<name>``). Example: ``{"correct": 1.0, "turns": 2.0}``."""


def _copy_messages(value: Any) -> list[Message]:
    return [dict(m) for m in value]


@attrs.frozen(kw_only=False)
class MessageStepResult:
    """What an env says after one assistant message.

    Attributes:
        reward: the reward for this step.
        episode_done: True when the episode is over.
        next_messages: the whole conversation to continue from (as
            tinker-cookbook's ``MessageEnv``); empty when the episode is done.
        metrics: numbers averaged into the training logs
            (``env/all/<name>``), e.g. ``{"correct": 1.0}``.
        logs: anything worth keeping with the rollout (parse status, the
            extracted answer); saved in ``rollouts.jsonl``, not averaged.
        next_stop_condition: optional stop strings or token ids for the next
            turn (tinker-cookbook's field of the same name); None keeps the
            renderer's.

    Example::

        MessageStepResult(reward=1.0, episode_done=True, metrics={"correct": 1.0},
                          logs={"parse_status": "ok", "parsed": "5"})
    """

    reward: float = attrs.field(converter=float)
    episode_done: bool = attrs.field(converter=bool)
    next_messages: list[Message] = attrs.field(factory=list, converter=_copy_messages)
    metrics: Metrics = attrs.field(factory=dict, converter=dict)
    logs: dict[str, Any] = attrs.field(factory=dict, converter=dict)
    next_stop_condition: list[str] | list[int] | None = None


@attrs.frozen
class AuditProbe:
    """One reply the reward audit tries (an env's own, or a user's ``--probes`` file).

    Attributes:
        name: the probe's name in the audit table.
        reply: the reply text, sent as the model's reply at every turn.
        kind: ``non_answer`` (gives no answer: may earn at most a wrong answer's reward)
            or ``answer_shaped`` (gives an answer without solving: may not earn as much as
            a correct reply).

    Example::

        AuditProbe("all_options", "A B C D", "non_answer")
    """

    name: str = attrs.field(validator=attrs.validators.instance_of(str))
    reply: str = attrs.field(validator=attrs.validators.instance_of(str))
    kind: str = attrs.field(default="non_answer")

    @kind.validator
    def _check_kind(self, _attribute: Any, value: Any) -> None:
        if value not in ("non_answer", "answer_shaped"):
            raise ConfigError(
                f"AuditProbe {self.name!r}: kind must be 'non_answer' or 'answer_shaped', "
                f"got {value!r}"
            )


class MessageEnv(ABC):
    """An environment that speaks in chat messages. One instance, one episode.

    Implement :meth:`initial_observation` and :meth:`step`. Most users
    subclass :class:`~mint_envkit.SingleTurnEnv` or
    :class:`~mint_envkit.MultiTurnEnv` instead, which implement both.

    The optional hooks are declared here with their defaults, and the kit calls
    them on every env; override the ones that fit:

    - :meth:`abort`: the episode ended without :meth:`step` (default: nothing);
    - :meth:`unscored_metrics`: the metrics of such an episode (default: none);
    - :meth:`tool_specs`: the tools listed in the prompt (default: None, no tools);
    - :meth:`check` and ``answer``: is a parsed answer right, and the reference
      answer, for the answer figures and the reward audit (default: unknown, None);
    - :meth:`wrong_answer_reward`: what a wrong answer earns, for the ordering
      rule (default: unknown, None);
    - :meth:`teacher_messages`: the conversation a distillation teacher sees
      (default: the student's own messages);
    - :meth:`perturb`: the problem with its offered candidates in another order, for the
      counterfactual check of evaluations (default: quoted strings or listed options
      rotated, the answer moved with them; None when the problem offers none);
    - :meth:`audit_probes`: extra replies the reward audit tries on a problem (default:
      none);
    - :attr:`audit_lenient` and :meth:`audit_equivalent`: the leniency of the env's
      answer check that is intended, so the audit's strict second opinion reports it as
      declared, not as a finding (default: none);
    - :attr:`metric_defaults`: the value of a metric in an episode that did not log it
      (default: none, so such a metric's mean is over the episodes that logged it, and
      the reports say how many those were).

    Example::

        class EchoEnv(MessageEnv):
            async def initial_observation(self):
                return [{"role": "user", "content": "Say hi."}]

            async def step(self, message):
                return MessageStepResult(
                    reward=float("hi" in message["content"].lower()), episode_done=True
                )
    """

    answer: Any = None
    """The problem's reference answer, or None when the env has none (default)."""

    metric_defaults: ClassVar[Mapping[str, float]] = {}
    """A metric's value in an episode that did not log it: ``{"won": 0.0}`` for a metric
    an env logs only on success, so its mean is over every episode, not the winners.

    Example::

        class WinOnly(MessageEnv):
            metric_defaults = {"won": 0.0}   # an episode that did not win logs no "won"
    """

    audit_lenient: ClassVar[str | None] = None
    """Why this env accepts, on purpose, answers that are not strictly the reference
    (another spelling, a number within a tolerance), or None (default: it does not).

    The audit compares every reply the env scores right with the reference by a strict
    comparison of its own (numbers as numbers, text after light normalisation); where
    they disagree it reports a ``lenient`` finding. With a reason here, a disagreement on
    a value of the answer's kind (another number, other text) is reported as declared,
    with the reason, instead; a value the strict comparison cannot read as one (``nan``
    or ``inf`` for a number, text for a structure) stays a finding unless
    :meth:`audit_equivalent` accepts it.

    Example::

        class ApproxEnv(SingleTurnEnv):
            audit_lenient = "numbers within 1e-6 of the answer count as right"
    """

    @abstractmethod
    async def initial_observation(self) -> list[Message]:
        """Return the opening conversation (the prompt), as a list of messages."""

    @abstractmethod
    async def step(self, message: Message) -> MessageStepResult:
        """Score one assistant message and say what comes next."""

    async def abort(self) -> None:
        """End the episode from outside; the token-level env calls it when it ends one itself.

        That is a reply cut off at the token limit, one without the stop token, or a
        context overflow: :meth:`step` is not called. Default: nothing.
        :class:`~mint_envkit.MultiTurnEnv` runs its ``teardown()``.

        Example::

            async def abort(self):
                await self.sandbox.close()
        """
        return None

    def unscored_metrics(self) -> Metrics:
        """The metrics of an episode ended before :meth:`step` scored it. Default: none.

        :class:`~mint_envkit.SingleTurnEnv` gives ``correct`` and ``parsed`` at 0, so
        rates count a cut-off episode as a miss instead of skipping it.

        Example::

            def unscored_metrics(self):
                return {"solved": 0.0}
        """
        return {}

    def tool_specs(self) -> list[dict[str, Any]] | None:
        """The tools' JSON schemas for the chat template's ``tools=``. Default: None, no tools.

        :class:`~mint_envkit.ToolEnv` lists its ``tools``.

        Example::

            def tool_specs(self):
                return [{"type": "function", "function": {"name": "add", "parameters": {...}}}]
        """
        return None

    def check(self, parsed: str, answer: Any) -> bool | None:
        """Is the parsed answer right? Default: None, this env does not say.

        The answer figures and the reward audit use it to judge a constant answer;
        None falls back to comparing the answers' text.
        :class:`~mint_envkit.SingleTurnEnv` compares numbers by value, text after strip.

        Example::

            def check(self, parsed, answer):
                return parsed.lower() == str(answer).lower()
        """
        return None

    @classmethod
    def wrong_answer_reward(cls) -> float | None:
        """What a wrong answer earns; no reply without an answer may earn more.

        Default: None, unknown (the builders then check no ordering). See
        :meth:`~mint_envkit.envs.scoring.AnswerScoring.wrong_answer_reward`.

        Example::

            @classmethod
            def wrong_answer_reward(cls):
                return -1.0
        """
        return None

    def teacher_messages(self, messages: list[Message]) -> list[Message]:
        """The teacher's view of the conversation a reply answers. Default: the student's own.

        On-policy distillation (:func:`~mint_envkit.rl.run_distillation`) scores
        each sampled reply with a teacher: the teacher reads the prompt rendered
        from what this returns, followed by the student's exact reply tokens.
        Override it to give the teacher privileged context the student lacks
        (the reference answer, a worked solution); ``messages`` is the
        conversation the reply answered (a copy: change it freely).

        Example::

            def teacher_messages(self, messages):
                hint = {"role": "system", "content": f"The answer is {self.answer}."}
                return [hint, *messages]
        """
        return [dict(m) for m in messages]

    def perturb(self, problem: Mapping[str, Any]) -> dict[str, Any] | None:
        """``problem`` changed so that a model reading its content answers the same, and one
        following a position in the prompt does not; None when there is no such change.

        Evaluations run the problems a second time with it and report how many answers
        followed the content and how many the position (``counterfactual/...`` figures).
        Default: the candidates the question offers (listed options, else quoted strings)
        rotated by one, the answer moved with them
        (:func:`~mint_envkit.envs.perturb.permuted_problem`).

        Example::

            def perturb(self, problem):
                rows = problem["table"][::-1]      # the same table, rows reversed
                return {**problem, "table": rows}
        """
        from mint_envkit.envs.perturb import permuted_problem

        return permuted_problem(problem)

    def audit_probes(self, problem: Mapping[str, Any]) -> list[AuditProbe]:
        """Replies the reward audit should try on ``problem``, beside its own probes.

        Each is an :class:`AuditProbe`: a reply text and whether it gives an answer
        (``answer_shaped``; judged like a wrong answer unless it is right) or not (a
        ``non_answer``: it may earn no more than a wrong answer). Default: none.

        Example::

            def audit_probes(self, problem):
                return [AuditProbe("units_only", f"{problem['unit']}", "non_answer")]
        """
        return []

    def audit_equivalent(self, value: str, answer: Any) -> bool:
        """Whether ``value`` (a reply's parsed answer that the audit's strict comparison
        does not read as ``answer``) is an answer this env accepts on purpose.

        Default: False. An equivalence declared here is reported by the audit as
        declared, never as a ``lenient`` finding (see :attr:`audit_lenient` for a
        blanket reason).

        Example::

            def audit_equivalent(self, value, answer):
                return value.strip().lower() in {"usa", "us"} and answer == "United States"
        """
        return False

    @classmethod
    def _wrong_answer_label(cls) -> str:
        """How :meth:`wrong_answer_reward` is named in an error message."""
        return f"{cls.__name__}.wrong_answer_reward()"


def require_message_env(value: object, source: str) -> MessageEnv:
    """``value`` when it is a :class:`MessageEnv`; else a ConfigError naming ``source`` and the fix.

    Every env the kit runs is a ``MessageEnv``, so its optional hooks have their
    defaults. An env written for tinker-cookbook takes ``MessageEnv`` as a second base.

    Example::

        # not run: `EchoEnv` comes from your own code
        require_message_env(EchoEnv(), "GroupBuilder.env")   # the env
        require_message_env(object(), "GroupBuilder.env")
        # ConfigError: GroupBuilder.env: object is not a mint_envkit MessageEnv; subclass ...
    """
    if isinstance(value, MessageEnv):
        return value
    raise ConfigError(
        f"{source}: {type(value).__qualname__} is not a mint_envkit MessageEnv; "
        "subclass MessageEnv (or SingleTurnEnv / MultiTurnEnv), so its optional hooks "
        "(abort, unscored_metrics, tool_specs, check, wrong_answer_reward) have their "
        "defaults. An env written for tinker-cookbook works with MessageEnv as a second "
        "base: class MyEnv(CookbookEnv, MessageEnv)"
    )
