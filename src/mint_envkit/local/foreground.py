"""The embedded server run in the foreground (``mint-envkit serve``): started, its models
loaded, a readiness line, then served until Ctrl-C or SIGTERM.

Example::

    # not run: serves until Ctrl-C
    import tempfile
    from mint_envkit.local.foreground import serve_in_foreground
    from mint_envkit.local.server import LocalServer

    models = ["mint-envkit/tiny-qwen3-small"]
    code = serve_in_foreground(LocalServer(models, state_dir=tempfile.mkdtemp()), models)
"""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from mint_envkit.errors import BackendError, ConfigError
from mint_envkit.local.server import LocalServer
from mint_envkit.local.state_dir import state_dir_note


def serve_in_foreground(
    server: LocalServer,
    models: Sequence[str],
    *,
    preload: bool = True,
    latency_ms: float = 0.0,
    state_dir: str | None = None,
    prog: str = "mint-envkit serve",
) -> int:
    """Start ``server`` and serve until SIGINT / SIGTERM (or its thread ends); the exit code.

    With ``preload`` it waits for ``models`` to load first and says how long it took;
    then it prints the line clients read (its URL, the models, where checkpoints go).
    0 after a clean stop; 2 when the server cannot start or a model cannot be loaded
    (each named on stderr, after ``prog``). Signal handlers are installed only on the
    main thread and put back after.

    Example::

        # not run: serves until Ctrl-C
        serve_in_foreground(server, ["mint-envkit/tiny-qwen3-small"], preload=False)
    """
    try:
        server.start()
    except (BackendError, ConfigError) as err:
        print(f"{prog}: {err}", file=sys.stderr)
        return 2

    stop = threading.Event()

    def on_signal(signum: int, frame: Any) -> None:
        stop.set()

    previous = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            previous[sig] = signal.signal(sig, on_signal)
    try:
        if preload:
            t0 = time.perf_counter()
            print(f"{prog}: loading {', '.join(models)} ...", file=sys.stderr, flush=True)
            errors = server.preload_errors()
            if errors:
                for name, message in errors.items():
                    print(f"{prog}: cannot serve {name}: {message}", file=sys.stderr)
                return 2
            print(f"{prog}: models ready in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        print(
            f"{prog}: listening on {server.base_url} (models: {', '.join(models)}; "
            f"latency {latency_ms:g} ms; {state_dir_note(state_dir)}). Use "
            f"ServiceClient(base_url='{server.base_url}') or MINT_BASE_URL={server.base_url}. "
            "Ctrl-C stops.",
            flush=True,
        )
        while not stop.is_set() and server._thread is not None and server._thread.is_alive():
            stop.wait(0.5)
        return 0
    finally:
        server.close()
        for sig, handler in previous.items():
            signal.signal(sig, handler)
