"""verifiers envs in our loop: :func:`from_verifiers` makes a DatasetBuilder of one.

`verifiers <https://github.com/PrimeIntellect-ai/verifiers>`_ (Prime Intellect's env hub)
writes an env as a dataset, a parser and a rubric of plain reward functions;
``vf.load_environment(env_id, **kwargs)`` imports an installed env's module and calls its
``load_environment``. :func:`from_verifiers` takes such an env (or its id) and returns a
:class:`~mint_envkit.DatasetBuilder` whose envs run it:

- each dataset row is a problem (its ``prompt``, system prompt and few-shot examples as
  verifiers built them, its ``answer``, ``info`` and other columns); an ``eval_dataset``
  is the test split;
- the reward is the rubric: one part per function with its weight
  (``reward/<function>`` metrics), each function called as the rubric calls it, on a
  verifiers ``State`` that the env's own methods keep (``init_state``, ``setup_state``,
  ``env_response``, the stop conditions, ``render_completion``); the total equals the
  rubric's score;
- the function that checks the answer (``answer_check``) gives ``correct``, and the
  rubric's parser (``parse_answer``) the parsed answer, so the audit, the answer
  figures and the baselines work;
- a single-turn env (``vf.SingleTurnEnv``, ``max_turns=1``) becomes a
  :class:`~mint_envkit.SingleTurnEnv`; a multi-turn one (``MultiTurnEnv``, ``ToolEnv``:
  its ``env_response`` answers each reply, its tools are listed to the chat template) a
  :class:`~mint_envkit.MultiTurnEnv` scored when the episode stops.

Only verifiers' classic envs (0.3.1, the last release with them) run: its v1
``Taskset x Harness`` stack (the only one in 0.4.0) runs the model inside a harness, which
our loop replaces. What is kept and lost is in docs/adapters.md.

Example::

    from datasets import Dataset
    import verifiers as vf

    from mint_envkit.adapters import from_verifiers
    from mint_envkit.rollouts import ScriptedPolicy

    parser = vf.XMLParser(["answer"], answer_field="answer")

    def correct_answer(parser, completion, answer):
        return float(parser.parse_answer(completion) == answer)

    vf_env = vf.SingleTurnEnv(
        dataset=Dataset.from_list([{"question": "What is 2 + 3?", "answer": "5"}]),
        system_prompt="Answer in <answer></answer> tags.",
        parser=parser,
        rubric=vf.Rubric(funcs=[correct_answer, parser.get_format_reward_func()],
                         weights=[1.0, 0.2], parser=parser),
    )
    builder = from_verifiers(vf_env, group_size=3, bounds={"correct_answer": (0, 1),
                                                           "format_reward_func": (0, 1)})
    group = ScriptedPolicy(["<answer>5</answer>", "<answer>7</answer>", "5"]).run_sync(
        builder).groups[0]
    assert [round(r, 6) for r in group.rewards] == [1.2, 0.2, 0.04]  # "5": partial format
    assert [m["correct"] for m in group.metrics] == [1.0, 0.0, 0.0]
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping
from typing import Any, ClassVar

import attrs

from mint_envkit.adapters.verifiers_episode import (
    STATE_KEY,
    Episode,
    answer_check_name,
    import_verifiers,
    rubric_parts,
    rubric_reward,
    to_ours,
    tool_specs,
)
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.envs.multi_turn import Feedback, MultiTurnEnv
from mint_envkit.envs.single_turn import SingleTurnEnv
from mint_envkit.errors import ConfigError, EnvError
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME
from mint_envkit.rewards import Reward, RewardContext


class _Verifiers:
    """What the single- and multi-turn classes share: the verifiers env, the row, the state."""

    verifiers_env: ClassVar[Any] = None
    columns: ClassVar[tuple[str, ...]] = ()
    model_name: ClassVar[str] = TINY_MODEL_NAME
    problem: dict[str, Any]

    def _row(self) -> dict[str, Any]:
        return {key: self.problem[key] for key in self.columns if key in self.problem}

    def _episode(self) -> Episode:
        episode = getattr(self, "_vf_episode", None)
        if episode is None:
            episode = Episode(self.verifiers_env, self._row(), self.model_name)
            self._vf_episode = episode
        return episode

    def tool_specs(self) -> list[dict[str, Any]] | None:
        """The tools the verifiers env lists (``tool_defs``), as the chat template takes them."""
        episode = getattr(self, "_vf_episode", None)
        if episode is not None and episode.state is not None:
            return episode.tool_specs()
        return tool_specs(getattr(self.verifiers_env, "tool_defs", None))

    def messages(self) -> list[Message]:
        """The row's prompt (system prompt and few-shot examples included), as ours."""
        return to_ours(self.problem["prompt"], "the row's prompt")


