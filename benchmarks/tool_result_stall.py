"""How long one big tool result stalls the episode's event loop (issue 46).

A ``ToolEnv`` step runs a tool and turns its result into the text of a ``tool``
message. This script times the longest gap between ticks of a 10 ms timer on the
episode's loop during one step, for results that are big but under every size bound:

- ``@tool`` returning a prebuilt 3,000,000-element ``set`` (not JSON: written as
  ``str()`` writes it);
- ``@tool`` returning a 1.1 MB string (the control: cut, never converted);
- an MCP tool (``tests/tools/mcp_server.py`` over stdio, per episode) answering
  100,000 text blocks (``many``), and 100,000 values as structured content and one
  text block per value (``many_values``).

Each runs ``--runs`` times (default 3), alternated. ``--src DIR`` runs another source
tree (an export of an older commit: ``git archive COMMIT src | tar -x -C /tmp/old``).
The gap moves with the machine's load: compare runs made one after the other.

Example::

    python benchmarks/tool_result_stall.py
    python benchmarks/tool_result_stall.py --src /tmp/old/src
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import ROOT, machine_info, table, write_result

CHILD = r"""
import asyncio, json, sys, time
from mint_envkit import McpServer, ToolEnv, first_number, tool

SERVER, RUNS = sys.argv[1], int(sys.argv[2])
BIG_SET = set(range(3_000_000))

@tool
def big_set() -> list[int]:
    '''A prebuilt set of three million ints.'''
    return BIG_SET

@tool
def long_text() -> str:
    '''A 1.1 MB string.'''
    return "item 1\n" * 160_000

class E(ToolEnv):
    tools = [big_set, long_text]
    mcp_servers = [McpServer.stdio([sys.executable, SERVER], per_episode=True)]
    parser = first_number
    tool_timeout_s = 120.0
    max_tool_calls = 100
    max_turns = 100

async def gap(step):
    gaps, stop = [], asyncio.Event()
    async def tick():
        last = time.monotonic()
        while not stop.is_set():
            await asyncio.sleep(0.01)
            now = time.monotonic()
            gaps.append(now - last)
            last = now
    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.05)
    gaps.clear()
    started = time.monotonic()
    text = await step()
    took = time.monotonic() - started
    stop.set()
    await ticker
    return max(gaps), took, len(text)

CASES = [("@tool: a 3M-element set", "big_set", "{}"), ("@tool: a 1.1 MB string", "long_text", "{}"),
         ("MCP: 100k text blocks", "many", '{"count": 100000}'),
         ("MCP: 100k structured values", "many_values", '{"count": 100000}')]

async def main():
    env = E(question="q", answer="1")
    await env.initial_observation()
    rows = []
    for run in range(RUNS):
        for label, name, args in CASES:
            async def step():
                call = {"function": {"name": name, "arguments": args}}
                result = await env.step({"role": "assistant", "content": "", "tool_calls": [call]})
                return result.next_messages[-1]["content"]
            longest, took, chars = await gap(step)
            rows.append({"case": label, "run": run, "gap_s": longest, "step_s": took, "chars": chars})
    await env.abort()
    print(json.dumps(rows))

asyncio.run(main())
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--src", default=str(ROOT / "src"), help="the kit's source tree")
    parser.add_argument("--out", default=None)
    args = parser.parse_args()
    server = str(ROOT / "tests" / "tools" / "mcp_server.py")
    env = {**os.environ, "PYTHONPATH": args.src}
    done = subprocess.run(
        [sys.executable, "-c", CHILD, server, str(args.runs)],
        env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"the measuring process failed:\n{done.stderr[-3000:]}")
    rows = json.loads(done.stdout.strip().splitlines()[-1])
    cases = list(dict.fromkeys(row["case"] for row in rows))
    summary = []
    for case in cases:
        gaps = sorted(row["gap_s"] for row in rows if row["case"] == case)
        steps = sorted(row["step_s"] for row in rows if row["case"] == case)
        summary.append((case, f"{gaps[0]:.3f}-{gaps[-1]:.3f}", f"{steps[0]:.2f}-{steps[-1]:.2f}"))
    print(f"source: {args.src}; {args.runs} runs each")
    print(table(("result", "longest loop gap s (min-max)", "step s (min-max)"), summary))
    data = {"machine": machine_info(), **vars(args), "rows": rows}
    print("wrote", write_result("tool_result_stall", data, args.out))


if __name__ == "__main__":
    main()
