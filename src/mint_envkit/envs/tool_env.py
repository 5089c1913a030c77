"""Tool-calling environments: the model calls Python functions, then answers.

A :class:`ToolEnv` lists its tools in the prompt (through the chat template's
``tools=``, so the model sees them the way it was trained to; a template with no
tools slot gets a ``# Tools`` block written into the system message by the
renderer, see ``docs/tools.md``), runs every tool
call of an assistant turn and answers with one ``tool`` message per call. A
reply without a tool call is the final answer: it is parsed and scored like a
:class:`~mint_envkit.SingleTurnEnv` reply (same ``parser``, ``check``,
``reward_*`` and ``reward_fn``).

Nothing a model does crashes the episode: an unknown tool, arguments that are
not JSON or do not fit the schema, a call over ``max_tool_calls``, a tool that
raises, a tool over ``tool_timeout_s`` all come back to the model as a tool
message saying what went wrong, and are counted. So do calls of any odd shape:
JSON nested deeper than :data:`~mint_envkit.tools.arguments.MAX_JSON_DEPTH` levels or
longer than :data:`~mint_envkit.tools.arguments.MAX_ARGUMENT_CHARS`, arguments that are not
an object, a call that is not a dict. Each call runs in a daemon thread of the
class's own :class:`~mint_envkit.tools.ToolThreads` (``max_tool_threads``), so a
timeout really ends the wait; a result longer than ``max_tool_result_chars`` is
cut, with a marker. ``docs/tools.md`` tells how tools run.

Metrics (every turn, counts so far): ``tool_calls`` (every call the model
wrote, readable or not), ``invalid_tool_calls`` (calls that were not run:
unreadable, unknown tool, bad arguments, over the limit), ``tool_errors``
(calls that ran and raised or timed out); each turn's log ``tool_calls`` lists its
calls, ``{"name", "status"}`` with status ``ok``, ``invalid``, ``error`` or ``timeout``
(evaluations read their tool figures from them, per tool); ``turns`` at the end; ``correct``
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

from typing import Any, ClassVar

from mint_envkit.checks import check_integer, check_number
from mint_envkit.envs.base import Message, MessageStepResult
from mint_envkit.envs.multi_turn import Feedback, MultiTurnEnv
from mint_envkit.envs.scoring import AnswerScoring
from mint_envkit.errors import EnvError, ToolDefinitionError
from mint_envkit.tools import Tool, ToolThreads
from mint_envkit.tools.arguments import load_json, validate_arguments
from mint_envkit.tools.mcp import McpServer, McpTools, check_servers, known_specs
from mint_envkit.tools.results import capped, result_text
from mint_envkit.tools.schema import as_tool
from mint_envkit.tools.threads import DEFAULT_TOOL_THREADS

_COUNTS = ("tool_calls", "invalid_tool_calls", "tool_errors")
_NAME_CHARS = 100


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
    check_integer(cls.max_tool_calls, f"{cls.__name__}.max_tool_calls", least=0)
    check_number(
        cls.tool_timeout_s,
        f"{cls.__name__}.tool_timeout_s",
        low=0,
        low_open=True,
        none_ok=True,
        why="seconds; None: no limit",
    )
    check_integer(
        cls.max_tool_result_chars,
        f"{cls.__name__}.max_tool_result_chars",
        none_ok=True,
        why="None keeps whole results",
    )
    check_integer(
        cls.max_tool_threads,
        f"{cls.__name__}.max_tool_threads",
        why="how many tool calls may run or hang at once",
    )


def _short(name: Any) -> str:
    """A called name for a message: text, at most a hundred chars."""
    text = name if isinstance(name, str) else result_text(name, _NAME_CHARS + 1)
    return text if len(text) <= _NAME_CHARS else text[:_NAME_CHARS] + "..."


def _error_text(err: BaseException) -> str:
    try:
        return str(err)
    except Exception:
        return "(its message cannot be shown)"


def _unreadable(error: str) -> str:
    return (
        f"Error: a tool call could not be read: {error}. Write each call as "
        '<tool_call>{"name": ..., "arguments": {...}}</tool_call>.'
    )


def _as_list(value: Any) -> list[Any]:
    """A message's calls as a list; a lone call of another shape is one (bad) call."""
    if not value:
        return []
    return list(value) if isinstance(value, list | tuple) else [value]