class VerifiersSingleTurnEnv(_Verifiers, SingleTurnEnv):
    """A single-turn verifiers env as a :class:`~mint_envkit.SingleTurnEnv`.

    :func:`from_verifiers` makes a subclass per verifiers env (its ``verifiers_env``,
    ``columns``, ``reward_fn``); write with that, not with this class.

    Example::

        issubclass(type(from_verifiers(vf_env).env(**{"prompt": [], "answer": "5"})),
                   VerifiersSingleTurnEnv)   # True
    """

    required_fields: ClassVar[tuple[str, ...]] = ("prompt",)

    async def initial_observation(self) -> list[Message]:
        """Start the verifiers episode (``init_state``, ``setup_state``); its prompt."""
        self._prompt = await self._episode().start()
        return [dict(m) for m in self._prompt]

    def reward_context(self, message: Message) -> RewardContext:
        """The usual context, the episode's verifiers state in its problem (:data:`STATE_KEY`)."""
        context = super().reward_context(message)
        episode = getattr(self, "_vf_episode", None)
        if episode is None or episode.state is None:
            return context
        return attrs.evolve(context, problem={**context.problem, STATE_KEY: episode.state})

    async def step(self, message: Message) -> MessageStepResult:
        """Record the reply in the verifiers state, render it, then score it with the rubric."""
        episode = self._episode()
        if episode.state is None:
            raise EnvError(f"{type(self).__name__}.step was called before initial_observation")
        if self._done:  # stepped twice: SingleTurnEnv.step says so, before the state moves
            return await super().step(message)
        try:
            follow = await episode.reply(message)
            if follow is not None:
                raise EnvError(
                    f"verifiers env {type(self.verifiers_env).__name__} answered a single-turn "
                    "reply; adapt it as a multi-turn env (its max_turns above 1)"
                )
            await episode.render()
            return await super().step(message)
        finally:
            await episode.close()

    async def abort(self) -> None:
        """The reply was cut off: run the verifiers cleanup handlers without scoring."""
        episode = getattr(self, "_vf_episode", None)
        if episode is not None:
            await episode.close()


