"""The program that runs inside the sandbox, and the wire format of the values it reports.

This module's source is the program every executor runs (:func:`program`): it reads
one JSON line on stdin (the run's nonce, the model's code and the cases: each an
expression to evaluate, or a stdin to run the code on), loads the code, and for each
case writes one line ``<nonce> {json}`` to its stdout with the case's **value**
(:func:`encode`) or the exception it raised. It never sees what a value is compared
with, and reports no verdict: the host decodes each value (:func:`decode`) and
compares it with the expected value it kept (``mint_envkit.sandbox.cases``).

Everything here runs in the code's own process, so the code can change it (replace
``json``, ``os.write``, builtins, read the nonce from the frames, print forged lines):
the most it can do is report values of its choosing, and a value passes only when it
is the expected one, which the code never sees.

What crosses: ``None``, ``bool``, ``int``, ``float``, ``complex``, ``str``, ``bytes``
and ``list``, ``tuple``, ``dict``, ``set``, ``frozenset`` of them, each of exactly that
type (an ``int`` subclass is refused, whatever its ``__eq__``), nested at most
:data:`MAX_DEPTH` deep, with at most :data:`MAX_ITEMS` values in all and ints of at
most :data:`MAX_INT_DIGITS` hex digits. JSON holds ``None``, bools, numbers, strings and lists as
themselves; every JSON object is one tag (``{"tuple": [...]}``, ``{"int": "0x..."}``
for an int of 64 bits or more, ...). The module imports only the standard library: it
runs under the sandbox's own interpreter, without the kit.

Example::

    from mint_envkit.sandbox.inside import decode, encode

    value = {"a": (1, 2.5), "b": [None, True, b"x"], "c": {3, 4}, "big": 2**70}
    assert decode(encode(value)) == value
"""

from __future__ import annotations

import json
import os
import sys

MAX_DEPTH = 100
"""How deep a reported value may nest (a list in a list ... 100 deep at most).

Example::

    assert MAX_DEPTH == 100
"""
MAX_SAME_HASH = 8
"""The most elements of one reported ``set``, ``frozenset`` or ``dict`` (its keys) that
may share one hash: the host builds them, and elements made to collide (``k * (2**61 - 1)``
all hash to 0) would make that quadratic (docs/code.md has the measurement).

Example::

    assert MAX_SAME_HASH == 8
"""
MAX_ITEMS = 1_000_000
"""The most values one reported value may hold in all (itself, its elements, their
elements, ...): what the host builds is bounded whatever the line's size.

Example::

    assert MAX_ITEMS == 1_000_000
"""
MAX_INT_DIGITS = 4300
"""The most hex digits of a reported ``int`` (17,200 bits). No test can expect a bigger
one: an int literal holds at most 4,300 decimal digits (Python's limit on converting
text to an int), about 3,570 hex digits.

Example::

    assert MAX_INT_DIGITS == 4300
"""
_SMALL = 1 << 63
_HASHED = {"set": set, "frozenset": frozenset}


def encode(value: object, depth: int = 0) -> object:
    """``value`` as JSON-ready data; a ``TypeError`` for a type that may not cross.

    Types are checked exactly (``type(x) is int``): a subclass, whatever it overrides,
    does not cross.

    Example::

        assert encode((1, [2, None])) == {"tuple": [1, [2, None]]}
        assert encode(2**64) == {"int": "0x10000000000000000"}
    """
    kind = type(value)
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} deep")
    if value is None or kind is bool or kind is str or kind is float:
        return value
    if kind is int:
        if -_SMALL < value < _SMALL:  # type: ignore[operator]
            return value
        if value.bit_length() > 4 * MAX_INT_DIGITS:  # type: ignore[attr-defined]
            raise ValueError(f"an int of more than {MAX_INT_DIGITS} hex digits cannot be reported")
        return {"int": hex(value)}
    if kind is list:
        return [encode(item, depth + 1) for item in value]  # type: ignore[attr-defined]
    if kind is tuple or kind is set or kind is frozenset:
        return {kind.__name__: [encode(item, depth + 1) for item in value]}  # type: ignore[attr-defined]
    if kind is dict:
        pairs = value.items()  # type: ignore[attr-defined]
        return {"dict": [[encode(k, depth + 1), encode(v, depth + 1)] for k, v in pairs]}
    if kind is bytes:
        return {"bytes": value.hex()}  # type: ignore[attr-defined]
    if kind is complex:
        return {"complex": [value.real, value.imag]}  # type: ignore[attr-defined]
    raise TypeError(
        f"a value of type {kind.__name__} cannot leave the sandbox: only None, bool, int, float, complex, "
        "str, bytes and lists, tuples, dicts, sets of them (of exactly those types) are "
        "compared with the expected values"
    )


