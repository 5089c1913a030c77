"""Messages of the embedded server that its clients act on (light: no torch, no web server).

Example::

    from mint_envkit.local.messages import SERVER_SHUTTING_DOWN

    error = RuntimeError(f"asample failed: {SERVER_SHUTTING_DOWN}")   # as a client sees it
    if SERVER_SHUTTING_DOWN in str(error):
        ...  # the backend is going away: not a failure of this request alone
    else:
        raise AssertionError("the message is recognised")
"""

from __future__ import annotations

SERVER_SHUTTING_DOWN = "the local server is shutting down"
"""The error of a request the server dropped because it is closing (its engine work was
cancelled): the backend is gone, whatever its health check still answers meanwhile."""
