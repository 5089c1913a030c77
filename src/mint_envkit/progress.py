"""Progress of long work and the kit's other terminal output: a live Rich display on a
terminal, timestamped lines elsewhere; one-line notes (:func:`say`) and text tables
(:func:`text_table`).

Every long operation of the kit (training steps, evaluations, the audit's probe stage,
model conversion) reports through :func:`track`: one task with a count, a total, a rate
and an ETA from the first unit done (a sweep prints its own line per config, with how
many are done and an ETA). Inside a long unit, :meth:`Task.phase` says what it is doing
as it happens (a training step's sampling, scoring, training, saving).
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
from collections.abc import Iterator, Sequence
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
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes:02d}m"
    return f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def say(message: str, *, stream: TextIO | None = None) -> None:
    """One line from the kit on stderr, ``mint_envkit: message`` (a warning, a choice it made).

    Example::

        say("the first held-out eval cuts off 40% of the replies at 16 tokens")
    """
    print(f"mint_envkit: {message}", file=stream or sys.stderr, flush=True)


def text_table(
    rows: Sequence[Sequence[Any]], *, right: Sequence[int] = (), indent: str = ""
) -> str:
    """``rows`` (the first is the header) as aligned text columns, two spaces apart.

    Cells are ``str()``-ed; the columns in ``right`` are right-aligned; each line's
    trailing spaces are cut.

    Example::

        print(text_table([("field", "changed"), ("reward", "2 of 3")], indent="  "))
        #   field   changed
        #   reward  2 of 3
    """
    cells = [[str(cell) for cell in row] for row in rows]
    if not cells:
        return ""
    widths = [max(len(row[i]) for row in cells if i < len(row)) for i in range(len(cells[0]))]
    lines = []
    for row in cells:
        padded = [
            cell.rjust(width) if i in right else cell.ljust(width)
            for i, (cell, width) in enumerate(zip(row, widths, strict=False))
        ]
        lines.append((indent + "  ".join(padded)).rstrip())
    return "\n".join(lines)


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
        self._unit_start = self.start
        self._last_unit_s = 0.0
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
        )

        with _LOCK:
            if _LIVE["progress"] is None:
                _LIVE["progress"] = Progress(
                    TextColumn("{task.description}"),
                    BarColumn(),
                    MofNCompleteColumn(),
                    TimeElapsedColumn(),
                    # the kit's own rate and ETA: from the first unit done, however long
                    # (Rich's estimate forgets a unit slower than its 30 s window)
                    TextColumn("{task.fields[pace]}"),
                    TextColumn("{task.fields[info]}"),
                    console=Console(file=self.stream),
                    transient=False,
                )
                _LIVE["progress"].start()
            _LIVE["tasks"] += 1
            self._rich_id = _LIVE["progress"].add_task(
                self.label, total=self.total, completed=self.done, info="", pace=""
            )

    def _line(self, text: str) -> None:
        stamp = time.strftime("%H:%M:%S")
        print(f"[{stamp}] {text}", file=self.stream, flush=True)
        self._last_line = time.monotonic()

    def pace(self) -> str:
        """The rate and the time left, from the units done since the start (none before
        the first): ``2.50/s, ETA 4s``, or for slow units ``1m53s/step, ETA 7m32s``.

        Example::

            task.pace()   # '' before the first unit (task: the class example's)
        """
        counted = self.done - self._first
        elapsed = time.monotonic() - self.start
        if counted <= 0 or elapsed <= 0:
            return ""
        rate = counted / elapsed
        if rate >= 1:
            text = f"{rate:.2f}/s" if rate < 10 else f"{rate:.0f}/s"
        else:
            text = f"{_clock(1 / rate)}/{self.unit.rstrip('s') or 'unit'}"
        if self.total is not None and self.done < self.total:
            text += f", ETA {_clock((self.total - self.done) / rate)}"
        return text

    def _info(self) -> str:
        return "  ".join(f"{k} {v}".strip() for k, v in self.fields.items())

    def _status(self) -> str:
        elapsed = time.monotonic() - self.start
        count = f"{self.done}/{self.total}" if self.total is not None else f"{self.done}"
        parts = [f"{self.label}: {count} {self.unit}"]
        if self.pace():
            parts.append(self.pace())
        parts.append(f"elapsed {_clock(elapsed)}")
        info = self._info()
        return ", ".join(parts) + (f"  {info}" if info else "")

    def phase(self, text: str, since: float | None = None) -> None:
        """Say what the unit under way is doing now (``step 3: sampling``), as it happens.

        On the live display it stands beside the count until the unit is done; as a
        line (with the unit's time so far) when units are slow: during the first unit,
        and after one that took ``MINT_ENVKIT_PROGRESS_EVERY_S`` (5 s) or more.
        ``since`` (a ``time.monotonic()`` value) is when the unit the text names began,
        where units overlap (a training loop samples step 2 while step 1 trains): its
        time so far counts from there, not from the unit the count is on. The same text
        again, with nothing said between, is not said twice.

        Example::

            task.phase("step 1: sampling")   # task: the class example's
        """
        if self.fields.get("now") == text:
            return
        self.fields["now"] = text
        if self.mode == "rich":
            _LIVE["progress"].update(self._rich_id, info=self._info(), pace=self.pace())
        elif self.mode == "plain" and (self.done == self._first or self._last_unit_s >= _every_s()):
            took = _clock(time.monotonic() - (self._unit_start if since is None else since))
            self._line(f"{self.label}: {text} ({took} into this {self.unit.rstrip('s')})")

    def advance(self, n: int = 1, detail: str | None = None, **fields: Any) -> None:
        """Count ``n`` more units done; ``fields`` replace the shown figures, ``detail``
        (one text, such as a finished step's summary) replaces the shown text.

        Example::

            task.advance(reward="+0.31")   # task: the class example's
            task.advance(detail="step 1  reward +0.310  correct 0.31")
        """
        self.done += n
        now = time.monotonic()
        self._last_unit_s, self._unit_start = now - self._unit_start, now
        self.fields.pop("now", None)
        self.fields.update(fields)
        if detail is not None:
            self.fields = {"": detail, **{k: v for k, v in self.fields.items() if k}}
        if self.mode == "rich":
            _LIVE["progress"].update(self._rich_id, advance=n, info=self._info(), pace=self.pace())
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