def decode(data: object) -> object:
    """The value :func:`encode` gave ``data`` for; a ``ValueError`` for anything else.

    Run by the host on what the sandbox reported, so it trusts nothing: JSON objects
    must be one known tag, nesting stops at :data:`MAX_DEPTH`, a value holds at most
    :data:`MAX_ITEMS` values, an int at most :data:`MAX_INT_DIGITS` hex digits, a
    complex two floats, and no more than :data:`MAX_SAME_HASH` elements of a set (keys
    of a dict) may share a hash. Whatever it is given, it returns or raises
    ``ValueError``: no other exception (an ``OverflowError``, a ``RecursionError``)
    leaves it.

    Example::

        assert decode({"tuple": [1, {"bytes": "ff"}]}) == (1, b"\\xff")
        try:
            decode({"object": "<Anything>"})
        except ValueError as err:
            print(err)  # not a value the sandbox sends: {'object': '<Anything>'}
    """
    try:
        return _decode(data, 0, [MAX_ITEMS])
    except ValueError:
        raise
    except Exception as err:  # an overflow, a recursion, a type the bounds missed
        raise ValueError(f"the value does not convert: {type(err).__name__}: {err}"[:300]) from None


def _decode(data: object, depth: int, budget: list[int]) -> object:
    kind = type(data)
    if depth > MAX_DEPTH:
        raise ValueError(f"the value is nested more than {MAX_DEPTH} deep")
    budget[0] -= 1
    if budget[0] < 0:
        raise ValueError(f"the value holds more than {MAX_ITEMS} values")
    if data is None or kind in (bool, int, float, str):
        return data
    if kind is list:
        return [_decode(item, depth + 1, budget) for item in data]  # type: ignore[attr-defined]
    if kind is dict and len(data) == 1:  # type: ignore[arg-type]
        ((tag, body),) = data.items()  # type: ignore[attr-defined]
        if type(body) is str and tag in ("int", "bytes"):
            return _int(body) if tag == "int" else bytes.fromhex(body)
        if tag == "complex" and type(body) is list and len(body) == 2:  # type: ignore[arg-type]
            return _complex(body)  # type: ignore[arg-type]
        if type(body) is list and tag in ("tuple", "set", "frozenset", "dict"):
            items = [_decode(item, depth + 1, budget) for item in body]
            if tag == "tuple":
                return tuple(items)
            pairs = tag == "dict"
            if pairs and not all(type(item) is list and len(item) == 2 for item in items):
                raise ValueError("a dict is a list of [key, value] pairs")
            _check_hashes(tag, [item[0] for item in items] if pairs else items)
            return dict(items) if pairs else _HASHED[tag](items)  # type: ignore[arg-type]
    raise ValueError(f"not a value the sandbox sends: {_preview(data)}")


def _preview(data: object) -> str:
    try:
        return repr(data)[:200]
    except Exception:  # an int too long to show in decimal, a recursion
        return f"a {type(data).__name__}"


def _int(text: str) -> int:
    """An ``{"int": "0x..."}`` body: a hex int of at most :data:`MAX_INT_DIGITS` digits."""
    digits = text.lstrip("+-")
    digits = digits[2:] if digits[:2].lower() == "0x" else digits
    if len(digits) > MAX_INT_DIGITS:
        raise ValueError(
            f"an int of {len(digits)} hex digits, over the {MAX_INT_DIGITS} a value may have"
        )
    return int(text, 16)


