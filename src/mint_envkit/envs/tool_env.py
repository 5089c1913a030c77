"""Tool-calling environments: the model calls Python functions, then answers.

A :class:`ToolEnv` lists its tools in the prompt (through the chat template's
``tools=``, so the model sees them the way it was trained to), runs every tool
call of an assistant turn and answers with one ``tool`` message per call. A
reply without a tool call is the final answer: it is parsed and scored like a
:class:`~mint_envkit.SingleTurnEnv` reply (same ``parser``, ``check``,
``reward_*`` and ``reward_fn``).

Nothing a model does crashes the episode: an unknown tool, arguments that are
not JSON or do not fit the schema, a call over ``max_tool_calls``, a tool that
raises, a tool over ``tool_timeout_s`` all come back to the model as a tool
message saying what went wrong, and are counted.

Metrics (every turn, counts so far): ``tool_calls`` (every call the model
wrote, readable or not), ``invalid_tool_calls`` (calls that were not run:
unreadable, unknown tool, bad arguments, over the limit), ``tool_errors``
(calls that ran and raised or timed out); ``turns`` at the end; ``correct``
and ``parsed`` as in ``SingleTurnEnv`` (0 until a final answer is scored; absent
when ``reward_fn`` checks no answer).

Example::

    from mint_envkit import ToolEnv, first_number, tool

    @tool
    def add(a: float, b: float) -> float:
        \"\"\"Add two numbers.

        Args:
            a: the first number.
            b: the second number.
        \"\"\"
        return a + b

    class AddEnv(ToolEnv):
        system_prompt = "Use the add tool, then reply with only the number."
        tools = [add]
        parser = first_number
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from mint_envkit.envs.base import Message
from mint_envkit.envs.multi_turn import Feedback, MultiTurnEnv
from mint_envkit.envs.scoring import AnswerScoring
from mint_envkit.errors import ConfigError, ToolDefinitionError
from mint_envkit.tools import Tool, as_tool, validate_arguments

__all__ = ["ToolEnv"]

_COUNTS = ("tool_calls", "invalid_tool_calls", "tool_errors")


def _tool_map(cls: type) -> dict[str, Tool]:
    tools = getattr(cls, "tools", [])
    if not isinstance(tools, list | tuple):
        raise ToolDefinitionError(
            f"{cls.__name__}.tools must be a list of functions or Tools, got {tools!r}"
        )
    out: dict[str, Tool] = {}
    for value in tools:
        made = as_tool(value)
        if made.name in out:
            raise ToolDefinitionError(
                f"{cls.__name__}.tools has two tools named {made.name!r}; give one "
                "another name with @tool(name=...)"
            )
        out[made.name] = made
    return out


def _check_limits(cls: type) -> None:
    calls = cls.max_tool_calls
    if isinstance(calls, bool) or not isinstance(calls, int) or calls < 0:
        raise ConfigError(f"{cls.__name__}.max_tool_calls must be an integer >= 0, got {calls!r}")
    timeout = cls.tool_timeout_s
    if timeout is not None and (
        isinstance(timeout, bool) or not isinstance(timeout, int | float) or not timeout > 0
    ):
        raise ConfigError(
            f"{cls.__name__}.tool_timeout_s must be a number of seconds > 0 (or None for "
            f"no limit), got {timeout!r}"
        )


def _result_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


class ToolEnv(AnswerScoring, MultiTurnEnv):
    """A multi-turn env whose model calls tools, then gives a scored final answer.

    Class attributes:
        tools: the tools, as functions or :class:`~mint_envkit.Tool` objects
            (see :func:`~mint_envkit.tool`); checked when the class is defined.
        system_prompt: the system message (the chat template adds the tools).
        parser, reward_correct, reward_incorrect, reward_unparsed, reward_fn,
            reward_sees_thinking: score the final answer, as in
            :class:`~mint_envkit.SingleTurnEnv`.
        max_turns: the most assistant turns (default 10); running out gives
            ``max_turns_reward`` (default 0.0). Running out of turns gives no
            answer, so ``max_turns_reward`` may not exceed the wrong-answer
            reward (:class:`~mint_envkit.errors.ConfigError` when the class is
            defined); left unset it follows that reward when it is lower.
        max_tool_calls: the most tool calls in one episode (default 10); later
            calls are not run and the model is told to answer.
        tool_timeout_s: seconds one call may take (default 10.0; None: no limit).
        required_fields: default ``("question", "answer")``.

    Hooks: ``messages()``, ``check(parsed, answer)``, ``score(message)``,
    ``setup()``, ``teardown()``, and ``tool_message(call_id, name, content)``
    (the tool message sent back).

    Example::

        class AddEnv(ToolEnv):
            system_prompt = "Use the add tool, then reply with only the number."
            tools = [add]
            parser = first_number

        env = AddEnv(question="What is 2 + 3?", answer="5")
        env.tool_specs()  # [{'type': 'function', 'function': {'name': 'add', ...}}]
    """

    tools: ClassVar[list[Any]] = []
    max_tool_calls: ClassVar[int] = 10
    tool_timeout_s: ClassVar[float | None] = 10.0
    required_fields: ClassVar[tuple[str, ...]] = ("question", "answer")
    _tools_by_name: ClassVar[dict[str, Tool]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools_by_name = _tool_map(cls)
        _check_limits(cls)

    def __init__(self, **problem: Any) -> None:
        super().__init__(**problem)
        self.counts: dict[str, int] = dict.fromkeys(_COUNTS, 0)

    @property
    def question(self) -> str:
        """The problem's question."""
        return str(self.problem.get("question", ""))

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools' JSON schemas, for the chat template's ``tools=``."""
        return [t.schema for t in self._tools_by_name.values()]

    def tool_message(self, call_id: str | None, name: str, content: str) -> Message:
        """The ``tool`` message that answers one call. Override to change its shape."""
        message: Message = {"role": "tool", "name": name, "content": content}
        if call_id:
            message["tool_call_id"] = call_id
        return message

    def _metrics(self) -> dict[str, float]:
        return {key: float(value) for key, value in self.counts.items()}

    def unscored_metrics(self) -> dict[str, float]:
        """``correct`` and ``parsed`` at 0 and the tool counts so far (episode cut off)."""
        return {**super().unscored_metrics(), **self._metrics(), "turns": float(self.turns)}

    async def _run_call(self, call: dict[str, Any]) -> tuple[str, str, str]:
        """Run one call; return (name, status, text for the model)."""
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        name = str(function.get("name", ""))
        if self.counts["tool_calls"] > self.max_tool_calls:
            return (
                name,
                "invalid",
                (
                    f"Error: not run; this episode allows {self.max_tool_calls} tool calls. "
                    "Give your final answer without calling a tool."
                ),
            )
        tool = self._tools_by_name.get(name)
        if tool is None:
            known = ", ".join(self._tools_by_name) or "none"
            return name, "invalid", f"Error: unknown tool {name!r}; the tools are: {known}."
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            try:
                arguments = json.loads(arguments) if arguments.strip() else {}
            except json.JSONDecodeError as err:
                return name, "invalid", f"Error: the arguments of {name} are not JSON: {err}."
        problem = validate_arguments(tool, arguments)
        if problem:
            return name, "invalid", f"Error: bad arguments for {name}: {problem}."
        try:
            value = await tool.run(arguments, timeout_s=self.tool_timeout_s)
        except TimeoutError:
            return name, "error", f"Error: {name} timed out after {self.tool_timeout_s:g} s."
        except Exception as err:
            return name, "error", f"Error: {name} raised {type(err).__name__}: {err}"
        return name, "ok", _result_text(value)

    async def respond(self, message: Message) -> Feedback:
        """Run the turn's tool calls, or score the final answer when there are none."""
        calls = list(message.get("tool_calls") or [])
        unparsed = list(message.get("unparsed_tool_calls") or [])
        if not calls and not unparsed:
            result = self.score(message)
            metrics = {**result.metrics, **self._metrics()}
            return Feedback(reward=result.reward, done=True, metrics=metrics, logs=result.logs)
        replies: list[Message] = []
        log: list[dict[str, str]] = []
        for call in calls:
            self.counts["tool_calls"] += 1
            name, status, text = await self._run_call(call)
            if status != "ok":
                self.counts["invalid_tool_calls" if status == "invalid" else "tool_errors"] += 1
            replies.append(self.tool_message(call.get("id"), name, text))
            log.append({"name": name, "status": status})
        for bad in unparsed:
            self.counts["tool_calls"] += 1
            self.counts["invalid_tool_calls"] += 1
            error = bad.get("error", "unreadable") if isinstance(bad, dict) else "unreadable"
            text = (
                f"Error: a tool call could not be read: {error}. Write each call as "
                '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
            )
            replies.append(self.tool_message(None, "", text))
            log.append({"name": "", "status": "invalid"})
        metrics = {**super().unscored_metrics(), **self._metrics()}
        return Feedback(reply=replies, metrics=metrics, logs={"tool_calls": log})
