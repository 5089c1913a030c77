"""A single-turn env that asks for a Python function and scores it by running its tests.

Example::

    from mint_envkit.sandbox import CodeEnv

    env = CodeEnv(question="Write add(a, b) returning the sum.",
                  tests=["assert add(1, 2) == 3", "assert add(-1, 1) == 0"])
    await env.initial_observation()
    result = await env.step({"role": "assistant",
                             "content": "```python\\ndef add(a, b):\\n    return a + b\\n```"})
    assert result.reward == 1.0 and result.metrics["correct"] == 1.0
"""

from __future__ import annotations

from typing import Any, ClassVar

from mint_envkit.envs import SingleTurnEnv
from mint_envkit.errors import ConfigError, ProblemError
from mint_envkit.sandbox.cases import split_tests
from mint_envkit.sandbox.reward import code_passes


class CodeEnv(SingleTurnEnv):
    """Asks for code, runs it against the problem's ``tests`` in a sandbox, rewards a pass.

    A problem has a ``question`` (the task) and ``tests`` (a list of ``assert f(x) ==
    <literal>`` lines, or the other forms of :func:`~mint_envkit.sandbox.run_tests`:
    the code's side is computed in the sandbox, the expected side compared outside it);
    the tests are the env's ``answer``. The reward is :func:`~mint_envkit.sandbox.code_passes` (1.0 when
    every test passes) run in the default sandbox; set ``reward_fn`` to change the
    executor, the limits or to give partial credit. Metrics: ``correct`` (every test
    passed), ``parsed`` (the reply had code), ``code/passes/<outcome>`` and
    ``code/passes/tests_passed``; logs: the outcome and each test's result.

    A test that does not split (:func:`~mint_envkit.sandbox.cases.split_test`) raises
    :class:`~mint_envkit.errors.ProblemError` when the env is made, before any sampling.

    A problem may carry a reference ``solution`` (Python source; optional): it never
    enters the prompt, and the audit uses it as the correct reply
    (:meth:`reference_reply`), checks that it passes its own tests and measures the
    tests' strength by mutating it (docs/audit.md). :meth:`reply_for` writes code as a
    reply the env reads; override it with the parser.

    Example::

        from mint_envkit.sandbox import Limits

        class FastCode(CodeEnv):
            system_prompt = "Answer with one ```python block."
            reward_fn = code_passes(limits=Limits(wall_s=3), partial=True)

        env = FastCode(question="Write double(x).", tests=["assert double(2) == 4"])
    """

    system_prompt: ClassVar[str | None] = (
        "Write the Python function the user asks for. Reply with the code in one ```python block."
    )
    required_fields: ClassVar[tuple[str, ...]] = ("question", "tests")
    optional_fields: ClassVar[dict[str, Any]] = {"solution": None}
    reward_fn: ClassVar[Any] = code_passes()

    def __init__(self, **problem: Any) -> None:
        super().__init__(**problem)
        solution = self.problem.get("solution")
        if solution is not None and not (isinstance(solution, str) and solution.strip()):
            raise ProblemError(
                f"{type(self).__name__}: 'solution' is the reference solution's Python "
                f"source (a non-empty str) or None, got {solution!r}"
            )
        try:  # a test that cannot be judged outside the sandbox fails here, before sampling
            split_tests(self.problem.get("tests"))
        except ConfigError as err:
            raise ProblemError(f"{type(self).__name__}: {err}") from None

    @property
    def answer(self) -> Any:
        """The problem's tests: what the reply's code must pass.

        Example::

            CodeEnv(question="q", tests=["assert True"]).answer  # ['assert True']
        """
        return self.problem.get("tests")

    def reply_for(self, code: str) -> str:
        """``code`` written as a reply this env reads: one `````python`` block.

        Override it together with the parser (a reply format of your own), so the audit's
        reference solution and trivial programs reach the env the way a model's would.

        Example::

            env = CodeEnv(question="q", tests=["assert f() == 1"])
            assert env.reply_for("def f():\\n    return 1") == (
                "```python\\ndef f():\\n    return 1\\n```")
        """
        return "```python\n" + code.strip("\n") + "\n```"

    def reference_reply(self) -> str | None:
        """The problem's ``solution`` as a reply (:meth:`reply_for`), or None without one.

        Example::

            env = CodeEnv(question="Write one().", tests=["assert one() == 1"],
                          solution="def one():\\n    return 1")
            assert env.reference_reply().startswith("```python\\ndef one()")
            assert CodeEnv(question="q", tests=["assert True"]).reference_reply() is None
        """
        solution = self.problem.get("solution")
        return None if solution is None else self.reply_for(solution)
