"""The numeric bounds of sampling and training settings (and the engine's default reply
limit, :data:`ENGINE_DEFAULT_MAX_TOKENS`), shared by the server, the engine and ``Config``.

One place for the ranges outside which a setting is numerically degenerate:
below :data:`TEMPERATURE_MIN` the temperature-scaled logits overflow (measured:
1e-40 gave tokens ``[0, 0, 0, 0]`` with NaN logprobs), and a learning rate
over :data:`LEARNING_RATE_MAX` turns the adapter's weights into NaN after one
step, and an interpolation coefficient over :data:`COEFFICIENT_MAX` in size
scales a checkpoint's delta past what the model's activations hold (measured:
1e30 on two trained checkpoints sampled tokens ``[0, 0, 0, 0]`` with NaN
logprobs). The temperature bound holds for sampling and for the reverse-KL
loss (``forward_backward_reverse_kl``: 1e-30 gave a loss of 4.6e30). The server
(:mod:`mint_envkit.local.http`) and the engine refuse such a request with a
4xx naming the field; ``rl.Config`` may import the same checks (``rl`` sits
above ``local``). Pure functions, no torch.

Example::

    from mint_envkit.local.bounds import learning_rate_problem, temperature_problem

    assert temperature_problem(1e-40).startswith("temperature must be > 0, a finite number >= 0.001")
    assert temperature_problem(0.7) is None
    assert learning_rate_problem(1e30).startswith("learning_rate must be finite and >= 0, at most 1")
    assert coefficient_problem(1e30, field="coefficients[0]").startswith(
        "coefficients[0] must be a finite number in [-10, 10]")
"""

from __future__ import annotations

import math
from typing import Any

from mint_envkit.checks import is_number

TEMPERATURE_MIN = 1e-3
"""The smallest sampling temperature (near-greedy); below it logits / temperature overflow."""

LEARNING_RATE_MAX = 1.0
"""The largest learning rate (LoRA rates are about 1e-5 .. 1e-2)."""

COEFFICIENT_MAX = 10.0
"""The largest size of an interpolation coefficient (mixes use 0 .. 1, task arithmetic
about -2 .. 2): ``interpolate_checkpoints`` refuses ``|c|`` over it."""

ENGINE_DEFAULT_MAX_TOKENS = 16
"""The ``max_tokens`` the engine samples when a request names none (the server prices and
splits such a request by it)."""


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


def coefficient_problem(value: Any, *, field: str = "coefficient") -> str | None:
    """None when ``value`` is a usable interpolation coefficient (finite, ``|c| <=`` :data:`COEFFICIENT_MAX`).

    Example::

        assert coefficient_problem(0.5) is None and coefficient_problem(-1.5) is None
        assert coefficient_problem(float("inf")) is not None
        assert coefficient_problem(11, field="coefficients[1]").startswith("coefficients[1] must be")
    """
    if _number(value) and math.isfinite(value) and abs(value) <= COEFFICIENT_MAX:
        return None
    return (
        f"{field} must be a finite number in [-{COEFFICIENT_MAX:g}, {COEFFICIENT_MAX:g}] (a mix "
        "uses 0 to 1, task arithmetic about -2 to 2; larger ones scale a checkpoint's delta "
        f"past what the model's activations hold, and its samples turn NaN), got {value!r}"
    )
