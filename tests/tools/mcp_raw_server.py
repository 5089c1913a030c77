"""A raw MCP server over stdio that answers with lines the SDK's parser refuses (issue 46).

It speaks JSON-RPC by hand (no SDK): ``initialize``, ``tools/list`` and ``tools/call``
of ``deep`` (an answer nested 100,000 deep), ``bigint`` (an answer holding a
200,000-digit number) and ``fine`` (a plain answer).
"""

import json
import sys


def send(obj=None, raw=None):
    sys.stdout.write((raw if raw is not None else json.dumps(obj)) + "\n")
    sys.stdout.flush()


TOOLS = [
    {"name": n, "description": n, "inputSchema": {"type": "object", "properties": {}}}
    for n in ("deep", "bigint", "fine")
]
BODIES = {"deep": "[" * 100_000 + "]" * 100_000, "bigint": "9" * 200_000}
ANSWER = (
    '{"jsonrpc": "2.0", "id": %s, "result": {"content": [{"type": "text", "text": "x"}], '
    '"structuredContent": {"a": %s}}}'
)

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue
    method, ident = msg.get("method"), msg["id"]
    if method == "initialize":
        version = msg["params"]["protocolVersion"]
        info = {"name": "raw", "version": "1"}
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": info}
        send({"jsonrpc": "2.0", "id": ident, "result": result})
    elif method == "tools/list":
        send({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
    elif method == "tools/call" and msg["params"]["name"] in BODIES:
        send(raw=ANSWER % (json.dumps(ident), BODIES[msg["params"]["name"]]))
    elif method == "tools/call":
        send(
            {
                "jsonrpc": "2.0",
                "id": ident,
                "result": {"content": [{"type": "text", "text": "fine"}]},
            }
        )
    else:
        send({"jsonrpc": "2.0", "id": ident, "result": {}})
