"""What decoding a hostile sandbox report costs the host (issue 33).

The host builds the sets and dicts a run reports. Ints that are multiples of
``2**61 - 1`` all hash to 0, so a set of them is quadratic to build; ``decode`` refuses
a set or dict with more than ``MAX_SAME_HASH`` elements of one hash. Printed: building
such sets directly (what an unbounded decoder would do), decoding the worst 1 MiB report
the bound allows, refusing a colliding one, and an honest large set. One run each.

Example::

    python benchmarks/sandbox_decode.py
"""

from __future__ import annotations

import json
import time

from mint_envkit.sandbox.inside import MAX_SAME_HASH, decode, encode

P = (1 << 61) - 1


def timed(call) -> float:
    started = time.perf_counter()
    call()
    return time.perf_counter() - started


def main() -> None:
    for count in (1_000, 10_000):
        values = [P * (k + 1) for k in range(count)]
        print(f"set() of {count:,} ints of hash 0: {timed(lambda v=values: set(v)):.3f} s")
    group = {"set": [{"int": hex(P * (k + 1))} for k in range(MAX_SAME_HASH)]}
    worst = json.loads(json.dumps([group] * ((1 << 20) // len(json.dumps(group)))))
    size = len(json.dumps(worst))
    print(
        f"decode the worst allowed report ({len(worst):,} sets of {MAX_SAME_HASH} ints of hash 0, {size:,} bytes): {timed(lambda: decode(worst)):.3f} s"
    )
    refused = {"set": [{"int": hex(P * (k + 1))} for k in range(30_000)]}

    def refuse() -> None:
        try:
            decode(refused)
        except ValueError:
            return
        raise AssertionError("a colliding set was decoded")

    print(f"refuse a set of 30,000 ints of hash 0: {timed(refuse):.3f} s")
    honest = json.loads(json.dumps(encode(set(range(100_000)))))
    print(f"decode set(range(100000)): {timed(lambda: decode(honest)):.3f} s")


if __name__ == "__main__":
    main()
