"""The math-verify worker process behind :mod:`mint_envkit.parsers.math` (not imported).

Run as a script (``python -c`` + ``runpy``): it imports only the standard library and
math-verify, so it works without ``mint_envkit`` on the path. It reads one JSON request
per line on stdin and writes one JSON reply per line on stdout; math-verify's own
timeouts (``signal.alarm``) are disabled, the parent kills this process instead when a
request takes too long. The first line it writes is ``{"ready": true}`` or
``{"ready": false, "error": "..."}``.

Requests:

- ``{"op": "extract", "text": reply}`` -> ``{"value": str | null}``: the final answer
  of the reply as math-verify extracts it (``\\boxed{}`` first), or null when none.
- ``{"op": "equal", "value": str, "answer": str}`` -> ``{"equal": bool}``.
- ``{"op": "grade", "text": reply, "answer": str}`` -> ``{"value": ..., "equal": bool}``.
"""

import json
import logging
import sys


def _wrap(text):
    """A bare answer as math-verify reads it best: in a box, unless already delimited."""
    if "\\boxed" in text or "$" in text or "\\(" in text or "\\[" in text:
        return text
    return "\\boxed{" + text + "}"


def _parse(parse, text):
    return parse(text, parsing_timeout=None)


def _extracted(parsed):
    if not parsed:
        return None
    if len(parsed) > 1 and isinstance(parsed[1], str) and parsed[1].strip():
        return parsed[1].strip()
    return str(parsed[0])


def _equal(parse, verify, value, answer):
    gold = _parse(parse, _wrap(answer))
    target = _parse(parse, _wrap(value))
    if not gold or not target:
        return value.strip() == answer.strip()
    return bool(verify(gold, target, timeout_seconds=None))


def _answer(request, parse, verify):
    op = request.get("op")
    if op == "extract":
        return {"value": _extracted(_parse(parse, request["text"]))}
    if op == "equal":
        return {"equal": _equal(parse, verify, request["value"], request["answer"])}
    if op == "grade":
        value = _extracted(_parse(parse, request["text"]))
        equal = value is not None and _equal(parse, verify, value, request["answer"])
        return {"value": value, "equal": equal}
    return {"error": f"unknown op {op!r}"}


def main():
    logging.disable(logging.WARNING)  # math-verify warns that its timeout is disabled
    sys.setrecursionlimit(10_000)
    try:
        from math_verify import parse, verify
    except Exception as err:  # reported to the parent, which raises a clear error
        print(json.dumps({"ready": False, "error": f"{type(err).__name__}: {err}"}), flush=True)
        return
    print(json.dumps({"ready": True}), flush=True)
    for line in sys.stdin:
        try:
            reply = _answer(json.loads(line), parse, verify)
        except Exception as err:  # a bad expression must not end the worker
            reply = {"error": f"{type(err).__name__}: {err}"}
        print(json.dumps(reply), flush=True)


if __name__ == "__main__":
    main()
