"""The math-verify workers under hostile input: a memory cap, death with the parent, no
starvation of easy answers behind hard ones, and a fast path that agrees with math-verify.

Linux only: worker processes are found and measured through /proc.
"""

import contextlib
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from math_verify import parse, verify

from mint_envkit.errors import ConfigError
from mint_envkit.parsers import math_equal
from mint_envkit.parsers.math import (
    DEFAULT_MATH_MEMORY_MB,
    MAX_WORKERS,
    configure_math_workers,
    grade_math,
    read_math_answer,
)

BOMB = r"so \boxed{(x+1)^{1000000000}}"  # sympy grows by ~0.2-0.5 GB/s on it, unbounded
HARD = r"so \boxed{9^{9^{9^{9}}}}"
SRC = Path(__file__).resolve().parents[2] / "src"


def _children(pid: int) -> list[int]:
    """The pids whose parent is ``pid``, from /proc."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def _math_workers(pid: int) -> list[int]:
    """The children of ``pid`` that are math-verify workers (``_math_worker.py`` runs in them)."""
    found = []
    for child in _children(pid):
        try:
            argv = Path(f"/proc/{child}/cmdline").read_bytes().split(b"\0")
        except OSError:
            continue
        if any(b"_math_worker" in arg for arg in argv):
            found.append(child)
    return found


def _peak_rss_kib(pid: int) -> int:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    except OSError:
        pass
    return 0


class _PeakSampler:
    """The largest peak RSS (KiB) any math worker of this process reached while it ran.

    Only the math workers count: an xdist worker may still hold other children from its
    earlier tests (an embedded server with SmolLM2 loaded measured 2.1 GB here)."""

    def __init__(self) -> None:
        self.peak = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            for child in _math_workers(os.getpid()):
                self.peak = max(self.peak, _peak_rss_kib(child))
            self.stop.wait(0.01)

    def __enter__(self) -> "_PeakSampler":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join(timeout=10)


@pytest.fixture
def default_workers() -> Iterator[None]:
    yield
    configure_math_workers(workers=MAX_WORKERS, memory_mb=DEFAULT_MATH_MEMORY_MB)


def test_the_exponent_bomb_stays_under_the_default_memory_cap() -> None:
    assert grade_math(r"\boxed{2}", "2")[1]  # a worker is up: its start is not measured
    with _PeakSampler() as sampler:
        result, equal = grade_math(BOMB, "1")  # the default 5 s
    assert result.status == "timeout" and result.value is None and not equal
    assert 0 < sampler.peak < DEFAULT_MATH_MEMORY_MB * 1024, f"peak RSS {sampler.peak} KiB"
    assert grade_math(r"so \boxed{\{1,2\}}", r"\{2,1\}")[1]  # a fresh worker answers


def test_a_configured_memory_cap_stops_the_bomb_as_a_failure(
    default_workers: None,
) -> None:
    configure_math_workers(memory_mb=400)
    assert math_equal(r"\{1,2\}", r"\{2,1\}")  # starts a worker with the new cap
    with _PeakSampler() as sampler:
        started = time.monotonic()
        equal = math_equal(BOMB.removeprefix("so "), "1", timeout=20.0)
        elapsed = time.monotonic() - started
    assert not equal
    assert elapsed < 15, "the cap, not the time limit, stopped it"
    assert 0 < sampler.peak < 400 * 1024, f"peak RSS {sampler.peak} KiB"
    # the caller never sees the MemoryError: a failed grade, then a fresh worker
    started = time.monotonic()
    result, equal = grade_math(BOMB, "1", timeout=20.0)
    assert not equal and time.monotonic() - started < 15
    assert result.status in ("timeout", "ok", "no_match"), result
    assert grade_math(r"so \boxed{\{1,2\}}", r"\{2,1\}")[1]


@pytest.mark.parametrize(
    ("workers", "memory_mb"), [(0, None), (True, None), (None, 10), (None, "1 GB"), (2.5, None)]
)
def test_bad_worker_settings_are_config_errors(workers: object, memory_mb: object) -> None:
    with pytest.raises(ConfigError, match=r"must be an int >= .*configure_math_workers"):
        configure_math_workers(workers=workers, memory_mb=memory_mb)  # type: ignore[arg-type]


_PARENT = """
import os, sys, threading, time
from pathlib import Path
from mint_envkit.parsers.math import grade_math
assert grade_math(r"\\boxed{2}", "2")[1]
threading.Thread(target=grade_math, args=(sys.argv[1], "1"), kwargs={"timeout": 600.0},
                 daemon=True).start()
