"""``mint-envkit check``: run an env or a DatasetBuilder offline and show what it does.

Each group of batch 0 runs through :class:`~mint_envkit.ScriptedPolicy` (the given
``--reply`` scripts, or a reply the env scores correct, a wrong one and an
unparsable one): the command prints the rendered prompt, each reply's reward,
parse status and metrics, and for multi-turn envs the transcript and the prefix
check. ``--local`` also samples one group from the tiny model.
``--record FILE`` saves the episodes as golden transcripts and ``--replay FILE``
re-scores them (:mod:`mint_envkit.replay.golden`).

Example (shell)::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}' --record golden.jsonl
    mint-envkit check --replay golden.jsonl
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.cli.command import add_env_args
from mint_envkit.cli.deadline import Deadline, add_timeout, check_timeout, load_env_target
from mint_envkit.envs.base import success_name
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.rendering.chat_template import default_renderer_for
from mint_envkit.replay.golden import episode_records, fingerprint, replay_golden, write_golden
from mint_envkit.rollouts.game_moves import is_game
from mint_envkit.rollouts.game_policies import game_ordering
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import GroupReport, ScriptedPolicy
from mint_envkit.rollouts.types import GroupRollout

DEFAULT_GROUPS = 3
DEFAULT_MODEL = "mint-envkit/tiny-qwen3"


def _answer_forms(answer: Any) -> list[str]:
    a = str(answer)
    return [a, f"\\boxed{{{a}}}", f"<answer>{a}</answer>", f"The answer is {a}.", f"Answer: {a}"]


async def _reference_reply(group: GroupBuilder) -> str | None:
    """The first usual form of the problem's answer that the env scores as correct.

    Each form runs through a fresh env of the group (rendered, parsed, scored),
    and counts when the env reports its success metric (``correct``, or a game's
    declared ``success_metric``) = 1 after that one reply. None when the problem has
    no ``answer`` or no form scores as correct.
    """
    answer = group.problem.get("answer")
    if answer is None:
        return None
    for text in _answer_forms(answer):
        env = (await group.make_envs())[0]
        success = success_name(env.message_env)
        await env.initial_observation()
        tokens = env.renderer.tokenizer.encode(text, add_special_tokens=False)
        stop = env.renderer.get_stop_sequences()[0]
        result = await env.step([*tokens, stop], extra={"stop_reason": "stop"})
        if result.episode_done and result.metrics.get(success) == 1.0:
            return text
        await env.message_env.abort()
    return None


async def _game_lines(group: GroupBuilder, env_class: type) -> tuple[list[str], bool]:
    """How a game scores, and its ordering rule measured by playing; (lines, held)."""
    success = env_class.success_metric
    said = (
        f"success metric {success!r}"
        if success
        else "no success_metric declared (set success_metric = 'solved', the metric the env "
        "logs 1.0 on a win, so checks, baselines and claims can tell a won game)"
    )
    lines = [
        f"{env_class.__name__} plays a game turn by turn (respond); {said}",
        f"  out of turns {env_class.max_turns_reward} (max_turns_reward, after "
        f"{env_class.max_turns} turns), cut off at the reply limit "
        f"{group.context_overflow_reward}, no stop token {group.failed_parse_reward}",
    ]
    ordering = await game_ordering(group)
    lines += ["  " + line for line in ordering.lines()]
    return lines, ordering.held is not False


def _script(text: str) -> str | list[str]:
    """A ``--reply`` value: a reply text, or a JSON list of texts (one per turn)."""
    if text.lstrip().startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as err:
            raise MintEnvkitError(
                f"--reply {text!r} looks like a JSON list but is not: {err}"
            ) from None
        if not value or not all(isinstance(t, str) for t in value):
            raise MintEnvkitError(f"--reply {text!r}: a per-turn script is a list of strings")
        return value
    return text


def _print_transcript(rollout: GroupRollout, renderer: Any) -> None:
    """Every env's episode as the model saw it: each sampled reply and what the env added."""
    decode = renderer.tokenizer.decode
    for index, trajectory in enumerate(rollout.trajectories):
        print(f"  env {index} transcript:")
        steps = trajectory.transitions
        for turn, step in enumerate(steps):
            print(f"    [turn {turn + 1}] assistant: {decode(step.ac.tokens)!r}")
            if turn + 1 < len(steps):
                seen = len(step.ob) + len(step.ac.tokens)
                print(f"    [turn {turn + 1}] env: {decode(steps[turn + 1].ob[seen:])!r}")


