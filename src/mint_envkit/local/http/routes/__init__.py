"""The server's route handlers, one module per resource.

- :mod:`~mint_envkit.local.http.routes.sessions`: client setup, sessions, health, stats,
  ``retrieve_future``;
- :mod:`~mint_envkit.local.http.routes.training`: LoRA training clients, training steps, weights;
- :mod:`~mint_envkit.local.http.routes.sampling`: sampling sessions and ``asample``;
- :mod:`~mint_envkit.local.http.routes.rest`: training runs, checkpoints, samplers;
- :mod:`~mint_envkit.local.http.routes.mint`: MinT's own endpoints (reverse-KL, interpolation).

Every handler is ``async (backend, request, body) -> body | Response``; the
route table that binds them to paths is :data:`mint_envkit.local.http.app.ROUTES`.

Example::

    import tempfile
    from starlette.requests import Request
    from mint_envkit.local.http.routes import sessions
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    request = Request({"type": "http", "method": "GET", "path": "/api/v1/healthz", "headers": []})
    body = await sessions.healthz(backend, request, None)   # {'status': 'ok', 'instance': ...}
    assert body == {"status": "ok", "instance": backend.instance_id}
    backend.close()
"""
