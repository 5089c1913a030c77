"""Noticing a lost backend mid-run: a health watchdog around the training work.

The SDK retries an endpoint that stopped answering for minutes, silently.
:class:`Watchdog` probes ``GET /api/v1/healthz`` every few seconds while the
run works; when no probe has answered for ``Config.backend_lost_after_s``
(15 s by default; noticed within 25 s) it cancels the work and raises a
:class:`~mint_envkit.errors.BackendError` that names the URL, the step in
progress and how to resume. An SDK call that gives up earlier is checked the
same way, so its error names the URL too. :func:`train_watched` adds the one
recovery the loop can do on its own: an embedded server that the run itself
started is restarted once, and the run resumes from its last checkpoint.

Example::

    # not run: needs a running backend
    watchdog = Watchdog(connection.base_url, api_key=connection.api_key, lost_after_s=20)
    checkpoint = await watchdog.run(train(connection), describe=lambda: "step 3")
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from mint_envkit.errors import BackendError, MintEnvkitError
from mint_envkit.local.messages import SERVER_SHUTTING_DOWN
from mint_envkit.rl.config import Config
from mint_envkit.rollouts.backend import Connection
from mint_envkit.runs.files import RunFiles

T = TypeVar("T")


class Watchdog:
    """Health probes of one backend while some work runs; see the module docstring.

    Attributes:
        lost: True once the backend was found lost (no probe answered for
            ``lost_after_s``, or an SDK call failed and a probe then failed).
        last_error: what the last failed probe saw.

    Example::

        # not run: needs a running backend
        watchdog = Watchdog("http://127.0.0.1:8765", api_key=None, lost_after_s=20)
        result = await watchdog.run(work(), describe=lambda: "step 2")
    """

    def __init__(self, base_url: str, *, api_key: str | None, lost_after_s: float) -> None:
        self.base_url = base_url
        self.lost_after_s = lost_after_s
        self.interval_s = min(5.0, lost_after_s / 4)
        self._url = base_url.rstrip("/") + "/api/v1/healthz"
        self._headers = {"X-API-Key": api_key} if api_key else {}
        self.lost = False
        self.last_error = "no answer"
        self.instance: str | None = None  # the server instance first seen (local backend)
        self.restarted = False

    async def _answers(self, client: Any) -> bool:
        import httpx

        try:
            response = await client.get(self._url, headers=self._headers)
        except httpx.HTTPError as err:
            self.last_error = f"{type(err).__name__}: {err}" if str(err) else type(err).__name__
            return False
        if response.status_code >= 500:
            self.last_error = f"HTTP {response.status_code}"
            return False
        instance = _instance_of(response)
        if instance is not None:
            if self.instance is None:
                self.instance = instance
            elif instance != self.instance:
                self.restarted = True
                self.last_error = (
                    "it restarted (a new server instance answers), so this run's training "
                    "client and samplers are gone"
                )
                return False
        return True

    def _client(self) -> Any:
        import httpx

        # A busy server may answer slowly: a probe gets up to 5 s (less for short limits).
        return httpx.AsyncClient(timeout=min(5.0, self.lost_after_s))

    async def _watch(self) -> None:
        """Return once no probe has answered for ``lost_after_s`` seconds, or at once when
        the backend answers as a new instance (it restarted)."""
        async with self._client() as client:
            last_ok = time.monotonic()
            while time.monotonic() - last_ok < self.lost_after_s and not self.restarted:
                if await self._answers(client):
                    last_ok = time.monotonic()
                await asyncio.sleep(self.interval_s)

    async def _still_answers(self, probes: int = 3, gap_s: float = 1.0) -> bool:
        """Whether the backend keeps answering over a few probes after an SDK error: a
        server that is shutting down answers one last probe, then stops."""
        async with self._client() as client:
            for probe in range(probes):
                if not await self._answers(client):
                    return False
                if probe + 1 < probes:
                    await asyncio.sleep(gap_s)
            return True

    def _lost_error(self, where: str, advice: str) -> BackendError:
        self.lost = True
        if self.restarted:
            return BackendError(
                f"lost the backend at {self.base_url} during {where}: {self.last_error}. {advice}"
            )
        return BackendError(
            f"lost the backend at {self.base_url} during {where}: it has not answered its "
            f"health check ({self.last_error}). {advice}"
        )

    async def run(
        self,
        work: Awaitable[T],
        *,
        describe: Callable[[], str],
        advice: Callable[[], str] = lambda: "",
    ) -> T:
        """Await ``work``; raise :class:`BackendError` as soon as the backend is lost.

        ``describe()`` says where the run was (``"step 3 of 10"``) and
        ``advice()`` how to resume, both read when the loss is found. Errors
        of ``work`` itself pass through, unless it was an SDK error and the
        backend no longer answers, or the embedded server said it is shutting down.

        Example::

            # not run: needs a running backend
            await watchdog.run(train(), describe=lambda: "step 2", advice=lambda: "re-run")
        """
        task = asyncio.ensure_future(work)
        watch = asyncio.ensure_future(self._watch())
        try:
            await asyncio.wait({task, watch}, return_when=asyncio.FIRST_COMPLETED)
            if task.done():
                try:
                    return task.result()
                except MintEnvkitError:
                    raise
                except Exception as err:
                    # The embedded server's own word that it is closing settles it; its
                    # health check may answer for a few seconds more while it drains.
                    closing = SERVER_SHUTTING_DOWN in str(err)
                    if not closing and await self._still_answers():
                        raise
                    if closing:
                        self.last_error = SERVER_SHUTTING_DOWN
                    raise self._lost_error(describe(), advice()) from err
            raise self._lost_error(describe(), advice())
        finally:
            for pending in (watch, task):
                pending.cancel()
            # Give cancelled work a moment to unwind; never wait on a dead backend.
            await asyncio.wait({watch, task}, timeout=5)


def _instance_of(response: Any) -> str | None:
    """The server instance a healthz answer names (the embedded backend's), else None."""
    try:
        body = response.json()
    except ValueError:
        return None
    instance = body.get("instance") if isinstance(body, dict) else None
    return instance if isinstance(instance, str) else None


def resume_advice(config: Config, files: RunFiles) -> str:
    """How to resume a run whose backend was lost: from which step, with which log_path.

    Example::

        # not run: needs a run's config and files
        resume_advice(config, files)
        # 'Start the backend again, then run the same training again with log_path ...'
    """
    checkpoint = files.last_checkpoint()
    since = f"step {checkpoint['step']}" if checkpoint else "the start (no checkpoint yet)"
    return (
        "Start the backend again (or check the network), then run the same training again "
        f"with log_path={config.log_path!r}: it resumes from its last checkpoint, {since}."
    )


def _step_in_progress(files: RunFiles) -> int:
    steps = [int(m.get("step", -1)) for m in files.metrics()]
    return max(steps, default=-1) + 1


async def train_watched(
    config: Config,
    connection: Connection,
    files: RunFiles,
    train: Callable[[Connection], Awaitable[T]],
    total: int,
) -> T:
    """Run ``train(connection)`` under a :class:`Watchdog`; restart an owned embedded server once.

    When the backend is lost and ``connection.restart`` is set (an embedded
    server this run started), the server is started again, a progress line
    says so, and ``train`` runs again on the new connection (it resumes from
    the last checkpoint). Otherwise, or on a second loss, the
    :class:`BackendError` propagates.

    Example::

        # not run: needs a running backend
        checkpoint = await train_watched(config, connection, files, train, total=10)
    """
    restarted = False
    while True:
        watchdog = Watchdog(
            str(connection.base_url),
            api_key=connection.api_key,
            lost_after_s=config.backend_lost_after_s,
        )
        try:
            return await watchdog.run(
                train(connection),
                describe=lambda: f"step {_step_in_progress(files) + 1} of {total}",
                advice=lambda: resume_advice(config, files),
            )
        except BackendError:
            if not watchdog.lost or restarted or connection.restart is None:
                raise
        restarted = True
        old_url = connection.base_url
        connection = await connection.restart()
        checkpoint = files.last_checkpoint()
        since = f"step {checkpoint['step']}" if checkpoint else "the start (no checkpoint yet)"
        print(
            f"mint_envkit: the embedded backend at {old_url} died during step "
            f"{_step_in_progress(files) + 1} of {total}; restarted it at {connection.base_url}, "
            f"resuming from {since}",
            file=sys.stderr,
            flush=True,
        )
