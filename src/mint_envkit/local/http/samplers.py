"""The server's sampler table: sampling sessions, their pending creations, and the unnamed LRU.

An RL loop makes one unnamed sampler snapshot per step
(``save_weights_and_get_sampling_client``); the table keeps the newest
``max_unnamed`` of them and releases the oldest (a later request to it gets a
404 that says why). Named snapshots (saved to disk) are never released.

Example::

    released = []
    table = SamplerTable(max_unnamed=2, release=released.append)
    for sid in ("s-1", "s-2", "s-3"):
        table.add(sid, base_model="mint-envkit/tiny-qwen3", model_path=None, unnamed=True)
    assert released == ["s-1"] and len(table) == 2
    try:
        table.require("s-1")
    except ProtocolError as err:
        assert err.status == 404   # "sampling session 's-1' was released: ..."
    else:
        raise AssertionError("a released sampler is a 404")
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable
from typing import Any

from mint_envkit.local.http.requests import ProtocolError
from mint_envkit.lru import LRU


class SamplerTable:
    """Sampler records by id; releases the oldest unnamed one past ``max_unnamed``.

    ``release(sampler_id)`` is called for each released snapshot (the server
    frees it on the engine). ``pending`` maps a server-side id to the engine
    call still creating its sampler.

    Example::

        table = SamplerTable(max_unnamed=64, release=lambda sid: None)
        table.add("sampler-1", base_model="b", model_path="tinker://m/sampler_weights/a")
        assert table.get("sampler-1")["model_path"] == "tinker://m/sampler_weights/a"
    """

    def __init__(self, *, max_unnamed: int, release: Callable[[str], None]) -> None:
        self.max_unnamed = int(max_unnamed)
        self._release = release
        self._records: dict[str, dict[str, Any]] = {}
        self._unnamed: LRU[str, None] = LRU(self.max_unnamed, on_drop=self._drop)
        self._adhoc: dict[tuple[str, str], str] = {}
        self.released: set[str] = set()
        self.pending: dict[str, concurrent.futures.Future[Any]] = {}

    def __len__(self) -> int:
        return len(self._records)

    def add(
        self,
        sampler_id: str,
        *,
        base_model: str,
        model_path: str | None,
        unnamed: bool = False,
        pending: concurrent.futures.Future[Any] | None = None,
    ) -> None:
        """Record a sampler; an ``unnamed`` one counts against ``max_unnamed``.

        Example::

            cf = concurrent.futures.Future()   # the engine call still creating the sampler
            table.add("sampler-pending-1", base_model="b", model_path=None, pending=cf)
            assert table.pending["sampler-pending-1"] is cf
        """
        self._records[sampler_id] = {
            "sampler_id": sampler_id,
            "base_model": base_model,
            "model_path": model_path,
        }
        if pending is not None:
            self.pending[sampler_id] = pending
        if unnamed and sampler_id not in self._unnamed:  # kept in the order first added
            self._unnamed.put(sampler_id, None)

    def _drop(self, sampler_id: str, _: None) -> None:
        """Release the oldest unnamed sampler, dropped past ``max_unnamed``."""
        self._records.pop(sampler_id, None)
        self.released.add(sampler_id)
        self._release(sampler_id)

    def get(self, sampler_id: str) -> dict[str, Any] | None:
        """The record of ``sampler_id`` (a copy), or None.

        Example::

            assert table.get("s-3") == {
                "sampler_id": "s-3", "base_model": "mint-envkit/tiny-qwen3", "model_path": None}
            assert table.get("s-1") is None   # released
        """
        rec = self._records.get(sampler_id)
        return None if rec is None else dict(rec)

    def require(self, sampler_id: str) -> str:
        """``sampler_id`` if it can sample, else a 404 saying it was released or is unknown.

        Example::

            assert table.require("s-3") == "s-3"
            try:
                table.require("sampler-nope")
            except ProtocolError as err:
                assert err.message.startswith("unknown sampling_session_id 'sampler-nope'")
            else:
                raise AssertionError("an unknown sampler is a 404")
        """
        if sampler_id in self.released:
            raise ProtocolError(
                404,
                f"sampling session {sampler_id!r} was released: the server keeps "
                f"the {self.max_unnamed} newest unnamed sampler snapshots "
                "(--max-unnamed-samplers); save weights with a name "
                "(save_weights_for_sampler) to keep one",
            )
        if sampler_id not in self._records:
            raise ProtocolError(
                404,
                f"unknown sampling_session_id {sampler_id!r}; create a sampling "
                "client with create_sampling_client or save_weights_for_sampler",
            )
        return sampler_id

    def adhoc(self, engine: Any, key: tuple[str, str]) -> str:
        """The engine sampler for ``("base_model" | "model_path", value)``, made once (worker only).

        Example::

            import tempfile
            from mint_envkit.local.engine.core import Engine

            engine = Engine(state_dir=tempfile.mkdtemp())   # on the worker thread, in the server
            sid = table.adhoc(engine, ("base_model", "mint-envkit/tiny-qwen3-small"))
            assert table.adhoc(engine, ("base_model", "mint-envkit/tiny-qwen3-small")) == sid  # once
        """
        sid = self._adhoc.get(key)
        if sid is None:
            sid = engine.create_sampler(**{key[0]: key[1]})
            self._adhoc[key] = sid
        return sid
