"""A checkpoint store against its runs: what a prune chooses, sizes and ages as written."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import attrs

from mint_envkit.runs.checkpoints import parse_age, parse_size, prune_choice


@attrs.frozen
class Listed:
    """A checkpoint as the SDK lists it (the fields prune reads)."""

    tinker_path: str
    time: datetime | None
    size_bytes: int | None


def test_prune_chooses_by_run_age_orphans_and_size() -> None:
    now = datetime(2026, 12, 7, tzinfo=UTC)
    store = [
        Listed("tinker://a/weights/s1", now - timedelta(days=9), 400),
        Listed("tinker://a/weights/s2", now - timedelta(days=1), 400),
        Listed("tinker://b/weights/s1", now - timedelta(days=8), 300),
        Listed("tinker://c/weights/s1", now - timedelta(hours=1), 100),
    ]

    def chosen(**kwargs: Any) -> list[str]:
        return [c.tinker_path for c in prune_choice(store, now=now, **kwargs)]

    assert chosen(runs=["a"]) == ["tinker://a/weights/s1", "tinker://a/weights/s2"]
    assert chosen(older_than=parse_age("7d")) == ["tinker://a/weights/s1", "tinker://b/weights/s1"]
    assert chosen(orphaned={"c"}) == ["tinker://c/weights/s1"]
    # the whole store is 1200 B: the oldest go first until it holds at most 600 B
    assert chosen(max_size=parse_size("600")) == ["tinker://a/weights/s1", "tinker://b/weights/s1"]
    assert chosen(runs=["a"], older_than=parse_age("2d")) == ["tinker://a/weights/s1"]
    assert parse_size("2GB") == 2 * 1024**3 and parse_age("12h") == timedelta(hours=12)
