"""Score model-written Python by running it against tests in a sandbox.

:data:`python_code` reads the code out of the reply (the last `````python`` block);
:func:`run_tests` runs it against a list of tests through an
:class:`~mint_envkit.sandbox.Executor`; :func:`code_passes` is the reward that does
both, with the outcome (``pass`` / ``fail`` / ``error`` / ``timeout``) and each test's
result in the metrics and logs. The default executor is :func:`default_executor`: the
bubblewrap sandbox, or a :class:`~mint_envkit.errors.SandboxError` that names the fix
when this machine has none (the kit never falls back to running code unprotected).

Example::

    from mint_envkit.sandbox import code_passes

    reward = code_passes()
    reply = "```python\\ndef add(a, b):\\n    return a + b\\n```"
    breakdown = await reward.score_async(reply, ["assert add(1, 2) == 3"])
    assert breakdown.total == 1.0 and breakdown.metrics["code/passes/pass"] == 1.0
"""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from typing import Any

from mint_envkit.errors import ConfigError, SandboxError
from mint_envkit.lru import LRU
from mint_envkit.parsers import Parser, ParseResult
from mint_envkit.rewards import PartScore, Reward, RewardContext
from mint_envkit.sandbox.bubblewrap import BubblewrapExecutor
from mint_envkit.sandbox.cases import Case, split_tests
from mint_envkit.sandbox.executor import Executor, Limits
from mint_envkit.sandbox.harness import CodeRun, make_input, read_report
from mint_envkit.sandbox.inside import program

_FENCE = re.compile(r"^[ \t]*```[ \t]*([A-Za-z0-9_+-]*)[^\n]*$", re.MULTILINE)
_PYTHON = ("python", "py", "python3")
_OUTCOMES = ("pass", "fail", "error", "timeout")


def _python_code(text: str) -> ParseResult:
    blocks: list[tuple[str, str]] = []
    opened: tuple[str, int] | None = None
    for fence in _FENCE.finditer(text):
        if opened is None:
            opened = (fence.group(1).lower(), fence.end())
        else:
            blocks.append((opened[0], text[opened[1] : fence.start()]))
            opened = None
    code = [body for lang, body in blocks if lang in _PYTHON]
    code = code or [body for lang, body in blocks if not lang]
    if code:
        source = code[-1].strip("\n")
        return ParseResult.ok(source) if source.strip() else ParseResult.fail("empty")
    if opened is not None and (opened[0] in _PYTHON or not opened[0]):
        return ParseResult.fail("truncated")
    if not text.strip():
        return ParseResult.fail("empty")
    return ParseResult.fail("no_match")


python_code = Parser.from_function(_python_code, name="python_code")
"""The code of the reply's last `````python`` (or ``py``, or bare `````) fenced block.

Status ``truncated`` when a python block is opened and never closed (the reply hit the
token limit), ``empty`` when the block (or the reply) is blank, ``no_match`` when the
reply has no fenced code.

Example::

    assert python_code("Here:\\n```python\\nx = 1\\n```").value == "x = 1"
    assert python_code("```python\\nx = 1").status == "truncated"
    assert python_code("x = 1").status == "no_match"
"""

_DEFAULT: list[Executor] = []


def default_executor() -> Executor:
    """The executor a code reward uses when given none: the local bubblewrap sandbox.

    One shared :class:`~mint_envkit.sandbox.BubblewrapExecutor` per process (so its pool
    bounds every reward). Raises :class:`~mint_envkit.errors.SandboxError` when
    bubblewrap cannot run here; it never falls back to running code unprotected.

    Example::

        executor = default_executor()  # SandboxError on a machine without bubblewrap
        assert executor.name == "bubblewrap"
    """
    if not _DEFAULT:
        executor = BubblewrapExecutor()
        reason = executor.unavailable_reason()
        if reason is not None:
            raise SandboxError(
                f"no sandbox to run model-written code: {reason}; or pass "
                "executor=SandboxFusionExecutor(url) for a remote sandbox, or, only on a "
                "machine where nothing is at stake, executor=UnsafeLocalExecutor()"
            )
        _DEFAULT.append(executor)
    return _DEFAULT[0]


_SHARED: ContextVar[LRU[tuple[Any, ...], asyncio.Future[CodeRun]] | None] = ContextVar(
    "mint_envkit_shared_runs", default=None
)
_SHARED_RUNS = 4096  # runs kept by shared_runs()


@contextlib.contextmanager
def shared_runs() -> Iterator[None]:
    """Within it (in this task and the tasks it starts), a run of the same code on the
    same tests under the same limits and executor runs once: the others get its
    :class:`CodeRun`, even while it is still running. The audit scores one reference
    solution several times (its probes, its code audit); scoring a model's replies
    never shares. Inside another ``shared_runs()``, it shares the enclosing one's runs
    (one event loop: a run is shared while it is still going).

    Example::

        with shared_runs():
            first = await run_tests("def f():\\n    return 1", ["assert f() == 1"])
            again = await run_tests("def f():\\n    return 1", ["assert f() == 1"])
        assert again is first
    """
    enclosing = _SHARED.get()
    token = _SHARED.set(LRU(_SHARED_RUNS) if enclosing is None else enclosing)
    try:
        yield
    finally:
        _SHARED.reset(token)


async def _execute(code: str, cases: list[Case], executor: Executor, limits: Limits) -> CodeRun:
    stdin, nonce = make_input(code, cases, limits.processes)
    result = await executor.run(program(), stdin, limits)
    return read_report(result, cases, nonce)


