"""The numeric bounds of sampling and training settings, shared by the server and ``Config``.

One place for the ranges outside which a setting is numerically degenerate:
below :data:`TEMPERATURE_MIN` the temperature-scaled logits overflow (measured:
1e-40 gave tokens ``[0, 0, 0, 0]`` with NaN logprobs), and a learning rate
over :data:`LEARNING_RATE_MAX` turns the adapter's weights into NaN after one
step. The server (:mod:`mint_envkit.local.http`) refuses such a request with a
4xx naming the field; ``rl.Config`` may import the same checks (``rl`` sits
above ``local``). Pure functions, no torch.

Example::

    from mint_envkit.local.bounds import learning_rate_problem, temperature_problem

    assert temperature_problem(1e-40).startswith("temperature must be > 0, a finite number >= 0.001")
    assert temperature_problem(0.7) is None
    assert learning_rate_problem(1e30).startswith("learning_rate must be finite and >= 0, at most 1")
"""

from __future__ import annotations

import math
from typing import Any

from mint_envkit.checks import is_number

TEMPERATURE_MIN = 1e-3
"""The smallest sampling temperature (near-greedy); below it logits / temperature overflow."""

LEARNING_RATE_MAX = 1.0
"""The largest learning rate (LoRA rates are about 1e-5 .. 1e-2)."""


def _number(value: Any) -> bool:
    return is_number(value)


def temperature_problem(value: Any, *, field: str = "temperature") -> str | None:
    """None when ``value`` is a usable temperature (finite, >= :data:`TEMPERATURE_MIN`), else why.

    Example::

        assert temperature_problem(0).startswith("temperature must be > 0")
        assert temperature_problem(float("nan"), field="sampling_params.temperature").startswith(
            "sampling_params.temperature must be")
        assert temperature_problem(TEMPERATURE_MIN) is None
    """
    if _number(value) and math.isfinite(value) and value >= TEMPERATURE_MIN:
        return None
    return (
        f"{field} must be > 0, a finite number >= {TEMPERATURE_MIN:g} (smaller values "
        f"overflow the scaled logits), got {value!r}; for near-greedy sampling use "
        f"{TEMPERATURE_MIN:g} to 0.05"
    )


def learning_rate_problem(value: Any, *, field: str = "learning_rate") -> str | None:
    """None when ``value`` is a usable learning rate (finite, in [0, :data:`LEARNING_RATE_MAX`]).

    0 is allowed (a step that changes nothing, as a schedule decayed to 0 sends).

    Example::

        assert learning_rate_problem(1e-4) is None
        assert learning_rate_problem(0) is None   # a step that changes nothing
        assert learning_rate_problem(-1e-4) is not None
    """
    if _number(value) and math.isfinite(value) and 0 <= value <= LEARNING_RATE_MAX:
        return None
    return (
        f"{field} must be finite and >= 0, at most {LEARNING_RATE_MAX:g} (LoRA rates are "
        f"about 1e-5 .. 1e-2; larger ones turn the weights into NaN), got {value!r}"
    )