def _complex(parts: list) -> complex:
    """A ``{"complex": [real, imag]}`` body: two floats (ints are read as floats, when they fit)."""
    numbers = []
    for part in parts:
        if type(part) is float:
            numbers.append(part)
        elif type(part) is int:
            try:
                numbers.append(float(part))
            except OverflowError:
                raise ValueError(
                    f"a complex part of {part.bit_length()} bits, too large for a float"
                ) from None
        else:
            raise ValueError(f"a complex part that is no number: {_preview(part)[:60]}")
    return complex(numbers[0], numbers[1])


def _check_hashes(tag: str, keys: list) -> None:
    """Refuse keys that cannot be hashed, or more than :data:`MAX_SAME_HASH` of one hash
    (counted by sorting the hashes: counting them in a dict could collide too)."""
    try:
        hashes = sorted(hash(key) for key in keys)
    except TypeError as err:  # an unhashable element or key
        raise ValueError(f"a {tag} the sandbox cannot send: {err}") from None
    run = 1
    for index in range(1, len(hashes)):  # no itertools.pairwise: older interpreters run this
        run = run + 1 if hashes[index] == hashes[index - 1] else 1
        if run > MAX_SAME_HASH:
            raise ValueError(
                f"a {tag} with more than {MAX_SAME_HASH} elements of one hash ({hashes[index]})"
            )


def _why(err: BaseException) -> str:
    return (type(err).__name__ + ": " + str(err))[:500]


def _run_main(program: object, text: str, namespace: dict) -> str:
    """Run the compiled ``program`` as ``__main__`` with ``text`` on fd 0; its fd 1 output."""
    import tempfile

    saved = os.dup(0), os.dup(1)
    streams = sys.stdin, sys.stdout
    with tempfile.TemporaryFile() as given, tempfile.TemporaryFile() as taken:
        given.write(text.encode())
        given.seek(0)
        streams[1].flush()
        os.dup2(given.fileno(), 0)
        os.dup2(taken.fileno(), 1)
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", closefd=False)  # noqa: SIM115
        try:
            exec(program, namespace)
        except SystemExit as err:
            if err.code not in (None, 0):
                raise
        finally:
            try:
                sys.stdout.flush()
            finally:
                os.dup2(saved[0], 0)
                os.dup2(saved[1], 1)
                sys.stdin, sys.stdout = streams
        taken.seek(0)
        return taken.read().decode("utf-8", "replace")


def main() -> None:
    """Read the run's line on stdin, load the code, report each case's value.

    Example::

        # not run: reads its input from stdin; the executor runs it (program())
        main()
    """
    import signal

    header = json.loads(sys.stdin.readline())
    nonce, code, cases = header["nonce"], header["code"], header["cases"]
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_NPROC, (header["nproc"], header["nproc"]))
    except (ImportError, ValueError, OSError):
        pass
    del header
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a file over its limit: EFBIG, not death
    out, write, dumps = os.dup(1), os.write, json.dumps

    def report(**event: object) -> None:
        write(out, ("\n" + nonce + " " + dumps(event) + "\n").encode())

    report(event="ready")  # before the code runs: its absence means the sandbox failed

    builtins = __builtins__
    namespace = {"__name__": "solution", "__builtins__": builtins}
    try:
        program = compile(code, "<solution>", "exec")
        if any("expression" in case for case in cases):
            exec(program, namespace)
    except BaseException as err:
        report(event="load", status="error", error=_why(err))
        return
    report(event="load", status="ok")
    for index, case in enumerate(cases):
        try:
            if "stdin" in case:
                fresh = {"__name__": "__main__", "__builtins__": builtins}
                value = encode(_run_main(program, case["stdin"], fresh))
            else:
                source = compile(case["expression"], f"<test {index}>", "eval")
                value = encode(eval(source, namespace))
        except BaseException as err:
            report(event="case", index=index, raised=_why(err))
        else:
            report(event="case", index=index, value=value)
    report(event="done")


def program() -> str:
    """The Python source every executor runs: this module's own source, which runs
    :func:`main` when it is ``__main__`` (as it is inside the sandbox).

    Example::

        assert program().rstrip().endswith("main()")
    """
    if not _SOURCE:
        with open(__file__, encoding="utf-8") as source:
            _SOURCE.append(source.read())
    return _SOURCE[0]


_SOURCE: list[str] = []

if __name__ == "__main__":
    main()
