"""The embedded server's HTTP side: the Tinker wire protocol over Starlette, onto the Engine.

Modules, one job each:

- :mod:`~mint_envkit.local.http.requests` and :mod:`~mint_envkit.local.http.datums`: request
  parsing, the server's one validator of request values (the engine trusts them);
- :mod:`~mint_envkit.local.http.responses`: response shaping (bodies the SDK accepts, errors);
- :mod:`~mint_envkit.local.http.worker`: the engine worker thread and the sample batcher;
- :mod:`~mint_envkit.local.http.futures`: ``retrieve_future`` results and ``seq_id`` ordering;
- :mod:`~mint_envkit.local.http.state`: :class:`Backend`, what the server knows (models,
  samplers and their LRU, sessions, futures, counts);
- :mod:`~mint_envkit.local.http.routes`: the handlers, by resource;
- :mod:`~mint_envkit.local.http.app`: the declared route table and :func:`build_app`.

Most callers want :class:`mint_envkit.local.server.LocalServer`, which runs the
app with uvicorn in a background thread.

Example::

    from mint_envkit.local.http.app import build_app
    from mint_envkit.local.http.state import Backend

    backend = Backend(models=["mint-envkit/tiny-qwen3-small"], state_dir="/tmp/state")
    app = build_app(backend)          # an ASGI app; serve it with uvicorn
    ...
    backend.close()
"""
