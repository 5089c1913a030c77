"""The scripted check of an env (``mint-envkit check``), and its golden records.

Each group of batch 0 runs through :class:`~mint_envkit.ScriptedPolicy` (the given
scripts, or a reply the env scores correct, a wrong one and an unparsable one):
:func:`check` prints the rendered prompt, each reply's reward, parse status and
metrics, and for multi-turn envs the transcript and the prefix check
(:mod:`mint_envkit.rollouts.inspect` measures them); with ``record`` it saves the
episodes as golden transcripts (:mod:`mint_envkit.replay.golden`), and with ``local``
it also samples one group from the tiny model. :func:`golden_records` records the same
episodes for a builder of number answers (``mint-envkit init``'s package).

Example::

    # not run: prints the check of an env class from a file
    code = await check("examples/arithmetic_env.py:ArithmeticEnv",
                       problems=[{"question": "What is 2 + 3?", "answer": "5"}])
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.rendering.chat_template import default_renderer_for
from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME
from mint_envkit.replay.golden import episode_records, fingerprint, write_golden
from mint_envkit.rollouts.game_moves import is_game
from mint_envkit.rollouts.inspect import (
    game_lines,
    group_lines,
    prefix_report,
    prompt_lines,
    reference_reply,
    renderer_label,
    transcript_lines,
)
from mint_envkit.rollouts.judging import answer_forms
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import GroupReport, ScriptedPolicy

DEFAULT_GROUPS = 3
"""Groups of batch 0 a check runs (and ``mint-envkit init`` records)."""

DEFAULT_MODEL = TINY_MODEL_NAME
"""The tokenizer's model when an env class is checked without one."""

UNPARSABLE = "I am not sure."
"""The reply with no answer in it (a check's third scripted reply)."""


def wrong_reply(answer: Any) -> str:
    """A wrong number for ``answer``: ``"0"``, or ``"1"`` when the answer is 0.

    Example::

        wrong_reply("5"), wrong_reply(0)   # ('0', '1')
    """
    return "1" if str(answer) == "0" else "0"


def _say(lines: Sequence[str]) -> None:
    print("\n".join(lines))


def check_builder(
    target: Any,
    spec: str,
    *,
    problems: Sequence[dict[str, Any]] | None,
    renderer_name: str,
    renderer_given: bool,
    group_size: int,
    group_size_given: bool,
    model_name: str | None,
) -> DatasetBuilder:
    """The builder a check runs: a DatasetBuilder ``target`` with the given renderer and
    group size, or one made of an env class (or factory) and ``problems``.

    Raises:
        MintEnvkitError: ``target`` is neither, or an env class comes without problems.

    Example::

        from mint_envkit import SingleTurnEnv

        builder = check_builder(SingleTurnEnv, "SingleTurnEnv",
                                problems=[{"question": "2 + 3?", "answer": "5"}],
                                renderer_name="qwen3", renderer_given=False,
                                group_size=3, group_size_given=False, model_name=None)
        builder.group_size   # 3
    """
    if isinstance(target, DatasetBuilder):
        changes: dict[str, Any] = {"renderer_name": renderer_name} if renderer_given else {}
        if group_size_given:  # --group-size holds for a builder too
            changes["group_size"] = group_size
        return attrs.evolve(target, **changes) if changes else target
    if not callable(target):  # an env class or an env factory (**problem) -> MessageEnv
        raise MintEnvkitError(f"{spec} is neither an env class nor a DatasetBuilder")
    if not problems:
        raise MintEnvkitError(
            "checking an env class needs at least one --problem JSON, e.g. "
            '--problem \'{"question": "What is 2 + 3?", "answer": "5"}\''
        )
    return DatasetBuilder(
        env=target,
        problems=list(problems),
        batch_size=len(problems),
        group_size=group_size,
        model_name=model_name or DEFAULT_MODEL,
        renderer_name=renderer_name,
        shuffle=False,
    )


