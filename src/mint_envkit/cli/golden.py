"""Golden transcripts: ``mint-envkit check --record FILE`` and ``check --replay FILE``.

A golden file is JSON lines: a header (the builder spec, the kit's version, the time,
the number of transcripts), then one line per episode ``check`` ran: its problem, env
class, reply texts (one per turn), conversation, reward, ``correct`` (null when the env
reports none), parse status (the last step's) and metrics. Replaying rebuilds each group
from the builder spec and its recorded problem (same model, renderer and group size),
feeds the recorded replies back through :class:`~mint_envkit.ScriptedPolicy` (the
token-level path of training) and compares reward (within 1e-9), ``correct``, parse
status and turns. See "Golden transcripts" in ``docs/getting-started.md``.

Example (shell)::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}' --record golden.jsonl
    mint-envkit check --replay golden.jsonl   # 0: all match, 1: a change, 2: a bad file
"""

from __future__ import annotations

import datetime
import importlib.metadata
import json
import math
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.scripted import ScriptedPolicy
from mint_envkit.rollouts.types import GroupRollout, Trajectory

FORMAT = "mint-envkit golden transcripts"
"""The header's ``format``: marks a file written by ``check --record``."""

FORMAT_VERSION = 1
TOLERANCE = 1e-9
"""Rewards within this absolute distance of the recorded ones count as unchanged."""

COMPARED = ("reward", "correct", "parse_status", "turns")
"""The fields a replay compares, in the order its table lists them."""

_NONE = type(None)
_RECORD_FIELDS: dict[str, tuple[type, ...]] = {
    **{"group": (int,), "env": (int,), "model": (str,), "renderer": (str,)},
    **{"problem": (dict,), "replies": (list,), "reward": (int, float)},
    **{"correct": (int, float, _NONE), "parse_status": (str, _NONE)},
}


def _kit_version() -> str:
    try:
        return importlib.metadata.version("mint-envkit")
    except importlib.metadata.PackageNotFoundError:  # pragma: no cover - a source checkout
        return "unknown"


def _class_name(cls: type) -> str:
    """``module:qualname``; a class from a file ``check`` loaded names the file instead."""
    module = cls.__module__
    file = getattr(sys.modules.get(module), "__file__", None)
    if module.startswith("_mint_envkit_check_") and file:
        relative = os.path.relpath(file)
        module = file if relative.startswith("..") else relative
    return f"{module}:{cls.__qualname__}"


def _turn_texts(script: str | Sequence[str], turns: int) -> list[str]:
    return [script] * turns if isinstance(script, str) else list(script[:turns])


def _outcome(trajectory: Trajectory) -> dict[str, Any]:
    """What a replay compares, from one episode."""
    metrics = trajectory.metrics
    correct = metrics.get("correct")
    return {
        "reward": float(trajectory.total_reward),
        "correct": None if correct is None else float(correct),
        "parse_status": trajectory.transitions[-1].logs.get("parse_status"),
        "turns": len(trajectory.transitions),
    }


def episode_records(
    group: GroupBuilder,
    rollout: GroupRollout,
    scripts: Sequence[str | Sequence[str]],
    env_class: type,
) -> list[dict[str, Any]]:
    """One golden record per episode of a scripted rollout (env ``i`` ran ``scripts[i % n]``).

    Raises:
        MintEnvkitError: the problem holds a value JSON cannot store.

    Example::

        records = episode_records(group, rollout, ["5", "0"], ArithmeticEnv)
        records[0]["reward"], records[0]["replies"]   # 1.0, ['5']
    """
    try:
        problem = json.loads(json.dumps(dict(group.problem)))
    except (TypeError, ValueError) as err:
        raise MintEnvkitError(
            f"--record needs problems JSON can hold; problem {group.index} does not ({err}): "
            "give its fields as strings, numbers, lists or dicts"
        ) from None
    out = []
    for index, trajectory in enumerate(rollout.trajectories):
        outcome = _outcome(trajectory)
        script = scripts[index % len(scripts)]
        out.append(
            {
                "group": group.index,
                "env": index,
                "model": group.model_name,
                "renderer": group.renderer_name,
                "env_class": _class_name(env_class),
                "problem": problem,
                "replies": _turn_texts(script, outcome["turns"]),
                "messages": trajectory.messages,
                "reward": outcome["reward"],
                "correct": outcome["correct"],
                "parse_status": outcome["parse_status"],
                "turns": outcome["turns"],
                "metrics": trajectory.metrics,
            }
        )
    return out


