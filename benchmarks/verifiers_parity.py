"""Reward parity of from_verifiers with verifiers' own rollouts (issue 47, item 2).

    python benchmarks/verifiers_parity.py

Runs the harness of ``tests/verifiers_parity.py`` on the two small verifiers envs of
``tests/adapters/vf_envs/``: 160 single-turn arithmetic rows (replies of seven kinds:
right, wrong, untagged, long, empty, padded, empty tags) and 50 multi-turn guessing
games (a policy reading the feedback, with untagged guesses now and then). Prints, per
env, the episodes, the distinct rewards seen and the largest difference between our
reward and the rubric's score (docs/adapters.md).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "adapters" / "vf_envs")]

from verifiers_parity import guess_reply, math_reply, parity  # noqa: E402


def main() -> None:
    total, worst = 0, 0.0
    for env_id, policy, args in (
        ("vf-tiny-math", math_reply, {"num_train": 160, "num_eval": 0}),
        ("vf-tiny-guess", guess_reply, {"n": 50}),
    ):
        t0 = time.monotonic()
        ours, theirs = parity(env_id, policy, **args)
        diff = max(abs(a - b) for a, b in zip(ours, theirs, strict=True))
        total, worst = total + len(ours), max(worst, diff)
        print(
            f"{env_id}: {len(ours)} episodes, {len({round(r, 9) for r in ours})} distinct "
            f"rewards, largest |ours - verifiers'| = {diff:.3g} ({time.monotonic() - t0:.1f} s)"
        )
    print(f"all: {total} episodes, largest difference {worst:.3g}")


if __name__ == "__main__":
    main()
