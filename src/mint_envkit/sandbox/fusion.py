"""A remote sandbox: SandboxFusion's HTTP API (``POST /run_code``), for scale.

`SandboxFusion <https://github.com/bytedance/SandboxFusion>`_ runs code in its own
sandboxes behind an HTTP service; many machines can serve one trainer. The same code
reward runs there unchanged: ``code_passes(executor=SandboxFusionExecutor(url))``.

The request is ``{"code", "language": "python", "stdin", "run_timeout",
"compile_timeout", "memory_limit_MB", "files": {}}``; the reply's ``status`` is
``"Success"``, ``"Failed"`` (the code ran and failed) or ``"SandboxError"``, and its
``run_result`` holds ``status`` (``"Finished"``, ``"TimeLimitExceeded"``, ``"Error"``),
``return_code``, ``stdout``, ``stderr`` and ``execution_time``. The service enforces
its own isolation and limits (network, filesystem, processes are its configuration);
this client sends the wall-clock and memory limits and caps the output it keeps. The
service sees the code and each test's computed side, never the expected values: the
verdict is made here (:func:`~mint_envkit.sandbox.run_tests`), as for any executor.

Example::

    from mint_envkit.sandbox import SandboxFusionExecutor, code_passes

    reward = code_passes(executor=SandboxFusionExecutor("http://sandbox.internal:8080"))
"""

from __future__ import annotations

import asyncio
import time
import weakref
from typing import Any

import httpx

from mint_envkit.checks import check_integer
from mint_envkit.errors import ConfigError, SandboxError
from mint_envkit.sandbox.executor import Limits, ProcessResult, RunStatus


def _cap(text: object, room: int) -> tuple[str, int]:
    value = text if isinstance(text, str) else ""
    data = value.encode("utf-8", "replace")
    return data[: max(room, 0)].decode("utf-8", "replace"), room - len(data)


class SandboxFusionExecutor:
    """Runs code on a SandboxFusion service through its ``/run_code`` HTTP API.

    Args:
        url: the service's base URL (``http://host:8080``).
        max_concurrency: requests at once (an asyncio semaphore per event loop; default 8).
        headers: extra HTTP headers (an auth token for a gateway).
        request_timeout_s: seconds added to ``Limits.wall_s`` for the HTTP round trip
            (default 30).

    A refused request, an HTTP error or a ``SandboxError`` reply raises
    :class:`~mint_envkit.errors.SandboxError` (the rollout fails loudly; a broken service
    is never scored as wrong code).

    Example::

        # not run: needs a SandboxFusion server
        executor = SandboxFusionExecutor("http://127.0.0.1:8080", max_concurrency=32)
        result = await executor.run("print(1)", "", Limits(wall_s=5))
        assert result.stdout == "1\\n"
    """

    name = "sandboxfusion"

    def __init__(
        self,
        url: str,
        *,
        max_concurrency: int = 8,
        headers: dict[str, str] | None = None,
        request_timeout_s: float = 30.0,
    ) -> None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ConfigError(
                f"SandboxFusionExecutor(url={url!r}) needs an http(s) URL, e.g. "
                "'http://127.0.0.1:8080'"
            )
        check_integer(max_concurrency, "SandboxFusionExecutor(max_concurrency=...)")
        self.url = url.rstrip("/")
        self.max_concurrency = max_concurrency
        self.headers = dict(headers or {})
        self.request_timeout_s = float(request_timeout_s)
        self._semaphores: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._semaphores = weakref.WeakKeyDictionary()

    def request(self, source: str, stdin: str, limits: Limits) -> dict[str, Any]:
        """The JSON body of one ``/run_code`` request.

        Example::

            body = SandboxFusionExecutor("http://h:8080").request("print(1)", "", Limits())
            assert body["language"] == "python" and body["run_timeout"] == 10.0
        """
        return {
            "code": source,
            "language": "python",
            "stdin": stdin,
            "run_timeout": float(limits.wall_s),
            "compile_timeout": 10,
            "memory_limit_MB": int(limits.memory_mb),
            "files": {},
        }

    async def run(self, source: str, stdin: str, limits: Limits) -> ProcessResult:
        """Send ``source`` to the service and read its ``run_result``.

        Example::

            # not run: `url` comes from your own code
            result = await SandboxFusionExecutor(url).run("import time; time.sleep(9)",
                                                          "", Limits(wall_s=1))
            assert result.status == "timeout"
        """
        loop = asyncio.get_running_loop()
        semaphore = self._semaphores.get(loop)
        if semaphore is None:
            semaphore = self._semaphores[loop] = asyncio.Semaphore(self.max_concurrency)
        endpoint = f"{self.url}/run_code"
        started = time.monotonic()
        async with semaphore:
            try:
                async with httpx.AsyncClient(
                    timeout=limits.wall_s + self.request_timeout_s, headers=self.headers
                ) as client:
                    response = await client.post(endpoint, json=self.request(source, stdin, limits))
                    response.raise_for_status()
                    body = response.json()
            except (httpx.HTTPError, ValueError) as err:
                raise SandboxError(
                    f"the SandboxFusion service at {endpoint} failed: {err!r}; check that it "
                    "runs and answers POST /run_code"
                ) from err
        return self._result(body, limits, time.monotonic() - started, endpoint)

    def _result(self, body: object, limits: Limits, elapsed: float, endpoint: str) -> ProcessResult:
        run = body.get("run_result") if isinstance(body, dict) else None
        if not isinstance(body, dict) or body.get("status") == "SandboxError" or not run:
            message = body.get("message") if isinstance(body, dict) else body
            raise SandboxError(
                f"the SandboxFusion service at {endpoint} could not run the code: {message!r}"
            )
        stdout, room = _cap(run.get("stdout"), int(limits.output_bytes))
        stderr, room = _cap(run.get("stderr"), room)
        status: RunStatus = "finished"
        message = ""
        if run.get("status") == "TimeLimitExceeded":
            status, message = "timeout", f"ran past the time limit of {limits.wall_s} s"
        elif room < 0:
            status, message = "output_limit", f"output over {limits.output_bytes} bytes"
        code = run.get("return_code")
        seconds = run.get("execution_time")
        return ProcessResult(
            status=status,
            exit_code=code if isinstance(code, int) else None,
            stdout=stdout,
            stderr=stderr,
            wall_s=float(seconds) if isinstance(seconds, int | float) else elapsed,
            message=message,
        )
