"""The one LRU store (mint_envkit/lru.py): bound, order, sizes, what may go, what is told."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from mint_envkit.lru import LRU

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "mint_envkit"


def test_past_its_limit_the_least_recently_put_goes_first():
    kept: LRU[str, int] = LRU(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("c", 3)
    assert list(kept) == ["b", "c"] and "a" not in kept and len(kept) == 2


def test_a_touch_makes_an_entry_the_newest_and_a_look_does_not():
    kept: LRU[str, int] = LRU(2)
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.get("a") == 1
    kept.put("c", 3)
    assert list(kept) == ["b", "c"]  # a plain get left "a" the oldest
    assert kept.get("b", touch=True) == 2
    kept.put("d", 4)
    assert list(kept) == ["b", "d"]


def test_putting_a_kept_key_replaces_it_as_the_newest():
    kept: LRU[str, int] = LRU(2)
    kept.put("a", 1)
    kept.put("b", 2)
    kept.put("a", 3)
    kept.put("c", 4)
    assert list(kept.items()) == [("a", 3), ("c", 4)]


def test_sizes_bound_the_total_and_a_replaced_entry_gives_its_size_back():
    kept: LRU[str, list[float]] = LRU(10, size=len)
    kept.put("a", [0.0] * 4)
    kept.put("b", [0.0] * 4)
    assert kept.total == 8
    kept.put("a", [0.0] * 2)  # replaced: 4 back, 2 taken
    assert kept.total == 6 and list(kept) == ["b", "a"]
    kept.put("c", [0.0] * 5)  # 11 > 10: "b" goes, then 7 fits
    assert list(kept) == ["a", "c"] and kept.total == 7
    assert kept.pop("a") == [0.0] * 2 and kept.total == 5


def test_a_value_larger_than_the_limit_is_dropped_at_once():
    dropped: list[str] = []
    kept: LRU[str, list[int]] = LRU(3, size=len, on_drop=lambda k, v: dropped.append(k))
    kept.put("small", [1])
    kept.put("huge", [1, 2, 3, 4])
    assert len(kept) == 0 and kept.total == 0 and dropped == ["small", "huge"]


def test_on_drop_is_told_of_what_the_bound_drops_not_of_pops():
    dropped: list[tuple[str, int]] = []
    kept: LRU[str, int] = LRU(1, on_drop=lambda k, v: dropped.append((k, v)))
    kept.put("a", 1)
    kept.put("b", 2)
    assert kept.pop("b") == 2 and kept.pop("b") is None
    assert dropped == [("a", 1)]


def test_an_entry_that_may_not_go_stays_and_the_next_oldest_goes_instead():
    pending = {"a", "c"}
    kept: LRU[str, int] = LRU(2, can_drop=lambda k, v: k not in pending)
    for value, key in enumerate("abc"):
        kept.put(key, value)
    assert list(kept) == ["a", "c"]  # "b" went: "a" may not
    kept.put("d", 3)  # neither "a" nor "c" may go: the newest does
    assert list(kept) == ["a", "c"]
    pending.discard("a")
    kept.put("d", 3)
    assert list(kept) == ["c", "d"]


def test_trim_drops_what_may_go_now():
    pending = {"a", "b"}
    kept: LRU[str, int] = LRU(1, can_drop=lambda k, v: k not in pending)
    kept.put("a", 1)
    kept.put("b", 2)
    assert list(kept) == ["a", "b"] and kept.total == 2  # over its limit, for now
    pending.clear()
    kept.trim()
    assert list(kept) == ["b"]


def test_a_lowered_limit_applies_at_the_next_trim():
    kept: LRU[int, int] = LRU(4)
    for i in range(4):
        kept.put(i, i)
    kept.limit = 2
    kept.trim()
    assert list(kept) == [2, 3]


def test_get_and_pop_give_the_default_for_a_missing_key():
    kept: LRU[str, int] = LRU(1)
    assert kept.get("x", 7) == 7 and kept.pop("x", 8) == 8


@pytest.mark.parametrize("limit", [0, 1])
def test_a_limit_of_zero_keeps_nothing(limit):
    kept: LRU[str, int] = LRU(limit)
    kept.put("a", 1)
    assert len(kept) == limit


def _hand_written_lrus(path: Path) -> list[str]:
    """Lines that keep an ``OrderedDict`` in LRU order by hand (``move_to_end`` or
    ``popitem(last=False)``)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            name = node.func.attr
            last = [k for k in node.keywords if k.arg == "last"]
            if name == "move_to_end" or (name == "popitem" and last):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}")
    return found


def test_no_module_but_lru_keeps_an_lru_by_hand():
    """Four modules had their own OrderedDict LRU (the engine's kept logprobs, the server's
    futures and unnamed samplers, the judge's verdicts); the rule lives in lru.py only."""
    found = [
        line
        for path in sorted(PACKAGE.rglob("*.py"))
        if path.name != "lru.py" or path.parent != PACKAGE
        for line in _hand_written_lrus(path)
    ]
    assert not found, f"hand-written LRUs {found}; use mint_envkit.lru.LRU"
