"""The server's backend state: models, sessions, futures, counts, and the sampler table.

:class:`Backend` holds what the server knows and starts operations on the
engine worker (:mod:`mint_envkit.local.http.worker`); the route handlers in
:mod:`mint_envkit.local.http.routes` read and change it. Everything here runs
on the server's event loop, except the request counts (thread-safe).

Example::

    import tempfile
    from mint_envkit.local.http.app import build_app
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    app = build_app(backend)          # an ASGI app; serve it with uvicorn
    assert backend.preload_errors(timeout=60) == {}   # the served model loaded
    # backend.close() when the server stops
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import logging
import secrets
import threading
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Any

from mint_envkit.checks import check_integer, check_number, is_integer
from mint_envkit.errors import ConfigError
from mint_envkit.local.http.futures import FutureStore, Sequencer
from mint_envkit.local.http.guard import Guard
from mint_envkit.local.http.idle import IdleReaper
from mint_envkit.local.http.limits import Limits
from mint_envkit.local.http.requests import ProtocolError, run_id_of
from mint_envkit.local.http.responses import describe_error, engine_error
from mint_envkit.local.http.samplers import SamplerTable
from mint_envkit.local.http.worker import EngineFactory, EngineWorker, SampleBatcher
from mint_envkit.local.messages import SERVER_SHUTTING_DOWN

logger = logging.getLogger("mint_envkit.local.server")

DEFAULT_SAMPLE_BATCH_WINDOW_MS = 5.0
"""How long a sampling job waits for more requests to batch with (milliseconds)."""

DEFAULT_MAX_UNNAMED_SAMPLERS = 64
"""Unnamed sampler snapshots kept in memory (an RL loop makes one per step)."""

DEFAULT_MAX_BODY_BYTES = 64 * 1024 * 1024
"""Request bodies above this size are refused with 413."""

LONG_POLL_S = 30.0
"""How long ``retrieve_future`` waits for a result before answering try_again."""

Convert = Callable[[Any], dict[str, Any]]
OnSuccess = Callable[[Any], None] | None


def check_server_options(
    models: Sequence[str],
    *,
    latency_ms: float,
    max_body_bytes: int,
    max_unnamed_samplers: int,
) -> None:
    """Refuse server options out of range (ConfigError naming the option and the fix).

    Example::

        check_server_options(["mint-envkit/tiny-qwen3"], latency_ms=0,
                             max_body_bytes=1 << 20, max_unnamed_samplers=64)   # fine
        try:
            check_server_options([], latency_ms=0, max_body_bytes=1, max_unnamed_samplers=1)
        except ConfigError as err:
            assert "--model NAME" in str(err)
        else:
            raise AssertionError("no model is refused")
    """
    if not models:
        raise ConfigError("the server needs at least one model (--model NAME)")
    check_number(latency_ms, "latency_ms", low=0)
    check_integer(max_body_bytes, "max_body_bytes")
    check_integer(max_unnamed_samplers, "max_unnamed_samplers")


def _resolve_model_name(name: str) -> str:
    try:
        from mint_envkit.local.models.loader import resolve_model_name

        return resolve_model_name(name)
    except Exception:
        return name


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
        engine_factory: builds the engine (default: ``mint_envkit.local.Engine``);
            called once, on the worker thread.
        long_poll_s: how long ``retrieve_future`` waits for a result before try_again.
        seq_gap_timeout_s: how long a training request waits for a missing lower
            ``seq_id`` before the server gives up on it and goes on.
        preload: queue loading of ``models`` at once (default) instead of on first use.
        max_unnamed_samplers: how many unnamed sampler snapshots
            (``save_weights_and_get_sampling_client``, one per RL step) stay in
            memory; past it the oldest is released, and a later request to it
            gets a 404 that says so. Named ones (saved to disk) are never released.
        sample_batch_window_ms: the least a sampling job waits for more requests to
            batch with (default 5 ms; 0: none; more when batches are slow: ``SampleBatcher``).
        limits: what one request may cost, how sample jobs are split, and the idle
            timeout (:class:`~mint_envkit.local.http.limits.Limits`; defaults for a laptop).
        api_key: the key clients must send (None: any); see
            :mod:`~mint_envkit.local.http.guard`.
        list_all_checkpoints: ``GET /checkpoints`` lists every run in the state dir.
        engine_options: extra keyword arguments for ``Engine(...)`` (ignored with
            ``engine_factory``), e.g. ``{"max_tokens_per_pass": 2048}``.

    Example::

        slow = Backend(models=["mint-envkit/tiny-qwen3-small"], latency_ms=50, preload=False,
                       state_dir=tempfile.mkdtemp())
        assert slow.latency_s == 0.05 and slow.limits == Limits()
        slow.close()
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
        limits: Limits | None = None,
        api_key: str | None = None,
        engine_options: dict[str, Any] | None = None,
        list_all_checkpoints: bool = False,
    ) -> None:
        self.models: list[str] = list(dict.fromkeys(models))
        check_server_options(
            self.models,
            latency_ms=latency_ms,
            max_body_bytes=max_body_bytes,
            max_unnamed_samplers=max_unnamed_samplers,
        )
        self.latency_s = float(latency_ms) / 1000.0
        self.max_body_bytes = int(max_body_bytes)
        self.long_poll_s = float(long_poll_s)
        self.seq_gap_timeout_s = float(seq_gap_timeout_s)
        self.started_at = time.time()
        self.limits = limits if limits is not None else Limits()
        self.guard = Guard(api_key=api_key)
        """Request checks; ``guard.allowed_hosts`` is set by LocalServer once it knows its port."""
        self.closing = False
        # a served directory is also known by its absolute path (the engine's name for it)
        self._aliases: dict[str, str] = {}
        for name in self.models:
            self._aliases.setdefault(name, name)
            self._aliases.setdefault(_resolve_model_name(name), name)

        self._counts: collections.Counter[str] = collections.Counter()
        self._counts_lock = threading.Lock()

        self.futures = FutureStore()
        self.model_registry: dict[str, dict[str, Any]] = {}
        self.samplers = SamplerTable(
            max_unnamed=max_unnamed_samplers,
            release=lambda sid: self._spawn(self.worker.call(lambda e: e.release_sampler(sid))),
        )
        self.sessions: dict[str, dict[str, list[str]]] = {}
        self.reaper = IdleReaper(self)
        self.known_runs: set[str] = set()
        """Runs named to this server by a checkpoint path (listed by ``GET /checkpoints``)."""
        self.checkpoint_bases: dict[str, str] = {}
        """Checkpoint path -> its served base model, as the MinT routes checked it once."""
        self.list_all_checkpoints = list_all_checkpoints
        # Names this server process in healthz: a client that sees it change knows the
        # backend restarted (its training clients and samplers are gone).
        self.instance_id = secrets.token_hex(8)
        self._sequencers: dict[str, Sequencer] = {}
        self.direct_call_timeout_s = 20.0
        self._tasks: set[asyncio.Task[Any]] = set()

        if engine_factory is None:

            def engine_factory() -> Any:
                from mint_envkit.local.engine.core import Engine

                return Engine(
                    state_dir=state_dir,
                    device=device,
                    num_threads=num_threads,
                    default_model=self.models[0],
                    **(engine_options or {}),
                )

        self.worker = EngineWorker(engine_factory)
        self.batcher = SampleBatcher(
            self.worker,
            window_s=float(sample_batch_window_ms) / 1000.0,
            batch_tokens=self.limits.sample_chunk_tokens,
        )
        self._preload: dict[str, concurrent.futures.Future[Any]] = {}
        if preload:
            for name in self.models:
                self._preload[name] = self.worker.submit(
                    lambda e, name=name: self.batcher.warm_up(e, name), f"load {name}"
                )

    # ------------------------------------------------------------------ engine worker
    # ``worker`` runs engine calls (``worker.submit`` / ``await worker.call``); ``batcher``
    # batches sample requests (``batcher.enqueue``, ``batcher.batches``).

    def preload_errors(self, timeout: float | None = None) -> dict[str, str]:
        """Wait for the served models to load; returns ``{model: error message}`` for failures.

        Example::

            errors = backend.preload_errors(timeout=300)
            assert errors == {}   # else {model: why it did not load}
        """
        errors: dict[str, str] = {}
        try:
            self.worker.ready.result(timeout)
        except Exception as err:
            return dict.fromkeys(self.models, f"the local engine could not start: {err}")
        for name, fut in self._preload.items():
            try:
                fut.result(timeout)
            except Exception as err:
                errors[name] = str(err)
        return errors

    def close(self) -> None:
        """Stop the worker: queued calls are cancelled, the running one is cancelled too.

        The engine's ``cancel_running`` hook (when it has one) stops the running
        call at its next check between chunks; sample jobs are split, so without
        the hook the running one is a single chunk. Saved checkpoints stay valid.

        Example::

            other = Backend(models=["mint-envkit/tiny-qwen3-small"], preload=False,
                            state_dir=tempfile.mkdtemp())
            other.close()
            assert other.closing and other.worker.submit(lambda e: None).cancelled()
        """
        self.closing = True
        self.worker.close(cancel_running=True)

    # ------------------------------------------------------------------ counts

    def count(self, name: str) -> None:
        """Count one request to endpoint ``name`` (thread-safe).

        Example::

            backend.reset_counts()
            backend.count("asample")
            assert backend.request_counts()["asample"] == 1
        """
        with self._counts_lock:
            self._counts[name] += 1

    def request_counts(self) -> collections.Counter[str]:
        """A snapshot of the request counts by endpoint name (thread-safe).

        Example::

            backend.reset_counts()
            backend.count("healthz"); backend.count("healthz"); backend.count("asample")
            assert backend.request_counts().most_common(1) == [("healthz", 2)]
        """
        with self._counts_lock:
            return collections.Counter(self._counts)

    def reset_counts(self) -> None:
        """Set every request count back to zero.

        Example::

            backend.count("asample")
            backend.reset_counts()
            assert backend.request_counts() == {}
        """
        with self._counts_lock:
            self._counts.clear()

    # ------------------------------------------------------------------ operations

    async def delay(self) -> None:
        """Sleep the configured latency (an async sleep; the engine is not delayed).

        Example::

            await backend.delay()   # latency_ms=0: returns at once
        """
        if self.latency_s > 0:
            await asyncio.sleep(self.latency_s)

    async def engine_call(self, fn: Callable[[Any], Any]) -> Any:
        """Run ``fn(engine)`` on the worker for a direct answer; an engine error is its 4xx.

        Example::

            assert await backend.engine_call(lambda e: e.supported_models)
            try:
                await backend.engine_call(lambda e: e.weights_info("tinker://m-9/weights/none"))
            except ProtocolError as err:
                assert err.status == 404   # "no checkpoint at 'tinker://m-9/weights/none'; ..."
            else:
                raise AssertionError("an unknown checkpoint is a 404")
        """
        try:
            return await self.worker.call(fn)
        except Exception as err:
            raise engine_error(err) from None

    def _spawn(self, coro: Awaitable[Any]) -> None:
        task = asyncio.ensure_future(coro)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def start_op(
        self,
        request_id: str,
        fn: Callable[[Any], Any],
        convert: Convert,
        on_success: OnSuccess = None,
    ) -> None:
        """Queue an engine call now (FIFO order) and complete ``request_id`` with its result.

        ``convert`` turns the engine result into the response body; the result
        becomes visible ``latency_ms`` after the engine is done.

        Example::

            mid = await backend.engine_call(lambda e: e.create_lora("mint-envkit/tiny-qwen3-small"))
            rid = backend.futures.create("optim_step")
            backend.start_op(rid, lambda e: e.optim_step(mid, learning_rate=1e-3),
                             lambda m: {"metrics": m})
            while (body := await backend.futures.wait(rid, 0)) is None:   # as retrieve_future
                await asyncio.sleep(0.01)
            assert set(body) == {"metrics"}
        """
        cf = self.worker.submit(fn, self.futures.kind(request_id))
        self.complete_when_done(request_id, cf, convert, on_success)

    def complete_when_done(
        self,
        request_id: str,
        cf: concurrent.futures.Future[Any],
        convert: Convert,
        on_success: OnSuccess = None,
    ) -> None:
        """Complete the future ``request_id`` from ``cf`` (converted), ``latency_ms`` after it.

        Example::

            # the server: backend.complete_when_done(rid, job.future, lambda r: sample_response_json(*r))
            rid = backend.futures.create("asample")
            cf = backend.worker.submit(lambda e: e.supported_models)
            backend.complete_when_done(rid, cf, lambda models: {"models": models})
            while (body := await backend.futures.wait(rid, 0)) is None:
                await asyncio.sleep(0.01)
            assert "mint-envkit/tiny-qwen3-small" in body["models"]
        """
        self._spawn(self._finish(request_id, cf, convert, on_success))

    async def _finish(
        self,
        request_id: str,
        cf: concurrent.futures.Future[Any],
        convert: Convert,
        on_success: OnSuccess,
    ) -> None:
        try:
            result = await asyncio.wrap_future(cf)
            payload = convert(result)
            if on_success is not None:
                on_success(result)
        except BaseException as err:
            if isinstance(err, asyncio.CancelledError | concurrent.futures.CancelledError):
                message, category = SERVER_SHUTTING_DOWN, "server"
            else:
                message, category = describe_error(err)
            await self.delay()
            self.futures.set_error(request_id, message, category)
            return
        await self.delay()
        self.futures.set_result(request_id, payload)

    async def submit_training(
        self,
        kind: str,
        body: dict[str, Any],
        parse: Callable[[dict[str, Any]], Any],
        build: Callable[[Any], tuple[Callable[[Any], Any], Convert, OnSuccess]],
        *,
        in_thread: bool = False,
    ) -> dict[str, Any]:
        """Validate, order by ``seq_id`` and queue one training request; returns its future.

        ``parse`` validates the body (raising ProtocolError; it may be async, for checks
        that ask the engine; ``in_thread`` runs it in a worker thread, for a big body);
        ``build(op)`` gives ``(engine_fn, convert, on_success)``. A refused request still
        uses up its ``seq_id`` so the ones after it are not held back.

        Example::

            from mint_envkit.local.http.requests import parse_optim_step

            mid = await backend.engine_call(lambda e: e.create_lora("mint-envkit/tiny-qwen3-small"))
            backend.model_registry[mid] = {"model_id": mid}   # as create_model records it
            build = lambda op: (lambda e: e.optim_step(op.model_id, learning_rate=1e-4),
                                lambda metrics: {"metrics": metrics}, None)
            body = {"model_id": mid, "seq_id": 1, "adam_params": {"learning_rate": 1e-4}}
            answer = await backend.submit_training("optim_step", body, parse_optim_step, build)
            assert answer["model_id"] == mid and answer["request_id"].startswith("req-")
            again = await backend.submit_training("optim_step", body, parse_optim_step, build)
            assert again == answer   # a re-sent seq_id gets the same future
            while (result := await backend.futures.wait(answer["request_id"], 0)) is None:
                await asyncio.sleep(0.01)
            assert "metrics" in result
        """
        model_id = body.get("model_id")
        self.require_model(model_id)
        raw_seq = body.get("seq_id")
        seq_id = raw_seq if is_integer(raw_seq) else None
        seq = self.sequencer(model_id)
        try:
            op = await asyncio.to_thread(parse, body) if in_thread else parse(body)
            if asyncio.iscoroutine(op):
                op = await op
            previous = seq.previous(seq_id, kind)
        except ProtocolError:
            seq.skip(seq_id)
            raise
        except ValueError as err:
            raise ProtocolError(422, str(err)) from None
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

    # ------------------------------------------------------------------ models and sessions

    def sequencer(self, model_id: str) -> Sequencer:
        """The request sequencer of a model (created on first use).

        Example::

            assert backend.sequencer("m-new").next_seq == 1   # before any training request
            assert backend.sequencer("m-new") is backend.sequencer("m-new")
        """
        seq = self._sequencers.get(model_id)
        if seq is None:
            seq = self._sequencers[model_id] = Sequencer(
                model_id, gap_timeout=self.seq_gap_timeout_s
            )
        return seq

    def forget_model(self, model_id: str) -> None:
        """Drop an unloaded model's record and request sequencer.

        Example::

            backend.model_registry["m-old"] = {"model_id": "m-old"}
            backend.forget_model("m-old")
            assert "m-old" not in backend.model_registry
        """
        self.model_registry.pop(model_id, None)
        self._sequencers.pop(model_id, None)

    def require_model(self, model_id: Any) -> dict[str, Any]:
        """The registry record of ``model_id``, or a 404 naming it.

        Example::

            backend.model_registry["m-1"] = {"model_id": "m-1", "base_model": "mint-envkit/tiny-qwen3-small"}
            assert backend.require_model("m-1")["base_model"] == "mint-envkit/tiny-qwen3-small"
            try:
                backend.require_model("m-7")
            except ProtocolError as err:
                assert err.status == 404   # "unknown model_id 'm-7' (models on this server: m-1); ..."
            else:
                raise AssertionError("an unknown model_id is a 404")
        """
        info = self.model_registry.get(model_id) if isinstance(model_id, str) else None
        if info is None:
            known = ", ".join(sorted(self.model_registry)[:5]) or "none yet"
            raise ProtocolError(
                404,
                f"unknown model_id {model_id!r} (models on this server: {known}); "
                "create one with create_lora_training_client",
            )
        info["last_request_time"] = time.time()
        return info

    def served_name(self, name: str) -> str | None:
        """The name this server serves base model ``name`` under (a directory model is
        also known by its absolute path), or None when it does not serve it.

        Example::

            assert backend.served_name("mint-envkit/tiny-qwen3-small") == "mint-envkit/tiny-qwen3-small"
            assert backend.served_name("mint-envkit/tiny-qwen3") is None   # not served here
        """
        return self._aliases.get(name) or self._aliases.get(_resolve_model_name(name))

    def require_base_model(self, name: str) -> str:
        """``name`` if this server serves it, else a 404 that lists what it serves.

        Example::

            assert backend.require_base_model("mint-envkit/tiny-qwen3-small") == "mint-envkit/tiny-qwen3-small"
            try:
                backend.require_base_model("mint-envkit/tiny-qwen3")
            except ProtocolError as err:
                assert err.status == 404 and "Start it with --model" in err.message
            else:
                raise AssertionError("a model not served is a 404")
        """
        served = self.served_name(name)
        if served is not None:
            return served
        raise ProtocolError(
            404,
            f"unknown base model {name!r}: this server serves {self.models}. "
            f"Start it with --model {name} (a local directory or a cached Hugging Face id), "
            "or use the built-in mint-envkit/tiny-qwen3",
        )

    def checkpoint_base_model(self, engine: Any, model_path: str) -> str:
        """The served base model a checkpoint was trained on (worker thread only), or a 422.

        A checkpoint's ``meta.json`` names its base model; a server must never load
        a model it does not serve because a file said so.

        Example::

            def saved_base(engine):   # on the worker thread
                model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=4)
                _, path = engine.save_for_sampler(model_id, "a")
                return backend.checkpoint_base_model(engine, path)

            assert await backend.engine_call(saved_base) == "mint-envkit/tiny-qwen3-small"
        """
        self.known_runs.add(run_id_of(model_path))
        base = str(engine.weights_info(model_path).get("base_model", ""))
        served = self.served_name(base)
        if served is None:
            raise ProtocolError(
                422,
                f"checkpoint {model_path!r} was trained on base model {base!r}, which this "
                f"server does not serve ({self.models}); start it with --model {base} to "
                "use this checkpoint",
            )
        return served

    def session(self, session_id: str | None) -> dict[str, list[str]]:
        """The session record (created on first use).

        Example::

            assert backend.session("session-1") == {"training_run_ids": [], "sampler_ids": []}
            assert "session-1" in backend.reaper.session_seen   # it is not idle now
        """
        sid = session_id or "default"
        self.reaper.touch_session(sid)
        return self.sessions.setdefault(sid, {"training_run_ids": [], "sampler_ids": []})
