"""The one least-recently-used store of the package: values by key, bounded in count or size.

Every bounded cache of the kit is an :class:`LRU`: the engine's kept logprobs, logits
and hidden states (bounded in floats), the server's futures and unnamed samplers, and
the judge's verdicts (bounded in entries). It is an ``OrderedDict`` from oldest to
newest with one rule: after a :meth:`LRU.put` (or a :meth:`LRU.get` with ``touch``)
the oldest entries are dropped while the sizes of all the entries add up to more than
``limit``. Each entry's size is ``size(value)`` (1 by default, so ``limit`` counts
entries), taken when it is put. ``can_drop(key, value)`` may keep an entry from being
dropped (the walk skips it and goes on to the next oldest), and ``on_drop(key,
value)`` is called for every entry the bound drops (not for :meth:`LRU.pop`).

Not thread-safe: each user holds it on one thread or event loop, or under its own lock.

Example::

    from mint_envkit.lru import LRU

    kept = LRU(3)  # three entries at most
    for key in "abcd":
        kept.put(key, key.upper())
    assert list(kept) == ["b", "c", "d"]  # "a", the oldest, was dropped
    kept.get("b", touch=True)  # "b" is used: the newest again
    kept.put("e", "E")
    assert list(kept) == ["d", "b", "e"]

    floats = LRU(10, size=len)  # bounded in list items, not in entries
    floats.put("x", [0.5] * 6)
    floats.put("y", [0.5] * 6)
    assert list(floats) == ["y"] and floats.total == 6
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Hashable, Iterator
from typing import Generic, TypeVar

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class LRU(Generic[K, V]):
    """Values by key, oldest first; past ``limit`` (the sum of the entries' sizes) the
    least recently put or touched go first.

    Args:
        limit: the most the entries' sizes may add up to (with the default ``size``, the
            most entries kept).
        size: an entry's size, from its value (default: 1).
        can_drop: whether the bound may drop an entry (default: any); an entry it may
            not drop stays, and the store stays over its limit until it may.
        on_drop: called with the key and value of each entry the bound drops.

    Example::

        released = []
        sessions = LRU(2, on_drop=lambda key, value: released.append(key))
        for name in ("s-1", "s-2", "s-3"):
            sessions.put(name, None)
        assert released == ["s-1"] and list(sessions) == ["s-2", "s-3"]
    """

    def __init__(
        self,
        limit: int,
        *,
        size: Callable[[V], int] | None = None,
        can_drop: Callable[[K, V], bool] | None = None,
        on_drop: Callable[[K, V], None] | None = None,
    ) -> None:
        self.limit = limit
        self._size = size
        self._can_drop = can_drop
        self._on_drop = on_drop
        self._entries: OrderedDict[K, tuple[V, int]] = OrderedDict()
        self._total = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: object) -> bool:
        return key in self._entries

    def __iter__(self) -> Iterator[K]:
        """The keys, oldest first."""
        return iter(self._entries)

    @property
    def total(self) -> int:
        """The sizes of the entries kept, added up (their number with the default ``size``).

        Example::

            sized = LRU(100, size=len)
            sized.put("a", "xyz")
            assert sized.total == 3 and len(sized) == 1
        """
        return self._total

    def put(self, key: K, value: V) -> None:
        """Keep ``value`` under ``key`` as the newest entry (replacing one kept under
        ``key``), then drop the oldest entries while the store is over its limit.

        A value larger than ``limit`` alone is dropped at once too (``on_drop`` sees it):
        a caller that would rather keep what it had checks the size first.

        Example::

            kept = LRU(2)
            kept.put("a", 1)
            kept.put("b", 2)
            kept.put("a", 3)  # replaced: "a" is now the newest
            kept.put("c", 4)  # over the limit: "b", now the oldest, goes
            assert list(kept) == ["a", "c"] and kept.get("a") == 3
        """
        self.pop(key)
        size = 1 if self._size is None else self._size(value)
        self._entries[key] = (value, size)
        self._total += size
        self.trim()

    def get(self, key: K, default: V | None = None, *, touch: bool = False) -> V | None:
        """The value under ``key`` (kept), or ``default``; with ``touch`` the entry is
        used: it becomes the newest (and the bound applies again).

        Example::

            kept = LRU(2)
            kept.put("a", 1)
            kept.put("b", 2)
            assert kept.get("a") == 1 and list(kept) == ["a", "b"]  # a look: no change
            assert kept.get("a", touch=True) == 1 and list(kept) == ["b", "a"]
            assert kept.get("z") is None
        """
        found = self._entries.get(key)
        if found is None:
            return default
        if touch:
            self._entries.move_to_end(key)
            self.trim()
        return found[0]

    def pop(self, key: K, default: V | None = None) -> V | None:
        """The value under ``key``, removed (``on_drop`` is not called), or ``default``.

        Example::

            kept = LRU(2)
            kept.put("a", 1)
            assert kept.pop("a") == 1 and kept.pop("a") is None and len(kept) == 0
        """
        found = self._entries.pop(key, None)
        if found is None:
            return default
        self._total -= found[1]
        return found[0]

    def items(self) -> Iterator[tuple[K, V]]:
        """``(key, value)`` of every entry, oldest first.

        Example::

            kept = LRU(2)
            kept.put("a", 1)
            kept.put("b", 2)
            assert list(kept.items()) == [("a", 1), ("b", 2)]
        """
        return ((key, value) for key, (value, _) in self._entries.items())

    def trim(self) -> None:
        """Drop the oldest entries (that ``can_drop`` allows) while the store is over its
        limit. :meth:`put` and a touching :meth:`get` do it; call it when entries that
        could not be dropped before now can, or after lowering ``limit``.

        Example::

            done = set()
            futures = LRU(1, can_drop=lambda key, value: key in done)
            futures.put("r-1", None)
            futures.put("r-2", None)  # over the limit, but neither may go yet
            assert list(futures) == ["r-1", "r-2"]
            done.add("r-1")
            futures.trim()
            assert list(futures) == ["r-2"]
        """
        if self._total <= self.limit:
            return
        if self._can_drop is None:
            while self._total > self.limit and self._entries:
                key, (value, size) = self._entries.popitem(last=False)
                self._total -= size
                if self._on_drop is not None:
                    self._on_drop(key, value)
            return
        for key in list(self._entries):
            if self._total <= self.limit:
                break
            found = self._entries.get(key)  # an on_drop may have removed it
            if found is None:
                continue
            value = found[0]
            if self._can_drop(key, value):
                self.pop(key)
                if self._on_drop is not None:
                    self._on_drop(key, value)