def children():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid():
                yield entry
time.sleep(0.5)  # the worker is computing now
print(" ".join(children()), flush=True)
time.sleep(600)
"""


def _gone(pid: int) -> bool:
    """True when ``pid`` exited (a zombie nobody reaped counts as exited)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


def test_a_worker_dies_when_its_parent_is_killed() -> None:
    env = {**os.environ, "PYTHONPATH": str(SRC)}
    parent = subprocess.Popen(
        [sys.executable, "-c", _PARENT, HARD], env=env, stdout=subprocess.PIPE, text=True
    )
    try:
        lines: list[str] = []
        reader = threading.Thread(target=lambda: lines.append(parent.stdout.readline()))
        reader.start()
        reader.join(timeout=90)
        assert lines and lines[0].strip(), "the parent never reported its worker"
        workers = [int(pid) for pid in lines[0].split()]
    finally:
        parent.kill()  # SIGKILL: no atexit, no cleanup in the parent
        parent.wait(timeout=30)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not all(_gone(pid) for pid in workers):
        time.sleep(0.05)
    alive = [pid for pid in workers if not _gone(pid)]
    for pid in alive:  # do not leave a runaway behind when the test fails
        os.kill(pid, 9)
    assert not alive, f"workers {alive} outlived their killed parent"