def write_golden(path: str | Path, *, target: str, records: Sequence[dict[str, Any]]) -> None:
    """Write a golden file: the header line, then one JSON line per record.

    Example::

        write_golden("golden.jsonl", target="examples/arithmetic_env.py:ArithmeticEnv",
                     records=records)
    """
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "builder": target,
        "mint_envkit": _kit_version(),
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "transcripts": len(records),
    }
    lines = [json.dumps(header)]
    lines += [json.dumps(r, ensure_ascii=False, default=str) for r in records]
    try:
        Path(path).write_text("\n".join(lines) + "\n", encoding="utf-8")
    except OSError as err:
        raise MintEnvkitError(f"cannot write {path}: {err.strerror or err}") from None


def _bad(path: Path, line: int, what: str) -> MintEnvkitError:
    return MintEnvkitError(
        f"{path} line {line}: {what}; a golden file is what `check TARGET --record FILE` "
        "writes: record it again"
    )


def _check_record(path: Path, line: int, record: Any) -> dict[str, Any]:
    if not isinstance(record, dict):
        raise _bad(path, line, f"expected a transcript (a JSON object), got {record!r:.80}")
    for name, kinds in _RECORD_FIELDS.items():
        if name not in record:
            raise _bad(path, line, f"the transcript has no {name!r}")
        value = record[name]
        if isinstance(value, bool) or not isinstance(value, kinds):
            wanted = " or ".join("null" if k is _NONE else k.__name__ for k in kinds)
            raise _bad(path, line, f"{name!r} must be {wanted}, got {value!r:.80}")
    replies = record["replies"]
    if not replies or not all(isinstance(t, str) for t in replies):
        raise _bad(
            path, line, f"'replies' must be a non-empty list of strings, got {replies!r:.80}"
        )
    return record