def prefix_report(rollout: GroupRollout) -> list[tuple[int, bool, int]]:
    """Per env of a rollout: (env index, every observation extends the previous one
    followed by its sampled tokens, number of observations).

    Example::

        prefix_report(rollout)  # [(0, True, 3), (1, True, 1)]
    """
    out = []
    for index, trajectory in enumerate(rollout.trajectories):
        steps = trajectory.transitions
        ok = all(
            after.ob[: len(before.ob) + len(before.ac.tokens)] == [*before.ob, *before.ac.tokens]
            for before, after in itertools.pairwise(steps)
        )
        out.append((index, ok, len(steps)))
    return out


_TOKEN_ENV_FLAGS = ("truncated", "parse_error", "context_overflow")


def _renderer_label(renderer: Any) -> str:
    """Which renderer rendered, and over whose chat template when that could mislead.

    The ``qwen3`` renderers render with the tokenizer's own template: over a
    template that is not Qwen3's (no ``<think>`` in it, e.g. SmolLM2's ChatML) the
    prompt is that template's text, and the label says so.

    Example::

        _renderer_label(get_renderer("qwen3", "mint-envkit/tiny-qwen3"))  # 'qwen3'
        _renderer_label(get_renderer("qwen3", "mint-envkit/smollm2-135m-instruct"))
        # "qwen3 over the chat template of 'SmolLM2-...', not a Qwen3 template"
    """
    template = getattr(renderer.tokenizer, "chat_template", None) or ""
    if renderer.name.startswith("qwen3") and "<think>" not in str(template):
        model = Path(str(getattr(renderer.tokenizer, "name_or_path", "?"))).name
        return f"{renderer.name} over the chat template of {model!r}, not a Qwen3 template"
    return str(renderer.name)


def _print_prompt(renderer: Any, text: str, tools: list[str]) -> None:
    """The rendered prompt, which renderer and template wrote it, and where the tools went."""
    print("rendered prompt:")
    print("  " + text.replace("\n", "\n  "))
    model = getattr(renderer.tokenizer, "name_or_path", "?")
    where = ""
    if tools:  # an env without tools: nothing to say about where tools go
        where = "; " + (
            "tools go to the template's tools slot"
            if renderer.tools_in_template
            else "the template has no tools slot: the renderer writes tools into the system message"
        )
    print(f"  (rendered by renderer {renderer.name!r} with the chat template of {model!r}{where})")
    label = _renderer_label(renderer)
    if label != renderer.name:
        print(f"  (note: renderer {label}; the prompt above is that template's text)")
    if tools:
        print(f"  tools visible in the prompt: {', '.join(tools)}")


def _print_group(
    report: GroupReport, renderer: Any, prompt: str | None, tools: list[str] | None = None
) -> None:
    print(f"--- group {report.index}")
    if prompt is not None:
        _print_prompt(renderer, prompt, tools or [])
    if report.error:
        print(f"ERROR: {report.error}")
        return
    for reply, reward, logs, metrics in zip(
        report.replies, report.rewards, report.logs, report.metrics, strict=True
    ):
        # an env whose reward checks no answer logs parse_status None
        status = logs.get("parse_status") or logs.get("end") or "-"
        # the env's metrics, zeros too (a wrong reply: correct 0.0); the token env's flags when set
        shown = {k: v for k, v in metrics.items() if v or k not in _TOKEN_ENV_FLAGS}
        print(f"  reply {reply!r:30.30} reward {reward:+.3f}  parse {status:<14} {shown}")


def _builder(target: Any, args: argparse.Namespace, renderer: str, group_size: int) -> Any:
    if isinstance(target, DatasetBuilder):
        changes: dict[str, Any] = {"renderer_name": renderer} if args.renderer else {}
        if args.group_size is not None:  # --group-size holds for a builder too
            changes["group_size"] = args.group_size
        return attrs.evolve(target, **changes) if changes else target
    if not callable(target):  # an env class or an env factory (**problem) -> MessageEnv
        raise MintEnvkitError(f"{args.target} is neither an env class nor a DatasetBuilder")
    if not args.problem:
        raise MintEnvkitError(
            "checking an env class needs at least one --problem JSON, e.g. "
            '--problem \'{"question": "What is 2 + 3?", "answer": "5"}\''
        )
    problems = []
    for text in args.problem:
        try:
            problems.append(json.loads(text))
        except json.JSONDecodeError as err:
            raise MintEnvkitError(f"--problem {text!r} is not JSON: {err}") from None
    return DatasetBuilder(
        env=target,
        problems=problems,
        batch_size=len(problems),
        group_size=group_size,
        model_name=args.model or DEFAULT_MODEL,
        renderer_name=renderer,
        shuffle=False,
    )


