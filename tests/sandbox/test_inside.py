"""What may leave the sandbox: plain values of exactly the builtin types, decoded by the host
without trusting the data."""

from __future__ import annotations

import json

import pytest

from mint_envkit.sandbox.inside import MAX_DEPTH, MAX_SAME_HASH, decode, encode, program

VALUES = [
    None, True, False, 0, -7, 2**63, -(2**200), 1.5, float("inf"), 3 + 4j, "", "é\ud800",
    b"\x00\xff", [], [1, [2, [3]]], (), (1, (2,)), {}, {"a": 1, 2: [3], (4, 5): None},
    set(), {1, "a", (2, 3)}, frozenset({frozenset({1})}),
]  # fmt: skip


def stable_id(value: object) -> str:
    """A test id that is the same in every process: a set's repr follows str hashing, which
    differs per process (PYTHONHASHSEED), and pytest-xdist workers must collect the same ids."""
    if isinstance(value, (set, frozenset)):
        inner = ", ".join(sorted(stable_id(item) for item in value))
        return f"{type(value).__name__}({{{inner}}})"
    return repr(value)


@pytest.mark.parametrize("value", VALUES, ids=lambda value: stable_id(value))
def test_plain_values_cross_as_themselves(value: object):
    crossed = decode(json.loads(json.dumps(encode(value))))
    assert crossed == value and type(crossed) is type(value)


def test_a_subclass_does_not_cross_whatever_it_overrides():
    class Lying(int):
        def __eq__(self, other: object) -> bool:
            return True

        __hash__ = int.__hash__

    class Anything:
        def __eq__(self, other: object) -> bool:
            return True

    for value in (Lying(3), Anything(), [1, Lying(2)], {"k": Anything()}, object()):
        with pytest.raises(TypeError, match="cannot leave the sandbox"):
            encode(value)


def test_nesting_is_bounded_both_ways():
    deep: list = []
    for _ in range(MAX_DEPTH + 5):
        deep = [deep]
    with pytest.raises(ValueError, match="nested more than"):
        encode(deep)
    with pytest.raises(ValueError, match="nested more than"):
        decode(json.loads("[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)))


BAD = [
    {"object": "x"},
    {"tuple": [1], "int": "0x1"},
    {"int": 5},
    {"int": "zz"},
    {"bytes": "f"},
    {"complex": [1, "2"]},
    {"set": [[1, 2]]},
    {"dict": [[1]]},
    {"dict": [[[1], 2]]},
    {"set": [{"int": hex(k * (2**61 - 1))} for k in range(1, MAX_SAME_HASH + 2)]},
    {"dict": [[{"int": hex(k * (2**61 - 1))}, k] for k in range(1, MAX_SAME_HASH + 2)]},
]


@pytest.mark.parametrize("data", BAD, ids=lambda data: str(data)[:40])
def test_anything_else_is_refused_by_the_host(data: object):
    with pytest.raises(ValueError):
        decode(data)


def test_the_program_is_this_modules_source_and_runs_main_as_main():
    source = program()
    assert 'if __name__ == "__main__":\n    main()' in source
    assert "import mint_envkit" not in source  # it runs without the kit


def test_a_set_of_colliding_ints_is_refused_but_a_large_honest_set_is_not():
    colliding = {k * (2**61 - 1) for k in range(1, MAX_SAME_HASH + 1)}  # all hash to 0
    assert decode(json.loads(json.dumps(encode(colliding)))) == colliding  # up to the bound
    big = set(range(100_000))
    assert decode(json.loads(json.dumps(encode(big)))) == big
