"""Golden transcripts: ``mint-envkit check --record FILE`` and ``check --replay FILE``.

A golden file is JSON lines: a header (the builder spec, the kit's version, the time,
the number of transcripts), then one line per episode ``check`` ran: its problem, env
class, reply texts (one per turn), conversation, reward, ``correct`` (null when the env
reports none), parse status (the last step's) and metrics. Replaying rebuilds each group
from the builder spec and its recorded problem (same model, renderer and group size),
feeds the recorded replies back through :class:`~mint_envkit.ScriptedPolicy` (the
token-level path of training) and compares reward (within 1e-9), ``correct``, parse
status and turns. See "Golden transcripts" in ``docs/getting-started.md``.

The header also carries a **fingerprint** of what produced the transcripts
(:func:`fingerprint`): the env's source (its class and the user's bases, or its factory
function), its parser and reward, the builder's problems, model and renderer, and the
renderer's chat template. Replaying against an env whose fingerprint differs prints
``stale: re-record`` with each difference and exits 1, even where the recorded replies
still score as recorded (a replaced problem set, prompt or model would not show there).

Example (shell)::

    mint-envkit check examples/arithmetic_env.py:ArithmeticEnv \\
        --problem '{"question": "What is 2 + 3?", "answer": "5"}' --record golden.jsonl
    mint-envkit check --replay golden.jsonl   # 0: all match, 1: a change, 2: a bad file
"""

from __future__ import annotations

import datetime
import hashlib
import importlib.metadata
import inspect
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.progress import text_table
from mint_envkit.replay.groups import (
    COMPARED,
    RecordedEpisode,
    RecordedGroup,
    outcome,
    problem_label,
    replay_group,
    show,
)
from mint_envkit.rollouts.types import GroupRollout

FORMAT = "mint-envkit golden transcripts"
"""The header's ``format``: marks a file written by ``check --record``."""

FORMAT_VERSION = 1

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

        # not run: `group` and `rollout` come from a scripted check of ArithmeticEnv
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
        scored = outcome(trajectory)
        script = scripts[index % len(scripts)]
        out.append(
            {
                "group": group.index,
                "env": index,
                "model": group.model_name,
                "renderer": group.renderer_name,
                "env_class": _class_name(env_class),
                "problem": problem,
                "replies": _turn_texts(script, scored["turns"]),
                "messages": trajectory.messages,
                "reward": scored["reward"],
                "correct": scored["correct"],
                "parse_status": scored["parse_status"],
                "turns": scored["turns"],
                "metrics": trajectory.metrics,
            }
        )
    return out


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _source(obj: Any) -> str:
    """The source of an env class (with its bases outside the kit) or factory function."""
    parts = []
    chain = obj.__mro__ if isinstance(obj, type) else (obj,)
    for item in chain:
        module = getattr(item, "__module__", "") or ""
        if item is object or module.split(".")[0] in ("mint_envkit", "abc", "builtins"):
            continue
        try:
            parts.append(inspect.getsource(item))
        except (OSError, TypeError):  # defined where no source is kept (a notebook cell)
            parts.append(getattr(item, "__qualname__", repr(item)))
    return "\n".join(parts)


def _template(group: GroupBuilder) -> str | None:
    try:
        tokenizer = group.renderer().tokenizer
    except Exception:  # a renderer that cannot be built: the replay says why
        return None
    template = getattr(tokenizer, "chat_template", None)
    return None if template is None else _sha(str(template))


async def fingerprint(target: Any) -> dict[str, Any]:
    """What produced a golden file's transcripts: the env's source (an env class or
    factory, or a DatasetBuilder's), parser and reward, and for a DatasetBuilder its
    problems (both splits, in any order), model, renderer and the renderer's chat
    template. (An env class's transcripts carry their problems, model and renderer.)

    Example::

        fingerprint_now = await fingerprint(load_target("examples/code_tasks.py:builder"))
        fingerprint_now["model"], fingerprint_now["problems"]["count"]
    """
    env = target.env if isinstance(target, DatasetBuilder) else target
    scoring = getattr(env, "scoring", None) if isinstance(env, type) else None
    out: dict[str, Any] = {
        "env": getattr(env, "__qualname__", type(env).__name__),
        "env_source": _sha(_source(env)),
        "parser": None if scoring is None else scoring.parser.name,
        "reward": None if scoring is None or scoring.reward is None else scoring.reward.name,
    }
    if isinstance(target, DatasetBuilder):
        train, test = await target()
        problems = [
            json.dumps(g.problem, sort_keys=True, default=str)
            for data in (train, test)
            if data is not None
            for g in data.groups()
        ]
        out["problems"] = {"count": len(problems), "sha": _sha("\n".join(sorted(problems)))}
        out["model"] = target.model_name
        out["renderer"] = target.renderer_name
        first = train.get_batch(0)[:1] if len(train) else []
        if first:
            out["chat_template"] = _template(first[0])
    return out


_FINGERPRINT_WORDS = {
    "env": "the env",
    "env_source": "the env's source",
    "parser": "the parser",
    "reward": "the reward",
    "problems": "the problems",
    "model": "the model",
    "renderer": "the renderer",
    "chat_template": "the renderer's chat template",
}


