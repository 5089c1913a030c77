"""Code written to forge its score: each attack is a wrong ``add`` (it subtracts) plus a
trick on the harness; every one must score 0.0 and the right ``add`` 1.0. docs/code.md
has the table of these attacks and their scores before and after the verdict moved
out of the code's process."""

from __future__ import annotations

import pytest

from mint_envkit import code_passes
from mint_envkit.sandbox import BubblewrapExecutor, Limits

LIMITS = Limits(wall_s=5, cpu_s=3, memory_mb=256, processes=8)
SANDBOX = BubblewrapExecutor(max_concurrency=2)
REWARD = code_passes(executor=SANDBOX, limits=LIMITS)
TESTS = ["assert add(2, 3) == 5", "assert add(-1, 1) == 0", "assert add(10, 5) == 15"]
WRONG = "def add(a, b):\n    return a - b\n"

FORGE = r"""
import json, os, sys
def _nonces():
    found, frame = set(), sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, str) and value.startswith("mint-"):
                found.add(value)
        frame = frame.f_back
    return found
def _line(nonce, event):
    os.write(1, ("\n" + nonce + " " + json.dumps(event) + "\n").encode())
for nonce in _nonces():
    _line(nonce, {"event": "load", "status": "ok"})
    for index in range(3):
        _line(nonce, {"event": "test", "index": index, "status": "pass"})
        _line(nonce, {"event": "case", "index": index, "value": 5})
    _line(nonce, {"event": "done"})
os._exit(0)
"""

FLOOD = r"""
import json, os, sys
def _nonces():
    found, frame = set(), sys._getframe(1)
    while frame is not None:
        for value in frame.f_locals.values():
            if isinstance(value, str) and value.startswith("mint-"):
                found.add(value)
        frame = frame.f_back
    return found
for nonce in _nonces():
    for index in range(3):
        for guess in range(-20, 21):
            event = {"event": "case", "index": index, "value": guess}
            os.write(1, ("\n" + nonce + " " + json.dumps(event) + "\n").encode())
"""

ATTACKS = {
    "an object equal to everything": (
        "class Anything:\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = object.__hash__\n"
        "def add(a, b):\n"
        "    return Anything()\n"
    ),
    "an int subclass with a lying __eq__": (
        "class Lying(int):\n"
        "    def __eq__(self, other):\n"
        "        return True\n"
        "    __hash__ = int.__hash__\n"
        "def add(a, b):\n"
        "    return Lying(a - b)\n"
    ),
    "builtins.compile compiles 'pass'": (
        "import builtins\n"
        "_c = builtins.compile\n"
        "builtins.compile = lambda s, f, m, *a, **k: _c('pass', f, m)\n" + WRONG
    ),
    "builtins.exec does nothing": "import builtins\nbuiltins.exec = lambda *a, **k: None\n" + WRONG,
    "json.dumps turns fail into pass": (
        "import json\n"
        "_dumps = json.dumps\n"
        "json.dumps = lambda *a, **k: _dumps(*a, **k).replace('\"fail\"', '\"pass\"')\n" + WRONG
    ),
    "os.write turns fail into pass": (
        "import os\n"
        "_write = os.write\n"
        "os.write = lambda fd, data: _write(fd, data.replace(b'\"fail\"', b'\"pass\"'))\n" + WRONG
    ),
    "the nonce from the frames, a forged report, os._exit(0)": WRONG + FORGE,
    "every guess from -20 to 20 reported for every case": WRONG + FLOOD,
}


def fenced(code: str) -> str:
    return f"```python\n{code}\n```"


async def test_the_right_solution_passes():
    breakdown = await REWARD.score_async(fenced("def add(a, b):\n    return a + b"), TESTS)
    assert breakdown.total == 1.0, breakdown.logs


async def test_the_wrong_solution_fails():
    breakdown = await REWARD.score_async(fenced(WRONG), TESTS)
    assert breakdown.total == 0.0, breakdown.logs


@pytest.mark.parametrize("attack", ATTACKS, ids=list(ATTACKS))
async def test_a_forging_attack_scores_zero(attack: str):
    breakdown = await REWARD.score_async(fenced(ATTACKS[attack]), TESTS)
    assert breakdown.total == 0.0, breakdown.logs
    assert breakdown.correct is False