async def _check(args: argparse.Namespace) -> int:
    target = load_target(args.target, env_args=args.env_args)
    scripts = [_script(text) for text in args.reply or []]
    group_size = args.group_size or max(3, len(scripts))
    if scripts and len(scripts) > group_size:
        raise MintEnvkitError(
            f"{len(scripts)} --reply scripts but --group-size {group_size}: every reply runs "
            f"in its own env, so the last {len(scripts) - group_size} would never run; raise "
            f"--group-size to {len(scripts)} or drop replies"
        )
    failures = 0
    groups: list[GroupBuilder] = []
    records: list[dict[str, Any]] | None = [] if args.record is not None else None
    default = (
        target.renderer_name
        if isinstance(target, DatasetBuilder)
        else default_renderer_for(args.model or DEFAULT_MODEL)
    )
    for renderer_name in args.renderer or [default]:
        builder = _builder(target, args, renderer_name, group_size)
        if isinstance(target, DatasetBuilder) and scripts and len(scripts) > builder.group_size:
            raise MintEnvkitError(
                f"{len(scripts)} --reply scripts but the DatasetBuilder's group_size is "
                f"{builder.group_size}; give at most {builder.group_size} replies"
            )
        train, _ = await builder()
        groups = train.get_batch(0)[: args.groups or DEFAULT_GROUPS]
        for group in groups:
            failures += await _check_group(group, scripts, renderer_name, records)
    if records is not None and not records:
        print(f"nothing recorded to {args.record}: no group ran to the end")
    elif records is not None:
        produced_by = await fingerprint(target)
        write_golden(args.record, target=args.target, records=records, produced_by=produced_by)
        print(
            f"recorded {len(records)} transcript(s) to {args.record} "
            f"(re-score them with: mint-envkit check --replay {args.record})"
        )
    if args.local:
        failures += await _check_local(groups[0], args)
    return 1 if failures else 0


