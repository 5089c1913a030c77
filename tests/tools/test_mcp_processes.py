"""No process an MCP server starts outlives its episode, its ``aclose`` or the interpreter.

The test server's ``spawn`` tool starts two children, one in the server's process group
and one with ``setsid`` (a session and group of their own); killing the group misses
the second. Every server the kit starts runs under a keeper
(``mint_envkit.tools.keeper``), so both end with the server, over stdio and HTTP, also
when the interpreter exits or is SIGKILLed. Real servers, real processes, no mocks;
each check polls ``/proc`` with a deadline.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mint_envkit import McpServer, ToolEnv, first_number
from mint_envkit.tools.keeper import descendants

SERVER = str(Path(__file__).resolve().parent / "mcp_server.py")
REPO = Path(__file__).resolve().parents[2]
HTTP_URL = "http://127.0.0.1:{port}/mcp"
HTTP_COMMAND = [sys.executable, SERVER, "--port", "{port}"]


def running(pid: int) -> bool:
    """True while ``pid`` is a live (not zombie) process."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return fields[0] != "Z"


def left_after(pids: list[int], within_s: float = 30.0) -> list[int]:
    """The pids still running once they all ended or ``within_s`` passed."""
    deadline = time.monotonic() + within_s
    while True:
        left = [pid for pid in pids if running(pid)]
        if not left or time.monotonic() > deadline:
            return left
        time.sleep(0.05)


def make(transport: str, per_episode: bool = True) -> McpServer:
    if transport == "stdio":
        return McpServer.stdio([sys.executable, SERVER], per_episode=per_episode)
    return McpServer.http(HTTP_URL, command=HTTP_COMMAND, per_episode=per_episode)


def call(name: str) -> dict:
    return {"type": "function", "id": "c", "function": {"name": name, "arguments": "{}"}}


async def answer(env, name: str) -> str:
    result = await env.step({"role": "assistant", "content": "", "tool_calls": [call(name)]})
    return result.next_messages[-1]["content"]


async def started_with_children(server: McpServer):
    cls = type("SpawnEnv", (ToolEnv,), {"mcp_servers": [server], "parser": first_number})
    env = cls(question="What is 2 + 3?", answer="5")
    await env.initial_observation()
    children = [int(pid) for pid in (await answer(env, "spawn")).split()]
    pids = [int(await answer(env, "pid")), *children]
    assert all(running(pid) for pid in pids)
    return env, pids


@pytest.mark.parametrize("transport", ["stdio", "http"])
@pytest.mark.parametrize("ending", ["answer", "abort", "server exits"])
async def test_no_child_of_a_server_outlives_its_episode(transport, ending):
    env, pids = await started_with_children(make(transport))
    if ending == "answer":
        assert (await env.step({"role": "assistant", "content": "5"})).episode_done
    elif ending == "abort":
        await env.abort()
    else:
        assert "closed the connection" in await answer(env, "die")
        await env.abort()
    assert left_after(pids) == [], "the server, its child and its setsid child end with it"


@pytest.mark.parametrize("transport", ["stdio", "http"])
async def test_no_child_of_a_shared_server_outlives_its_aclose(transport):
    server = make(transport, per_episode=False)
    try:
        env, pids = await started_with_children(server)
        await env.abort()
        assert all(running(pid) for pid in pids)  # shared: it runs on
    finally:
        await server.aclose()
    assert left_after(pids) == []


EPISODE = """
import asyncio, json, sys, time
from mint_envkit import McpServer, ToolEnv, first_number
SERVER = {server!r}
class E(ToolEnv):
    parser = first_number
    mcp_servers = [
        McpServer.stdio([sys.executable, SERVER], per_episode=True),
        McpServer.http({url!r}, command={command!r}, per_episode=True, prefix="h."),
        McpServer.stdio([sys.executable, SERVER], prefix="s."),  # shared
    ]
async def value(env, name):
    call = {{"function": {{"name": name, "arguments": "{{}}"}}}}
    result = await env.step({{"role": "assistant", "content": "", "tool_calls": [call]}})
    return result.next_messages[-1]["content"]
async def main():
    env = E(question="q", answer="1")
    await env.initial_observation()  # never ended: the kit ends its servers at exit
    pids = []
    for prefix in ("", "h.", "s."):
        pids.append(int(await value(env, prefix + "pid")))
        pids.extend(int(pid) for pid in (await value(env, prefix + "spawn")).split())
    print(json.dumps(pids), flush=True)
    if sys.argv[1] == "stay":
        time.sleep(600)  # until the test SIGKILLs this interpreter
asyncio.run(main())
"""


