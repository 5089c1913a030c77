"""A run's ``rollouts.jsonl`` read back as recorded groups, for ``mint-envkit rescore``.

A run folder (a training run's ``log_path``, an evaluation's ``<label>/`` folder, a
sweep's config folder) holds ``rollouts.jsonl`` (docs/rollouts.md) and ``config.json``.
Each episode's line becomes a :class:`~mint_envkit.replay.groups.RecordedEpisode`: its
replies as the model wrote them (rebuilt from ``messages``: thinking, content and tool
calls, in the renderer's format), the stop reasons (a reply cut off at the length limit
is replayed cut off) and what it scored. Episodes of one group (same step, split and
problem index) form a :class:`~mint_envkit.replay.groups.RecordedGroup`, with the model,
renderer and builder settings that ``config.json`` names. Failed groups' lines (no
episodes) are counted and left out; a line that is not JSON (a crashed writer's torn
last line) is counted and skipped.

Example::

    # not run: reads your run folder
    folders = run_folders("runs/arithmetic")
    run = read_run(folders[0], target=ArithmeticEnv, split=None)
    len(run.groups), run.records, run.model_name
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.checks import is_integer
from mint_envkit.errors import MintEnvkitError
from mint_envkit.rendering.tool_calls import format_tool_calls
from mint_envkit.replay.groups import RecordedEpisode, RecordedGroup
from mint_envkit.runs.files import read_jsonl

BUILDER_SETTINGS = ("max_trajectory_tokens", "max_generation_tokens", "score_truncated")
"""The DatasetBuilder settings a training run's ``config.json`` gives an env class.

Not the non-answer rewards (``failed_parse_reward``, ``context_overflow_reward``):
``config.json`` holds their resolved values, which by default follow the env's own
rewards, so the run's would clash with an env whose rewards changed. An env class gets
the DatasetBuilder defaults; give your DatasetBuilder as ENV_SPEC to keep yours."""

_FORMAT_HELP = (
    "a rollouts.jsonl line is what a training run or `mint-envkit eval` writes "
    "(docs/rollouts.md): restore the line, or delete its group's lines"
)


@attrs.frozen
class RunGroup:
    """One group of a run's file: where it sits, its records' numbers, the group.

    Attributes:
        step: the step that sampled it.
        split: its split (``train``, ``test``, ``eval``, ...).
        records: each episode's record number (its Nth JSON line), in member order.
        group: the recorded group.

    Example::

        # not run: `run` comes from read_run
        first = run.groups[0]
        first.step, first.split, first.records   # (0, 'train', [1, 2, 3, 4])
    """

    step: int
    split: str
    records: list[int]
    group: RecordedGroup


@attrs.frozen
class RecordedRun:
    """One run folder's recorded groups and where they came from.

    Attributes:
        folder: the run folder.
        groups: the groups to rescore, in file order.
        records: how many episode records the groups hold.
        model_name: the model (``config.json``'s, else the DatasetBuilder's).
        renderer_name: the renderer (``config.json``'s; None: the builder's default).
        failed_groups: lines of groups that failed when they ran (no episodes).
        unreadable: lines that are not JSON objects (skipped).
        splits: every split the file holds (before ``--split``).

    Example::

        # not run: `run` comes from read_run
        len(run.groups), run.records, run.model_name   # (4, 16, 'mint-envkit/tiny-qwen3')
    """

    folder: Path
    groups: list[RunGroup]
    records: int
    model_name: str
    renderer_name: str | None
    failed_groups: int
    unreadable: int
    splits: list[str]


def run_folders(run_dir: str | Path) -> list[Path]:
    """The folders to rescore: ``run_dir`` when it holds ``rollouts.jsonl``, else each of
    its folders that does (an evaluation's ``<label>/``, a sweep's configs), sorted.

    Raises:
        MintEnvkitError: there is no such directory, or no ``rollouts.jsonl`` in it or
            one level down.

    Example::

        # not run: reads your directories
        run_folders("runs/eval-arithmetic")   # [Path('runs/eval-arithmetic/base'), ...]
    """
    root = Path(run_dir)
    if not root.is_dir():
        raise MintEnvkitError(f"no such directory: {root} (give a run's log_path)")
    if (root / "rollouts.jsonl").is_file():
        return [root]
    found = sorted(path.parent for path in root.glob("*/rollouts.jsonl") if path.is_file())
    if not found:
        raise MintEnvkitError(
            f"{root} holds no rollouts.jsonl, and neither does any folder in it; give a "
            "training run's log_path, an evaluation's directory (its <label>/rollouts.jsonl) "
            "or a sweep's directory"
        )
    return found


def reply_text(message: dict[str, Any]) -> str:
    """An assistant message as the text the model wrote: its thinking in ``<think>``
    tags, its content, then its tool calls as ``<tool_call>`` blocks (those that could
    not be read as they were written), which the renderer parses back into the message.

    Example::

        reply_text({"role": "assistant", "content": "5", "thinking": "2 + 3"})
        # '<think>\\n2 + 3\\n</think>\\n\\n5'
    """
    parts = []
    if message.get("thinking"):
        parts.append(f"<think>\n{message['thinking']}\n</think>")
    if message.get("content"):
        parts.append(str(message["content"]))
    if message.get("tool_calls"):
        parts.append(format_tool_calls(list(message["tool_calls"])))
    unclosed = []
    for call in message.get("unparsed_tool_calls") or []:
        raw = str(call.get("raw_text", ""))
        if "never closed" in str(call.get("error", "")):
            unclosed.append(f"<tool_call>\n{raw}")
        else:
            parts.append(f"<tool_call>\n{raw}\n</tool_call>")
    return "\n\n".join(parts + unclosed)


def _config(folder: Path) -> dict[str, Any]:
    try:
        data = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _model(folder: Path, target: Any) -> tuple[str, str | None, dict[str, Any]]:
    """The model, renderer and builder settings the run's replies were scored with."""
    config = _config(folder)
    described = config.get("dataset_builder")
    described = described if isinstance(described, dict) else {}
    model = described.get("model_name") or config.get("model_name") or config.get("model")
    renderer = described.get("renderer_name")
    settings = {k: described[k] for k in BUILDER_SETTINGS if described.get(k) is not None}
    if "max_generation_tokens" not in settings and isinstance(config.get("max_tokens"), int):
        settings["max_generation_tokens"] = config["max_tokens"]  # an evaluation's reply limit
    if not isinstance(model, str) or not model:
        if isinstance(target, DatasetBuilder):
            return target.model_name, renderer, settings
        raise MintEnvkitError(
            f"{folder / 'config.json'} names no model, and rescore needs the model whose "
            "tokenizer and renderer read the replies: give a DatasetBuilder as ENV_SPEC (it "
            "names its model), or put the run's config.json back"
        )
    return model, renderer if isinstance(renderer, str) else None, settings


