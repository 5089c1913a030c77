"""Shared fixtures of the request-parsing tests.

Example::

    def test_x(refused):
        with refused("temperature must be > 0"):
            parse_sample(body)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager

import pytest

from mint_envkit.local.http.requests import ProtocolError

Refuse = Callable[..., AbstractContextManager[None]]


@contextlib.contextmanager
def _refused(match: str, status: int = 422) -> Iterator[None]:
    with pytest.raises(ProtocolError, match=match) as info:
        yield
    assert info.value.status == status


@pytest.fixture
def refused() -> Refuse:
    """``with refused(match, status=422):`` expects a ProtocolError with that status and message.

    Example::

        with refused("not valid JSON", 400):
            parse_json_body(b"{oops")
    """
    return _refused
