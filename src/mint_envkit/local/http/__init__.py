"""The embedded server's HTTP side: the Tinker wire protocol over Starlette, onto the Engine.

Modules, one job each:

- :mod:`~mint_envkit.local.http.requests`, :mod:`~mint_envkit.local.http.datums` and
  :mod:`~mint_envkit.local.http.samples`: request parsing, the server's one validator of
  request values (the engine trusts them);
- :mod:`~mint_envkit.local.http.responses`: response shaping (bodies the SDK accepts, errors);
- :mod:`~mint_envkit.local.http.guard`: loopback Host, no browser, the API key;
- :mod:`~mint_envkit.local.http.limits` and :mod:`~mint_envkit.local.http.splitting`: what
  one request may cost, and big sample requests cut into pieces;
- :mod:`~mint_envkit.local.http.worker`: the engine worker thread and the sample batcher;
- :mod:`~mint_envkit.local.http.futures`: ``retrieve_future`` results and ``seq_id`` ordering;
- :mod:`~mint_envkit.local.http.samplers` and :mod:`~mint_envkit.local.http.idle`: the
  sampler table (and its LRU), and releasing idle sessions and training clients;
- :mod:`~mint_envkit.local.http.state`: :class:`~mint_envkit.local.http.state.Backend`,
  what the server knows and the operations it starts;
- :mod:`~mint_envkit.local.http.routes`: the handlers, by resource;
- :mod:`~mint_envkit.local.http.app`: the declared route table and
  :func:`~mint_envkit.local.http.app.build_app`.

Most callers want :class:`mint_envkit.local.server.LocalServer`, which runs the
app with uvicorn in a background thread.

Example::

    import tempfile
    from mint_envkit.local.http.app import build_app
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir=tempfile.mkdtemp())
    app = build_app(backend)          # an ASGI app; serve it with uvicorn
    assert backend.preload_errors(timeout=60) == {}
    backend.close()
"""
