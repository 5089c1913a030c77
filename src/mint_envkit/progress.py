"""Progress of long work: a live Rich display on a terminal, timestamped lines elsewhere.

Every long operation of the kit (training steps, evaluations, the audit's probe stage,
model conversion) reports through :func:`track`: one task with a count, a total, a rate
and an ETA (a sweep prints its own line per config, with how many are done and an ETA).
Where it goes depends on where stderr goes:

- a terminal, with ``rich`` installed: one live display, each running task a bar
  (nested work, such as the evaluations inside a sweep's runs, shows as more bars);
- anything else (CI logs, a file, a pipe): a timestamped line when a task starts, as
  its work finishes (at most one line per ``MINT_ENVKIT_PROGRESS_EVERY_S`` seconds, 5
  by default, and at every tenth of the total), and when it ends;
- ``MINT_ENVKIT_PROGRESS=plain`` forces the lines, ``off`` silences both.

Steps are counted as they are numbered in the files (step 0 is the first).

Example::

    from mint_envkit.progress import track

    with track("eval base", total=3, unit="problems") as task:
        for reward in (1.0, 0.0, 1.0):
            task.advance(reward=f"{reward:+.2f}")
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, TextIO

MODES = ("auto", "rich", "plain", "off")
"""The values of ``MINT_ENVKIT_PROGRESS`` (``auto``: Rich on a terminal, else lines).

Example::

    "plain" in MODES   # True
"""

_LOCK = threading.Lock()
_LIVE: dict[str, Any] = {"progress": None, "tasks": 0}


def _mode(stream: TextIO) -> str:
    chosen = os.environ.get("MINT_ENVKIT_PROGRESS", "auto").strip().lower() or "auto"
    if chosen not in MODES:
        chosen = "auto"
    if chosen == "auto":
        try:
            import rich  # noqa: F401
        except ImportError:
            return "plain"
        return "rich" if getattr(stream, "isatty", lambda: False)() else "plain"
    return chosen


def _every_s() -> float:
    try:
        return max(0.0, float(os.environ.get("MINT_ENVKIT_PROGRESS_EVERY_S", "5")))
    except ValueError:
        return 5.0


def _clock(seconds: float) -> str:
    seconds = max(0, round(seconds))
    minutes, secs = divmod(seconds, 60)
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class Task:
    """One long operation's progress: advance it as its work finishes.

    Made by :func:`track`; ``fields`` given to :meth:`advance` (a mean reward, a
    loss) are shown beside the count.

    Example::

        with track("train", total=2, unit="steps") as task:
            task.advance(reward="+0.25")
            task.note("checkpoint saved")
            task.advance()
        task.done   # 2
    """

    def __init__(
        self, label: str, total: int | None, unit: str, stream: TextIO, mode: str, done: int = 0
    ):
        self.label, self.total, self.unit = label, total, unit
        self.stream, self.mode = stream, mode
        self.done = done
        self._first = done
        self.fields: dict[str, Any] = {}
        self.start = time.monotonic()
        self._last_line = self.start
        self._last_tenth = 0
        self._rich_id: Any = None
        if mode == "rich":
            self._rich_start()
        elif mode == "plain":
            size = f" ({total} {unit})" if total is not None else ""
            self._line(f"{label}: started{size}")

    def _rich_start(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        with _LOCK:
            if _LIVE["progress"] is None:
                _LIVE["progress"] = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    TimeRemainingColumn(),
                    TextColumn("{task.fields[info]}"),
                    console=Console(file=self.stream),
                    transient=False,
                )
                _LIVE["progress"].start()
            _LIVE["tasks"] += 1
            self._rich_id = _LIVE["progress"].add_task(
                self.label, total=self.total, completed=self.done, info=""
            )

    def _line(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {text}", file=self.stream, flush=True)
        self._last_line = time.monotonic()

    def _status(self) -> str:
        elapsed = time.monotonic() - self.start
        rate = (self.done - self._first) / elapsed if elapsed > 0 else 0.0
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        parts = [
            f"{self.label}: {count} {self.unit}",
            f"{rate:.2f}/s" if rate < 10 else f"{rate:.0f}/s",
        ]
        if self.total is not None and 0 < self.done < self.total and rate > 0:
            parts.append(f"ETA {_clock((self.total - self.done) / rate)}")
        parts.append(f"elapsed {_clock(elapsed)}")
        info = "  ".join(f"{k} {v}".strip() for k, v in self.fields.items())
        return ", ".join(parts) + (f"  {info}" if info else "")

    def advance(self, n: int = 1, detail: str | None = None, **fields: Any) -> None:
        """Count ``n`` more units done; ``fields`` replace the shown figures, ``detail``
        (one text, such as a finished step's summary) replaces the shown text.

        Example::

            task.advance(reward="+0.31")   # task: the class example's
            task.advance(detail="step 1  reward +0.310  correct 0.31")
        """
        self.done += n
        self.fields.update(fields)
        if detail is not None:
            self.fields = {"": detail, **{k: v for k, v in self.fields.items() if k}}
        if self.mode == "rich":
            info = "  ".join(f"{k} {v}".strip() for k, v in self.fields.items())
            _LIVE["progress"].update(self._rich_id, advance=n, info=info)
        elif self.mode == "plain":
            tenth = 10 * self.done // self.total if self.total else 0
            now = time.monotonic()
            if tenth > self._last_tenth or now - self._last_line >= _every_s():
                self._last_tenth = max(self._last_tenth, tenth)
                self._line(self._status())

    def note(self, text: str) -> None:
        """Print one line about this task (above a live display), e.g. a warning.

        Example::

            task.note("answers collapse: 92% of replies are '5'")
        """
        if self.mode == "off":
            return
        if self.mode == "rich":
            _LIVE["progress"].console.print(f"{self.label}: {text}")
        else:
            self._line(f"{self.label}: {text}")

    def close(self) -> None:
        """End the task (its last line, or its bar stays on the display)."""
        if self.mode == "rich":
            with _LOCK:
                progress = _LIVE["progress"]
                progress.update(self._rich_id, completed=self.done)
                _LIVE["tasks"] -= 1
                if _LIVE["tasks"] == 0:
                    progress.stop()
                    _LIVE["progress"] = None
        elif self.mode == "plain":
            self._line(self._status().replace(f"{self.label}: ", f"{self.label}: finished ", 1))


@contextmanager
def track(
    label: str,
    total: int | None = None,
    unit: str = "items",
    *,
    stream: TextIO | None = None,
    enabled: bool = True,
    done: int = 0,
) -> Iterator[Task]:
    """A :class:`Task` for the block: started now, closed when the block ends.

    Args:
        label: what runs (``"eval base"``, ``"train kl0p02"``).
        total: how many units it has (None when unknown).
        unit: what a unit is (``"problems"``, ``"steps"``).
        stream: where to write (default: stderr).
        enabled: False shows nothing (the task still counts).
        done: units already done (a resumed run's steps); the rate counts from here.

    Example::

        with track("convert", total=4, unit="tensors") as task:
            for _ in range(4):
                task.advance()
    """
    out = stream if stream is not None else sys.stderr
    task = Task(label, total, unit, out, _mode(out) if enabled else "off", done)
    try:
        yield task
    finally:
        task.close()
