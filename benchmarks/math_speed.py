"""How long math answers take to grade: the worker's start, one call, a timeout.

Run from the repository root (needs the math extra: pip install 'mint-envkit[math]')::

    python benchmarks/math_speed.py
"""

from __future__ import annotations

import time

from mint_envkit.parsers.math import grade_math


def main() -> None:
    started = time.perf_counter()
    grade_math(r"\boxed{1}", "1")
    print(f"first call (starts a worker process): {time.perf_counter() - started:.2f} s")
    replies = [(rf"so \boxed{{\frac{{{i}}}{{2}}}}", str(i / 2)) for i in range(200)]
    started = time.perf_counter()
    equal = sum(grade_math(reply, answer)[1] for reply, answer in replies)
    elapsed = time.perf_counter() - started
    print(
        f"{len(replies)} grade_math calls: {elapsed:.2f} s, "
        f"{1000 * elapsed / len(replies):.1f} ms each ({equal} equal)"
    )
    started = time.perf_counter()
    result, _ = grade_math(r"\boxed{9^{9^{9^{9}}}}", "1", timeout=2.0)
    print(
        f"9^{{9^{{9^{{9}}}}}} with timeout=2.0: status {result.status!r} after "
        f"{time.perf_counter() - started:.2f} s"
    )


if __name__ == "__main__":
    main()