def _name(path: Path, number: int, record: dict[str, Any]) -> str:
    where = ", ".join(
        f"{key} {record[key]}" for key in ("step", "split", "group", "member") if key in record
    )
    return f"{path} record {number}" + (f" ({where})" if where else "")


_FIELDS: dict[str, tuple[type, ...]] = {
    "step": (int,),
    "split": (str,),
    "group": (int,),
    "member": (int,),
    "problem": (dict,),
    "replies": (list,),
    "reward": (int, float, type(None)),
    "metrics": (dict,),
}


def _check(path: Path, number: int, record: dict[str, Any]) -> None:
    for key, kinds in _FIELDS.items():
        if key not in record:
            raise MintEnvkitError(f"{_name(path, number, record)} has no {key!r}; {_FORMAT_HELP}")
        value = record[key]
        if isinstance(value, bool) or not isinstance(value, kinds):
            wanted = " or ".join("null" if k is type(None) else k.__name__ for k in kinds)
            raise MintEnvkitError(
                f"{_name(path, number, record)}: {key!r} must be {wanted}, got {value!r:.80}; "
                + _FORMAT_HELP
            )
    replies = record["replies"]
    if not replies or not all(r is None or isinstance(r, str) for r in replies):
        raise MintEnvkitError(
            f"{_name(path, number, record)}: 'replies' must be a non-empty list of strings, "
            f"got {replies!r:.80}; {_FORMAT_HELP}"
        )


def _episode(record: dict[str, Any]) -> RecordedEpisode:
    replies = [r or "" for r in record["replies"]]
    messages = record.get("messages")
    if isinstance(messages, list):
        said = [m for m in messages if isinstance(m, dict) and m.get("role") == "assistant"]
        if len(said) == len(replies):
            replies = [reply_text(m) for m in said]
    stops = record.get("stop_reasons")
    cut = [s == "length" for s in stops] if isinstance(stops, list) else []
    scored = {
        "reward": record["reward"],
        "correct": record["metrics"].get("correct"),
        "parse_status": record.get("parse_status"),
        "turns": len(record["replies"]),
    }
    return RecordedEpisode(replies=replies, scored=scored, cut=cut)


