"""The server's route handlers, one module per resource.

- :mod:`~mint_envkit.local.http.routes.sessions`: client setup, sessions, health, stats,
  ``retrieve_future``;
- :mod:`~mint_envkit.local.http.routes.training`: LoRA training clients, training steps, weights;
- :mod:`~mint_envkit.local.http.routes.sampling`: sampling sessions and ``asample``;
- :mod:`~mint_envkit.local.http.routes.rest`: training runs, checkpoints, samplers;
- :mod:`~mint_envkit.local.http.routes.mint`: MinT's own endpoints (reverse-KL, interpolation);
- :mod:`~mint_envkit.local.http.routes.openai`: the OpenAI-compatible door (``/v1/models``,
  ``/v1/chat/completions``).

Every handler is ``async (backend, request, body) -> body | Response``; the
route table that binds them to paths is :data:`mint_envkit.local.http.app.ROUTES`.

Example::

    import asyncio
    import tempfile
    from starlette.requests import Request
    from mint_envkit.local.http.routes import sessions
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    request = Request({"type": "http", "method": "POST", "path": "/", "headers": []})
    body = await sessions.healthz(backend, request, None)   # {'status': 'ok', 'instance': ...}
    assert body == {"status": "ok", "instance": backend.instance_id}

    async def result_of(answer):   # what retrieve_future answers once the engine is done
        while (body := await backend.futures.wait(answer["request_id"], 0)) is None:
            await asyncio.sleep(0.01)
        return body

(``backend``, ``request`` and ``result_of`` are there for the route modules' examples.)
"""
