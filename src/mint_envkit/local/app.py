"""The embedded server's web app: Tinker wire protocol over HTTP, onto the Engine.

:class:`Backend` holds what the server knows (models, samplers, sessions,
pending futures, request counts) and owns the single engine worker thread:
every engine call runs there, one at a time, so the event loop never does
torch work. :func:`build_app` wraps a backend in a Starlette app.

Most callers want :class:`mint_envkit.local.server.LocalServer`, which runs
this app with uvicorn in a background thread.

Example::

    from mint_envkit.local.app import Backend, build_app

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir="/tmp/state")
    app = build_app(backend)          # an ASGI app; serve it with uvicorn
    ...
    backend.close()
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import json
import logging
import threading
import time
import uuid
from collections.abc import Awaitable, Callable, Iterable
from datetime import UTC, datetime
from typing import Any

import attrs
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.local import protocol as P
from mint_envkit.local.futures import FutureStore, Sequencer

__all__ = ["DEFAULT_MAX_BODY_BYTES", "DEFAULT_MAX_UNNAMED_SAMPLERS", "Backend", "build_app"]

logger = logging.getLogger("mint_envkit.local.server")


@attrs.define(eq=False)
class _SampleJob:
    """One queued asample request (see ``Backend.enqueue_sample``)."""

    resolve: Callable[[Any], str]
    prompt: list[int]
    kwargs: dict[str, Any]
    prompt_logprobs: bool
    ready: concurrent.futures.Future[Any] | None = None
    future: concurrent.futures.Future[Any] = attrs.field(factory=concurrent.futures.Future)


DEFAULT_SAMPLE_BATCH_WINDOW_MS = 5.0
"""How long a sampling job waits for more requests to batch with (milliseconds)."""

DEFAULT_MAX_UNNAMED_SAMPLERS = 64
"""Unnamed sampler snapshots kept in memory (an RL loop makes one per step)."""

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Request bodies above this size are refused with 413."""

LONG_POLL_S = 30.0
"""How long ``retrieve_future`` waits for a result before answering try_again."""

EngineFactory = Callable[[], Any]
Handler = Callable[[Request, dict[str, Any] | None], Awaitable[Any]]


class JSONResponse(Response):
    """JSON that keeps NaN/Infinity (Python's json reads them; the SDK validates floats).

    Example::

        JSONResponse({"loss:sum": float("nan")}).body   # b'{"loss:sum":NaN}'
    """

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return json.dumps(content, allow_nan=True, separators=(",", ":")).encode("utf-8")


