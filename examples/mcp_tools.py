"""Tools from an MCP server: unit conversions answered through a ``convert`` tool.

The tool lives in an MCP server, not in this env: this same file run as
``python examples/mcp_tools.py --serve`` is a small server built with the official
``mcp`` SDK (``MCPServer``), and :class:`UnitsEnv` lists it in ``mcp_servers``. The
kit starts the server over stdio when the first episode starts, lists its tools
(the model sees them like ``@tool`` functions), sends each call to it, and stops it
at exit. The tool only reads, so one server is shared by every episode; a tool with
state would use ``per_episode=True`` (see "Tools from MCP servers" in docs/tools.md).

Rewards: ``1.0`` for a right final number, ``0.0`` otherwise; a failing call comes
back as an error message and is counted (``tool_errors``, ``invalid_tool_calls``).

Needs ``pip install 'mint-envkit[mcp]'``. Checked offline, with no model and no
account (a scripted policy that calls the tool, then answers):

    python examples/mcp_tools.py
    mint-envkit check examples/mcp_tools.py:builder
"""

from __future__ import annotations

import json
import random
import sys

from mint_envkit import DatasetBuilder, McpServer, Message, ScriptedPolicy, ToolEnv, last_number

FACTORS = {
    ("km", "m"): 1000.0,
    ("m", "cm"): 100.0,
    ("kg", "g"): 1000.0,
    ("h", "min"): 60.0,
    ("min", "s"): 60.0,
    ("l", "ml"): 1000.0,
}
"""How many of the second unit make one of the first (the server converts both ways)."""


def convert_value(value: float, unit_from: str, unit_to: str) -> float:
    """``value`` in ``unit_from`` converted to ``unit_to`` (ValueError for an unknown pair)."""
    if (unit_from, unit_to) in FACTORS:
        return value * FACTORS[unit_from, unit_to]
    if (unit_to, unit_from) in FACTORS:
        return value / FACTORS[unit_to, unit_from]
    pairs = ", ".join(f"{a}->{b}" for a, b in FACTORS)
    raise ValueError(f"cannot convert {unit_from} to {unit_to}; known pairs: {pairs}")


def serve() -> None:
    """Run the MCP server over stdio (what the kit starts)."""
    from mcp.server.mcpserver import MCPServer
    from mcp.server.mcpserver.exceptions import ToolError

    server = MCPServer("units", log_level="WARNING")

    @server.tool()
    def convert(value: float, unit_from: str, unit_to: str) -> float:
        """Convert a quantity from one unit to another.

        Args:
            value: the quantity, e.g. 3.5.
            unit_from: its unit, e.g. "km".
            unit_to: the unit wanted, e.g. "m".
        """
        try:
            return round(convert_value(value, unit_from, unit_to), 6)
        except ValueError as err:
            raise ToolError(str(err)) from None

    server.run()


UNITS_SERVER = McpServer.stdio([sys.executable, __file__, "--serve"])
"""The shared server: this file with ``--serve``, started by the kit on first use."""


class UnitsEnv(ToolEnv):
    """Unit conversions; the model may call ``convert``, then replies with the number."""

    system_prompt = (
        "Answer the question. Use the convert tool for the conversion. "
        "When you know the answer, reply with only the final number."
    )
    mcp_servers = [UNITS_SERVER]  # noqa: RUF012 - the API's class attribute
    parser = last_number
    max_turns = 4
    max_tool_calls = 4
    tool_timeout_s = 5.0
    optional_fields = {"value": None, "unit_from": None, "unit_to": None}  # noqa: RUF012


def unit_problems(n: int = 16, seed: int = 0) -> list[dict[str, object]]:
    """``n`` conversion questions fixed by ``seed``; each keeps its call's arguments."""
    rng = random.Random(seed)
    problems: list[dict[str, object]] = []
    for _ in range(n):
        unit_from, unit_to = rng.choice(list(FACTORS))
        value = rng.randint(2, 40) / 2
        answer = convert_value(value, unit_from, unit_to)
        problems.append(
            {
                "question": f"How many {unit_to} are {value:g} {unit_from}?",
                "answer": f"{answer:g}",
                "value": value,
                "unit_from": unit_from,
                "unit_to": unit_to,
            }
        )
    return problems


def make_builder(problems: list[dict[str, object]], group_size: int = 2) -> DatasetBuilder:
    """The dataset of ``problems`` for the tiny model's tokenizer and the qwen3 renderer."""
    return DatasetBuilder(
        env=UnitsEnv,
        problems=problems,
        batch_size=len(problems),
        group_size=group_size,
        model_name="mint-envkit/tiny-qwen3",
        renderer_name="qwen3",
        shuffle=False,
    )


builder = make_builder(unit_problems(4))
"""Four questions, for ``mint-envkit check examples/mcp_tools.py:builder``."""


def solver(problems: list[dict[str, object]]):
    """A scripted policy: call ``convert`` with the question's arguments, then answer."""
    calls = {p["question"]: {k: p[k] for k in ("value", "unit_from", "unit_to")} for p in problems}

    def reply(messages: list[Message]) -> str:
        if messages[-1]["role"] == "tool":
            return messages[-1]["content"]
        question = next(m["content"] for m in messages if m["role"] == "user")
        call = {"name": "convert", "arguments": calls[question]}
        return f"<tool_call>\n{json.dumps(call)}\n</tool_call>"

    return reply


if __name__ == "__main__":
    if "--serve" in sys.argv[1:]:
        serve()
    else:
        problems = unit_problems(4)
        report = ScriptedPolicy(solver(problems)).run_sync(make_builder(problems))
        print(f"solver: mean reward {report.mean_reward:+.2f}")
        for key in ("correct", "turns", "tool_calls", "invalid_tool_calls", "tool_errors"):
            print(f"  {key:<20} {report.mean_metrics[key]:.2f}")
