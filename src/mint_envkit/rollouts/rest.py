"""The SDK's REST client on a backend: a running server, or one started on a state directory.

``mint-envkit checkpoints`` lists and deletes checkpoints through it: against a
``base_url`` (a running ``mint-envkit serve`` or MinT, with ``MINT_API_KEY``), or an
embedded server started on ``state_dir`` for the purpose (it loads no model).

Example::

    # not run: starts an embedded server on the state directory
    from mint_envkit.rollouts.rest import list_checkpoints, rest_client

    with rest_client(None, "mint-state") as rest:
        print([c.tinker_path for c in list_checkpoints(rest)])
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from mint_envkit.rollouts.backend import close_session, local_api_key

_PAGE = 100


@contextlib.contextmanager
def rest_client(base_url: str | None, state_dir: str | Path | None) -> Iterator[Any]:
    """The SDK's ``RestClient`` on ``base_url``, or on an embedded server started on
    ``state_dir`` when there is none (closed on exit).

    A loopback ``base_url`` without ``MINT_API_KEY`` gets the local key (a local
    ``mint-envkit serve`` accepts any ``sk-`` key, one the loop started only its own).

    Example::

        # not run: needs a running server
        with rest_client("http://127.0.0.1:8765", None) as rest:
            rest.list_user_checkpoints(limit=10).result()
    """
    import mint

    with contextlib.ExitStack() as stack:
        if base_url:
            from urllib.parse import urlsplit

            from mint_envkit.local.server import is_loopback_host

            key = os.environ.get("MINT_API_KEY")
            if key is None and is_loopback_host(urlsplit(base_url).hostname or ""):
                key = local_api_key()  # a local 'mint-envkit serve' accepts any sk- key
        else:
            from mint_envkit.local.server import LocalServer

            server = LocalServer(state_dir=str(state_dir), preload=False, list_all_checkpoints=True)
            base_url, key = stack.enter_context(server).base_url, local_api_key()
        service = mint.ServiceClient(base_url=base_url, api_key=key)
        try:
            yield service.create_rest_client()
        finally:
            close_session(service)


def list_checkpoints(rest: Any, run: str | None = None) -> list[Any]:
    """Every checkpoint of the store (page by page), or of one training ``run``.

    Example::

        # not run: `rest` is a RestClient (rest_client)
        list_checkpoints(rest, "29468538-...")   # [Checkpoint(tinker_path='tinker://...'), ...]
    """
    if run is not None:
        return list(rest.list_checkpoints(run).result().checkpoints)
    found: list[Any] = []
    while True:
        page = rest.list_user_checkpoints(limit=_PAGE, offset=len(found)).result()
        found.extend(page.checkpoints)
        total = page.cursor.total_count if page.cursor is not None else None
        if not page.checkpoints or total is None or len(found) >= total:
            return found