async def check(
    spec: str,
    *,
    env_args: Mapping[str, Any] | None = None,
    scripts: Sequence[str | list[str]] = (),
    problems: Sequence[dict[str, Any]] | None = None,
    groups: int | None = None,
    group_size: int | None = None,
    model_name: str | None = None,
    renderers: Sequence[str] | None = None,
    record: str | Path | None = None,
    local: bool = False,
    max_tokens: int = 32,
) -> int:
    """Check the env or builder ``spec`` names, printing what it does; 1 when a group
    failed (an error, a hidden tool, a broken prefix or game ordering), else 0.

    Raises:
        MintEnvkitError: more scripts than envs in a group, or a bad target
            (:func:`check_builder`).

    Example::

        # not run: prints the check of an env class from a file
        await check("examples/arithmetic_env.py:ArithmeticEnv", scripts=["5", "7"],
                    problems=[{"question": "What is 2 + 3?", "answer": "5"}])
    """
    target = load_target(spec, env_args=env_args)
    size = group_size or max(3, len(scripts))
    if scripts and len(scripts) > size:
        raise MintEnvkitError(
            f"{len(scripts)} --reply scripts but --group-size {size}: every reply runs "
            f"in its own env, so the last {len(scripts) - size} would never run; raise "
            f"--group-size to {len(scripts)} or drop replies"
        )
    failures = 0
    checked: list[GroupBuilder] = []
    records: list[dict[str, Any]] | None = [] if record is not None else None
    default = (
        target.renderer_name
        if isinstance(target, DatasetBuilder)
        else default_renderer_for(model_name or DEFAULT_MODEL)
    )
    for renderer_name in renderers or [default]:
        builder = check_builder(
            target,
            spec,
            problems=problems,
            renderer_name=renderer_name,
            renderer_given=bool(renderers),
            group_size=size,
            group_size_given=group_size is not None,
            model_name=model_name,
        )
        if isinstance(target, DatasetBuilder) and scripts and len(scripts) > builder.group_size:
            raise MintEnvkitError(
                f"{len(scripts)} --reply scripts but the DatasetBuilder's group_size is "
                f"{builder.group_size}; give at most {builder.group_size} replies"
            )
        train, _ = await builder()
        checked = train.get_batch(0)[: groups or DEFAULT_GROUPS]
        for group in checked:
            failures += await check_group(group, list(scripts), renderer_name, records)
    if records is not None and not records:
        print(f"nothing recorded to {record}: no group ran to the end")
    elif records is not None:
        produced_by = await fingerprint(target)
        write_golden(str(record), target=spec, records=records, produced_by=produced_by)
        print(
            f"recorded {len(records)} transcript(s) to {record} "
            f"(re-score them with: mint-envkit check --replay {record})"
        )
    if local:
        failures += await check_local(checked[0], max_tokens)
    return 1 if failures else 0


async def check_group(
    group: GroupBuilder,
    scripts: list[Any],
    renderer_name: str,
    records: list[dict[str, Any]] | None = None,
) -> int:
    """Check one group, printing what it did; 1 when it failed, else 0. Its episodes are
    added to ``records`` (golden records) when given.

    Example::

        # not run: `group` is a GroupBuilder of batch 0
        await check_group(group, [], "qwen3")
    """
    renderer = group.renderer()
    reference = None
    env_class = None
    try:
        envs = await group.make_envs()
        env_class = type(envs[0].message_env)
        messages = await envs[0].initial_messages_async()
        tools = envs[0].tools
        hidden = renderer.hidden_tools(messages, tools) if tools else []
        if hidden:
            for env in envs:
                await env.message_env.abort()
            print(f"--- group {group.index}")
            _say(prompt_lines(renderer, renderer.prompt_text(messages, tools), []))
            print(
                f"FAILED: the tools {hidden} of env {env_class.__name__} are not visible in "
                f"the prompt rendered by renderer {renderer_label(renderer)!r} (the model "
                "could never call them); use a model whose chat template shows a system "
                "message, or another renderer"
            )
            return 1
        prompt = renderer.tokenizer.decode(renderer.render_tokens(messages, tools))
        names = [str(t.get("function", t).get("name", "")) for t in tools or []]
        for env in envs:
            await env.message_env.abort()
        replies = scripts
        if not replies:
            reference = await reference_reply(group)
            wrong = wrong_reply(group.problem.get("answer"))
            replies = [*([reference] if reference else []), wrong, UNPARSABLE]
    except Exception as err:  # the user's env: report it, check the other groups
        kind = "" if isinstance(err, MintEnvkitError) else f"{type(err).__name__}: "
        env = f"env {env_class.__name__}, " if env_class else ""
        print(f"--- group {group.index}\nERROR: {kind}{err} ({env}renderer {renderer_name!r})")
        return 1
    rollout = (await rollout_groups([group], ScriptedPolicy(replies)))[0]
    report = GroupReport.from_rollout(rollout)
    _say(group_lines(report, renderer, prompt, names))
    scoring = getattr(env_class, "scoring", None)  # how an answer-scoring env scores
    if scoring is not None and group.index == 0:
        print("  " + str(scoring).replace("\n", "\n  "))
    broken = 0
    if env_class is not None and is_game(env_class):
        lines, held = await game_lines(group, env_class)
        if group.index == 0 or not held:
            _say(["  " + line for line in lines])
        broken = int(not held)
    if records is not None:
        if rollout.error:
            print(f"  not recorded: group {group.index} failed")
        else:
            records.extend(episode_records(group, rollout, replies, env_class))
    if not scripts:
        _say(_reference_lines(group, reference, env_class))
    if report.error:
        return 1
    if all(len(t.transitions) == 1 for t in rollout.trajectories):
        return broken
    _say(transcript_lines(rollout, renderer))
    bad = 0
    for index, ok, count in prefix_report(rollout):
        verdict = "ok" if ok else "FAILED"
        print(
            f"  prefix check [{renderer_label(renderer)}] env {index}: {verdict} "
            f"({count} observation(s), each extends the previous + its sampled tokens)"
        )
        bad += not ok
    return 1 if bad or broken else 0


