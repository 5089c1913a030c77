"""Interpolation sweeps: checkpoints mixed on a grid of coefficients, each mix evaluated.

:func:`interpolation_sweep` asks the backend for the linear combination of checkpoints'
weights (MinT's ``interpolate_checkpoints``) at each point of a grid and evaluates each
mix with the kit's one evaluation, resumable from ``ROOT/results.jsonl``; the result is
an :class:`InterpolationSweep` (its table, CSV and figure). ``mint-envkit interpolate``
runs it from the shell; docs/interpolation.md tells the whole story.

Example::

    # not run: needs two saved LoRA checkpoints (path_a, path_b) and a backend to mix and sample
    from mint_envkit.interpolation import interpolation_sweep

    result = await interpolation_sweep(
        "examples/arithmetic_env.py:ArithmeticEnv", model_name="mint-envkit/tiny-qwen3",
        checkpoints=[path_a, path_b], grid=[0.0, 0.5, 1.0], root="runs/soup", samples=4)
    print(result.table())
"""

from mint_envkit.interpolation.results import InterpolationSweep
from mint_envkit.interpolation.run import interpolation_sweep

__all__ = ["InterpolationSweep", "interpolation_sweep"]
