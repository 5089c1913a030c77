"""The loop benchmark's reward, the same function on both sides of the comparison.

Shared by ``loop_vs_peer.py`` (our loop) and ``peer/cookbook_run.py`` (tinker-cookbook's
loop, in the peer venv); standard library only, so it runs in both venvs.

The workload must train on every step on both sides, so the reward must differ within
a group even for the random tiny model, whose replies almost never hold the right
number: a reply earns 1.0 when its first number is the answer, else minus its length
in characters over 100, at most -1 (shorter is better). Replies of different lengths
earn different rewards, so a group is constant only when all of its replies are cut
off at the token limit (those earn the wrapper's fixed -0.1 on both sides, before this
function is reached) or happen to have one length.
"""

from __future__ import annotations

import re

SYSTEM_PROMPT = "You are a precise calculator. Reply with only the final number."
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?")


def length_graded_reward(text: str, answer: str) -> tuple[float, bool, bool]:
    """``(reward, correct, parsed)`` of one finished reply ``text`` to a problem with ``answer``."""
    match = _NUMBER.search(text)
    correct = match is not None and float(match.group(0)) == float(answer)
    if correct:
        return 1.0, True, True
    return -min(1.0, len(text) / 100), False, match is not None