def _error(status: int, message: str, **headers: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


def _looks_not_found(message: str) -> bool:
    text = message.lower()
    return any(
        s in text
        for s in (
            "not found",
            "unknown",
            "does not exist",
            "no such",
            "not available",
            "no checkpoint",
        )
    )


def _resolve_model_name(name: str) -> str:
    try:
        from mint_envkit.local.models import resolve_model_name

        return resolve_model_name(name)
    except Exception:
        return name


def _engine_error_category(err: BaseException) -> str | None:
    category = getattr(err, "category", None)
    if isinstance(err, MintEnvkitError) and category in ("user", "server"):
        return str(category)
    return None


class Backend:
    """Server state and operations; the engine is called on one worker thread only.

    Args:
        models: base models this server serves (``get_server_capabilities``,
            and the only names ``create_model`` / sampling accept). Their
            loading starts in the background at construction.
        state_dir, device, num_threads: passed to the engine.
        latency_ms: a fixed delay added to every operation before its answer
            is available (an async sleep; the engine worker is not delayed).
        max_body_bytes: larger request bodies get 413.
        engine_factory: builds the engine (default: ``mint_envkit.local.engine.Engine``);
            called once, on the worker thread.
        long_poll_s: how long ``retrieve_future`` waits for a result before try_again.
        seq_gap_timeout_s: how long a training request waits for a missing lower
            ``seq_id`` before the server gives up on it and goes on.
        preload: queue loading of ``models`` at once (default) instead of on first use.
        max_unnamed_samplers: how many unnamed sampler snapshots
            (``save_weights_and_get_sampling_client``, one per RL step) stay in
            memory; past it the oldest is released, and a later request to it
            gets a 404 that says so. Named ones (saved to disk) are never released.
        sample_batch_window_ms: how long a sampling job waits for more sample
            requests before it runs them as one batch (default 5 ms).

    Example::

        backend = Backend(models=["mint-envkit/tiny-qwen3-small"], latency_ms=50)
        app = build_app(backend)
    """

    def __init__(
        self,
        *,
        models: Iterable[str] = ("mint-envkit/tiny-qwen3",),
        state_dir: str | None = None,
        device: str | None = None,
        num_threads: int | None = None,
        latency_ms: float = 0.0,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        engine_factory: EngineFactory | None = None,
        long_poll_s: float = LONG_POLL_S,
        seq_gap_timeout_s: float = 30.0,
        preload: bool = True,
        max_unnamed_samplers: int = DEFAULT_MAX_UNNAMED_SAMPLERS,
        sample_batch_window_ms: float = DEFAULT_SAMPLE_BATCH_WINDOW_MS,
    ) -> None:
        self.models: list[str] = list(dict.fromkeys(models))
        if not self.models:
            raise ConfigError("the server needs at least one model (--model NAME)")
        if latency_ms < 0:
            raise ConfigError(f"latency_ms must be >= 0, got {latency_ms}")
        if max_body_bytes <= 0:
            raise ConfigError(f"max_body_bytes must be > 0, got {max_body_bytes}")
        if max_unnamed_samplers < 1:
            raise ConfigError(f"max_unnamed_samplers must be >= 1, got {max_unnamed_samplers}")
        self.max_unnamed_samplers = int(max_unnamed_samplers)
        self._unnamed: collections.OrderedDict[str, None] = collections.OrderedDict()
        self._sample_lock = threading.Lock()
        self._sample_queue: list[_SampleJob] = []
        self._sample_batch_queued = False
        self.sample_batch_window_s = float(sample_batch_window_ms) / 1000.0
        self.sample_batches: collections.deque[int] = collections.deque(maxlen=1000)
        """How many requests each recent engine sample batch served."""
        self.released_samplers: set[str] = set()
        self.latency_s = float(latency_ms) / 1000.0
        self.max_body_bytes = int(max_body_bytes)
        self.long_poll_s = float(long_poll_s)
        self.seq_gap_timeout_s = float(seq_gap_timeout_s)
        self.started_at = time.time()
        # a served directory is also known by its absolute path (the engine's name for it)
        self._aliases: dict[str, str] = {}
        for name in self.models:
            self._aliases.setdefault(name, name)
            self._aliases.setdefault(_resolve_model_name(name), name)

        self._counts: collections.Counter[str] = collections.Counter()
        self._counts_lock = threading.Lock()

        self.futures = FutureStore()
        self.model_registry: dict[str, dict[str, Any]] = {}
        self.samplers: dict[str, dict[str, Any]] = {}
        self.sessions: dict[str, dict[str, list[str]]] = {}
        self._sequencers: dict[str, Sequencer] = {}
        self._adhoc_samplers: dict[tuple[str, str], str] = {}
        self.pending_samplers: dict[str, concurrent.futures.Future[Any]] = {}
        self.direct_call_timeout_s = 20.0
        self._tasks: set[asyncio.Task[Any]] = set()

        if engine_factory is None:

            def engine_factory() -> Any:
                from mint_envkit.local.engine import Engine

                return Engine(
                    state_dir=state_dir,
                    device=device,
                    num_threads=num_threads,
                    default_model=self.models[0],
                )

        self._engine: Any = None
        self._engine_error: BaseException | None = None
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="mint-envkit-engine"
        )
        self._engine_ready = self._executor.submit(self._build_engine, engine_factory)
        self._preload: dict[str, concurrent.futures.Future[Any]] = {}
        if preload:
            for name in self.models:
                self._preload[name] = self.submit_engine(
                    lambda e, name=name: e.ensure_base_model(name), f"load {name}"
                )

    # ------------------------------------------------------------------ engine worker

    def _build_engine(self, factory: EngineFactory) -> None:
        t0 = time.perf_counter()
        try:
            self._engine = factory()
        except BaseException as err:
            self._engine_error = err
            logger.error("the engine could not start: %s", err)
            raise
        logger.info("engine ready in %.2f s", time.perf_counter() - t0)

    def _with_engine(self, fn: Callable[[Any], Any], label: str, queued_at: float) -> Any:
        if self._engine is None:
            raise MintEnvkitError(f"the local engine could not start: {self._engine_error}")
        start = time.perf_counter()
        try:
            return fn(self._engine)
        finally:
            if logger.isEnabledFor(logging.DEBUG):
                logger.debug(
                    "engine %s: %.3f s (waited %.3f s in the queue)",
                    label or "call",
                    time.perf_counter() - start,
                    start - queued_at,
                )

    def submit_engine(
        self, fn: Callable[[Any], Any], label: str = ""
    ) -> concurrent.futures.Future[Any]:
        """Queue ``fn(engine)`` on the worker thread (FIFO); returns its future.

        Example::

            backend.submit_engine(lambda e: e.ensure_base_model("mint-envkit/tiny-qwen3")).result()
        """
        return self._executor.submit(self._with_engine, fn, label, time.perf_counter())

    async def call_engine(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(engine)`` on the worker thread and await it from the event loop.

        Example::

            info = await backend.call_engine(lambda e: e.weights_info(path))
        """
        return await asyncio.wrap_future(self.submit_engine(fn))

    def preload_errors(self, timeout: float | None = None) -> dict[str, str]:
        """Wait for the served models to load; returns ``{model: error message}`` for failures.

        Example::

            errors = backend.preload_errors(timeout=300)
            if errors: print(errors)
        """
        errors: dict[str, str] = {}
        try:
            self._engine_ready.result(timeout)
        except Exception as err:
            return dict.fromkeys(self.models, f"the local engine could not start: {err}")
        for name, fut in self._preload.items():
            try:
                fut.result(timeout)
            except Exception as err:
                errors[name] = str(err)
        return errors

    def close(self) -> None:
        """Stop the worker thread: queued calls are cancelled, a running one finishes first.

        Example::

            backend.close()
        """
        self._executor.shutdown(wait=True, cancel_futures=True)

    # ------------------------------------------------------------------ counts

    def count(self, name: str) -> None:
        """Count one request to endpoint ``name`` (thread-safe).

        Example::

            backend.count("asample"); backend.request_counts()["asample"]   # 1
        """
        with self._counts_lock:
            self._counts[name] += 1

    def request_counts(self) -> collections.Counter[str]:
        """A snapshot of the request counts by endpoint name (thread-safe).

        Example::

            backend.request_counts().most_common(3)
        """
        with self._counts_lock:
            return collections.Counter(self._counts)

    def reset_counts(self) -> None:
        """Set every request count back to zero.

        Example::

            backend.reset_counts()
        """
        with self._counts_lock:
            self._counts.clear()

    # ------------------------------------------------------------------ helpers

    async def delay(self) -> None:
        """Sleep the configured latency (an async sleep; the engine is not delayed).

        Example::

            await backend.delay()
        """
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)

    def enqueue_sample(self, job: _SampleJob) -> None:
        """Queue a sample request; requests queued together run as one engine batch.

        While the worker is busy, sample requests pile up here; the next batch
        job takes all of them at once (``Engine.sample_many``), so many small
        concurrent requests (one per env, as tinker-cookbook sends) cost about
        as much as one large request.

        Example::

            backend.enqueue_sample(job)   # job.future resolves to (sequences, prompt_logprobs)
        """
        with self._sample_lock:
            self._sample_queue.append(job)
            if self._sample_batch_queued:
                return
            self._sample_batch_queued = True
        self.submit_engine(self._run_sample_batch, "asample")

    def _run_sample_batch(self, engine: Any) -> None:
        # Requests sent together (one per group, or one per env) reach the server
        # a few milliseconds apart: wait that long so they share the batch.
        if self.sample_batch_window_s > 0:
            time.sleep(self.sample_batch_window_s)
        with self._sample_lock:
            jobs, self._sample_queue = self._sample_queue, []
            self._sample_batch_queued = False
        # A job whose sampler is still being created (queued behind this batch)
        # waits for the next batch instead of blocking the worker.
        later = [j for j in jobs if j.ready is not None and not j.ready.done()]
        jobs = [j for j in jobs if j not in later]
        for job in later:
            self.enqueue_sample(job)
        runnable: list[tuple[_SampleJob, str]] = []
        for job in jobs:
            try:
                runnable.append((job, job.resolve(engine)))
            except BaseException as err:
                job.future.set_exception(err)
        if not runnable:
            return
        results = engine.sample_many([(sid, job.prompt, job.kwargs) for job, sid in runnable])
        self.sample_batches.append(len(runnable))
        for (job, sid), result in zip(runnable, results, strict=True):
            if isinstance(result, BaseException):
                job.future.set_exception(result)
                continue
            try:
                prompt_lp = (
                    engine.compute_logprobs(sid, job.prompt) if job.prompt_logprobs else None
                )
            except BaseException as err:
                job.future.set_exception(err)
                continue
            job.future.set_result((result, prompt_lp))

    def remember_unnamed_sampler(self, sampler_id: str) -> None:
        """Track an unnamed snapshot; release the oldest past ``max_unnamed_samplers``.

        Example::

            backend.remember_unnamed_sampler("sampler-1")
        """
        self._unnamed[sampler_id] = None
        while len(self._unnamed) > self.max_unnamed_samplers:
            old, _ = self._unnamed.popitem(last=False)
            self.samplers.pop(old, None)
            self.released_samplers.add(old)
            self._spawn(self.call_engine(lambda e, sid=old: e.release_sampler(sid)))

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def describe_error(self, err: BaseException) -> tuple[str, str]:
        """``(message, category)`` for a failed operation, as the SDK shows it.

        Example::

            backend.describe_error(EngineError("unknown sampler_id 'x'"))   # ("unknown ...", "user")
        """
        category = _engine_error_category(err)
        if category is not None:
            return str(err), category
        if isinstance(err, P.ProtocolError):
            return err.message, "user"
        if isinstance(err, MintEnvkitError):
            return str(err), "server"
        logger.error("operation failed unexpectedly", exc_info=err)
        return (
            f"internal error in the local backend ({type(err).__name__}: {err}); "
            "see the server log",
            "server",
        )

    def engine_error_response(self, err: BaseException) -> JSONResponse:
        """A 4xx for an engine error on a direct (non-future) endpoint.

        User errors are 404 (something named does not exist) or 422; server
        errors are 400, because the SDK retries any 5xx for minutes.

        Example::

            backend.engine_error_response(EngineError("no checkpoint at 'tinker://x/weights/y'"))
            # JSONResponse 404 {"error": "no checkpoint at ..."}
        """
        message, category = self.describe_error(err)
        if category == "user":
            return _error(404 if _looks_not_found(message) else 422, message)
        # A deliberate server-side failure: answer with a status the SDK does not
        # retry for minutes (it retries 5xx), so the user sees the message now.
        return _error(400, f"local backend error: {message}")

    def start_op(
        self,
        request_id: str,
        fn: Callable[[Any], Any],
        convert: Callable[[Any], dict[str, Any]],
        on_success: Callable[[Any], None] | None = None,
    ) -> None:
        """Queue an engine call now (FIFO order) and complete ``request_id`` with its result.

        ``convert`` turns the engine result into the response body; the result
        becomes visible ``latency_ms`` after the engine is done.

        Example::

            rid = backend.futures.create("optim_step")
            backend.start_op(rid, lambda e: e.optim_step(mid, learning_rate=1e-3),
                             lambda m: {"metrics": m})
        """
        cf = self.submit_engine(fn, self.futures.kind(request_id))
        self._spawn(self._finish(request_id, cf, convert, on_success))

    async def _finish(
        self,
        request_id: str,
        cf: concurrent.futures.Future[Any],
        convert: Callable[[Any], dict[str, Any]],
        on_success: Callable[[Any], None] | None,
    ) -> None:
        try:
            result = await asyncio.wrap_future(cf)
            payload = convert(result)
            if on_success is not None:
                on_success(result)
        except BaseException as err:
            if isinstance(err, asyncio.CancelledError | concurrent.futures.CancelledError):
                message, category = "the local server is shutting down", "server"
            else:
                message, category = self.describe_error(err)
            await self.delay()
            self.futures.set_error(request_id, message, category)
            return
        await self.delay()
        self.futures.set_result(request_id, payload)

    def sequencer(self, model_id: str) -> Sequencer:
        """The request sequencer of a model (created on first use).

        Example::

            backend.sequencer(model_id).next_seq   # 1 before any training request
        """
        seq = self._sequencers.get(model_id)
        if seq is None:
            seq = self._sequencers[model_id] = Sequencer(
                model_id, gap_timeout=self.seq_gap_timeout_s
            )
        return seq

    def require_model(self, model_id: Any) -> dict[str, Any]:
        """The registry record of ``model_id``, or a 404 naming it.

        Example::

            backend.require_model(model_id)["base_model"]   # 'mint-envkit/tiny-qwen3'
        """
        info = self.model_registry.get(model_id) if isinstance(model_id, str) else None
        if info is None:
            known = ", ".join(sorted(self.model_registry)[:5]) or "none yet"
            raise P.ProtocolError(
                404,
                f"unknown model_id {model_id!r} (models on this server: {known}); "
                "create one with create_lora_training_client",
            )
        info["last_request_time"] = time.time()
        return info

    def require_base_model(self, name: str) -> str:
        """``name`` if this server serves it, else a 404 that lists what it serves.

        Example::

            backend.require_base_model("mint-envkit/tiny-qwen3")
        """
        served = self._aliases.get(name) or self._aliases.get(_resolve_model_name(name))
        if served is not None:
            return served
        raise P.ProtocolError(
            404,
            f"unknown base model {name!r}: this server serves {self.models}. "
            f"Start it with --model {name} (a local directory or a cached Hugging Face id), "
            "or use the built-in mint-envkit/tiny-qwen3",
        )

    def session(self, session_id: str | None) -> dict[str, list[str]]:
        """The session record (created on first use).

        Example::

            backend.session("session-1")["training_run_ids"]   # []
        """
        sid = session_id or "default"
        return self.sessions.setdefault(sid, {"training_run_ids": [], "sampler_ids": []})

    def submit_training(
        self,
        kind: str,
        body: dict[str, Any],
        parse: Callable[[dict[str, Any]], Any],
        build: Callable[[Any], tuple[Callable[[Any], Any], Callable[[Any], dict], Any]],
    ) -> dict[str, Any]:
        """Validate, order by ``seq_id`` and queue one training request; returns its future.

        ``parse`` validates the body (raising ProtocolError); ``build(op)`` gives
        ``(engine_fn, convert, on_success)``. A refused request still uses up
        its ``seq_id`` so the ones after it are not held back.

        Example::

            backend.submit_training("optim_step", body, P.parse_optim_step, build)
            # {'request_id': 'req-...', 'model_id': '...'}
        """
        model_id = body.get("model_id")
        self.require_model(model_id)
        raw_seq = body.get("seq_id")
        seq_id = raw_seq if isinstance(raw_seq, int) and not isinstance(raw_seq, bool) else None
        seq = self.sequencer(model_id)
        try:
            op = parse(body)
            previous = seq.previous(seq_id, kind)
        except P.ProtocolError:
            seq.skip(seq_id)
            raise
        except ValueError as err:
            raise P.ProtocolError(422, str(err)) from None
        if previous is not None:
            logger.info(
                "model %s: seq_id %s re-sent; answering with %s", model_id, seq_id, previous
            )
            return {"request_id": previous, "model_id": model_id}
        fn, convert, on_success = build(op)
        request_id = self.futures.create(kind)
        seq.submit(
            seq_id,
            kind,
            request_id,
            lambda: self.start_op(request_id, fn, convert, on_success),
        )
        return {"request_id": request_id, "model_id": model_id}


# ====================================================================== the app


def build_app(backend: Backend) -> Starlette:
    """The Starlette app serving ``backend`` over the Tinker wire protocol.

    Example::

        import uvicorn
        uvicorn.run(build_app(Backend(models=["mint-envkit/tiny-qwen3"])), port=8765)
    """
    b = backend

    async def read_body(request: Request) -> bytes:
        declared = request.headers.get("content-length")
        limit = b.max_body_bytes
        too_big = declared is not None and declared.isdigit() and int(declared) > limit
        chunks: list[bytes] = []
        total = 0
        async for chunk in request.stream():
            total += len(chunk)
            if total > limit:
                too_big = True
            if not too_big:
                chunks.append(chunk)
            # past the limit the rest is read and dropped, so the client gets the 413
        if too_big:
            size = int(declared) if declared and declared.isdigit() else total
            raise P.ProtocolError(
                413,
                f"request body of {size} bytes is over this server's limit of {limit} bytes "
                "(mint-envkit serve --max-body-mb); send smaller batches",
            )
        return b"".join(chunks)

    def route(path: str, name: str, handler: Handler, methods: list[str], *, body: bool) -> Route:
        async def endpoint(request: Request) -> Response:
            if name != "stats":
                b.count(name)
            try:
                parsed: dict[str, Any] | None = None
                if request.method in ("POST", "PUT"):
                    raw = await read_body(request)
                    if body:
                        parsed = P.parse_json_body(raw)
                result = await handler(request, parsed)
                if isinstance(result, Response):
                    return result
                return JSONResponse(result)
            except P.ProtocolError as err:
                if err.status >= 500:
                    return _error(err.status, err.message, **{"x-should-retry": "false"})
                return _error(err.status, err.message)
            except Exception as err:
                logger.exception("%s %s failed", request.method, request.url.path)
                return _error(
                    500,
                    f"internal error in the local backend ({type(err).__name__}: {err}); "
                    "see the server log",
                    **{"x-should-retry": "false"},
                )

        return Route(path, endpoint, methods=methods, name=name)

    # -------------------------------------------------------------- setup & session

    async def client_config(request: Request, body: Any) -> dict:
        return {
            "pjwt_auth_enabled": True,
            "credential_default_source": "api_key",
            "parallel_fwdbwd_chunks": True,
            "proto_write_fwdbwd": False,
            "enable_grpc_retrieve_future": False,
            "sample_no_retries": False,
        }

    async def auth_token(request: Request, body: Any) -> dict:
        return {"jwt": P.make_jwt()}

    async def create_session(request: Request, body: Any) -> dict:
        session_id = f"session-{uuid.uuid4().hex[:12]}"
        b.session(session_id)
        return {"type": "create_session", "session_id": session_id}

    async def session_heartbeat(request: Request, body: Any) -> dict:
        return {"type": "session_heartbeat"}

    async def telemetry(request: Request, body: Any) -> dict:
        return {"status": "accepted"}

    async def healthz(request: Request, body: Any) -> dict:
        return {"status": "ok"}

    async def capabilities(request: Request, body: Any) -> dict:
        return {"supported_models": [{"model_name": m} for m in b.models]}

    async def stats(request: Request, body: Any) -> dict:
        return {
            "request_counts": dict(b.request_counts()),
            "pending_futures": b.futures.pending,
            "models": b.models,
            "training_runs": len(b.model_registry),
            "samplers": len(b.samplers),
            "sample_batches": list(b.sample_batches),
            "latency_ms": b.latency_s * 1000.0,
            "uptime_s": time.time() - b.started_at,
        }

    # -------------------------------------------------------------- models

    async def create_model(request: Request, body: dict) -> dict:
        req = P.parse_create_model(body)
        base = b.require_base_model(req.base_model)
        lora = req.lora_config
        kwargs: dict[str, Any] = {}
        if lora is not None:
            kwargs = {
                "rank": lora.rank,
                "seed": lora.seed,
                "train_mlp": lora.train_mlp,
                "train_attn": lora.train_attn,
                "train_unembed": lora.train_unembed,
            }

        def fn(e: Any) -> tuple[str, dict[str, Any]]:
            model_id = e.create_lora(base, **kwargs)
            return model_id, dict(e.model_info(model_id))

        def on_success(result: tuple[str, dict[str, Any]]) -> None:
            model_id, info = result
            b.model_registry[model_id] = {
                "model_id": model_id,
                "base_model": info.get("base_model", base),
                "lora_rank": info.get("lora_rank", kwargs.get("rank")),
                "tokenizer_dir": info.get("tokenizer_dir"),
                "arch": info.get("arch"),
                "train_mlp": info.get("train_mlp", kwargs.get("train_mlp", True)),
                "train_attn": info.get("train_attn", kwargs.get("train_attn", True)),
                "train_unembed": info.get("train_unembed", kwargs.get("train_unembed", True)),
                "user_metadata": {str(k): str(v) for k, v in (req.user_metadata or {}).items()},
                "session_id": req.session_id,
                "last_request_time": time.time(),
            }
            b.session(req.session_id)["training_run_ids"].append(model_id)

        request_id = b.futures.create("create_model")
        b.start_op(
            request_id,
            fn,
            lambda r: {"type": "create_model", "model_id": r[0]},
            on_success,
        )
        return {"request_id": request_id}

    async def get_info(request: Request, body: dict) -> dict:
        info = b.require_model(P.parse_model_id_request(body, "get_info"))
        await b.delay()
        return {
            "type": "get_info",
            "model_id": info["model_id"],
            "model_data": {
                "arch": info.get("arch"),
                "model_name": info["base_model"],
                "tokenizer_id": info.get("tokenizer_dir"),
            },
            "is_lora": True,
            "lora_rank": info.get("lora_rank"),
            "model_name": info["base_model"],
        }

    async def unload_model(request: Request, body: dict) -> dict:
        model_id = P.parse_model_id_request(body, "unload_model")
        b.require_model(model_id)

        def on_success(_: Any) -> None:
            b.model_registry.pop(model_id, None)
            b._sequencers.pop(model_id, None)

        request_id = b.futures.create("unload_model")
        b.start_op(
            request_id,
            lambda e: e.unload(model_id),
            lambda _: {"type": "unload_model", "model_id": model_id},
            on_success,
        )
        return {"request_id": request_id, "model_id": model_id}

    # -------------------------------------------------------------- training

    def forward_like(backward: bool) -> Handler:
        kind = "forward_backward" if backward else "forward"

        async def handler(request: Request, body: dict) -> dict:
            def build(op: P.ForwardOp) -> tuple[Any, Any, None]:
                def fn(e: Any) -> Any:
                    return e.forward(
                        op.model_id, op.data, op.loss_fn, op.loss_fn_config, backward=backward
                    )

                return fn, lambda out: P.forward_output_json(out.logprobs, out.metrics), None

            return b.submit_training(
                kind, body, lambda bd: P.parse_forward(bd, backward=backward), build
            )

        return handler

    async def optim_step(request: Request, body: dict) -> dict:
        def build(req: Any) -> tuple[Any, Any, None]:
            p = req.adam_params

            def fn(e: Any) -> Any:
                return e.optim_step(
                    req.model_id,
                    learning_rate=p.learning_rate,
                    beta1=p.beta1,
                    beta2=p.beta2,
                    eps=p.eps,
                    weight_decay=p.weight_decay,
                    grad_clip_norm=p.grad_clip_norm,
                )

            def convert(metrics: Any) -> dict:
                values = {}
                for k, v in dict(metrics or {}).items():
                    try:
                        values[str(k)] = float(v)
                    except (TypeError, ValueError):
                        continue
                return {"metrics": values}

            return fn, convert, None

        return b.submit_training("optim_step", body, P.parse_optim_step, build)

    async def save_weights(request: Request, body: dict) -> dict:
        def build(req: Any) -> tuple[Any, Any, None]:
            name = (
                req.path
                or f"state-{req.seq_id if req.seq_id is not None else uuid.uuid4().hex[:8]}"
            )
            return (
                lambda e: e.save_state(req.model_id, name, kind="state"),
                lambda path: {"type": "save_weights", "path": path},
                None,
            )

        return b.submit_training("save_weights", body, P.parse_save_weights, build)

    async def save_weights_for_sampler(request: Request, body: dict) -> dict:
        def build(req: Any) -> tuple[Any, Any, Any]:
            model_id = req.model_id

            def convert(result: tuple[str, str]) -> dict:
                sampler_id, path = result
                if req.path is not None:
                    if not path:
                        raise MintEnvkitError(
                            "the engine saved sampler weights without returning a path"
                        )
                    return {"type": "save_weights_for_sampler", "path": path}
                return {"type": "save_weights_for_sampler", "sampling_session_id": sampler_id}

            def on_success(result: tuple[str, str]) -> None:
                sampler_id, path = result
                info = b.model_registry.get(model_id, {})
                b.samplers[sampler_id] = {
                    "sampler_id": sampler_id,
                    "base_model": info.get("base_model", ""),
                    "model_path": path or None,
                }
                b.session(info.get("session_id"))["sampler_ids"].append(sampler_id)
                if not path:
                    b.remember_unnamed_sampler(sampler_id)

            return (lambda e: tuple(e.save_for_sampler(model_id, req.path)), convert, on_success)

        return b.submit_training(
            "save_weights_for_sampler", body, P.parse_save_weights_for_sampler, build
        )

    async def load_weights(request: Request, body: dict) -> dict:
        def build(req: Any) -> tuple[Any, Any, None]:
            return (
                lambda e: e.load_state(req.model_id, req.path, with_optimizer=req.optimizer),
                lambda _: {"type": "load_weights", "path": req.path},
                None,
            )

        return b.submit_training("load_weights", body, P.parse_load_weights, build)

    async def weights_info(request: Request, body: dict) -> Any:
        path = P.parse_weights_info(body)
        try:
            info = dict(await b.call_engine(lambda e: e.weights_info(path)))
        except Exception as err:
            return b.engine_error_response(err)
        await b.delay()
        fields = ("base_model", "is_lora", "lora_rank", "train_unembed", "train_mlp", "train_attn")
        out = {k: info[k] for k in fields if info.get(k) is not None}
        out.setdefault("is_lora", True)
        # The SDK rebuilds a training client from these flags (create_training_client_from_state)
        # and defaults missing ones to True; fill them from the run that saved the checkpoint.
        run = b.model_registry.get(path.removeprefix("tinker://").split("/", 1)[0], {})
        for flag in ("train_unembed", "train_mlp", "train_attn"):
            if flag not in out and flag in run:
                out[flag] = bool(run[flag])
        return out

    # -------------------------------------------------------------- sampling

    def sampler_base_model(model_path: str) -> str:
        run_id = model_path.removeprefix("tinker://").split("/", 1)[0]
        return str(b.model_registry.get(run_id, {}).get("base_model", ""))

    async def create_sampling_session(request: Request, body: dict) -> Any:
        req = P.parse_create_sampling_session(body)
        if req.base_model is not None:
            base = b.require_base_model(req.base_model)

            def fn(e: Any) -> tuple[str, str]:
                return e.create_sampler(base_model=base), base
        else:
            path = req.model_path
            known_base = sampler_base_model(path)

            def fn(e: Any) -> tuple[str, str]:
                sampler_id = e.create_sampler(model_path=path)
                base = known_base
                if not base:
                    try:
                        base = str(e.weights_info(path).get("base_model", ""))
                    except Exception:
                        base = ""
                return sampler_id, base

        # Wait for the engine, but not past the SDK's 60 s read timeout (it would re-send): if
        # the worker is busy for long, answer with a server-side id now and bind it to the
        # engine's sampler when it is made (FIFO: before any sample on it can run).
        cf = b.submit_engine(fn, "create_sampling_session")
        try:
            sampler_id, base = await asyncio.wait_for(
                asyncio.shield(asyncio.wrap_future(cf)), b.direct_call_timeout_s
            )
            pending = None
        except TimeoutError:
            sampler_id = f"sampler-pending-{uuid.uuid4().hex}"
            base = req.base_model or sampler_base_model(req.model_path or "")
            pending = cf
        except Exception as err:
            return b.engine_error_response(err)
        b.samplers[sampler_id] = {
            "sampler_id": sampler_id,
            "base_model": base,
            "model_path": req.model_path,
        }
        if pending is not None:
            b.pending_samplers[sampler_id] = pending
        b.session(req.session_id)["sampler_ids"].append(sampler_id)
        await b.delay()
        return {"type": "create_sampling_session", "sampling_session_id": sampler_id}

    async def asample(request: Request, body: dict) -> dict:
        op = P.parse_sample(body)
        if op.sampling_session_id is not None:
            if op.sampling_session_id in b.released_samplers:
                raise P.ProtocolError(
                    404,
                    f"sampling session {op.sampling_session_id!r} was released: the server keeps "
                    f"the {b.max_unnamed_samplers} newest unnamed sampler snapshots "
                    "(--max-unnamed-samplers); save weights with a name "
                    "(save_weights_for_sampler) to keep one",
                )
            if op.sampling_session_id not in b.samplers:
                raise P.ProtocolError(
                    404,
                    f"unknown sampling_session_id {op.sampling_session_id!r}; create a sampling "
                    "client with create_sampling_client or save_weights_for_sampler",
                )
            sampler_key: tuple[str, str] | None = None
            sampler_id: str | None = op.sampling_session_id
        elif op.model_path is not None:
            sampler_key, sampler_id = ("model_path", op.model_path), None
        else:
            sampler_key, sampler_id = (
                ("base_model", b.require_base_model(op.base_model or "")),
                None,
            )

        kwargs: dict[str, Any] = {
            "num_samples": op.num_samples,
            "temperature": op.temperature,
            "top_p": op.top_p,
            "top_k": op.top_k,
            "seed": op.seed,
            "stop": op.stop,
        }
        if op.max_tokens is not None:
            kwargs["max_tokens"] = op.max_tokens

        pending = b.pending_samplers.get(sampler_id or "")

        def resolve(e: Any) -> str:
            sid = sampler_id
            if pending is not None:
                sid = pending.result()[0]  # done: the batcher waits until it is
            if sid is None:
                assert sampler_key is not None
                sid = b._adhoc_samplers.get(sampler_key)
                if sid is None:
                    sid = e.create_sampler(**{sampler_key[0]: sampler_key[1]})
                    b._adhoc_samplers[sampler_key] = sid
            return sid

        request_id = b.futures.create("asample")
        job = _SampleJob(
            resolve=resolve,
            prompt=op.prompt,
            kwargs=kwargs,
            prompt_logprobs=bool(op.prompt_logprobs),
            ready=pending,
        )
        b.enqueue_sample(job)
        b._spawn(
            b._finish(request_id, job.future, lambda r: P.sample_response_json(r[0], r[1]), None)
        )
        return {"request_id": request_id}

    # -------------------------------------------------------------- futures

    async def retrieve_future(request: Request, body: dict) -> Any:
        request_id = P.parse_retrieve_future(body)
        try:
            payload = await b.futures.wait(request_id, b.long_poll_s)
        except KeyError:
            return _error(
                404,
                f"unknown request_id {request_id!r}: this server never issued it, or has "
                "restarted since",
            )
        if payload is None:
            return {"type": "try_again", "request_id": request_id, "queue_state": "active"}
        return payload

    # -------------------------------------------------------------- REST

    async def list_checkpoints_for(model_id: str | None) -> list[dict[str, Any]]:
        records = await b.call_engine(lambda e: list(e.list_checkpoints(model_id)))
        items = [P.checkpoint_json(r) for r in records]
        items.sort(key=lambda c: c["time"], reverse=True)
        return items

    def cursor(offset: int, limit: int, total: int) -> dict[str, int]:
        return {"offset": offset, "limit": limit, "total_count": total}

    def paging(request: Request, default_limit: int) -> tuple[int, int]:
        try:
            limit = int(request.query_params.get("limit", default_limit))
            offset = int(request.query_params.get("offset", 0))
        except ValueError:
            raise P.ProtocolError(422, "limit and offset must be integers") from None
        return max(0, offset), max(0, limit)

    async def training_run_json(model_id: str) -> dict[str, Any]:
        info = b.model_registry[model_id]
        try:
            checkpoints = await list_checkpoints_for(model_id)
        except Exception:
            checkpoints = []
        last_training = next((c for c in checkpoints if c["checkpoint_type"] == "training"), None)
        last_sampler = next((c for c in checkpoints if c["checkpoint_type"] == "sampler"), None)
        return {
            "training_run_id": model_id,
            "base_model": info["base_model"],
            "model_owner": "local",
            "is_lora": True,
            "corrupted": False,
            "lora_rank": info.get("lora_rank"),
            "last_request_time": datetime.fromtimestamp(
                info.get("last_request_time", time.time()), tz=UTC
            ).isoformat(),
            "last_checkpoint": last_training,
            "last_sampler_checkpoint": last_sampler,
            "user_metadata": info.get("user_metadata") or None,
        }

    async def list_training_runs(request: Request, body: Any) -> dict:
        offset, limit = paging(request, 20)
        ids = list(b.model_registry)
        page = ids[offset : offset + limit]
        return {
            "training_runs": [await training_run_json(m) for m in page],
            "cursor": cursor(offset, limit, len(ids)),
        }

    async def get_training_run(request: Request, body: Any) -> dict:
        model_id = request.path_params["run_id"]
        b.require_model(model_id)
        return await training_run_json(model_id)

    async def list_checkpoints(request: Request, body: Any) -> Any:
        model_id = request.path_params["run_id"]
        try:
            items = await list_checkpoints_for(model_id)
        except Exception as err:
            return b.engine_error_response(err)
        return {"checkpoints": items}

    async def delete_checkpoint(request: Request, body: Any) -> Any:
        run_id = request.path_params["run_id"]
        checkpoint_id = request.path_params["checkpoint_id"]
        parts = checkpoint_id.split("/")
        if ".." in parts or ".." in run_id.split("/") or not checkpoint_id:
            raise P.ProtocolError(422, f"invalid checkpoint id {checkpoint_id!r}")
        path = f"tinker://{run_id}/{checkpoint_id}"
        try:
            await b.call_engine(lambda e: e.delete_checkpoint(path))
        except Exception as err:
            return b.engine_error_response(err)
        return Response(status_code=204)

    async def list_user_checkpoints(request: Request, body: Any) -> Any:
        offset, limit = paging(request, 100)
        try:
            items = await list_checkpoints_for(None)
        except Exception as err:
            return b.engine_error_response(err)
        return {
            "checkpoints": items[offset : offset + limit],
            "cursor": cursor(offset, limit, len(items)),
        }

    async def list_sessions(request: Request, body: Any) -> dict:
        offset, limit = paging(request, 20)
        ids = list(b.sessions)
        return {"sessions": ids[offset : offset + limit]}

    async def get_session(request: Request, body: Any) -> dict:
        session_id = request.path_params["session_id"]
        if session_id not in b.sessions:
            raise P.ProtocolError(404, f"unknown session {session_id!r}")
        rec = b.sessions[session_id]
        return {
            "training_run_ids": list(rec["training_run_ids"]),
            "sampler_ids": list(rec["sampler_ids"]),
        }

    async def get_sampler(request: Request, body: Any) -> dict:
        sampler_id = request.path_params["sampler_id"]
        rec = b.samplers.get(sampler_id)
        if rec is None:
            raise P.ProtocolError(404, f"unknown sampler {sampler_id!r}")
        return dict(rec)

    async def not_supported(request: Request, body: Any) -> Any:
        return _error(
            404,
            f"{request.method} {request.url.path} is not supported by the local mint-envkit "
            "backend (see docs/local-backend.md for what is)",
        )

    v1 = "/api/v1"
    post = ["POST"]
    get = ["GET"]
    routes = [
        route(f"{v1}/client/config", "client_config", client_config, post, body=False),
        route(f"{v1}/auth/token", "auth_token", auth_token, post, body=False),
        route(f"{v1}/create_session", "create_session", create_session, post, body=False),
        route(f"{v1}/session_heartbeat", "session_heartbeat", session_heartbeat, post, body=False),
        route(f"{v1}/telemetry", "telemetry", telemetry, post, body=False),
        route(f"{v1}/healthz", "healthz", healthz, get, body=False),
        route(
            f"{v1}/get_server_capabilities",
            "get_server_capabilities",
            capabilities,
            get,
            body=False,
        ),
        route(f"{v1}/mint_envkit/stats", "stats", stats, get, body=False),
        route(f"{v1}/create_model", "create_model", create_model, post, body=True),
        route(f"{v1}/get_info", "get_info", get_info, post, body=True),
        route(f"{v1}/unload_model", "unload_model", unload_model, post, body=True),
        route(f"{v1}/forward", "forward", forward_like(False), post, body=True),
        route(f"{v1}/forward_backward", "forward_backward", forward_like(True), post, body=True),
        route(f"{v1}/optim_step", "optim_step", optim_step, post, body=True),
        route(f"{v1}/save_weights", "save_weights", save_weights, post, body=True),
        route(
            f"{v1}/save_weights_for_sampler",
            "save_weights_for_sampler",
            save_weights_for_sampler,
            post,
            body=True,
        ),
        route(f"{v1}/load_weights", "load_weights", load_weights, post, body=True),
        route(f"{v1}/weights_info", "weights_info", weights_info, post, body=True),
        route(
            f"{v1}/create_sampling_session",
            "create_sampling_session",
            create_sampling_session,
            post,
            body=True,
        ),
        route(f"{v1}/asample", "asample", asample, post, body=True),
        route(f"{v1}/retrieve_future", "retrieve_future", retrieve_future, post, body=True),
        route(f"{v1}/training_runs", "list_training_runs", list_training_runs, get, body=False),
        route(
            f"{v1}/training_runs/{{run_id}}", "get_training_run", get_training_run, get, body=False
        ),
        route(
            f"{v1}/training_runs/{{run_id}}/checkpoints",
            "list_checkpoints",
            list_checkpoints,
            get,
            body=False,
        ),
        route(
            f"{v1}/training_runs/{{run_id}}/checkpoints/{{checkpoint_id:path}}",
            "delete_checkpoint",
            delete_checkpoint,
            ["DELETE"],
            body=False,
        ),
        route(f"{v1}/checkpoints", "list_user_checkpoints", list_user_checkpoints, get, body=False),
        route(f"{v1}/sessions", "list_sessions", list_sessions, get, body=False),
        route(f"{v1}/sessions/{{session_id}}", "get_session", get_session, get, body=False),
        route(f"{v1}/samplers/{{sampler_id}}", "get_sampler", get_sampler, get, body=False),
        route(
            "/{rest:path}",
            "not_supported",
            not_supported,
            ["GET", "POST", "PUT", "DELETE", "PATCH"],
            body=False,
        ),
    ]
    app = Starlette(routes=routes)
    app.state.backend = backend
    return app
