"""A run's rollout records as the viewer embeds them: one chunk per step, each message once.

The page parses a step's chunk only when that step is shown. In a chunk, a record's
``prompt`` and ``messages`` are indices into the chunk's ``msgs`` and its ``problem`` an
index into ``problems``: what a group's episodes share (the system prompt, the question,
the problem) is written once per step, not once per episode.

Example::

    from mint_envkit.view.chunks import step_chunks

    question = {"role": "user", "content": "2+3?"}
    records = [
        {"step": 0, "group": 0, "member": 0, "prompt": [question], "replies": ["5"], "reward": 1.0},
        {"step": 0, "group": 0, "member": 1, "prompt": [question], "replies": ["7"], "reward": 0.0},
    ]
    summaries, chunks = step_chunks(0, records)
    chunks["r0s0"]["msgs"]   # [{'role': 'user', 'content': '2+3?'}]: stored once
"""

from __future__ import annotations

import math
from typing import Any

_REPEATED_IN_MESSAGES = ("prompt", "replies", "thinking")


def finite_number(value: Any) -> float | None:
    """A finite number as a float; None for text, NaN, infinities and ints too big for a float.

    Example::

        finite_number(10**400), finite_number("0.5"), finite_number(2)   # (None, None, 2.0)
    """
    if not isinstance(value, (bool, int, float)):
        return None
    try:
        number = float(value)
    except OverflowError:  # JSON allows 10**400
        return None
    return number if math.isfinite(number) else None


def step_of(record: dict[str, Any]) -> int | None:
    """A record's ``step`` as an int; None when it is not a finite number (or a bool).

    Example::

        step_of({"step": 3}), step_of({"step": "3"})   # (3, None)
    """
    step = record.get("step")
    if isinstance(step, bool) or finite_number(step) is None:
        return None
    return int(step)


def _status(record: dict[str, Any]) -> str:
    if record.get("error") is not None:
        return "error"
    status = record.get("parse_status")
    if status is None and isinstance(record.get("logs"), dict):
        status = record["logs"].get("parse_status")
    return str(status) if status is not None else "none"


def _step_summary(step: int, chunk_id: str, records: list[dict[str, Any]]) -> dict[str, Any]:
    rewards = [n for n in (finite_number(r.get("reward")) for r in records) if n is not None]
    statuses: dict[str, int] = {}
    for record in records:
        status = _status(record)
        statuses[status] = statuses.get(status, 0) + 1
    return {
        "step": step,
        "chunk": chunk_id,
        "episodes": sum(1 for r in records if r.get("error") is None),
        "groups": len({repr((r.get("split"), r.get("group"))) for r in records}),  # may be lists
        "errors": statuses.get("error", 0),
        "splits": sorted({str(r.get("split") or "train") for r in records}),
        "mean_reward": sum(rewards) / len(rewards) if rewards else None,
        "statuses": statuses,
    }


def step_chunks(
    run_id: int, lines: list[dict[str, Any]]
) -> tuple[list[dict[str, Any]], dict[str, dict[str, Any]]]:
    """Rollout records per step; each distinct message of a step is stored once.

    A record's ``prompt`` and ``messages`` (lists of message dicts) become
    lists of indices into the chunk's ``msgs``: the system and user messages
    a group shares are written once per step, not once per episode. A record
    with a ``messages`` list loses ``prompt``, ``replies`` and ``thinking``,
    which only repeat parts of it. A record's ``problem`` (the problem dict the
    episode played: the secret of a guessing game, in no message) becomes an index
    into the chunk's ``problems``, stored once per step like the messages.

    Returns each step's summary (episodes, errors, splits, mean reward, parse statuses)
    and the chunks by id (``r<run_id>s<step>``).

    Example::

        summaries, chunks = step_chunks(0, [{"step": 0, "group": 0, "reward": 1.0}])
        summaries[0]["mean_reward"], list(chunks)   # (1.0, ['r0s0'])
    """
    by_step: dict[int, list[dict[str, Any]]] = {}
    for line in lines:
        step = step_of(line)
        by_step.setdefault(-1 if step is None else step, []).append(line)
    summaries, chunks = [], {}
    for step in sorted(by_step):
        chunk_id = f"r{run_id}s{step}"
        msgs: list[Any] = []
        problems: list[Any] = []
        seen: dict[str, int] = {}
        seen_problems: dict[str, int] = {}

        def ref(message: Any, msgs: list[Any] = msgs, seen: dict[str, int] = seen) -> int:
            key = repr(message)  # equal messages from one writer have equal reprs
            if key not in seen:
                seen[key] = len(msgs)
                msgs.append(message)
            return seen[key]

        records = []
        for record in by_step[step]:
            record = dict(record)
            if isinstance(record.get("messages"), list):
                for field in _REPEATED_IN_MESSAGES:
                    record.pop(field, None)
            for field in ("prompt", "messages"):
                if isinstance(record.get(field), list):
                    record[field] = [ref(m) for m in record[field]]
            if record.get("problem") is not None:
                record["problem"] = ref(record["problem"], problems, seen_problems)
            record["status"] = _status(record)
            records.append(record)
        chunks[chunk_id] = {"msgs": msgs, "problems": problems, "records": records}
        summaries.append(_step_summary(step, chunk_id, records))
    return summaries, chunks