def _reference_lines(group: GroupBuilder, reference: str | None, env_class: Any) -> list[str]:
    """What a check says of the reference reply it found, or why there is none."""
    answer = group.problem.get("answer")
    if reference:
        return [f"  reference reply (the env scores it correct): {reference!r}"]
    if answer is None:
        return ["  no reference reply: the problem has no 'answer'"]
    if env_class is not None and is_game(env_class) and not env_class.success_metric:
        return [
            f"  no reference reply: none of {answer_forms(answer)} logs 'correct' = 1 "
            f"(a game: declare {env_class.__name__}.success_metric, the metric it logs "
            "1.0 on a win)"
        ]
    return [f"  no reference reply: none of {answer_forms(answer)} scores as correct"]


async def check_local(group: GroupBuilder, max_tokens: int) -> int:
    """Sample ``group`` once from its model on the embedded backend and print it; 1 when
    it failed.

    Example::

        # not run: starts the embedded backend and loads the model
        await check_local(group, max_tokens=32)
    """
    import mint

    from mint_envkit.rollouts.backend import close_session, local_api_key, local_backend
    from mint_envkit.rollouts.sampler import ClientSampler

    print(f"--- one group through {group.model_name} on the embedded backend")
    async with local_backend([group.model_name]) as base_url:
        service = await asyncio.to_thread(
            mint.ServiceClient, base_url=base_url, api_key=local_api_key()
        )
        try:  # the session's heartbeat would warn every 10 s once the server is gone
            client = await service.create_sampling_client_async(base_model=group.model_name)
            sampler = ClientSampler(client, max_tokens=max_tokens)
            rollouts = await rollout_groups([group], sampler)
        finally:
            close_session(service)
    report = GroupReport.from_rollout(rollouts[0])
    _say(group_lines(report, group.renderer(), None))
    return 1 if report.error else 0


async def golden_records(builder: DatasetBuilder) -> list[dict[str, Any]]:
    """The episodes a check runs on a builder of number answers, as golden records: the
    first groups of batch 0, each given the answer, a wrong one and no answer.

    Raises:
        MintEnvkitError: a group failed, or its answer does not score correct (the
            scaffold's env must pass its own check).

    Example::

        # not run: `builder` is the scaffold's load_environment()
        records = await golden_records(builder)
        [r["replies"] for r in records[:3]]   # [['180'], ['0'], ['I am not sure.']]
    """
    train, _ = await builder()
    records: list[dict[str, Any]] = []
    for group in train.get_batch(0)[:DEFAULT_GROUPS]:
        answer = str(group.problem["answer"])
        replies = [answer, wrong_reply(answer), UNPARSABLE]
        rollout = (await rollout_groups([group], ScriptedPolicy(replies)))[0]
        if rollout.error is not None:
            raise MintEnvkitError(
                f"the scaffold's env failed on group {group.index}: {rollout.error}"
            )
        episodes = episode_records(group, rollout, replies, builder.env)
        if episodes[0]["correct"] != 1.0:
            raise MintEnvkitError(
                f"the scaffold's env does not score its answer {answer!r} correct "
                f"(group {group.index}: {episodes[0]['parse_status']})"
            )
        records.extend(episodes)
    return records