def _old_format(path: Path) -> MintEnvkitError:
    return MintEnvkitError(
        f"{path}: its records have no 'problem' field: a mint-envkit from before "
        "rollouts.jsonl recorded each episode's problem wrote them, and rescore rebuilds "
        "each env from its problem. Write the rollouts again with this version (train "
        "again, or `mint-envkit eval ENV_SPEC --checkpoint tinker://... --out DIR` on the "
        "run's checkpoints) and rescore that, or keep golden transcripts of the env "
        "(`mint-envkit check ENV_SPEC --record FILE`, then `check --replay FILE`)"
    )


def read_run(
    folder: Path, *, target: Any, split: str | None, limit: int | None = None
) -> RecordedRun:
    """A run folder's episodes as recorded groups (``split``: only that split's;
    ``limit``: only the first N groups).

    Raises:
        MintEnvkitError: the file holds no episodes, a record lacks what rescore needs
            (the message names the record and the fix), the records predate the
            ``problem`` field, a group's members are not 0 .. n-1, or ``split`` matches
            no record (the message lists the splits there are).

    Example::

        # not run: reads your run folder
        read_run(Path("runs/arithmetic"), target=ArithmeticEnv, split="train", limit=5)
    """
    path = folder / "rollouts.jsonl"
    unreadable: list[str] = []
    lines = read_jsonl(path, unreadable=unreadable)
    episodes = [(n, r) for n, r in enumerate(lines, start=1) if "error" not in r]
    failed = len(lines) - len(episodes)
    if not episodes:
        raise MintEnvkitError(
            f"{path} holds no episodes ({failed} failed group(s), {len(unreadable)} "
            "unreadable line(s)); nothing to rescore"
        )
    if all("problem" not in r for _, r in episodes):
        raise _old_format(path)
    for number, record in episodes:
        _check(path, number, record)
    splits = sorted({r["split"] for _, r in episodes})
    if split is not None:
        episodes = [(n, r) for n, r in episodes if r["split"] == split]
        if not episodes:
            raise MintEnvkitError(
                f"{path} has no records of split {split!r}; its splits: {', '.join(splits)}"
            )
    model, renderer, settings = _model(folder, target)
    # a step may evaluate one split at several reply limits (the loop's uncut evals)
    grouped: dict[tuple[Any, ...], list[tuple[int, dict[str, Any]]]] = {}
    for number, record in episodes:
        key = (record["step"], record["split"], record.get("max_tokens"), record["group"])
        grouped.setdefault(key, []).append((number, record))
    members = list(grouped.values())[:limit]
    groups = [_group(path, m, model, renderer, _limited(settings, m)) for m in members]
    return RecordedRun(
        folder=folder,
        groups=groups,
        records=sum(len(g.records) for g in groups),
        model_name=model,
        renderer_name=renderer,
        failed_groups=failed,
        unreadable=len(unreadable),
        splits=splits,
    )


def _limited(
    settings: dict[str, Any], members: Sequence[tuple[int, dict[str, Any]]]
) -> dict[str, Any]:
    """The builder settings of a group, at the reply limit its records were sampled at."""
    limit = members[0][1].get("max_tokens")
    if is_integer(limit) and limit > 0:
        return {**settings, "max_generation_tokens": limit}
    return settings


def _group(
    path: Path,
    members: Sequence[tuple[int, dict[str, Any]]],
    model: str,
    renderer: str | None,
    settings: dict[str, Any],
) -> RunGroup:
    ordered = sorted(members, key=lambda item: item[1]["member"])
    number, first = ordered[0]
    positions = [r["member"] for _, r in ordered]
    if positions != list(range(len(ordered))):
        raise MintEnvkitError(
            f"{_name(path, number, first)}: its group's members are {positions}, not "
            f"0 .. {len(ordered) - 1}: a group's episodes are written together, so the file "
            "was cut or edited; restore it, or delete that group's lines"
        )
    for other_number, other in ordered[1:]:
        if other["problem"] != first["problem"]:
            raise MintEnvkitError(
                f"{_name(path, other_number, other)}: its problem differs from record "
                f"{number}'s in the same group; every episode of a group shares one problem: "
                f"{_FORMAT_HELP}"
            )
    group = RecordedGroup(
        problem=first["problem"],
        index=first["group"],
        model_name=model,
        renderer_name=renderer,
        episodes=[_episode(r) for _, r in ordered],
        settings=settings,
    )
    return RunGroup(
        step=first["step"], split=first["split"], records=[n for n, _ in ordered], group=group
    )
