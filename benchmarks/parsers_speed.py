"""Time every built-in parser on ~1 MB adversarial inputs and print a table.

Each input is built to provoke slow paths: long separator runs, thousands of opened but
never closed boxes or tags, endless signs, braces, think tags and answer markers. Every
parser should finish each input well under a second; the tests only check that they
finish (tests/parsers/test_adversarial.py), this script measures.

Run::

    python benchmarks/parsers_speed.py
"""

from __future__ import annotations

import math
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
    """Name -> text of about 1 MB: the inputs of tests/parsers/test_adversarial.py plus two
    random ones."""
    rng = random.Random(0)
    return {
        '"1," * 500k': "1," * 500_000,
        '"\\boxed{" * 200k': "\\boxed{" * 200_000,
        '"\\boxed{" * 200k + "}"': "\\boxed{" * 200_000 + "}",
        '"\\boxed{1}" * 110k': "\\boxed{1}" * 110_000,
        "boxes nested 100k deep": "\\boxed{" * 100_000 + "}" * 100_000,
        "braces 500k deep in a box": "\\boxed{" + "{" * 500_000 + "}" * 500_001,
        '"}{" * 500k in a box': "\\boxed{{" + "}{" * 500_000,
        '"\\boxed{{}" * 125k': "\\boxed{{}" * 125_000,
        '"<answer>" * 100k': "<answer>" * 100_000,
        '"</answer>" * 100k': "</answer>" * 100_000,
        '"-" * 1M': "-" * MB,
        '"1,000," * 166k': "1,000," * 166_666 + "0000",
        '"12/" * 333k': "12/" * 333_333,
        '"9" * 1M': "9" * MB,
        '"1.2e" * 250k': "1.2e" * 250_000,
        '"1." * 500k': "1." * 500_000,
        '"-$" * 500k + "5"': "-$" * 500_000 + "5",
        '"<think>" * 140k': "<think>" * 140_000,
        '"</think>" * 110k': "</think>" * 110_000,
        '"answer is A or " * 70k': "answer is A or " * 70_000,
        '"answer" + "*" * 1M': "answer" + "*" * MB,
        '"(A) " * 250k': "(A) " * 250_000,
        '" " * 1M + "x"': " " * MB + "x",
        '"４" * 1M (fullwidth)': "４" * MB,
        "random unicode 1M": "".join(chr(rng.randrange(0x20, 0x3000)) for _ in range(MB)),
        "random fragments 1M": "".join(
            rng.choice(["\\boxed{", "{", "}", "<think>", "</think>", "1", ",", ".", "-", "$"])
            for _ in range(250_000)
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


def main(repeats: int = 3) -> None:
    """Print one row per input, one column per parser: the best of ``repeats`` wall-clock
    times of a single call, in milliseconds."""
    inputs = adversarial_inputs()
    names = [parser.name for parser in PARSERS]
    width = max(len(label) for label in inputs)
    print(f"{'input (~1 MB)':<{width}}  " + "  ".join(f"{i + 1:>7}" for i in range(len(names))))
    worst = ("", "", 0.0)
    for label, text in inputs.items():
        cells = []
        for parser in PARSERS:
            best = math.inf
            for _ in range(repeats):
                start = time.perf_counter()
                parser(text)
                best = min(best, time.perf_counter() - start)
            if best > worst[2]:
                worst = (label, parser.name, best)
            cells.append(f"{best * 1000:>5.0f}ms")
        print(f"{label:<{width}}  " + "  ".join(cells))
    print("\ncolumns: " + ", ".join(f"{i + 1} = {name}" for i, name in enumerate(names)))
    print(f"slowest: {worst[1]} on {worst[0]}: {worst[2] * 1000:.0f} ms (best of {repeats})")


if __name__ == "__main__":
    main()
