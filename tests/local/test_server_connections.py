"""The server reads each request within a time and holds a bounded number of connections
(issue 46: half-sent requests never timed out, and 1,100 of them at a 1,024 open-file
limit made healthz time out and hung the SDK). A fake engine; short limits for the test;
each check waits for the server's close with a generous deadline, never a timing assert."""

from __future__ import annotations

import contextlib
import socket
import time

import httpx
import pytest
from server_helpers import fake_server

from mint_envkit.local.http.limits import Limits

LIMITS = Limits(request_read_s=0.5, max_connections=16)
DEADLINE_S = 20.0


def _connect(server) -> socket.socket:
    host, port = server.base_url.removeprefix("http://").rsplit(":", 1)
    sock = socket.create_connection((host, int(port)), timeout=DEADLINE_S)
    return sock


def _closed_by_server(sock: socket.socket, within_s: float = DEADLINE_S) -> bool:
    """True once the server closed ``sock`` (end of file, or a reset) within ``within_s``."""
    sock.settimeout(within_s)
    try:
        while True:
            data = sock.recv(65536)
            if not data:
                return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _head(server, extra: str = "") -> bytes:
    host = server.base_url.removeprefix("http://")
    return f"POST /api/v1/create_session HTTP/1.1\r\nHost: {host}\r\n{extra}".encode()


@pytest.mark.parametrize(
    "sent",
    ["nothing", "half the headers", "headers and half the body"],
)
def test_a_request_that_does_not_arrive_in_time_is_closed(sent: str):
    with fake_server(limits=LIMITS) as (server, _engine):
        sock = _connect(server)
        with contextlib.closing(sock):
            if sent == "half the headers":
                sock.sendall(_head(server, "Content-Type: application/json\r\n"))
            elif sent == "headers and half the body":
                sock.sendall(
                    _head(server, "Content-Type: application/json\r\nContent-Length: 100\r\n\r\n")
                    + b'{"tags": '
                )
            assert _closed_by_server(sock), f"a connection that sent {sent} is still open"
        assert httpx.get(server.base_url + "/api/v1/healthz", timeout=DEADLINE_S).status_code == 200


def test_a_request_that_arrives_whole_is_answered_and_its_connection_kept():
    with (
        fake_server(limits=LIMITS) as (server, _engine),
        httpx.Client(timeout=DEADLINE_S) as client,
    ):
        for _ in range(3):  # one keep-alive connection, answered three times, 1 s apart
            assert client.get(server.base_url + "/api/v1/healthz").status_code == 200
            time.sleep(0.6)  # longer than request_read_s: idle is not reading


def test_past_the_connection_cap_the_longest_waiting_is_closed_and_healthz_answers():
    with fake_server(limits=Limits(request_read_s=60.0, max_connections=16)) as (server, _engine):
        held = [_connect(server) for _ in range(40)]  # each sends half a request, then waits
        try:
            for sock in held:
                sock.sendall(_head(server))
            answered = httpx.get(server.base_url + "/api/v1/healthz", timeout=DEADLINE_S)
            assert answered.status_code == 200
            closed = sum(_closed_by_server(sock, within_s=0.1) for sock in held)
            assert closed >= 40 - 16 + 1, closed  # the cap held, and healthz took one's place
        finally:
            for sock in held:
                sock.close()
