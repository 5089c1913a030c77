"""SandboxFusionExecutor against a small SandboxFusion-compatible server started here
(starlette + uvicorn on a free port, running the code in the local sandbox): the same
reward, another executor."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncIterator
from typing import Any

import pytest
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

from mint_envkit import ConfigError, SandboxError, code_passes, run_tests
from mint_envkit.sandbox import BubblewrapExecutor, Limits, SandboxFusionExecutor

LOCAL = BubblewrapExecutor(max_concurrency=2)


class FakeSandboxFusion:
    """``POST /run_code`` as SandboxFusion answers it; ``mode`` breaks it on purpose."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.mode = "ok"

    async def run_code(self, request: Request) -> JSONResponse:
        body = await request.json()
        self.requests.append(body)
        if self.mode == "sandbox_error":
            return JSONResponse({"status": "SandboxError", "message": "no worker free"})
        if self.mode == "http_500":
            return JSONResponse({"detail": "boom"}, status_code=500)
        limits = Limits(wall_s=body["run_timeout"], memory_mb=body["memory_limit_MB"])
        result = await LOCAL.run(body["code"], body["stdin"], limits)
        status = {"finished": "Finished", "timeout": "TimeLimitExceeded"}.get(result.status)
        run_result = {
            "status": status or "Error",
            "execution_time": result.wall_s,
            "return_code": result.exit_code,
            "stdout": result.stdout,
            "stderr": result.stderr,
        }
        outcome = "Success" if result.ok else "Failed"
        return JSONResponse({"status": outcome, "message": "", "run_result": run_result})


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture
async def fusion() -> AsyncIterator[tuple[FakeSandboxFusion, str]]:
    fake = FakeSandboxFusion()
    app = Starlette(routes=[Route("/run_code", fake.run_code, methods=["POST"])])
    port = _free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level="error"))
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        await asyncio.sleep(0.01)
    yield fake, f"http://127.0.0.1:{port}"
    server.should_exit = True
    await task


async def test_the_same_reward_runs_on_a_remote_sandbox(fusion):
    fake, url = fusion
    reward = code_passes(executor=SandboxFusionExecutor(url), limits=Limits(wall_s=5))
    reply = "```python\ndef add(a, b):\n    return a + b\n```"
    breakdown = await reward.score_async(reply, ["assert add(1, 2) == 3"])
    assert breakdown.total == 1.0 and breakdown.metrics["code/passes/pass"] == 1.0
    wrong = await reward.score_async(reply.replace("a + b", "a * b"), ["assert add(1, 2) == 3"])
    assert wrong.total == 0.0 and wrong.metrics["code/passes/fail"] == 1.0
    (request, _) = fake.requests
    assert request["language"] == "python" and request["run_timeout"] == 5.0
    assert request["memory_limit_MB"] == 1024 and request["stdin"].startswith("{")


async def test_a_remote_timeout_is_a_timeout(fusion):
    _, url = fusion
    executor = SandboxFusionExecutor(url)
    run = await run_tests(
        "import time\ntime.sleep(60)", ["assert True"], executor=executor, limits=Limits(wall_s=1)
    )
    assert run.outcome == "timeout"


async def test_remote_output_is_capped(fusion):
    _, url = fusion
    executor = SandboxFusionExecutor(url)
    limits = Limits(wall_s=5, output_bytes=1000)
    result = await executor.run("print('x' * 5000)", "", limits)
    assert result.status == "output_limit" and len(result.stdout) == 1000


async def test_a_broken_service_raises_a_sandbox_error(fusion):
    fake, url = fusion
    executor = SandboxFusionExecutor(url)
    fake.mode = "sandbox_error"
    with pytest.raises(SandboxError, match="no worker free"):
        await run_tests("x = 1", ["assert x"], executor=executor)
    fake.mode = "http_500"
    with pytest.raises(SandboxError, match="500"):
        await run_tests("x = 1", ["assert x"], executor=executor)


async def test_an_unreachable_service_raises_a_sandbox_error():
    executor = SandboxFusionExecutor(f"http://127.0.0.1:{_free_port()}")
    with pytest.raises(SandboxError, match="check that it runs"):
        await executor.run("print(1)", "", Limits(wall_s=1))


def test_a_bad_url_is_refused():
    with pytest.raises(ConfigError, match="http"):
        SandboxFusionExecutor("localhost:8080")