def read_golden(path: str | Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The header and the transcripts of a golden file, checked line by line.

    Raises:
        MintEnvkitError: the file cannot be read, or a line is not what
            ``--record`` writes (the message names the file and the line).

    Example::

        header, records = read_golden("golden.jsonl")
        header["builder"], len(records)
    """
    header, lines = _read(Path(path))
    return header, [record for _, record in lines]


def _read(path: Path) -> tuple[dict[str, Any], list[tuple[int, dict[str, Any]]]]:
    """:func:`read_golden`, with each transcript's line number."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise MintEnvkitError(f"no such golden file: {path}") from None
    except (OSError, UnicodeDecodeError) as err:
        raise MintEnvkitError(f"cannot read golden file {path}: {err}") from None
    rows: list[tuple[int, Any]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rows.append((number, json.loads(line)))
        except json.JSONDecodeError as err:
            raise _bad(path, number, f"not JSON ({err.msg} at column {err.colno})") from None
    if not rows:
        raise MintEnvkitError(f"{path} is empty; expected the lines `check --record` writes")
    number, header = rows[0]
    if not isinstance(header, dict) or header.get("format") != FORMAT:
        raise _bad(path, number, f"expected the header line ({{'format': {FORMAT!r}, ...}})")
    if header.get("format_version") != FORMAT_VERSION:
        raise _bad(
            path, number, f"format_version {header.get('format_version')!r} is not {FORMAT_VERSION}"
        )
    if not isinstance(header.get("builder"), str):
        raise _bad(path, number, "the header has no 'builder' spec (MODULE:NAME)")
    records = [(n, _check_record(path, n, r)) for n, r in rows[1:]]
    if not records:
        raise MintEnvkitError(f"{path} holds no transcripts, only its header")
    expected = header.get("transcripts")
    if expected is not None and expected != len(records):
        raise MintEnvkitError(
            f"{path}: the header says {expected} transcripts but the file holds {len(records)} "
            "(cut short or edited); record it again, or set the header's 'transcripts' to "
            f"{len(records)} if lines were removed on purpose"
        )
    problems: dict[tuple[str, str, int], tuple[int, Any]] = {}
    for number, record in records:
        first = problems.setdefault(_key(record), (number, record["problem"]))
        if first[1] != record["problem"]:
            raise _bad(
                path,
                number,
                f"its problem differs from line {first[0]}'s, in the same group "
                f"{record['group']}; every env of a group shares one problem",
            )
    return header, records


def _key(record: dict[str, Any]) -> tuple[str, str, int]:
    """The group a transcript belongs to: (model, renderer, group index)."""
    return record["model"], record["renderer"], record["group"]


def _same(name: str, old: Any, new: Any) -> bool:
    if name in ("reward", "correct") and old is not None and new is not None:
        if math.isnan(old) or math.isnan(new):
            return math.isnan(old) and math.isnan(new)
        return abs(float(old) - float(new)) <= TOLERANCE
    return old == new


async def _group(target: Any, records: list[dict[str, Any]]) -> GroupBuilder:
    """The recorded group, rebuilt from the target and its first record's problem."""
    first = records[0]
    common = {
        "problems": [first["problem"]],
        "batch_size": 1,
        "group_size": len(records),
        "model_name": first["model"],
        "renderer_name": first["renderer"],
        "shuffle": False,
    }
    if isinstance(target, DatasetBuilder):
        builder = attrs.evolve(
            target, **common, fields=None, test_problems=None, test_fraction=0.0, n_epochs=1
        )
    else:
        builder = DatasetBuilder(env=target, **common)
    train, _ = await builder()
    return attrs.evolve(train.get_batch(0)[0], index=first["group"])


def _label(problem: dict[str, Any]) -> str:
    for key in ("question", "id", "prompt"):
        if problem.get(key) is not None:
            text = str(problem[key])
            break
    else:
        text = json.dumps(problem, ensure_ascii=False)
    text = " ".join(text.split())
    return text if len(text) <= 40 else text[:39] + "…"


def _show(name: str, value: Any) -> str:
    if value is None:
        return "none"
    if name == "reward":
        return repr(float(value))
    if name == "correct":
        return f"{float(value):g}"
    return str(value)


Change = tuple[int, str, str, str]
"""(transcript index, field, recorded value, replayed value)."""


async def _replay_group(target: Any, indexed: list[tuple[int, dict[str, Any]]]) -> list[Change]:
    """Every change in one recorded group, replayed with its recorded replies."""
    records = [r for _, r in indexed]
    try:
        group = await _group(target, records)
        policy = ScriptedPolicy([r["replies"] for r in records])
        rollout: GroupRollout = (await rollout_groups([group], policy))[0]
        error = rollout.error
    except Exception as err:  # the user's env or problem: a change to report, not a crash
        error = f"{type(err).__name__}: {err}"
    if error:
        return [(index, "error", "none", " ".join(error.split())) for index, _ in indexed]
    changes = []
    for (index, record), trajectory in zip(indexed, rollout.trajectories, strict=True):
        now = _outcome(trajectory)
        for name in COMPARED:
            old = record.get(name, len(record["replies"]) if name == "turns" else None)
            if not _same(name, old, now[name]):
                changes.append((index, name, _show(name, old), _show(name, now[name])))
    return changes


def _print_changes(lines: list[tuple[int, dict[str, Any]]], changes: list[Change]) -> None:
    head = ("transcript", "line", "problem", "field", "recorded", "replayed")
    rows = [
        (str(i), str(lines[i][0]), _label(lines[i][1]["problem"]), field, old, new)
        for i, field, old, new in changes
    ]
    widths = [max(len(row[c]) for row in [head, *rows]) for c in range(len(head) - 1)]
    for row in [head, *rows]:
        cells = [cell.ljust(width) for cell, width in zip(row, widths, strict=False)]
        print("  " + "  ".join([*cells, row[-1]]).rstrip())


async def replay_golden(path: str | Path, *, target: str | None = None) -> int:
    """Re-score a golden file's transcripts; print what changed. 0 all match, 1 a change.

    ``target`` (``MODULE:NAME``) replaces the builder spec of the file's header.

    Raises:
        MintEnvkitError: the file is unreadable or malformed (the message names the
            line), or the target cannot be loaded; ``check`` exits 2.

    Example::

        code = await replay_golden("golden.jsonl")
    """
    header, lines = _read(Path(path))
    spec = target or header["builder"]
    loaded = load_target(spec)
    if not isinstance(loaded, DatasetBuilder) and not callable(loaded):
        raise MintEnvkitError(f"{spec} is neither an env class nor a DatasetBuilder")
    groups: dict[tuple[str, str, int], list[tuple[int, dict[str, Any]]]] = {}
    for index, (_, record) in enumerate(lines):
        groups.setdefault(_key(record), []).append((index, record))
    changes: list[Change] = []
    for members in groups.values():
        members.sort(key=lambda item: item[1]["env"])
        changes += await _replay_group(loaded, members)
    order = {name: position for position, name in enumerate(("error", *COMPARED))}
    changes.sort(key=lambda change: (change[0], order[change[1]]))
    recorded = (
        f"recorded {header.get('time', '?')} with mint-envkit {header.get('mint_envkit', '?')}"
    )
    if not changes:
        print(
            f"replay {path}: {len(lines)} transcript(s) of {spec}, all match "
            f"({', '.join(COMPARED)}; {recorded})"
        )
        return 0
    changed = len({change[0] for change in changes})
    print(f"replay {path}: {changed} of {len(lines)} transcript(s) of {spec} changed ({recorded})")
    _print_changes(lines, changes)
    return 1
