"""McpServer and McpTool: config errors name the fix, schemas read like @tool ones, the SDK is
imported lazily (with the pip command when missing), and no server outlives the interpreter."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from mint_envkit import ConfigError, McpServer, MissingExtraError, ToolDefinitionError, ToolEnv
from mint_envkit.tools.mcp import McpTool
from mint_envkit.tools.mcp_connection import McpConnection, import_mcp

SERVER = str(Path(__file__).resolve().parent / "mcp_server.py")
REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: McpServer.stdio("python server.py"), "non-empty list of strings"),
        (lambda: McpServer.stdio([]), "non-empty list of strings"),
        (lambda: McpServer.http("localhost:8000/mcp"), "needs an http"),
        (lambda: McpServer.http("http://127.0.0.1:{port}/mcp"), "pass command="),
        (lambda: McpServer.http("http://h/mcp", per_episode=True), "pass command="),
        (lambda: McpServer.stdio(["x"], startup_timeout_s=0), "startup_timeout_s"),
        (lambda: McpServer("sse", command=["x"]), "'stdio' or 'http'"),
    ],
)
def test_a_bad_server_config_says_what_to_do(make, error):
    with pytest.raises(ConfigError, match=error):
        make()


def test_mcp_servers_must_be_a_list_of_servers():
    with pytest.raises(ToolDefinitionError, match=r"mcp_servers must be a list of McpServer"):
        type("Bad", (ToolEnv,), {"mcp_servers": [[sys.executable, SERVER]]})


def test_a_listed_tool_reads_like_a_tool_function():
    mcp = import_mcp()
    listed = mcp.types.Tool(
        name="find",
        description="Find notes.\n\nArgs:\n    title: the note's title.\n    tags: tags.\n",
        input_schema={
            "type": "object",
            "title": "findArguments",
            "properties": {
                "title": {"title": "Title", "type": "string"},
                "tags": {
                    "title": "Tags",
                    "anyOf": [{"type": "array", "items": {"title": "T", "type": "string"}}],
                    "description": "kept as the server wrote it",
                },
            },
            "required": ["title"],
        },
    )
    made = McpTool(listed, McpConnection(McpServer.stdio([sys.executable, SERVER], prefix="n.")))
    assert made.schema == {
        "type": "function",
        "function": {
            "name": "n.find",
            "description": "Find notes.",
            "parameters": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "description": "the note's title."},
                    "tags": {
                        "anyOf": [{"type": "array", "items": {"type": "string"}}],
                        "description": "kept as the server wrote it",
                    },
                },
                "required": ["title"],
            },
        },
    }


def test_a_missing_sdk_names_the_extra(monkeypatch):
    monkeypatch.setitem(sys.modules, "mcp", None)
    with pytest.raises(MissingExtraError, match=r"pip install 'mint-envkit\[mcp\]'"):
        import_mcp()


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=REPO,
    )


def test_the_light_parts_do_not_import_the_sdk():
    done = run_python(
        """
        import sys
        from mint_envkit import McpServer, ToolEnv
        from mint_envkit.tools import mcp
        class E(ToolEnv):
            mcp_servers = [McpServer.stdio([sys.executable, "server.py"])]
        print(sorted(m for m in sys.modules if m == "mcp" or m.startswith("mcp.")))
        """
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_no_server_outlives_the_interpreter():
    done = run_python(
        f"""
        import asyncio, json, sys
        from mint_envkit import McpServer, ToolEnv
        SERVER = {SERVER!r}
        class E(ToolEnv):
            mcp_servers = [
                McpServer.stdio([sys.executable, SERVER]),
                McpServer.http("http://127.0.0.1:{{port}}/mcp", prefix="h.",
                               command=[sys.executable, SERVER, "--port", "{{port}}"]),
                McpServer.stdio([sys.executable, SERVER], per_episode=True, prefix="e."),
            ]
        async def main():
            env = E(question="q", answer="1")
            await env.initial_observation()  # never ended: the kit closes at exit
            pids = []
            for name in ("pid", "h.pid", "e.pid"):
                call = {{"function": {{"name": name, "arguments": "{{}}"}}}}
                result = await env.step({{"role": "assistant", "content": "", "tool_calls": [call]}})
                pids.append(int(result.next_messages[-1]["content"]))
            print(json.dumps(pids))
        asyncio.run(main())
        """
    )
    assert done.returncode == 0, done.stderr
    pids = [int(p) for p in done.stdout.strip().strip("[]").split(",")]
    assert len(set(pids)) == 3
    for pid in pids:
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
