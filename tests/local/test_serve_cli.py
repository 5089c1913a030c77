"""``mint-envkit serve`` hands its options to the server (no server is started here)."""

from __future__ import annotations

import pytest

from mint_envkit.errors import ConfigError
from mint_envkit.local import serve_cli

SEEN: dict = {}


class _Refused:
    """Stands in for LocalServer: records its options in SEEN and refuses to start."""

    def __init__(self, models, **options) -> None:
        SEEN.clear()
        SEEN.update(models=models, **options)

    def start(self) -> None:
        raise ConfigError("not started in this test")


@pytest.mark.parametrize(("argv", "expected"), [([], False), (["--batch-invariant"], True)])
def test_batch_invariant_reaches_the_server(monkeypatch, capsys, argv, expected):
    monkeypatch.setattr(serve_cli, "LocalServer", _Refused)
    assert serve_cli.main(["--port", "0", *argv]) == 2
    assert SEEN["batch_invariant"] is expected
    assert "not started in this test" in capsys.readouterr().err