class ToolEnv(AnswerScoring, MultiTurnEnv):
    """A multi-turn env whose model calls tools, then gives a scored final answer.

    Class attributes:
        tools: the tools, as functions or :class:`~mint_envkit.Tool` objects
            (see :func:`~mint_envkit.tool`); checked when the class is defined.
        mcp_servers: :class:`~mint_envkit.McpServer` objects whose tools are
            offered too (started before the first observation, listed then;
            per-episode servers stopped when the episode ends, also on an error,
            an abort or a cancellation); see "Tools from MCP servers" in
            ``docs/tools.md``.
        system_prompt: the system message (the chat template adds the tools).
        few_shot: example messages between the system prompt and the question;
            tool-call turns (assistant ``tool_calls``, ``role: "tool"`` results)
            allowed.
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
        max_tool_result_chars: the longest tool message (default 65536); a longer
            result or error is cut, with a marker saying how much (None: no cap).
        max_tool_threads: how many of this class's calls may run or hang at once
            (default 256); past it a call is a tool error at once, not a wait.
        required_fields: default ``("question", "answer")``.

    Hooks: ``messages()``, ``check(parsed, answer)``, ``score(message)``,
    ``setup()``, ``teardown()``, and ``tool_message(call_id, name, content)``
    (the tool message sent back).

    Example::

        # not run: `add` comes from your own code
        class AddEnv(ToolEnv):
            system_prompt = "Use the add tool, then reply with only the number."
            tools = [add]
            parser = first_number

        env = AddEnv(question="What is 2 + 3?", answer="5")
        env.tool_specs()  # [{'type': 'function', 'function': {'name': 'add', ...}}]
    """

    tools: ClassVar[list[Any]] = []
    mcp_servers: ClassVar[list[McpServer]] = []
    max_tool_calls: ClassVar[int] = 10
    tool_timeout_s: ClassVar[float | None] = 10.0
    max_tool_result_chars: ClassVar[int | None] = 65_536
    max_tool_threads: ClassVar[int] = DEFAULT_TOOL_THREADS
    required_fields: ClassVar[tuple[str, ...]] = ("question", "answer")
    _tools_by_name: ClassVar[dict[str, Tool]] = {}
    _tool_threads: ClassVar[ToolThreads | None] = None

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._tools_by_name = _tool_map(cls)
        check_servers(cls.__name__, cls.mcp_servers)
        _check_limits(cls)
        cls._tool_threads = ToolThreads(cls.max_tool_threads)

    def __init__(self, **problem: Any) -> None:
        super().__init__(**problem)
        self.counts: dict[str, int] = dict.fromkeys(_COUNTS, 0)
        self._mcp: McpTools | None = None

    @property
    def question(self) -> str:
        """The problem's question."""
        return str(self.problem.get("question", ""))

    def tool_specs(self) -> list[dict[str, Any]]:
        """The tools' JSON schemas, for the chat template's ``tools=``.

        MCP tools are listed when the episode starts; before that, the ones its
        servers listed last time (none before any episode started).
        """
        specs = [t.schema for t in self._tools_by_name.values()]
        if self._mcp is not None:
            return specs + self._mcp.specs
        return specs + known_specs(self.mcp_servers)

    async def initial_observation(self) -> list[Message]:
        """Start or join the ``mcp_servers`` (listing their tools), then as MultiTurnEnv."""
        opened = bool(self.mcp_servers) and not self._started and self._mcp is None
        if opened:
            taken = set(self._tools_by_name)
            self._mcp = await McpTools.open(type(self).__name__, self.mcp_servers, taken)
        try:
            return await super().initial_observation()
        except BaseException:
            if opened:  # not on a second call: that one raises, the episode goes on
                await self._close_mcp()
            raise

    async def step(self, message: Message) -> MessageStepResult:
        """As MultiTurnEnv; the episode's own MCP servers stop when it ends or raises."""
        try:
            result = await super().step(message)
        except BaseException:
            await self._close_mcp()
            raise
        if result.episode_done:
            await self._close_mcp()
        return result

    async def abort(self) -> None:
        """As MultiTurnEnv; the episode's own MCP servers stop too."""
        try:
            await super().abort()
        finally:
            await self._close_mcp()

    async def _close_mcp(self) -> None:
        if self._mcp is not None:
            await self._mcp.close()

    def _history(self, message: Message) -> tuple[list[Message], list[Message]]:
        conversation = list(self.conversation)
        if not conversation or conversation[-1] != message:
            conversation.append(message)
        return list(self._prompt), conversation

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

    async def _run_call(self, call: Any) -> tuple[str, str, Any]:
        """Run one call; return (name, status, its result or the text of the error)."""
        if not isinstance(call, dict):
            return "", "invalid", _unreadable(f"a call must be an object, got {_short(call)}")
        function = call.get("function") if isinstance(call.get("function"), dict) else call
        raw_name = function.get("name", "")
        name = _short(raw_name)
        if self.counts["tool_calls"] > self.max_tool_calls:
            return (
                name,
                "invalid",
                (
                    f"Error: not run; this episode allows {self.max_tool_calls} tool calls. "
                    "Give your final answer without calling a tool."
                ),
            )
        mcp_tools = self._mcp.tools if self._mcp is not None else {}
        found = self._tools_by_name.get(raw_name) if isinstance(raw_name, str) else None
        tool = found or (mcp_tools.get(raw_name) if isinstance(raw_name, str) else None)
        if tool is None:
            known = ", ".join([*self._tools_by_name, *mcp_tools]) or "none"
            return name, "invalid", f"Error: unknown tool {name!r}; the tools are: {known}."
        arguments = function.get("arguments", {})
        if isinstance(arguments, str):
            arguments, why = load_json(arguments) if arguments.strip() else ({}, None)
            if why is not None:
                return name, "invalid", f"Error: the arguments of {name} are {why}."
        problem = validate_arguments(tool, arguments)
        if problem:
            return name, "invalid", f"Error: bad arguments for {name}: {problem}."
        threads = self._tool_threads
        try:
            value = await tool.run(arguments, timeout_s=self.tool_timeout_s, threads=threads)
        except TimeoutError:  # counted with the errors; its log's status says timeout
            return name, "timeout", f"Error: {name} timed out after {self.tool_timeout_s:g} s."
        except EnvError as err:  # every tool thread is busy: not run
            return name, "error", f"Error: {err}."
        except Exception as err:
            return name, "error", f"Error: {name} raised {type(err).__name__}: {_error_text(err)}"
        return name, "ok", value

    async def respond(self, message: Message) -> Feedback:
        """Run the turn's tool calls, or score the final answer when there are none."""
        calls = _as_list(message.get("tool_calls"))
        unparsed = _as_list(message.get("unparsed_tool_calls"))
        if not calls and not unparsed:
            await self._await_reward(message)
            result = self.score(message)
            metrics = {**result.metrics, **self._metrics()}
            return Feedback(reward=result.reward, done=True, metrics=metrics, logs=result.logs)
        replies: list[Message] = []
        log: list[dict[str, str]] = []
        cap = self.max_tool_result_chars
        for call in calls:
            self.counts["tool_calls"] += 1
            name, status, value = await self._run_call(call)
            if status != "ok":
                self.counts["invalid_tool_calls" if status == "invalid" else "tool_errors"] += 1
            call_id = call.get("id") if isinstance(call, dict) else None
            call_id = call_id if isinstance(call_id, str) else None
            text = result_text(value, cap)  # a big value: converted only as far as the cap
            replies.append(self.tool_message(call_id, name, text))
            log.append({"name": name, "status": status})
        for bad in unparsed:
            self.counts["tool_calls"] += 1
            self.counts["invalid_tool_calls"] += 1
            error = bad.get("error", "unreadable") if isinstance(bad, dict) else "unreadable"
            replies.append(self.tool_message(None, "", capped(_unreadable(_short(error)), cap)))
            log.append({"name": "", "status": "invalid"})
        metrics = {**super().unscored_metrics(), **self._metrics()}
        return Feedback(reply=replies, metrics=metrics, logs={"tool_calls": log})