class VerifiersMultiTurnEnv(_Verifiers, MultiTurnEnv):
    """A multi-turn verifiers env (``MultiTurnEnv``, ``ToolEnv``) as a :class:`~mint_envkit.MultiTurnEnv`.

    Each reply goes to the verifiers state; while no stop condition fires, the env's
    ``env_response`` is the next message(s). When it stops, the rubric scores the episode:
    its total is the last turn's reward (earlier turns earn 0), with the parts' metrics,
    ``correct`` and the parsed answer when the rubric has an answer check.

    Example::

        # not run: `vf_multi_env` is a verifiers MultiTurnEnv
        builder = from_verifiers(vf_multi_env)
        issubclass(builder.env, VerifiersMultiTurnEnv)   # True
    """

    required_fields: ClassVar[tuple[str, ...]] = ("prompt",)
    verifiers_reward: ClassVar[Reward | None] = None

    @property
    def answer(self) -> Any:
        """The row's reference answer (None without one)."""
        return self.problem.get("answer")

    def check(self, parsed: str, answer: Any) -> bool | None:
        """The baselines' check: a parsed answer equals the reference (numbers by value)."""
        from mint_envkit.rewards.parts import default_check

        return None if answer is None else default_check(parsed, answer)

    async def setup(self) -> None:
        self._opening = await self._episode().start()

    def messages(self) -> list[Message]:
        opening = getattr(self, "_opening", None)
        return [dict(m) for m in opening] if opening is not None else super().messages()

    async def respond(self, message: Message) -> Feedback:
        episode = self._episode()
        follow = await episode.reply(message)
        if follow is not None:
            return Feedback(reply=follow or None)
        await episode.render()
        content = message.get("content")
        context = RewardContext(
            problem={**self.problem, STATE_KEY: episode.state},
            prompt=self._prompt,
            conversation=self.conversation,
            completion=content if isinstance(content, str) else "",
            thinking=message.get("thinking"),
            answer=self.answer,
        )
        reward = type(self).verifiers_reward
        assert reward is not None
        scored = await reward.score_async(context.completion, self.answer, context)
        metrics = dict(scored.metrics)
        logs: dict[str, Any] = dict(scored.logs)
        if scored.correct is not None and self.answer is not None:
            metrics["correct"] = float(scored.correct)
            metrics["parsed"] = float(bool(scored.parse))
            logs["parse_status"] = scored.parse.status if scored.parse else None
            logs["parsed"] = scored.parse.value if scored.parse else None
            logs["answer"] = str(self.answer)
        logs["stop_condition"] = episode.state.get("stop_condition")
        return Feedback(reward=scored.total, done=True, metrics=metrics, logs=logs)

    async def teardown(self) -> None:
        episode = getattr(self, "_vf_episode", None)
        if episode is not None:
            await episode.close()


@contextlib.contextmanager
def _quiet_datasets() -> Iterator[None]:
    """No ``datasets`` progress bars while verifiers builds its datasets (``Map: 100%...``)."""
    try:
        import datasets
    except ImportError:  # an env without Hugging Face datasets
        yield
        return
    quiet = datasets.are_progress_bars_disabled()
    datasets.disable_progress_bars()
    try:
        yield
    finally:
        if not quiet:
            datasets.enable_progress_bars()


def _load(env: Any, env_args: Mapping[str, Any] | None) -> Any:
    vf = import_verifiers()
    if isinstance(env, str):
        try:
            return vf.load_environment(env, **dict(env_args or {}))
        except (ValueError, RuntimeError) as err:
            raise ConfigError(
                f"verifiers could not load the env {env!r}: {err}; install its package into "
                "this Python (an env id names its module: 'vf-math' is vf_math) and check "
                "env_args against its load_environment"
            ) from err
    if env_args:
        raise ConfigError("env_args go with an env id; an env object is already built")
    if not isinstance(env, vf.Environment):
        kind = type(env).__module__ + "." + type(env).__qualname__
        hint = (
            "verifiers' v1 Taskset x Harness envs run the model in a harness, which our loop "
            "replaces, so they are not adapted; "
            if ".v1." in kind
            else ""
        )
        raise ConfigError(
            f"from_verifiers needs a verifiers env (vf.SingleTurnEnv, vf.MultiTurnEnv, "
            f"vf.ToolEnv, ...) or an installed env's id, got {kind}; {hint}see docs/adapters.md"
        )
    return env


def _rows(dataset: Any, columns: set[str]) -> list[dict[str, Any]]:
    """The dataset's rows as problems (``columns`` collects their own keys); a row without
    a ``question`` gets its prompt's last user message as one (the audit reads it)."""
    rows = []
    for row in dataset:
        row = dict(row)
        columns.update(row)
        if "question" not in row:
            users = [m for m in row.get("prompt") or [] if m.get("role") == "user"]
            row["question"] = str(users[-1].get("content", "")) if users else ""
        rows.append(row)
    return rows


def _splits(vf_env: Any) -> tuple[list[dict], list[dict] | None, set[str]]:
    """The train rows, the eval rows (None without an eval dataset), and their columns."""
    columns: set[str] = set()
    train = _rows(vf_env.get_dataset(), columns) if vf_env.dataset_source is not None else []
    test = None
    if vf_env.eval_dataset_source is not None:
        test = _rows(vf_env.build_eval_dataset(), columns)
    if not train:  # an eval-only env: its eval rows are the problems
        train, test = list(test or []), None
    return train, test, columns


