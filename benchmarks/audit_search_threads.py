"""CPU of the audit when each audit runs under its own ``asyncio.run`` (as in a test, or
a script that audits one env after another), against all audits in one event loop.

The audit's generated probes run a Hypothesis search in a thread. Hypothesis keeps its
caches per thread; with ``asyncio.to_thread`` every new event loop got a fresh thread,
so each audit rebuilt them. ``auditing/generated.py`` now searches in threads that
outlive the loop. ``--to-thread`` runs the old way for the comparison.

Example::

    python benchmarks/audit_search_threads.py --cases 30
    python benchmarks/audit_search_threads.py --cases 30 --to-thread
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from reward_zoo.measure import audit_builder, build_quietly
from reward_zoo.zoo import load_all

from mint_envkit.auditing import generated
from mint_envkit.sandbox import CodeEnv


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=30, help="zoo cases audited (not code)")
    parser.add_argument(
        "--to-thread", action="store_true", help="search with asyncio.to_thread (the old way)"
    )
    args = parser.parse_args()
    if args.to_thread:
        # run_in_executor(None, ...): the loop's default executor, what to_thread uses
        generated._SEARCH_THREADS = None
    cases = load_all()
    names = [
        name
        for name in sorted(cases)
        if not issubclass(build_quietly(cases[name], buggy=False).env, CodeEnv)
    ][: args.cases]

    async def one(name: str) -> None:
        await audit_builder(build_quietly(cases[name], buggy=True), mutants=0)

    asyncio.run(one(names[0]))  # imports and tokenizer, outside the figures
    started = time.process_time()
    for name in names:
        asyncio.run(one(name))
    fresh = time.process_time() - started

    async def all_in_one() -> None:
        for name in names:
            await one(name)

    started = time.process_time()
    asyncio.run(all_in_one())
    shared = time.process_time() - started
    how = "asyncio.to_thread" if args.to_thread else "threads that outlive the loop"
    print(f"search in {how}: {len(names)} audits")
    print(f"  one asyncio.run per audit: {fresh:.1f} CPU s")
    print(f"  all in one event loop:     {shared:.1f} CPU s")


if __name__ == "__main__":
    main()