async def _run_cases(
    code: str, cases: list[Case], executor: Executor | None, limits: Limits | None
) -> CodeRun:
    if not isinstance(code, str):
        raise ConfigError(f"run_tests(code=...) needs the code as a str, got {code!r}")
    limits = Limits() if limits is None else limits
    if executor is None:  # probes bubblewrap once per process: not on the event loop
        executor = await asyncio.to_thread(default_executor)
    shared = _SHARED.get()
    if shared is None:
        return await _execute(code, cases, executor, limits)
    key = (code, repr(cases), limits, id(executor))
    running = shared.get(key)
    if running is None:
        running = asyncio.ensure_future(_execute(code, cases, executor, limits))
        shared.put(key, running)
    try:
        return await asyncio.shield(running)
    except BaseException:
        if running.done() and shared.get(key) is running:
            shared.pop(key)  # a failed run is not shared: the next one tries again
        raise


async def run_tests(
    code: str,
    tests: Sequence[str | dict] | str,
    *,
    executor: Executor | None = None,
    limits: Limits | None = None,
) -> CodeRun:
    """Run ``code`` against ``tests`` in a sandbox and judge each test outside it: a :class:`CodeRun`.

    Each test is split (:func:`~mint_envkit.sandbox.cases.split_test`): an ``assert
    f(x) == <literal>`` (also ``!=``, ``in``, ``not in``, ``is True`` / ``False`` /
    ``None``), ``assert f(x)``, ``assert not f(x)``, or a ``{"stdin": ..., "stdout":
    ...}`` case. The sandbox gets the code and each test's computed side (``f(x)``, or
    the stdin), evaluates them and reports values; the expected side never enters it,
    and the comparison is made here, on plain values. So whatever the code does in its
    own process (replace builtins, ``json`` or ``os.write``, forge report lines, exit),
    a test passes only when the value reported for it is the expected one. A test that
    does not split raises :class:`~mint_envkit.errors.ConfigError`. ``executor``
    defaults to :func:`default_executor`, ``limits`` to :class:`Limits()`; what each
    executor guarantees is in docs/code.md.

    Example::

        run = await run_tests("def square(x):\\n    return x * x",
                              ["assert square(3) == 9", "assert square(-2) == 4"])
        assert run.outcome == "pass" and run.passed == 2
    """
    return await _run_cases(code, split_tests(tests), executor, limits)


def _check_executor(executor: object) -> Executor | None:
    if executor is None or isinstance(executor, Executor):
        return executor
    raise ConfigError(
        f"code_passes(executor={executor!r}) needs an Executor (an object with "
        "`async def run(source, stdin, limits)`), e.g. BubblewrapExecutor()"
    )


def code_passes(
    *,
    executor: Executor | None = None,
    limits: Limits | None = None,
    parser: Parser = python_code,
    partial: bool = False,
    name: str = "passes",
) -> Reward:
    """1.0 when the reply's code passes every test, else 0.0: an async :class:`Reward`.

    The tests are the reference ``answer`` (a list of tests in the forms of
    :func:`run_tests`, or one); the code is what ``parser`` reads from the reply
    (:data:`python_code`), and each test's verdict is made outside the code's process. A reply without
    code scores 0.0 with its parse status (``parse/<name>/no_match``...). Otherwise the
    code runs in ``executor`` (default :func:`default_executor`, resolved at the first
    run) under ``limits``, and the metrics say how: ``code/<name>/pass``, ``/fail``,
    ``/error``, ``/timeout`` (one is 1.0) and ``code/<name>/tests_passed`` (the share of
    tests passed); the logs hold ``code/<name>/outcome``, ``/tests`` (each test's status
    and error) and ``/output`` (what the code printed, its tail). ``partial=True`` scores
    the share of tests passed instead of all-or-nothing. The verdict ``correct`` is
    True when every test passed. A broken sandbox raises
    :class:`~mint_envkit.errors.SandboxError`: never scored as a wrong answer.

    Example::

        from mint_envkit import CodeEnv

        class MyCodeEnv(CodeEnv):
            reward_fn = code_passes(limits=Limits(wall_s=5), partial=True)

        breakdown = await code_passes().score_async("no code here", ["assert f()"])
        assert breakdown.metrics["parse/passes/no_match"] == 1.0
    """
    executor = _check_executor(executor)
    if limits is not None and not isinstance(limits, Limits):
        raise ConfigError(f"code_passes(limits={limits!r}) needs a Limits(...)")
    if not isinstance(parser, Parser):
        raise ConfigError(f"code_passes(parser={parser!r}) needs a Parser, e.g. python_code")

    async def score(completion: str, answer: Any, context: RewardContext) -> PartScore:
        cases = split_tests(answer)
        read = parser(completion)
        if not read:
            return PartScore(0.0, read)
        run = await _run_cases(read.value or "", cases, executor, limits)
        value = run.fraction if partial else float(run.outcome == "pass")
        metrics = {f"code/{outcome}": float(run.outcome == outcome) for outcome in _OUTCOMES}
        metrics["code/tests_passed"] = run.fraction
        logs = {
            "code/outcome": run.outcome,
            "code/message": run.message,
            "code/tests": [
                {"test": test.test, "status": test.status, "error": test.error}
                for test in run.tests
            ],
            "code/output": (run.stdout + run.stderr)[-500:],
        }
        return PartScore(value, read, metrics, logs)

    return Reward(name=name, leaf=score, checks_answer=True, bounds=(0.0, 1.0))
