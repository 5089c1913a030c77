"""Time every built-in parser on ~1 MB adversarial inputs and print a table.

Each input is built to provoke slow paths: long separator runs, thousands of opened but
never closed boxes or tags, endless signs, braces, think tags and answer markers. Every
parser should finish each input well under a second; the tests only check that they
finish (tests/parsers/test_adversarial.py), this script measures.

Run::

    python benchmarks/parsers_speed.py
"""

from __future__ import annotations

import random
import time

from mint_envkit.parsers import (
    Parser,
    boxed,
    choice,
    exact,
    first_number,
    last_number,
    strip_thinking,
    xml_tag,
)

MB = 1_000_000


def adversarial_inputs() -> dict[str, str]:
    """Name -> text of about 1 MB (the same inputs as tests/parsers/test_adversarial.py)."""
    rng = random.Random(0)
    return {
        '"1," * 500k': "1," * 500_000,
        '"\\boxed{" * 200k': "\\boxed{" * 200_000,
        '"<answer>" * 100k': "<answer>" * 100_000,
        '"-" * 1M': "-" * MB,
        '"1,000" runs': "1,000," * 166_666 + "0000",
        '"12/" * 333k': "12/" * 333_333,
        '"9" * 1M': "9" * MB,
        '"1.2e" * 250k': "1.2e" * 250_000,
        '"{" * 1M': "\\boxed{" + "{" * MB,
        '"}{" * 500k': "\\boxed{" + "}{" * 500_000,
        '"<think>" * 140k': "<think>" * 140_000,
        '"</think>" * 110k': "</think>" * 110_000,
        '"answer is A or " * 70k': "answer is A or " * 70_000,
        '"answer" + "*" * 1M': "answer" + "*" * MB,
        '"(A) " * 250k': "(A) " * 250_000,
        "random unicode 1M": "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(MB)),
        "random fragments": "".join(
            rng.choice(["\\boxed{", "{", "}", "<think>", "</think>", "1", ",", ".", "-", "$"])
            for _ in range(200_000)
        ),
    }


PARSERS: list[Parser] = [
    first_number,
    last_number,
    boxed,
    xml_tag("answer"),
    choice("ABCD"),
    exact(),
    strip_thinking,
    last_number.after_thinking(),
]


def main() -> None:
    """Print one row per input, one column per parser, times in milliseconds."""
    inputs = adversarial_inputs()
    names = [parser.name for parser in PARSERS]
    width = max(len(name) for name in inputs)
    print(f"{'input (~1 MB)':<{width}}  " + "  ".join(f"{name:>10.10}" for name in names))
    worst = 0.0
    for label, text in inputs.items():
        cells = []
        for parser in PARSERS:
            start = time.perf_counter()
            parser(text)
            elapsed = time.perf_counter() - start
            worst = max(worst, elapsed)
            cells.append(f"{elapsed * 1000:>8.1f}ms")
        print(f"{label:<{width}}  " + "  ".join(cells))
    print(f"\nslowest single call: {worst * 1000:.1f} ms")
    print("columns: " + ", ".join(names))


if __name__ == "__main__":
    main()
