"""FutureStore (retrieve_future long-polls) and Sequencer (seq_id order), without HTTP."""

from __future__ import annotations

import asyncio

import pytest

from mint_envkit.local.http.futures import FutureStore, Sequencer


async def test_sequencer_goes_on_when_a_predecessor_never_arrives() -> None:
    ran: list[int] = []
    seq = Sequencer("m", gap_timeout=0.1)
    seq.submit(2, "optim_step", "r2", lambda: ran.append(2))
    seq.submit(3, "optim_step", "r3", lambda: ran.append(3))
    assert ran == [] and seq.waiting == 2
    deadline = asyncio.get_running_loop().time() + 10
    while ran != [2, 3] and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.01)
    assert ran == [2, 3] and seq.next_seq == 4
    seq.submit(None, "forward", "r", lambda: ran.append(0))  # no seq_id: runs at once
    assert ran == [2, 3, 0]


async def test_future_store_long_poll_and_eviction() -> None:
    store = FutureStore(keep_retrieved=2)
    rid = store.create("asample")
    assert await store.wait(rid, 0.05) is None  # not done: try again
    asyncio.get_running_loop().call_later(0.05, store.set_result, rid, {"ok": 1})
    assert await store.wait(rid, 5.0) == {"ok": 1}  # long-poll returns as soon as it is done
    assert await store.wait(rid, 0) == {"ok": 1}  # can be read again
    others = [store.create("x") for _ in range(3)]
    for o in others:
        store.set_result(o, {})
        await store.wait(o, 0)
    with pytest.raises(KeyError):
        await store.wait(rid, 0)  # oldest retrieved results are dropped


async def test_future_store_bound_drops_the_oldest_completed_never_a_pending_one() -> None:
    store = FutureStore(max_entries=3)
    pending = store.create("forward_backward")
    done = [store.create("asample") for _ in range(3)]  # 4 > 3, but none is complete yet
    for rid in done:
        store.set_result(rid, {"n": rid})
    assert [store.kind(rid) for rid in done] == ["asample"] * 3
    assert await store.wait(done[0], 0) == {"n": done[0]}  # read: now the newest, and
    assert store.kind(done[1]) == ""  # the bound applies: the oldest completed one went
    store.create("asample")  # over the bound again: the next oldest completed goes
    assert store.kind(done[2]) == "" and store.kind(done[0]) == "asample"
    assert await store.wait(pending, 0) is None  # pending: kept past the bound
