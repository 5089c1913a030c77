"""Interpolation sweeps: checkpoints mixed on a grid of coefficients, each mix evaluated.

For every grid point the backend writes the linear combination of the
checkpoints' weights (MinT's ``interpolate_checkpoints``; the embedded backend's
definition is in docs/local-backend.md) as a sampler checkpoint, and the kit's
evaluation scores it (mean reward, correctness beside the best trivial
baseline, pass@k). Each finished point is recorded in ``ROOT/results.jsonl``, so
running the sweep again skips it; the table is ``ROOT/interpolation.csv`` and
the figure ``ROOT/interpolation.png``.

Layout::

    ROOT/
      interpolation.json   manifest: checkpoints, model and evaluation settings
      results.jsonl        one line per finished point attempt
      interpolation.csv    the table;  interpolation.png: the figure (with matplotlib)
      <point name>/        the point's evaluation (results.jsonl, summary.json, viewer folder)

Example::

    # not run: needs two saved LoRA checkpoints (path_a, path_b) and a backend to mix and sample
    from mint_envkit.interpolation import interpolation_sweep

    result = await interpolation_sweep(
        "examples/arithmetic_env.py:ArithmeticEnv", model_name="mint-envkit/tiny-qwen3",
        checkpoints=[path_a, path_b], grid=[0.0, 0.5, 1.0], root="runs/soup", samples=4)
    print(result.table())
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import os
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.checks import is_number
from mint_envkit.errors import BackendError, ConfigError
from mint_envkit.evaluation.run import evaluate_many
from mint_envkit.evaluation.spec import SAMPLES
from mint_envkit.interpolation.plot import plot_interpolation
from mint_envkit.interpolation.results import (
    FIGURES,
    INTERPOLATION_MANIFEST,
    INTERPOLATION_PNG,
    InterpolationPoint,
    InterpolationSweep,
)
from mint_envkit.rollouts.backend import (
    resolve_backend,
    resolve_connection,
    service_client,
    shared_local_backend,
)
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings
from mint_envkit.runs.files import append_jsonl, check_writable, write_text_atomic
from mint_envkit.runs.names import format_value, short_hash
from mint_envkit.runs.record import Figures
from mint_envkit.runs.store import RESULTS, latest_results, utc_now


def _number(value: Any, where: str) -> float:
    if not is_number(value) or not math.isfinite(value):
        raise ConfigError(f"{where} must be a finite number, got {value!r}")
    return float(value)


def interpolation_grid(grid: Sequence[Any], count: int) -> list[tuple[float, ...]]:
    """The grid as coefficient tuples: a number ``a`` means ``(1 - a, a)`` (two checkpoints).

    Raises:
        ConfigError: an empty grid, a tuple of the wrong length, a number with other
            than two checkpoints, a value that is not finite, or a repeated point.

    Example::

        assert interpolation_grid([0.0, 0.25, 1.0], 2) == [(1.0, 0.0), (0.75, 0.25), (0.0, 1.0)]
        assert interpolation_grid([(0.2, 0.3, 0.5)], 3) == [(0.2, 0.3, 0.5)]
    """
    if isinstance(grid, (str, bytes)) or not isinstance(grid, Sequence) or not grid:
        raise ConfigError(f"grid must be a non-empty list of coefficients, got {grid!r}")
    out: list[tuple[float, ...]] = []
    for i, item in enumerate(grid):
        if is_number(item):
            if count != 2:
                raise ConfigError(
                    f"grid[{i}] is the number {item!r}, which means (1 - a, a) of two "
                    f"checkpoints, but there are {count}; give a tuple of {count} coefficients"
                )
            a = _number(item, f"grid[{i}]")
            point: tuple[float, ...] = (1.0 - a, a)
        elif isinstance(item, Sequence) and not isinstance(item, str) and len(item) == count:
            point = tuple(_number(c, f"grid[{i}][{j}]") for j, c in enumerate(item))
        else:
            raise ConfigError(
                f"grid[{i}] must be a number (two checkpoints) or {count} coefficients, "
                f"got {item!r}"
            )
        if point in out:
            raise ConfigError(f"grid[{i}] repeats the point {point}; list each point once")
        out.append(point)
    return out


def point_name(coefficients: Sequence[float]) -> str:
    """The folder and record name of a grid point.

    Example::

        assert point_name((0.75, 0.25)) == "c0p75-0p25"
    """
    return "c" + "-".join(format_value(float(c)) for c in coefficients)


def _manifest(root: Path, manifest: dict[str, Any]) -> None:
    path = root / INTERPOLATION_MANIFEST
    if path.is_file():
        try:
            old = json.loads(path.read_text(encoding="utf-8"))
        except json.JSONDecodeError as err:
            raise ConfigError(f"{path} is not valid JSON ({err}); use a new root") from None
        if {k: v for k, v in old.items() if k != "created_at"} != manifest:
            raise ConfigError(
                f"{root} holds an interpolation sweep of other checkpoints or settings "
                f"({path}); use a new root, or the same checkpoints and settings to resume"
            )
        return
    write_text_atomic(path, json.dumps({**manifest, "created_at": utc_now()}, indent=2) + "\n")


async def _interpolate(
    service: Any, sources: list[str], coefs: tuple[float, ...], name: str
) -> str:
    from mint.mint import interpolate_checkpoints

    response = await asyncio.to_thread(
        interpolate_checkpoints,
        service,
        source_paths=sources,
        coefficients=list(coefs),
        output_path=name,
    )
    return str(response.path)


def _figures(figures: Figures) -> dict[str, float | None]:
    out = dict(
        zip(
            FIGURES,
            (
                figures.mean_reward,
                figures.correct,
                figures.answers.baseline_correct,
                figures.parse_failure_rate,
            ),
            strict=True,
        )
    )
    out.update({f"pass@{k}": v for k, v in figures.pass_at.items()})
    return out


async def interpolation_sweep(
    target: Any,
    *,
    model_name: str,
    checkpoints: Sequence[str],
    grid: Sequence[Any],
    root: str | os.PathLike[str],
    samples: int = SAMPLES,
    sampling: SamplingSettings | None = None,
    backend: BackendSettings | None = None,
    split: str | None = None,
    problems: Sequence[Mapping[str, Any]] | str | None = None,
    limit: int | None = None,
    renderer_name: str | None = None,
) -> InterpolationSweep:
    """Interpolate ``checkpoints`` at every grid point and evaluate each; resumable.

    Args:
        target: what :func:`~mint_envkit.evaluation.evaluate` takes (an ENV_SPEC, a
            DatasetBuilder, an env class with ``problems``).
        model_name: the checkpoints' base model.
        checkpoints: two or more ``tinker://`` sampler or state checkpoints (a base model
            name stands for the base model: delta zero).
        grid: numbers ``a`` (two checkpoints: ``(1 - a, a)``) or tuples of one
            coefficient per checkpoint (see :func:`interpolation_grid`).
        root: the sweep folder; a point already recorded there as ``ok`` is skipped.
        samples: completions per problem (pass@k up to it).
        sampling: the evaluations' sampling (default: the builder's reply limit, T=1).
        backend: as for training; without a ``base_url`` a local sweep starts one
            embedded backend for all its points.
        split, problems, limit, renderer_name: which problems, as for
            :func:`~mint_envkit.evaluation.evaluate_many`.

    Raises:
        ConfigError: bad arguments, or a root that holds a sweep of other checkpoints
            or settings.

    Example::

        # not run: needs two saved LoRA checkpoints (path_a, path_b) and a backend to mix and sample
        result = await interpolation_sweep(builder, model_name="mint-envkit/tiny-qwen3",
            checkpoints=[path_a, path_b], grid=[0, 0.5, 1], root="runs/soup")
        print(result.table())
    """
    sources = [str(c) for c in checkpoints]
    if len(sources) < 2 or len(set(sources)) != len(sources):
        raise ConfigError(
            f"checkpoints must name two or more different checkpoints, got {sources!r}"
        )
    points = interpolation_grid(grid, len(sources))
    sampling = sampling or SamplingSettings()
    backend = backend or BackendSettings()
    chosen = {"split": split, "problems": problems, "limit": limit, "renderer_name": renderer_name}
    settings = {
        "samples": samples,
        **{k: v for k, v in sorted(chosen.items()) if v is not None},
        **attrs.asdict(sampling),
    }
    folder = Path(root)
    check_writable(folder, what="the interpolation sweep root")
    folder.mkdir(parents=True, exist_ok=True)
    manifest = {
        "version": 1,
        "model": model_name,
        "checkpoints": sources,
        "eval": json.loads(json.dumps(settings, default=repr)),
    }
    _manifest(folder, manifest)
    prefix = f"interp-{short_hash(sources)}"
    done = latest_results(folder)
    # a local sweep without a server (none given, none shared by the caller) starts one for all
    start = resolve_connection(backend.backend, backend.base_url).base_url is None
    start = start and resolve_backend(backend.backend) == "local"
    shared = shared_local_backend([model_name]) if start else contextlib.nullcontext(None)
    finished: list[InterpolationPoint] = []
    async with shared:
        connection = resolve_connection(backend.backend, backend.base_url)
        if connection.backend == "mint" and not connection.api_key:
            raise BackendError(
                "backend 'mint' needs an API key: set MINT_API_KEY (MinT keys start with sk-), "
                "or use backend='local' for the embedded backend"
            )
        async with service_client(connection) as service:
            for coefs in points:
                name = point_name(coefs)
                record = done.get(name)
                if record is not None and record.get("status") == "ok":
                    finished.append(InterpolationPoint.from_record(record))
                    continue
                point = await _run_point(
                    service,
                    sources,
                    coefs,
                    name,
                    output=f"{prefix}-{name}",
                    evaluate=lambda path, name=name: evaluate_many(
                        target,
                        model_name=model_name,
                        checkpoints=[path],
                        samples=samples,
                        out_dir=str(folder / name),
                        sampling=sampling,
                        backend=backend,
                        **chosen,
                    ),
                )
                append_jsonl(folder / RESULTS, point.record())
                finished.append(point)
    result = InterpolationSweep(str(folder), tuple(sources), tuple(finished))
    result.write_csv()
    plot_interpolation(result, folder / INTERPOLATION_PNG)
    return result


async def _run_point(
    service: Any,
    sources: list[str],
    coefs: tuple[float, ...],
    name: str,
    *,
    output: str,
    evaluate: Callable[[str], Awaitable[list[Any]]],
) -> InterpolationPoint:
    """Interpolate and evaluate one point; a failure is recorded, not raised."""
    import tinker

    path: str | None = None
    try:
        path = await _interpolate(service, sources, coefs, output)
    except tinker.APIStatusError as err:
        if err.status_code >= 500:
            return InterpolationPoint(name, coefs, None, "error", {}, f"{err}")
        # the backend refused the checkpoints or coefficients: no point can succeed
        raise ConfigError(f"interpolating {sources} at {list(coefs)} was refused: {err}") from None
    try:
        (evaluated,) = await evaluate(path)
    except ConfigError:
        raise
    except Exception as err:  # one bad point does not stop the sweep; the record says why
        message = f"{type(err).__name__}: {err}"
        return InterpolationPoint(name, coefs, path, "error", {}, message)
    return InterpolationPoint(name, coefs, path, "ok", _figures(evaluated.figures))
