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

from mint_envkit.errors import ConfigError, EnvError, MintEnvkitError, ProblemError

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
      the reports say how many those were);
    - :attr:`success_metric`: the metric that says an episode succeeded (``solved``,
      ``won``), read beside the reward by the kit's checks (default: None, the env's
      ``correct``).

    ``self.answer`` and ``self.question`` read ``self.problem["answer"]`` and
    ``self.problem["question"]`` on every env; where the problem has no such field, or
    the env keeps no ``problem``, they raise an error that names the fix (an env may
    also set them, ``self.answer = ...``).

    Example::

        class EchoEnv(MessageEnv):
            async def initial_observation(self):
                return [{"role": "user", "content": "Say hi."}]

            async def step(self, message):
                return MessageStepResult(
                    reward=float("hi" in message["content"].lower()), episode_done=True
                )
    """

    @property
    def answer(self) -> Any:
        """The problem's reference answer: ``self.problem["answer"]``.

        Raises :class:`~mint_envkit.errors.ProblemError` when the problem has no
        ``answer`` field (the message names its fields: read the one you mean, or
        declare ``answer``), :class:`~mint_envkit.errors.EnvError` when the env keeps no
        ``problem`` (set ``self.answer`` in ``__init__``). The kit reads it through
        :func:`reference_answer`, which gives None instead.

        Example::

            from mint_envkit import Feedback, MultiTurnEnv

            class ColourEnv(MultiTurnEnv):
                required_fields = ("question", "answer")

                async def respond(self, message):
                    won = message["content"].strip() == self.answer
                    return Feedback(reply=None if won else "No.", reward=float(won), done=won)

            ColourEnv(question="Which colour?", answer="orange").answer   # 'orange'
        """
        return _shortcut(self, "answer")

    @answer.setter
    def answer(self, value: Any) -> None:
        vars(self)[_OWN + "answer"] = value

    @property
    def question(self) -> Any:
        """The problem's question: ``self.problem["question"]`` (raises as :attr:`answer`).

        Example::

            from mint_envkit import MultiTurnEnv

            class Ask(MultiTurnEnv):
                async def respond(self, message):
                    raise NotImplementedError

            Ask(question="Which colour?").question   # 'Which colour?'
        """
        return _shortcut(self, "question")

    @question.setter
    def question(self, value: Any) -> None:
        vars(self)[_OWN + "question"] = value

    success_metric: ClassVar[str | None] = None
    """The metric that says an episode succeeded, 1.0 or 0.0 (``"solved"``, ``"won"``), or
    None (default): the env's ``correct``, when it reports one.

    A game declares it, and the kit reads it beside the reward: ``mint-envkit check``
    finds a winning reply by it, the audit and the trivial game policies
    (:mod:`mint_envkit.rollouts.game_policies`) judge an episode won by it. An episode
    that did not log it (cut off before the env scored it) counts as 0.0 unless
    :attr:`metric_defaults` says otherwise.

    Example::

        from mint_envkit import Feedback, MultiTurnEnv

        class GuessEnv(MultiTurnEnv):
            success_metric = "solved"   # respond() logs metrics={"solved": 1.0} on a win

            async def respond(self, message):
                won = message["content"].strip() == "7"
                return Feedback(reward=float(won), done=won, metrics={"solved": float(won)})
    """

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

    audit_shortcut: ClassVar[str | None] = None
    """Why a trivial policy is meant to score well on this env, or None (default: it is
    not).

    The audit fails an env where a policy that never reads the question is right far
    more often than the prompt's choices allow by chance (a constant answer, an option
    by its position or length: a ``shortcut`` finding), or where the answer is written
    in the prompt outside the question (a system prompt, an earlier turn: a ``leak``
    finding). For a task where that is the point (copy a word, extract a span that the
    prompt shows), give the reason here: the audit then reports those as declared.

    Example::

        class CopyEnv(SingleTurnEnv):
            audit_shortcut = "the task is to copy the quoted word"
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        metric = vars(cls).get("success_metric")
        if metric is not None and (not isinstance(metric, str) or not metric.strip()):
            raise ConfigError(
                f"{cls.__name__}.success_metric must be the name of a metric the env logs "
                f"(a string such as 'solved'), or None for its 'correct'; got {metric!r}"
            )

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


_OWN = "_own_"
_UNSET = object()


def _shortcut(env: MessageEnv, name: str) -> Any:
    """``self.problem[name]`` for the ``answer`` and ``question`` shortcuts, or the error
    that names the fix."""
    own = vars(env).get(_OWN + name, _UNSET)
    if own is not _UNSET:
        return own
    cls = type(env).__name__
    problem = vars(env).get("problem")
    if isinstance(problem, Mapping):
        if name in problem:
            return problem[name]
        raise ProblemError(
            f"{cls}.{name}: the problem has no {name!r} field (its fields: "
            f"{sorted(map(str, problem))}); read the field you mean (self.problem[...]), or "
            f"declare {name!r} in {cls}.required_fields (or optional_fields, with a default)"
        )
    raise EnvError(
        f"{cls}.{name}: this env keeps no problem, and self.{name} reads "
        f"self.problem[{name!r}]; keep the problem's fields in self.problem (a dict) in "
        f"__init__, or set self.{name} = ... there"
    )


def reference_answer(env: Any) -> Any:
    """``env``'s reference answer, or None where it has none (no ``answer`` field, no
    problem): how the kit reads it, never raising.

    Example::

        from mint_envkit import SingleTurnEnv

        reference_answer(SingleTurnEnv(question="2 + 3?", answer="5"))   # '5'
        reference_answer(object())   # None
    """
    if not isinstance(env, MessageEnv):
        return None
    try:
        return env.answer
    except MintEnvkitError:
        return None


def success_name(env: Any) -> str:
    """The name of the metric that says an episode of ``env`` (an env or its class)
    succeeded: its :attr:`~MessageEnv.success_metric`, else ``correct``.

    Example::

        from mint_envkit import SingleTurnEnv

        success_name(SingleTurnEnv)   # 'correct'
    """
    cls = env if isinstance(env, type) else type(env)
    metric = cls.success_metric if issubclass(cls, MessageEnv) else None
    return metric or "correct"


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