def _class_name(env: Any, vf_env: Any) -> str:
    """``vf-tiny-math`` -> ``VfTinyMathEnv``; an env object without an id -> ``Adapted<its class>``."""
    label = env if isinstance(env, str) else vf_env.env_id
    if not label:
        return f"Adapted{type(vf_env).__name__}"
    words = re.findall(r"[A-Za-z0-9]+", label)
    return "".join(w[:1].upper() + w[1:] for w in words) + "Env"


def from_verifiers(
    env: Any,
    *,
    env_args: Mapping[str, Any] | None = None,
    answer_check: str | None = "auto",
    bounds: Mapping[str, tuple[float, float]] | None = None,
    max_turns: int = 10,
    model_name: str = TINY_MODEL_NAME,
    batch_size: int = 4,
    group_size: int = 4,
    **builder_options: Any,
) -> DatasetBuilder:
    """A DatasetBuilder of a verifiers env: its rows, its rubric as the reward, its turns.

    Args:
        env: a verifiers env (``vf.SingleTurnEnv``, ``vf.MultiTurnEnv``, ``vf.ToolEnv``...)
            or an installed env's id (``vf.load_environment(env, **env_args)``).
        env_args: the id's ``load_environment`` keyword arguments.
        answer_check: the rubric function that checks the answer (its 1.0 is ``correct``);
            ``"auto"`` takes the one function of positive weight with an ``answer``
            parameter, when there is exactly one; None for none (no ``correct``).
        bounds: ``{function name: (lowest, highest)}``, what each function can return;
            with every function's bounds the ordering rule is checked (otherwise the
            env class warns that it cannot be), and a value outside is a ConfigError.
        max_turns: the turn cap of a multi-turn env whose own ``max_turns`` is unbounded.
        model_name, batch_size, group_size, builder_options: the DatasetBuilder's
            (``seed``, ``test_fraction``, ``max_generation_tokens``...); the env's
            ``sampling_args["max_tokens"]`` is the default reply limit.

    Raises:
        MissingExtraError: verifiers is not installed.
        ConfigError: not a classic verifiers env, an id that does not load, a group reward
            function, an ``answer_check`` or ``bounds`` naming no function.

    Example::

        builder.env.scoring.reward.name, len(builder.problems)   # ('rubric', 1)
    """
    with _quiet_datasets():
        vf_env = _load(env, env_args)
        train, test, columns = _splits(vf_env)
    label = env if isinstance(env, str) else (vf_env.env_id or type(vf_env).__name__)
    parts = rubric_parts(vf_env.rubric)
    if not parts:
        raise ConfigError(f"the verifiers env {label!r} has no rubric functions to reward with")
    check = answer_check_name(parts, answer_check)
    reward = rubric_reward(parts, check, dict(bounds or {}))
    optional = {key: None for key in sorted(columns | {"question"}) if key != "prompt"}
    single = getattr(vf_env, "max_turns", 1) == 1
    namespace: dict[str, Any] = {
        "verifiers_env": vf_env,
        "columns": tuple(sorted(columns)),
        "model_name": model_name,
        "optional_fields": optional,
        "__module__": __name__,
        "__doc__": f"The verifiers env {label!r}, adapted by from_verifiers.",
    }
    if single:
        namespace["reward_fn"] = reward
        base: type = VerifiersSingleTurnEnv
    else:
        turns = vf_env.max_turns if vf_env.max_turns and vf_env.max_turns > 0 else max_turns
        namespace.update(verifiers_reward=reward, max_turns=turns)
        base = VerifiersMultiTurnEnv
    env_class = type(_class_name(env, vf_env), (base,), namespace)
    sampling = getattr(vf_env, "sampling_args", None) or {}
    if isinstance(sampling.get("max_tokens"), int) and sampling["max_tokens"] > 0:
        builder_options.setdefault("max_generation_tokens", sampling["max_tokens"])
    return DatasetBuilder(
        env=env_class,
        problems=train,
        test_problems=test,
        model_name=model_name,
        batch_size=batch_size,
        group_size=group_size,
        **builder_options,
    )
