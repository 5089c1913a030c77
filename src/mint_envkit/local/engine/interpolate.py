"""Checkpoint interpolation: a linear combination of LoRA checkpoints, stored exactly as LoRA.

MinT's ``interpolate_checkpoints``. Every source is a LoRA checkpoint on one base
model ``W0`` (or the base model itself, whose delta is zero); source ``k`` adapts a
layer by ``D_k = s_k * B_k @ A_k`` (``s_k = alpha / r_k``). The result adapts it by

    D = sum_k c_k * D_k

so with coefficients that sum to 1 its weights are ``sum_k c_k * (W0 + D_k)``, the
linear combination of the checkpoints' full weights (other sums scale the deltas
only: task arithmetic on the base model, e.g. ``(1.5, -0.5)`` extrapolates).

Interpolating ``A`` and ``B`` separately would give ``(sum c_k B_k)(sum c_k A_k)``,
which is not a combination of the deltas. The deltas are combined exactly by
concatenating the factors: ``A = [A_1; A_2; ...]`` (rows) and ``B = [c_1 s_1 / s
B_1, c_2 s_2 / s B_2, ...]`` (columns), a LoRA of rank ``r = sum_k r_k`` over the
sources with a non-zero coefficient, ``s = alpha / r``; then ``s * B @ A = D``.
A layer that a source does not adapt gets zero factors from it. The result is
a sampler checkpoint of that rank (and the union of the sources' adapted layers).

Example::

    from mint_envkit.local.engine import interpolate

    path_a = engine.save_state(model_id, "a", kind="sampler")  # the package example's client
    other = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=4, seed=1)
    path_b = engine.save_state(other, "b", kind="sampler")
    path = interpolate.interpolate_checkpoints(
        engine, [path_a, path_b], [0.5, 0.5], output=f"tinker://{model_id}/sampler_weights/soup")
    assert engine.weights_info(path)["lora_rank"] == 8 + 4  # the ranks add up
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, cast

import torch

from mint_envkit.local.bounds import COEFFICIENT_MAX, coefficient_problem
from mint_envkit.local.models.loader import resolve_model_name

from .checkpoints import meta_gain
from .core import Engine, _locked
from .records import LORA_ALPHA, EngineError, LoraSpec, Trainer

MAX_RANK = 4096
"""The largest LoRA rank a combination may have (the sum of the sources' ranks)."""

_A, _B = ".lora_A.weight", ".lora_B.weight"


def _check_coefficients(coefficients: Any, count: int) -> list[float]:
    if not isinstance(coefficients, Sequence) or len(coefficients) != count:
        got = len(coefficients) if isinstance(coefficients, Sequence) else coefficients
        raise EngineError(
            f"coefficients has {got!r} entries but source_paths has {count}; give one "
            "coefficient per source"
        )
    out = []
    for i, c in enumerate(coefficients):
        problem = coefficient_problem(c, field=f"coefficients[{i}]")
        if problem is not None:
            raise EngineError(problem)
        out.append(float(c))
    return out


def _check_rank(ranks: Sequence[int]) -> None:
    if sum(ranks) > MAX_RANK:
        raise EngineError(
            f"the combination has LoRA rank {sum(ranks)} (the sum of the sources' ranks), over "
            f"{MAX_RANK}; combine fewer checkpoints at once"
        )


def check_finite(spec: LoraSpec, tensors: dict[str, torch.Tensor]) -> None:
    """EngineError(user) unless every factor and every layer's delta ``s * B @ A`` is finite.

    Example::

        spec, tensors = combine([(snap.spec, snap.tensors)], [1.0])
        check_finite(spec, tensors)   # a trained checkpoint's delta is finite
    """
    scale = LORA_ALPHA / spec.rank
    for key, a in tensors.items():
        if not key.endswith(_A):
            continue
        b = tensors[key[: -len(_A)] + _B]
        if not (torch.isfinite(a).all() and torch.isfinite(b).all()) or not bool(
            torch.isfinite((b @ a) * scale).all()
        ):
            raise EngineError(
                f"the combination is not finite at layer {key[: -len(_A)]!r} (its delta "
                "overflows float32); nothing was saved: use smaller coefficients"
            )


def combine(
    sources: Sequence[tuple[LoraSpec, dict[str, torch.Tensor]]], coefficients: Sequence[float]
) -> tuple[LoraSpec, dict[str, torch.Tensor]]:
    """The LoRA (spec, tensors) whose delta is ``sum_k c_k * delta_k`` exactly (float32).

    Sources with a zero coefficient are left out; when all are, the result is the
    first source's shape with ``B = 0`` (the base model).

    Example::

        spec_a, tensors_a = snap.spec, snap.tensors  # the package example's snapshot (rank 8)
        spec_b, tensors_b = snap.spec, snap.tensors
        spec, tensors = combine([(spec_a, tensors_a), (spec_b, tensors_b)], [0.5, 0.5])
        assert spec.rank == spec_a.rank + spec_b.rank
    """
    if not sources:
        raise EngineError("source_paths must name at least one LoRA checkpoint")
    used = [(s, t, c) for (s, t), c in zip(sources, coefficients, strict=True) if c != 0.0]
    zero = not used
    if zero:
        used = [(sources[0][0], sources[0][1], 0.0)]
    rank = sum(s.rank for s, _, _ in used)
    _check_rank([s.rank for s, _, _ in used])
    spec = LoraSpec(
        rank=rank,
        train_mlp=any(s.train_mlp for s, _, _ in used),
        train_attn=any(s.train_attn for s, _, _ in used),
        train_unembed=any(s.train_unembed for s, _, _ in used),
    )
    scale = LORA_ALPHA / rank
    layers: dict[str, tuple[int, int]] = {}  # layer key -> (out, in)
    for _, tensors, _ in used:
        for key, a in tensors.items():
            if key.endswith(_A):
                b = tensors[key[: -len(_A)] + _B]
                layers[key[: -len(_A)]] = (int(b.shape[0]), int(a.shape[1]))
            elif not key.endswith(_B):
                raise EngineError(f"checkpoint tensor {key!r} is not a LoRA factor", "server")
    out: dict[str, torch.Tensor] = {}
    for layer, (n_out, n_in) in layers.items():
        a_parts, b_parts = [], []
        for s, tensors, c in used:
            a = tensors.get(layer + _A)
            if a is None:
                a_parts.append(torch.zeros(s.rank, n_in))
                b_parts.append(torch.zeros(n_out, s.rank))
                continue
            b = tensors[layer + _B].float().cpu()
            a_parts.append(a.float().cpu())
            b_parts.append(b * (c * (LORA_ALPHA / s.rank) / scale))
        out[layer + _A] = torch.cat(a_parts, dim=0).contiguous()
        out[layer + _B] = (
            torch.zeros(n_out, rank) if zero else torch.cat(b_parts, dim=1).contiguous()
        )
    return spec, out


@_locked
def interpolate_checkpoints(
    engine: Engine,
    source_paths: Sequence[str],
    coefficients: Sequence[float],
    *,
    output: str,
) -> str:
    """Write the combination of ``source_paths`` (see the module docstring) to ``output``.

    ``source_paths`` are ``tinker://`` checkpoints (sampler or state) or base model
    names, all on one base model, with at least one checkpoint among them;
    ``output`` is ``tinker://<run>/sampler_weights/<name>`` (replaced if it exists).

    Raises:
        EngineError: (user) an unknown or unreadable path (``no checkpoint at ...``), sources
            on different base models, a coefficient count that differs or a coefficient
            outside ``bounds.coefficient_problem``'s range, a rank over :data:`MAX_RANK`
            (checked from the sources' ``meta.json`` before their tensors are read), an
            ``output`` that is a checkpoint of another base model (or unreadable), a result
            that is not finite (nothing is saved); each message names the field.

    Example::

        interpolate_checkpoints(engine, [path_a, "mint-envkit/tiny-qwen3-small"], [0.5, 0.5],
                                output=f"tinker://{model_id}/sampler_weights/half")
        # 'tinker://<model_id>/sampler_weights/half': half the LoRA's delta
    """
    if not isinstance(source_paths, Sequence) or isinstance(source_paths, str) or not source_paths:
        raise EngineError("source_paths must be a non-empty list of checkpoint paths")
    coefs = _check_coefficients(coefficients, len(source_paths))
    store = engine._checkpoints
    run, kind, name = store.parse(output)
    if kind != "sampler_weights":
        raise EngineError(f"output_path {output!r} must be a sampler_weights path")
    metas: list[dict[str, Any] | None] = []
    bases: list[str] = []
    for i, path in enumerate(source_paths):
        if not isinstance(path, str):
            raise EngineError(f"source_paths[{i}] must be a string, got {path!r}")
        try:
            if path.startswith("tinker://"):
                metas.append(store.meta(path))
                bases.append(resolve_model_name(metas[-1]["base_model"]))
            else:
                metas.append(None)
                bases.append(resolve_model_name(engine.registry.base(path).loaded.name))
        except EngineError as err:
            raise EngineError(f"source_paths[{i}]: {err.message}", err.category) from err
    if len(set(bases)) > 1:
        raise EngineError(
            f"source_paths are on different base models ({sorted(set(bases))}); interpolate "
            "checkpoints of one base model"
        )
    if all(meta is None for meta in metas):
        raise EngineError(
            "source_paths name only base models; their combination is the base model "
            "itself (sample it by name)"
        )
    _check_rank(
        [int(m["lora"]["rank"]) for m, c in zip(metas, coefs, strict=True) if m and c != 0.0]
    )
    gain = chain_gain(source_paths, metas, coefs)
    check_output(engine, output, bases[0])
    loras: list[tuple[LoraSpec, dict[str, torch.Tensor]]] = []
    lora_coefs: list[float] = []
    for i, (path, meta) in enumerate(zip(source_paths, metas, strict=True)):
        if meta is None:
            continue
        try:
            meta, tensors, _ = store.read(path, with_optimizer=False)
        except EngineError as err:
            raise EngineError(f"source_paths[{i}]: {err.message}", err.category) from err
        loras.append((LoraSpec.from_json(meta["lora"]), tensors))
        lora_coefs.append(coefs[i])
    spec, tensors = combine(loras, lora_coefs)
    check_finite(spec, tensors)
    holder = Trainer(
        model_id=run,
        base=bases[0],
        spec=spec,
        adapter="",
        params={},
        optimizer=cast(Any, None),
        gain=gain,
    )
    return store.write(holder, "sampler_weights", name, tensors, False)


def chain_gain(
    source_paths: Sequence[str], metas: Sequence[dict[str, Any] | None], coefs: Sequence[float]
) -> float:
    """The combination's gain ``sum_k |c_k| * gain_k``; EngineError(user) past the bound.

    A base model source has gain 0 (no delta).

    Example::

        meta = {"gain": 4.0}
        assert chain_gain(["tinker://r/sampler_weights/a", "base"], [meta, None], [2.0, -1.0]) == 8.0
    """
    gains = [
        0.0 if m is None else meta_gain(m, p) for p, m in zip(source_paths, metas, strict=True)
    ]
    gain = sum(abs(c) * g for c, g in zip(coefs, gains, strict=True))
    if gain > COEFFICIENT_MAX:
        held = ", ".join(f"source_paths[{i}] already {g:g}" for i, g in enumerate(gains) if g > 1.0)
        raise EngineError(
            f"the combination would hold {gain:g} trained deltas (sum of |coefficient| x each "
            f"source's gain{': ' + held if held else ''}), over the bound of "
            f"{COEFFICIENT_MAX:g} for a chain of interpolations (each call multiplies what "
            "its sources hold); use smaller coefficients, or interpolate the original "
            "checkpoints instead of an extrapolated one"
        )
    return gain


@_locked
def check_output(engine: Engine, output: str, base: str) -> None:
    """EngineError(user) unless ``output`` is free or holds a checkpoint of base model ``base``.

    A combination replaces an existing checkpoint only when it is on that one's base
    model (an unreadable one is not replaced either).

    Example::

        check_output(engine, f"tinker://{model_id}/sampler_weights/new", "mint-envkit/tiny-qwen3-small")
    """
    if not (engine._checkpoints.dir(output) / "meta.json").is_file():
        return
    try:
        theirs = resolve_model_name(engine._checkpoints.meta(output)["base_model"])
    except EngineError as err:
        raise EngineError(
            f"output_path {output!r} names an existing checkpoint that cannot be read "
            f"({err.message}); it is not replaced: delete it or choose another name"
        ) from err
    if theirs != base:
        raise EngineError(
            f"output_path {output!r} is a checkpoint of base model {theirs!r}, and the "
            f"combination is on {base!r}; it is not replaced: choose another name"
        )
