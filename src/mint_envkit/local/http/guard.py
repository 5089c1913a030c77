"""Who may drive the server: loopback Host only, no browser, and the API key when one is set.

A web page in a browser can send requests to ``127.0.0.1`` (a blind
cross-site POST) and, through DNS rebinding, read the answers. The
:class:`Guard` refuses what only a browser sends, before any handler runs:

- a ``Host`` header that is not a loopback name with the port the server
  listens on (a rebound attacker's page sends its own domain): 403;
- an ``Origin`` header (browsers add it to cross-site and to POST requests;
  the SDK never sends one): 403;
- a body route whose ``Content-Type`` is not ``application/json`` (a form or
  ``text/plain`` body is what a page may POST without a preflight): 415;
- with an API key set: a request without it (``X-API-Key``, as the SDK sends
  it, or ``Authorization: Bearer``, as OpenAI clients do) or without a token that ``POST /auth/token`` issued for it: 401.
  Keys and tokens are compared in constant time.

Example::

    guard = Guard(api_key="sk-local-abc", allowed_hosts=loopback_hosts(8765))
    guard.check("POST", {"host": "127.0.0.1:8765", "content-type": "application/json",
                         "x-api-key": "sk-local-abc"}, route="asample", body=True)   # passes
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Mapping

import attrs

from mint_envkit.local.http.requests import ProtocolError

OPEN_ROUTES = frozenset({"healthz", "client_config"})
"""Routes answered without the API key (they reveal nothing and the SDK calls them first)."""

_LOOPBACK_NAMES = ("127.0.0.1", "localhost", "[::1]")


def generate_api_key() -> str:
    """A fresh random API key (``sk-local-`` and 32 hex digits) for ``LocalServer(api_key=...)``.

    Example::

        key = generate_api_key()        # 'sk-local-3f9c...'
        assert key.startswith("sk-local-") and len(key) == len("sk-local-") + 32
        # then: LocalServer(api_key=key), and mint.ServiceClient(base_url=..., api_key=key)
    """
    return "sk-local-" + secrets.token_hex(16)


def loopback_hosts(port: int) -> frozenset[str]:
    """The ``Host`` header values a local client sends to ``port`` on this machine.

    Example::

        assert sorted(loopback_hosts(8765)) == ["127.0.0.1:8765", "[::1]:8765", "localhost:8765"]
    """
    return frozenset(f"{name}:{port}" for name in _LOOPBACK_NAMES)


def _raw(text: str) -> bytes:
    """``text`` as bytes for a constant-time compare; any character (a header is latin-1) works."""
    return text.encode("utf-8", "surrogatepass")


def _bearer(authorization: str) -> str | None:
    """The key of an ``Authorization: Bearer KEY`` header (how OpenAI clients send it)."""
    scheme, _, key = authorization.partition(" ")
    return key.strip() or None if scheme.lower() == "bearer" else None


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()


@attrs.define
class Guard:
    """The request checks of one server (see the module docstring).

    Args:
        api_key: the key clients must send (``X-API-Key``); None accepts any key.
        allowed_hosts: accepted ``Host`` values; None accepts any (``--allow-remote``,
            or before the server knows its port).

    Example::

        try:
            Guard(api_key=None, allowed_hosts=loopback_hosts(8765)).check(
                "GET", {"host": "evil.example:8765"}, route="list_user_checkpoints", body=False)
        except ProtocolError as err:
            assert err.status == 403   # "refused: Host 'evil.example:8765' is not ..."
        else:
            raise AssertionError("another Host is refused")
    """

    api_key: str | None = None
    allowed_hosts: frozenset[str] | None = None
    _secret: bytes = attrs.field(factory=lambda: secrets.token_bytes(32), repr=False)

    def issue_token(self, lifetime_s: float = 10 * 365 * 24 * 3600) -> str:
        """A JWT the SDK can parse, signed with this server's secret (HMAC-SHA256).

        Example::

            token = guard.issue_token()
            assert guard.token_ok(token)
            assert not Guard(api_key="sk-local-abc").token_ok(token)   # another server's secret
        """
        now = int(time.time())
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
        claims = {"sub": "mint-envkit-local", "iat": now, "exp": now + int(lifetime_s)}
        payload = _b64(json.dumps(claims, separators=(",", ":")).encode())
        return f"{header}.{payload}.{self._sign(header, payload)}"

    def _sign(self, header: str, payload: str) -> str:
        mac = hmac.new(self._secret, f"{header}.{payload}".encode(), hashlib.sha256)
        return _b64(mac.digest())

    def token_ok(self, token: str) -> bool:
        """True when ``token`` is one :meth:`issue_token` made on this server.

        Example::

            assert guard.token_ok("eyJ.forged.x") is False
        """
        parts = token.split(".")
        if len(parts) != 3:
            return False
        return hmac.compare_digest(self._sign(parts[0], parts[1]).encode(), _raw(parts[2]))

    def key_ok(self, sent: str | None) -> bool:
        """True when no key is required, or ``sent`` is the key (constant-time compare).

        Example::

            assert Guard(api_key="k").key_ok("k") is True
            assert Guard(api_key="k").key_ok("other") is False
            assert Guard(api_key=None).key_ok(None) is True   # no key required
        """
        if self.api_key is None:
            return True
        return sent is not None and hmac.compare_digest(_raw(sent), _raw(self.api_key))

    def check(self, method: str, headers: Mapping[str, str], *, route: str, body: bool) -> None:
        """Raise ProtocolError (403/415/401) for a request a local SDK client would not send.

        ``headers`` must have lower-case names (Starlette's do).

        Example::

            # the server calls guard.check("POST", request.headers, route=..., body=True)
            headers = {"host": "127.0.0.1:8765", "content-type": "text/plain",
                       "x-api-key": "sk-local-abc"}
            try:
                guard.check("POST", headers, route="asample", body=True)
            except ProtocolError as err:
                assert err.status == 415   # a form or text body: what a web page may post
            else:
                raise AssertionError("a text/plain body is refused")
            headers["content-type"] = "application/json"
            guard.check("GET", {"host": "localhost:8765"}, route="healthz", body=False)  # open
        """
        host = headers.get("host", "")
        if self.allowed_hosts is not None and host.lower() not in self.allowed_hosts:
            raise ProtocolError(
                403,
                f"refused: Host {host!r} is not this server's loopback address "
                f"({', '.join(sorted(self.allowed_hosts))}); requests through another name "
                "(DNS rebinding from a web page) are not served. Connect to 127.0.0.1, or start "
                "the server with --allow-remote",
            )
        if "origin" in headers:
            raise ProtocolError(
                403,
                f"refused: the request has an Origin header ({headers['origin']!r}), so a web "
                "browser sent it; the local server serves SDK clients only",
            )
        if body and method in ("POST", "PUT"):
            ctype = headers.get("content-type", "").split(";")[0].strip().lower()
            if ctype != "application/json":
                raise ProtocolError(
                    415,
                    f"refused: Content-Type {ctype or '(none)'!r}; send the body as "
                    "application/json (other types are what a web page may post cross-site)",
                )
        if self.api_key is None or route in OPEN_ROUTES:
            return
        sent = headers.get("x-api-key") or _bearer(headers.get("authorization", ""))
        if route == "auth_token":
            ok = self.key_ok(sent)
        else:
            ok = sent is not None and (self.key_ok(sent) or self.token_ok(sent))
        if not ok:
            raise ProtocolError(
                401,
                "refused: this server requires its API key (X-API-Key header, or "
                "Authorization: Bearer KEY as OpenAI clients send it; pass api_key=... to "
                "mint.ServiceClient or openai.OpenAI, or set MINT_API_KEY). The key is the one "
                "given to `mint-envkit serve --api-key` or LocalServer(api_key=...)",
            )