async def _check_group(
    group: GroupBuilder,
    scripts: list[Any],
    renderer_name: str,
    records: list[dict[str, Any]] | None = None,
) -> int:
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
            _print_prompt(renderer, renderer.prompt_text(messages, tools), [])
            print(
                f"FAILED: the tools {hidden} of env {env_class.__name__} are not visible in "
                f"the prompt rendered by renderer {_renderer_label(renderer)!r} (the model "
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
            reference = await _reference_reply(group)
            wrong = "1" if str(group.problem.get("answer")) == "0" else "0"
            replies = [*([reference] if reference else []), wrong, "I am not sure."]
    except Exception as err:  # the user's env: report it, check the other groups
        kind = "" if isinstance(err, MintEnvkitError) else f"{type(err).__name__}: "
        env = f"env {env_class.__name__}, " if env_class else ""
        print(f"--- group {group.index}\nERROR: {kind}{err} ({env}renderer {renderer_name!r})")
        return 1
    rollout = (await rollout_groups([group], ScriptedPolicy(replies)))[0]
    report = GroupReport.from_rollout(rollout)
    _print_group(report, renderer, prompt, names)
    scoring = getattr(env_class, "scoring", None)  # how an answer-scoring env scores
    if scoring is not None and group.index == 0:
        print("  " + str(scoring).replace("\n", "\n  "))
    broken = 0
    if env_class is not None and is_game(env_class):
        lines, held = await _game_lines(group, env_class)
        if group.index == 0 or not held:
            print("\n".join("  " + line for line in lines))
        broken = int(not held)
    if records is not None:
        if rollout.error:
            print(f"  not recorded: group {group.index} failed")
        else:
            records.extend(episode_records(group, rollout, replies, env_class))
    if not scripts:
        answer = group.problem.get("answer")
        if reference:
            print(f"  reference reply (the env scores it correct): {reference!r}")
        elif answer is None:
            print("  no reference reply: the problem has no 'answer'")
        elif env_class is not None and is_game(env_class) and not env_class.success_metric:
            print(
                f"  no reference reply: none of {_answer_forms(answer)} logs 'correct' = 1 "
                f"(a game: declare {env_class.__name__}.success_metric, the metric it logs "
                "1.0 on a win)"
            )
        else:
            print(f"  no reference reply: none of {_answer_forms(answer)} scores as correct")
    if report.error:
        return 1
    if all(len(t.transitions) == 1 for t in rollout.trajectories):
        return broken
    _print_transcript(rollout, renderer)
    bad = 0
    for index, ok, count in prefix_report(rollout):
        verdict = "ok" if ok else "FAILED"
        print(
            f"  prefix check [{_renderer_label(renderer)}] env {index}: {verdict} "
            f"({count} observation(s), each extends the previous + its sampled tokens)"
        )
        bad += not ok
    return 1 if bad or broken else 0


async def _check_local(group: GroupBuilder, args: argparse.Namespace) -> int:
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
            sampler = ClientSampler(client, max_tokens=args.max_tokens)
            rollouts = await rollout_groups([group], sampler)
        finally:
            close_session(service)
    report = GroupReport.from_rollout(rollouts[0])
    _print_group(report, group.renderer(), None)
    return 1 if report.error else 0


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit check"))
    """
    parser.description = (
        "Run an env class or a DatasetBuilder through ScriptedPolicy (no model, "
        "no account) and print prompts, replies, parse status and rewards; record the "
        "episodes as golden transcripts, or replay a golden file and report what changed."
    )
    parser.add_argument(
        "target",
        nargs="?",
        help="MODULE:NAME, path/to/file.py:NAME or an installed env's name (mint-envkit list); "
        "with --replay: instead of the file's own",
    )
    add_env_args(parser)
    parser.add_argument("--problem", action="append", help="a problem as JSON (env classes)")
    parser.add_argument(
        "--reply",
        action="append",
        help="one env's scripted reply (repeatable, one env each): a text given at every "
        'turn, or a JSON list of texts, one per turn (\'["<tool_call>...", "5"]\')',
    )
    parser.add_argument(
        "--groups",
        type=int,
        default=None,
        help=f"groups of batch 0 to show (default {DEFAULT_GROUPS})",
    )
    parser.add_argument(
        "--group-size", type=int, default=None, help="envs per group (default: max(3, replies))"
    )
    parser.add_argument(
        "--model",
        default=None,
        help=f"model of the tokenizer (env classes; default {DEFAULT_MODEL})",
    )
    parser.add_argument(
        "--renderer", action="append", help="renderer to check with (repeatable; default qwen3)"
    )
    parser.add_argument("--local", action="store_true", help="also sample one group locally")
    parser.add_argument("--max-tokens", type=int, default=32)
    add_timeout(parser)
    golden = parser.add_mutually_exclusive_group()
    golden.add_argument(
        "--record",
        metavar="FILE",
        help="save every scripted episode (problem, replies, conversation, reward, correct, "
        "parse status, metrics) to FILE as JSON lines: golden transcripts (--local's "
        "sampled group is not recorded)",
    )
    golden.add_argument(
        "--replay",
        metavar="FILE",
        help="re-score FILE's transcripts with their recorded replies and print what changed "
        "(reward, correct, parse status, turns); exit 1 on a change, 2 on a bad file",
    )


_NOT_WITH_REPLAY = ("problem", "reply", "groups", "group_size", "model", "renderer", "local")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit check ...``; returns the exit code (0 ok, 1 a failure or a change, 2 bad input).

    Example::

        main(["check", "examples/arithmetic_env.py:ArithmeticEnv",
              "--problem", '{"question": "What is 2 + 3?", "answer": "5"}'])
        main(["check", "--replay", "golden.jsonl"])
    """
    if (
        (args.groups is not None and args.groups < 1)
        or (args.group_size is not None and args.group_size < 1)
        or (args.max_tokens < 1)
    ):
        parser.error("--groups, --group-size and --max-tokens must be >= 1")
    if args.replay is not None:
        given = [n for n in _NOT_WITH_REPLAY if getattr(args, n) not in (None, False)]
        if given:
            flags = ", ".join("--" + n.replace("_", "-") for n in given)
            parser.error(
                f"--replay takes the problems, replies, model and renderers from its "
                f"file; drop {flags}"
            )
    elif args.target is None:
        parser.error("give the env or builder to check (MODULE:NAME), or --replay FILE")
    check_timeout(args.timeout, parser)
    with Deadline(args.timeout, "check") as deadline:
        if args.target is not None:  # before the loop: the module may start one of its own
            deadline.phase = f"loading {args.target}"
            load_env_target(args.target, env_args=args.env_args)
        deadline.phase = "checking"
        if args.replay is not None:
            return asyncio.run(replay_golden(args.replay, target=args.target))
        return asyncio.run(_check(args))