def test_easy_answers_are_not_starved_by_hard_ones() -> None:
    assert grade_math(r"\boxed{2}", "2")[1]
    trivial_waits: list[float] = []
    other_waits: list[float] = []
    failures: list[str] = []

    def hard() -> None:
        grade_math(HARD, "1", timeout=3.0)

    def trivial(i: int) -> None:
        for j in range(5):
            started = time.monotonic()
            checks = (
                grade_math(rf"so \boxed{{{i + j}}}", str(i + j))[1],
                math_equal(f"{i}/{j + 1}", rf"\frac{{{2 * i}}}{{{2 * j + 2}}}"),
                not math_equal(str(i), str(i + 1)),
                read_math_answer(rf"\boxed{{-\frac{{{i}}}{{7}}}}").status == "ok",
            )
            trivial_waits.append(time.monotonic() - started)
            if not all(checks):
                failures.append(f"trivial {i}, {j}: {checks}")

    def other(i: int) -> None:
        started = time.monotonic()
        equal = math_equal(rf"\{{{i}, 1\}}", rf"\{{1, {i}\}}", timeout=2.0)
        other_waits.append(time.monotonic() - started)
        del equal  # it may time out behind the hard ones; it must not wait longer

    threads = [threading.Thread(target=hard) for _ in range(6)]
    threads += [threading.Thread(target=trivial, args=(i,)) for i in range(8)]
    threads += [threading.Thread(target=other, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=100)
    assert not any(thread.is_alive() for thread in threads)
    assert not failures, failures
    assert len(trivial_waits) == 40 and max(trivial_waits) < 3.0, max(trivial_waits)
    # the deadline runs from submission: queueing counts, starting a worker (~2-4 s) not
    assert len(other_waits) == 2 and max(other_waits) < 2.0 + 15, other_waits


@pytest.mark.parametrize(
    "text",
    [
        r"\boxed{3}",
        r"so \boxed{-3}",
        r"\boxed{ 3 }",
        r"\boxed{+3}",
        r"\boxed{007}",
        r"\boxed{-0}",
        r"\boxed{\frac{1}{2}}",
        r"\boxed{\frac{2}{4}}",
        r"\boxed{-\frac{3}{4}}",
        r"\boxed{\frac{1}{0}}",
        r"\boxed{\dfrac{1}{2}}",
        r"\boxed{3/4}",
        r"\boxed{0.5}",
        r"\boxed{1.50}",
        r"\boxed{3} \boxed{4}",
        r"The answer is $5$. \boxed{3}",
        "42",
        " -7 ",
        r"x \boxed{12}" + "\n",
        r"answer: \boxed{3}.",
        "\\boxed{\u0663}",  # an Arabic-Indic digit: not plain ASCII, left to math-verify
    ],
)
def test_the_fast_path_reads_what_math_verify_reads(text: str) -> None:
    assert grade_math(r"\boxed{2}", "2")[1]  # math-verify is known to load: fast path on
    parsed = parse(text, parsing_timeout=None)
    expected = None
    if parsed:
        text_form = parsed[1] if len(parsed) > 1 and isinstance(parsed[1], str) else ""
        expected = text_form.strip() or str(parsed[0])
    assert read_math_answer(text).value == expected
    assert grade_math(text, "3")[0].value == expected


def _boxed(text: str) -> str:
    return text if "\\boxed" in text else "\\boxed{" + text + "}"


@pytest.mark.parametrize(
    ("value", "answer"),
    [
        ("0.5", "1/2"),
        ("2", "2.0"),
        ("0", "-0"),
        ("007", "7"),
        ("2/4", r"\frac{1}{2}"),
        (r"-\dfrac{3}{4}", "-0.75"),
        ("1000001", "1000000"),
        ("100000000000000001", "100000000000000000"),
        ("0.001", "0.002"),
        ("0.5", "0.501"),
        ("1/3", "1/2"),
        ("0.333333", "1/3"),  # math-verify rounds to 6 places: equal
        ("0.3333", "1/3"),
        ("3.14159265", "3.14159266"),
        ("0.0000001", "0.0000002"),
        ("1/3", "333333/1000000"),
        ("1/0", "2/0"),
        ("1e3", "1000"),
        ("+3", "3"),
        ("-.5", "-1/2"),
        (" 3 ", r"\tfrac{6}{2}"),
    ],
)
def test_the_fast_path_compares_as_math_verify_does(value: str, answer: str) -> None:
    assert grade_math(r"\boxed{2}", "2")[1]
    gold = parse(_boxed(answer), parsing_timeout=None)
    target = parse(_boxed(value), parsing_timeout=None)
    expected = bool(verify(gold, target, timeout_seconds=None))
    assert math_equal(value, answer) is expected


def _kill_math_workers() -> None:
    """SIGKILL this process's math-verify workers (a call whose worker dies returns; the
    ``default_workers`` fixture then starts a fresh pool)."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat, argv = (entry / "stat").read_text(), (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == os.getpid() and b"_math_worker" in argv:
            with contextlib.suppress(ProcessLookupError):
                os.kill(int(entry.name), signal.SIGKILL)


def test_slow_calls_do_not_hold_a_lane(default_workers: None) -> None:
    """Two hopeless calls hold both lanes; a third call gets a further worker and answers
    while they still run. The verdict is an order (the third call returns before the slow
    ones end), not a duration: a loaded machine once took 7.7 s to start that worker."""
    configure_math_workers(workers=2)
    warm = [
        threading.Thread(target=math_equal, args=(rf"\{{{i}, 1\}}", rf"\{{1, {i}\}}"))
        for i in range(2)
    ]
    for thread in warm:  # two idle workers: the hard calls take them at once
        thread.start()
    for thread in warm:
        thread.join(timeout=100)
    hard = [
        threading.Thread(target=grade_math, args=(HARD, "1"), kwargs={"timeout": 15.0})
        for _ in range(2)
    ]
    for thread in hard:
        thread.start()
    time.sleep(1.5)  # both lanes now hold a call that has run over a second
    equal = math_equal(r"\{3, 1\}", r"\{1, 3\}", timeout=13.0)
    still_running = [thread.is_alive() for thread in hard]
    _kill_math_workers()  # the hopeless calls' workers each burn a core to their 15 s
    for thread in hard:
        thread.join(timeout=100)
    assert equal is True  # answered, not timed out waiting for a lane
    assert still_running == [True, True]  # a further worker started beside the slow ones


def test_a_parent_with_a_big_peak_memory_still_grades():
    """Linux keeps ``ru_maxrss`` across exec: a worker started by a process whose peak
    memory passed the worker's cap (a training process with a model loaded) read that
    peak as its own and answered every call "out of memory" (every grade a timeout)."""
    script = (
        "big = bytearray(1100 * 1024 * 1024); big[::4096] = b'x' * len(big[::4096]); del big\n"
        "import resource\n"
        "assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 1024 * 1024\n"
        "from mint_envkit.parsers import math_answer, math_equal\n"
        "print(math_equal('0.5', '1/2'), math_answer('x = \\\\frac{1}{2}').status)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=90, check=True
    )
    assert done.stdout.split() == ["True", "ok"], done.stdout + done.stderr