def stale_differences(recorded: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """How ``now`` (a :func:`fingerprint`) differs from the ``recorded`` one, in words.

    Example::

        stale_differences({"model": "a", "parser": "first_number"},
                          {"model": "b", "parser": "first_number"})
        # ["the model: 'a' -> 'b'"]
    """
    out = []
    for name, words in _FINGERPRINT_WORDS.items():
        if name not in recorded or name not in now or recorded[name] == now[name]:
            continue
        old, new = recorded[name], now[name]
        if name == "problems":
            out.append(
                f"{words}: {old.get('count')} recorded (sha {old.get('sha')}) -> "
                f"{new.get('count')} now (sha {new.get('sha')})"
            )
        elif name in ("env_source", "chat_template"):
            out.append(f"{words} changed (sha {old} -> {new})")
        else:
            out.append(f"{words}: {old!r} -> {new!r}")
    return out


def write_golden(
    path: str | Path,
    *,
    target: str,
    records: Sequence[dict[str, Any]],
    produced_by: dict[str, Any] | None = None,
) -> None:
    """Write a golden file: the header line (with ``produced_by``, the
    :func:`fingerprint` of what recorded it), then one JSON line per record.

    Example::

        # not run: `records` come from episode_records
        write_golden("golden.jsonl", target="examples/arithmetic_env.py:ArithmeticEnv",
                     records=records, produced_by=await fingerprint(ArithmeticEnv))
    """
    header = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "builder": target,
        "mint_envkit": _kit_version(),
        "time": datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        "transcripts": len(records),
    }
    if produced_by is not None:
        header["fingerprint"] = produced_by
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

        # not run: reads your golden file
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


Change = tuple[int, str, str, str]
"""(transcript index, field, recorded value, replayed value), the values as shown."""


async def _replay_group(target: Any, indexed: list[tuple[int, dict[str, Any]]]) -> list[Change]:
    """Every change in one recorded group, replayed with its recorded replies."""
    first = indexed[0][1]
    episodes = [
        RecordedEpisode(
            replies=record["replies"],
            scored={
                name: record.get(name, len(record["replies"]) if name == "turns" else None)
                for name in COMPARED
            },
        )
        for _, record in indexed
    ]
    group = RecordedGroup(
        problem=first["problem"],
        index=first["group"],
        model_name=first["model"],
        renderer_name=first["renderer"],
        episodes=episodes,
    )
    return [
        (indexed[position][0], name, show(name, old), new if name == "error" else show(name, new))
        for position, name, old, new in await replay_group(target, group)
    ]


def _print_changes(lines: list[tuple[int, dict[str, Any]]], changes: list[Change]) -> None:
    head = ("transcript", "line", "problem", "field", "recorded", "replayed")
    rows = [
        (str(i), str(lines[i][0]), problem_label(lines[i][1]["problem"]), field, old, new)
        for i, field, old, new in changes
    ]
    print(text_table([head, *rows], indent="  "))


async def replay_golden(path: str | Path, *, target: str | None = None) -> int:
    """Re-score a golden file's transcripts; print what changed. 0 all match, 1 a change.

    ``target`` (``MODULE:NAME``) replaces the builder spec of the file's header.

    Raises:
        MintEnvkitError: the file is unreadable or malformed (the message names the
            line), or the target cannot be loaded; ``check`` exits 2.

    Example::

        # not run: reads your golden file
        code = await replay_golden("golden.jsonl")
    """
    header, lines = _read(Path(path))
    spec = target or header["builder"]
    loaded = load_target(spec)
    if not isinstance(loaded, DatasetBuilder) and not callable(loaded):
        raise MintEnvkitError(f"{spec} is neither an env class nor a DatasetBuilder")
    stale = await _stale_lines(header, loaded, spec, path)
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
        print("\n".join(stale))
        return 1 if stale and stale[0].startswith("stale") else 0
    changed = len({change[0] for change in changes})
    print(f"replay {path}: {changed} of {len(lines)} transcript(s) of {spec} changed ({recorded})")
    _print_changes(lines, changes)
    print("\n".join(stale))
    return 1


async def _stale_lines(header: dict[str, Any], loaded: Any, spec: str, path: Any) -> list[str]:
    """``stale: re-record ...`` and the differences of the file's fingerprint from the env
    as it is now; a note for a file recorded without one; nothing when it matches."""
    recorded = header.get("fingerprint")
    again = f"mint-envkit check {spec} --record {path}"
    if not isinstance(recorded, dict):
        return [f"(no fingerprint in {path}: a changed env is seen only where its replies "
                f"score differently; re-record to keep one: {again})"]  # fmt: skip
    try:
        now = await fingerprint(loaded)
    except MintEnvkitError as err:
        return [f"stale: re-record ({again}): the env cannot be fingerprinted now: {err}"]
    found = stale_differences(recorded, now)
    if not found:
        return []
    return [f"stale: re-record ({again}): what produced the transcripts changed:"] + [
        f"  {line}" for line in found
    ]