def read_line(process: subprocess.Popen, within_s: float = 90.0) -> str:
    """The first line of the process's stdout, read with a deadline."""
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], within_s)
    assert ready, f"no output within {within_s} s"
    return process.stdout.readline()


@pytest.mark.timeout(180)
@pytest.mark.parametrize("how", ["exits", "is SIGKILLed"])
def test_no_process_outlives_the_interpreter(how, tmp_path):
    script = tmp_path / "episode.py"
    script.write_text(EPISODE.format(server=SERVER, url=HTTP_URL, command=HTTP_COMMAND))
    process = subprocess.Popen(
        [sys.executable, str(script), "stay" if how == "is SIGKILLed" else "exit"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = read_line(process)
        assert line, process.stderr.read() if process.stderr else "no output"
        pids = json.loads(line)
        tree = descendants(process.pid)  # the keepers too
        assert len(pids) == 9 and set(pids) <= set(tree)
        if how == "is SIGKILLed":
            os.kill(process.pid, signal.SIGKILL)
        assert process.wait(timeout=60) in (0, -signal.SIGKILL)
        assert left_after(tree) == [], "every server, keeper and child ends with the interpreter"
    finally:
        process.kill()
        process.wait()


FALLBACK = """
import asyncio, sys
from mint_envkit import McpServer, ToolEnv, first_number
class E(ToolEnv):
    parser = first_number
    mcp_servers = [  # its log to a file: the setsid child keeps what it inherits open
        McpServer.stdio([sys.executable, {server!r}], per_episode=True, stderr={log!r})
    ]
async def main():
    env = E(question="q", answer="1")
    await env.initial_observation()
    call = {{"function": {{"name": "spawn", "arguments": "{{}}"}}}}
    result = await env.step({{"role": "assistant", "content": "", "tool_calls": [call]}})
    print(result.next_messages[-1]["content"], flush=True)
    await env.abort()
asyncio.run(main())
"""


def test_without_a_keeper_the_group_is_ended_and_a_warning_says_what_is_not(tmp_path):
    script = tmp_path / "fallback.py"
    script.write_text(FALLBACK.format(server=SERVER, log=str(tmp_path / "server.log")))
    done = subprocess.run(
        [sys.executable, str(script)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=90,
        env={**os.environ, "MINT_ENVKIT_KEEPER": "0"},
    )
    assert done.returncode == 0, done.stderr
    in_group, own_session = (int(pid) for pid in done.stdout.split())
    try:
        assert "no keeper process" in done.stderr
        assert "may outlive the episode and the interpreter" in done.stderr
        assert left_after([in_group]) == []
        assert running(own_session)  # what the warning says: a setsid child is not ended
    finally:
        os.kill(own_session, signal.SIGKILL)


def stopped(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "T"
    except OSError:
        return False


@pytest.mark.parametrize("how", ["stop_keeper", "stop_group"])
async def test_a_child_that_stops_the_keeper_still_ends_with_the_episode(how: str):
    """issue 46: a child of the server SIGSTOPped its keeper (by pid, or its whole
    process group, which was the keeper's too); the keeper could not end the tree, and
    the stopper and a setsid sibling were alive 10 s after abort(). Now the keeper has a
    process group of its own, and the kit ends the tree itself when the keeper does not."""
    env, pids = await started_with_children(make("stdio"))
    sibling, stopper, keeper_pid = (int(pid) for pid in (await answer(env, how)).split())
    deadline = time.monotonic() + 30
    while not any(stopped(pid) for pid in (keeper_pid, pids[0])) and time.monotonic() < deadline:
        time.sleep(0.02)  # the stopper did its work
    assert running(sibling) and running(stopper)
    await env.abort()
    assert left_after([*pids, sibling, stopper, keeper_pid]) == []
