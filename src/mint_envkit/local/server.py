"""The embedded MinT-compatible server: ``LocalServer`` in-process (the command: ``mint-envkit serve``).

The server speaks the Tinker wire protocol over HTTP on 127.0.0.1, so the
unmodified ``mint`` / ``tinker`` SDK (and tinker-cookbook) trains against it
exactly as against the hosted service, with no account and no network. The
work is done by :class:`mint_envkit.local.Engine` on one worker
thread; see ``docs/local-backend.md``.

Example::

    import tempfile
    import mint
    from mint_envkit.local.server import LocalServer

    server = LocalServer(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    server.start()   # or: with LocalServer(...) as server: ...
    client = mint.ServiceClient(base_url=server.base_url, api_key="sk-local")
    training = client.create_lora_training_client(base_model="mint-envkit/tiny-qwen3-small",
                                                  rank=4)
    assert server.request_counts()["create_model"] == 1
    # server.close() when done
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
import http.client
import ipaddress
import logging
import socket
import threading
import time
import weakref
from collections.abc import Iterable
from typing import Any

import uvicorn

from mint_envkit.errors import BackendError, ConfigError
from mint_envkit.local.http.app import build_app
from mint_envkit.local.http.connections import guarded_protocol
from mint_envkit.local.http.guard import loopback_hosts
from mint_envkit.local.http.limits import Limits
from mint_envkit.local.http.state import (
    DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_UNNAMED_SAMPLERS,
    Backend,
    check_server_options,
)
from mint_envkit.local.http.worker import EngineFactory
from mint_envkit.local.state_dir import check_state_dir

logger = logging.getLogger("mint_envkit.local.server")

DEFAULT_MODEL = "mint-envkit/tiny-qwen3"
"""The model served when none is named."""


def is_loopback_host(host: str) -> bool:
    """True when ``host`` only reaches this machine (``localhost``, 127.0.0.0/8, ``::1``).

    Example::

        assert is_loopback_host("127.0.0.1") and is_loopback_host("[::1]")
        assert not is_loopback_host("0.0.0.0")   # every interface
    """
    if host.strip().lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class _UvicornServer(uvicorn.Server):
    """uvicorn without signal handlers (it runs in a background thread); remembers its loop."""

    @contextlib.contextmanager
    def capture_signals(self):  # type: ignore[override]
        yield

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        self._mint_loop = asyncio.get_running_loop()
        await super().serve(sockets=sockets)


class LocalServer:
    """The embedded server, running in a background thread on an ephemeral port.

    Args:
        models: base models to serve (default: ``mint-envkit/tiny-qwen3``).
            Loading starts in the background when the server starts; the first
            operation on a model waits for it.
        state_dir: where checkpoints live (default: ``MINT_ENVKIT_STATE_DIR``,
            else the user cache; decided by the engine).
        latency_ms: fixed delay added to every operation, as if the service were remote.
        host, port: where to listen; port 0 (default) picks a free port.
        device, num_threads: passed to the engine.
        max_body_bytes: larger request bodies are refused with 413.
        max_unnamed_samplers: unnamed sampler snapshots kept in memory (the
            oldest is released past it; a request to it gets a clear 404).
        allow_remote: needed to listen on a non-loopback address; it also turns off the
            ``Host`` check (a loud warning is logged; set ``api_key`` too).
        api_key: the key every client must send (``X-API-Key``; the SDK's
            ``api_key=``); None (default) accepts any key. An embedded server the
            loop starts gets a random one (``rl.backend.local_api_key()``).
        limits: what one request may cost (tokens), how big sample jobs are split,
            and the idle timeout; see :class:`~mint_envkit.local.http.limits.Limits`.
        max_tokens_per_pass: the engine's memory budget (padded tokens per model pass),
            passed to ``Engine``; None keeps the engine's default.
        batch_invariant: batch only sample requests of one prompt length, so a
            request's results never depend on concurrent ones (bit for bit on CPU;
            ``Engine(batch_invariant=...)``, ``--batch-invariant``). Default False.
        list_all_checkpoints: ``GET /checkpoints`` lists every run in the state dir,
            not only the runs this server created or was given by path (default
            False; ``mint-envkit checkpoints``, a tool over your own state dir, sets it).
        engine_factory: builds the engine instead of ``Engine(...)`` (for tests).
        long_poll_s: how long ``retrieve_future`` waits before answering try_again (30 s).
        preload: start loading ``models`` in the background at once (default); False
            loads each on first use.

    ``start()`` (or entering the ``with`` block) returns once ``/api/v1/healthz``
    answers. ``close()`` stops the server and its worker thread.

    Example::

        with LocalServer(models=["mint-envkit/tiny-qwen3-small"], latency_ms=0,
                         state_dir="mint-state") as local:
            assert local.base_url == f"http://127.0.0.1:{local.port}"   # 'http://127.0.0.1:54321'
            assert not local.request_counts()   # Counter() until a client calls
            local.reset_counts()
    """

    def __init__(
        self,
        models: Iterable[str] | None = None,
        *,
        state_dir: str | None = None,
        latency_ms: float = 0.0,
        host: str = "127.0.0.1",
        port: int = 0,
        device: str | None = None,
        num_threads: int | None = None,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_unnamed_samplers: int = DEFAULT_MAX_UNNAMED_SAMPLERS,
        allow_remote: bool = False,
        log_level: str = "warning",
        engine_factory: EngineFactory | None = None,
        long_poll_s: float | None = None,
        preload: bool = True,
        api_key: str | None = None,
        limits: Limits | None = None,
        max_tokens_per_pass: int | None = None,
        list_all_checkpoints: bool = False,
        batch_invariant: bool = False,
    ) -> None:
        if not allow_remote and not is_loopback_host(host):
            raise ConfigError(
                f"refusing to listen on {host!r}: the local server binds loopback only "
                "(127.0.0.1). Pass allow_remote=True (--allow-remote, with an --api-key) if you "
                "really want other machines to reach it"
            )
        if api_key is not None and not api_key.strip():
            raise ConfigError("api_key must be a non-empty string (or None for no key)")
        self.allow_remote = allow_remote
        self.api_key = api_key
        """The key clients must send (None: any key is accepted)."""
        self.host = host
        self._requested_port = int(port)
        self._models = list(models) if models is not None else [DEFAULT_MODEL]
        check_server_options(
            self._models,
            latency_ms=latency_ms,
            max_body_bytes=max_body_bytes,
            max_unnamed_samplers=max_unnamed_samplers,
        )
        self._backend_kwargs: dict[str, Any] = {
            "models": self._models,
            "state_dir": None if state_dir is None else str(state_dir),
            "device": device,
            "num_threads": num_threads,
            "latency_ms": latency_ms,
            "max_body_bytes": max_body_bytes,
            "max_unnamed_samplers": max_unnamed_samplers,
            "engine_factory": engine_factory,
            "preload": preload,
            "api_key": api_key,
            "list_all_checkpoints": list_all_checkpoints,
            "limits": limits if limits is not None else Limits(),
            "engine_options": {
                **(
                    {}
                    if max_tokens_per_pass is None
                    else {"max_tokens_per_pass": max_tokens_per_pass}
                ),
                **({"batch_invariant": True} if batch_invariant else {}),
            },
        }
        if long_poll_s is not None:
            self._backend_kwargs["long_poll_s"] = long_poll_s
        self._log_level = log_level
        self.backend: Backend | None = None
        self._server: _UvicornServer | None = None
        self._thread: threading.Thread | None = None
        self._port: int | None = None
        self._finalizer: weakref.finalize | None = None
        self.start_seconds: float | None = None

    # ------------------------------------------------------------------ lifecycle

    def start(self, timeout: float = 30.0) -> LocalServer:
        """Start serving; returns once healthz answers (raises BackendError otherwise).

        Example::

            other = LocalServer(models=["mint-envkit/tiny-qwen3-small"],
                                state_dir=tempfile.mkdtemp()).start()
            assert other.start() is other   # started once
            other.close()
        """
        if self._thread is not None:
            return self
        t0 = time.perf_counter()
        if self._backend_kwargs["state_dir"] is not None:
            check_state_dir(self._backend_kwargs["state_dir"])
        if self.allow_remote and not is_loopback_host(self.host):
            logger.warning(
                "LISTENING ON %s (--allow-remote): any machine that can reach this address "
                "can train, sample, read and delete checkpoints%s",
                self.host,
                "" if self.api_key else " -- and NO API KEY is set: pass --api-key",
            )
        backend = Backend(**self._backend_kwargs)
        family = socket.AF_INET6 if ":" in self.host.strip("[]") else socket.AF_INET
        # proto must be IPPROTO_TCP: asyncio only sets TCP_NODELAY on accepted sockets of
        # that proto, and without it every small response waits ~40 ms (Nagle + delayed ACK)
        sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host.strip("[]"), self._requested_port))
        except OSError as err:
            sock.close()
            backend.close()
            raise BackendError(
                f"cannot listen on {self.host}:{self._requested_port}: {err}. "
                "Pick another --port (or 0 for any free port)"
            ) from None
        sock.listen(128)
        sock.setblocking(False)
        self._port = sock.getsockname()[1]
        if not self.allow_remote:
            own = self.base_url.removeprefix("http://").lower()
            backend.guard.allowed_hosts = loopback_hosts(self._port) | {own}

        self.backend = backend
        config = uvicorn.Config(
            build_app(self.backend),
            loop="asyncio",
            http=guarded_protocol(self.backend.limits),  # h11, each request read in time
            lifespan="off",
            log_level=self._log_level,
            access_log=self._log_level == "debug",
            timeout_graceful_shutdown=2,
            timeout_keep_alive=30,
        )
        self._server = _UvicornServer(config)
        server = self._server

        def run() -> None:
            try:
                server.run(sockets=[sock])
            except BaseException:
                logger.exception("the local server stopped with an error")
            finally:
                sock.close()

        self._thread = threading.Thread(target=run, name="mint-envkit-server", daemon=True)
        self._thread.start()
        self._finalizer = weakref.finalize(
            self, _shutdown, self._server, self._thread, self.backend
        )

        deadline = time.monotonic() + timeout
        while True:
            if self._healthz_ok():
                break
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.close()
                raise BackendError(
                    f"the local server did not answer on {self.base_url} within {timeout} s"
                )
            time.sleep(0.01)
        self.start_seconds = time.perf_counter() - t0
        self.backend.reset_counts()  # the start-up probe is not a client request
        logger.info("local server on %s (started in %.2f s)", self.base_url, self.start_seconds)
        return self

    def _healthz_ok(self) -> bool:
        conn = http.client.HTTPConnection(self._connect_host(), self.port, timeout=1.0)
        try:
            conn.request("GET", "/api/v1/healthz")
            return conn.getresponse().status == 200
        except OSError:
            return False
        finally:
            conn.close()

    def close(self) -> None:
        """Stop the server and its engine worker (idempotent).

        Example::

            other = LocalServer(models=["mint-envkit/tiny-qwen3-small"],
                                state_dir=tempfile.mkdtemp()).start()
            other.close()
            other.close()   # idempotent
        """
        if self._finalizer is not None:
            self._finalizer()
        self._thread = None

    def wait(self) -> None:
        """Block until the server thread stops (after ``close()`` from another thread).

        Example::

            other = LocalServer(models=["mint-envkit/tiny-qwen3-small"],
                                state_dir=tempfile.mkdtemp()).start()
            threading.Timer(0.2, other.close).start()   # e.g. after 60 s, or from a signal
            other.wait()   # returns once it has stopped
        """
        thread = self._thread
        while thread is not None and thread.is_alive():
            thread.join(0.5)

    def __enter__(self) -> LocalServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ info

    def _connect_host(self) -> str:
        host = self.host.strip("[]")
        if host in ("0.0.0.0", "::"):
            return "127.0.0.1" if host == "0.0.0.0" else "::1"
        return host

    @property
    def port(self) -> int:
        """The bound port (known once started).

        Example::

            assert 0 < server.port < 65536   # port=0 (the default) picks a free one: e.g. 41873
            try:
                LocalServer().port
            except BackendError as err:
                assert "not started" in str(err)
            else:
                raise AssertionError("no port before start()")
        """
        if self._port is None:
            raise BackendError("the server is not started; call start() or use `with`")
        return self._port

    @property
    def base_url(self) -> str:
        """``http://HOST:PORT`` to pass as the SDK's ``base_url``.

        Example::

            client = mint.ServiceClient(base_url=server.base_url, api_key="sk-local")
            assert server.base_url.startswith("http://127.0.0.1:")
        """
        host = self._connect_host()
        if ":" in host:
            host = f"[{host}]"
        return f"http://{host}:{self.port}"

    def request_counts(self) -> collections.Counter[str]:
        """A snapshot of request counts by endpoint name (``asample``, ``retrieve_future``, ...).

        Example::

            from tinker import types

            sampling = client.create_sampling_client(base_model="mint-envkit/tiny-qwen3-small")
            sampling.sample(prompt=types.ModelInput.from_ints([1, 2]), num_samples=1,
                            sampling_params=types.SamplingParams(max_tokens=2)).result()
            assert server.request_counts()["asample"] == 1   # how many sample requests arrived
        """
        if self.backend is None:
            return collections.Counter()
        return self.backend.request_counts()

    def reset_counts(self) -> None:
        """Set every request count back to zero.

        Example::

            server.reset_counts()
            client.get_server_capabilities()   # what you measure, e.g. a benchmark
            assert server.request_counts() == {"get_server_capabilities": 1}
        """
        if self.backend is not None:
            self.backend.reset_counts()

    def preload_errors(self, timeout: float | None = None) -> dict[str, str]:
        """Wait for the served models to load; ``{model: message}`` for each that failed.

        Example::

            if errors := server.preload_errors(timeout=600):
                raise SystemExit(f"cannot serve: {errors}")   # {model: why it did not load}
        """
        if self.backend is None:
            raise BackendError("the server is not started")
        return self.backend.preload_errors(timeout)


def _shutdown(server: _UvicornServer, thread: threading.Thread, backend: Backend) -> None:
    loop = getattr(server, "_mint_loop", None)
    if loop is not None and thread.is_alive():
        # wake pending long-polls (they answer try_again) so connections can close
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(backend.futures.close)
    # Finish the running engine call (queued ones are cancelled) while the event loop still
    # runs, so its completion lands on a live loop; then stop uvicorn.
    backend.close()
    server.should_exit = True
    thread.join(timeout=10)
    if thread.is_alive():
        server.force_exit = True
        thread.join(timeout=5)
    if thread.is_alive():
        logger.warning("the local server thread did not stop in time")
