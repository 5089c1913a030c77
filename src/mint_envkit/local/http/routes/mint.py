"""Route handlers: MinT's own endpoints, reverse-KL distillation and checkpoint interpolation.

- ``POST /api/v1/mint/forward_backward_reverse_kl``: a training request (ordered by
  ``seq_id`` like ``forward_backward``) that adds the gradient of the reverse KL of
  the student against a reference (engine: :mod:`mint_envkit.local.engine.distill`);
- ``POST /api/v1/mint/checkpoints/interpolate``: a sampler checkpoint that is a linear
  combination of checkpoints (engine: :mod:`mint_envkit.local.engine.interpolate`).

Both answer with a future. What can be checked before queuing is: bad shapes,
lengths, counts and numbers (422: a temperature under sampling's floor, coefficients
outside ``bounds.COEFFICIENT_MAX``), unknown models and paths (404), a reference or
sources on another base model, an ``output_path`` outside the first source's run
(422); each message names the field. A request is
priced like ``forward_backward`` (all its student and reference tokens) and
refused past ``--max-request-tokens`` (413).

Example::

    # `backend`, `request` and `result_of(answer)` as in the routes package example
    def two_checkpoints(e):   # on the engine worker: a run and two sampler checkpoints
        model_id = e.create_lora("mint-envkit/tiny-qwen3-small", rank=4)
        return model_id, e.save_for_sampler(model_id, "a")[1], e.save_for_sampler(model_id, "b")[1]

    mid, a, b = await backend.engine_call(two_checkpoints)
    backend.model_registry[mid] = {"model_id": mid, "base_model": "mint-envkit/tiny-qwen3-small"}
    answer = await interpolate(backend, request, {"source_paths": [a, b],
                                                  "coefficients": [0.5, 0.5]})
    assert set(answer) == {"request_id"}   # {'request_id': 'req-...'}
    assert (await result_of(answer))["path"].startswith(f"tinker://{mid}/sampler_weights/interp-")
"""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

from starlette.requests import Request

from mint_envkit.local.http.datums import ReverseKLOp, parse_reverse_kl
from mint_envkit.local.http.requests import (
    ProtocolError,
    _check_name,
    check_tinker_path,
    parse_interpolate,
    run_id_of,
)
from mint_envkit.local.http.responses import sanitize_metrics
from mint_envkit.local.http.routes.training import big_body
from mint_envkit.local.http.state import Backend


async def _path_base(b: Backend, path: str, field: str) -> str:
    """The served base model of a base model name or a ``tinker://`` path, or 404/422 on ``field``."""
    if path.startswith("tinker://"):
        check_tinker_path(path, field)
    try:
        if not path.startswith("tinker://"):
            return b.require_base_model(path)
        if path not in b.checkpoint_bases:
            base = await b.engine_call(lambda e: b.checkpoint_base_model(e, path))
            b.checkpoint_bases[path] = str(base)
        return b.checkpoint_bases[path]
    except ProtocolError as err:
        raise ProtocolError(err.status, f"{field}: {err.message}") from None


def _reverse_kl_json(out: Any) -> dict[str, Any]:
    return {
        "type": "mint_forward_backward_reverse_kl",
        "outputs": [
            {"loss": {"data": [float(v)], "shape": [1], "dtype": "float32"}} for v in out.losses
        ],
        "metrics": sanitize_metrics(out.metrics),
    }


async def forward_backward_reverse_kl(b: Backend, request: Request, body: dict) -> dict:
    """``POST /mint/forward_backward_reverse_kl``: add the reverse-KL gradient (a future).

    Example::

        tokens = lambda ids: {"chunks": [{"tokens": ids, "type": "encoded_text"}]}
        answer = await forward_backward_reverse_kl(backend, request, {"model_id": mid, "seq_id": 1,
            "reference_model_path": a,   # the teacher: a checkpoint on the same base model
            "data": [{"student_input": tokens([1, 2]), "reference_input": tokens([9, 1, 2]),
                      "target_tokens": {"data": [2, 3]}, "weights": {"data": [1.0, 1.0]}}]})
        body = await result_of(answer)
        assert body["type"] == "mint_forward_backward_reverse_kl" and len(body["outputs"]) == 1
    """

    big = big_body(request)

    async def parse(bd: dict) -> ReverseKLOp:
        # a big batch is validated in a worker thread, as forward_backward's is
        op = await asyncio.to_thread(parse_reverse_kl, bd) if big else parse_reverse_kl(bd)
        b.limits.check_forward(
            [d["student_input"] for d in op.data] + [d["reference_input"] for d in op.data]
        )
        ref_base = await _path_base(b, op.reference_model_path, "reference_model_path")
        base = str(b.require_model(op.model_id).get("base_model"))
        student_base = b.served_name(base) or base
        if ref_base != student_base:
            raise ProtocolError(
                422,
                f"reference_model_path {op.reference_model_path!r} is on base model "
                f"{ref_base!r} but model_id {op.model_id} trains {student_base!r}; "
                "the reference must share the student's base model (and tokenizer)",
            )
        return op

    def build(op: ReverseKLOp) -> tuple[Any, Any, None]:
        from mint_envkit.local.engine import distill

        def fn(e: Any) -> Any:
            return distill.forward_backward_reverse_kl(
                e, op.model_id, op.reference_model_path, op.data, temperature=op.temperature
            )

        return fn, _reverse_kl_json, None

    return await b.submit_training("forward_backward_reverse_kl", body, parse, build)


def _output_path(output: str | None, run: str) -> str:
    """The checkpoint the result is written to: always in ``run``, the first source's run."""
    if output is None:
        return f"tinker://{run}/sampler_weights/interp-{uuid.uuid4().hex[:12]}"
    if output.startswith("tinker://"):
        path = check_tinker_path(output, "output_path")
        if path.split("/")[3] != "sampler_weights":
            raise ProtocolError(
                422,
                f"output_path {output!r} must be a sampler_weights path (the interpolation "
                "is a sampler checkpoint)",
            )
        if run_id_of(path) != run:
            raise ProtocolError(
                422,
                f"output_path {output!r} is in run {run_id_of(path)!r}, but the combination "
                f"belongs to run {run!r} (the run of the first tinker:// source); it is "
                "written only there, so that no other run's checkpoint is replaced: give a "
                "name, or a path in that run",
            )
        return path
    _check_name(output, "output_path")
    return f"tinker://{run}/sampler_weights/{output}"


async def interpolate(b: Backend, request: Request, body: dict) -> dict:
    """``POST /mint/checkpoints/interpolate``: a sampler checkpoint, a linear combination (a future).

    ``output_path`` is a name (written beside the first ``tinker://`` source, in its
    run), a full ``tinker://<that run>/sampler_weights/<name>`` path, or null (a new
    name); the result is written in no other run. An existing checkpoint there is
    replaced only when it is on the sources' base model (the engine checks it).

    Example::

        answer = await interpolate(backend, request, {"source_paths": [a, b],
                                                      "coefficients": [0.5, 0.5], "output_path": "soup"})
        assert (await result_of(answer))["path"] == f"tinker://{mid}/sampler_weights/soup"
    """
    op = parse_interpolate(body)
    bases = [
        await _path_base(b, path, f"source_paths[{i}]") for i, path in enumerate(op.source_paths)
    ]
    if len(set(bases)) > 1:
        raise ProtocolError(
            422,
            f"source_paths are on different base models ({bases}); interpolate checkpoints "
            "of one base model",
        )
    runs = [run_id_of(p) for p in op.source_paths if p.startswith("tinker://")]
    if not runs:
        raise ProtocolError(
            422,
            "source_paths name only base models; their combination is the base model itself "
            "(sample it by name); name at least one tinker:// checkpoint",
        )
    output = _output_path(op.output_path, runs[0])

    def free(e: Any) -> None:  # 422 now, not a failed future: never over another base model
        from mint_envkit.local.engine import interpolate as interp
        from mint_envkit.local.models.loader import resolve_model_name

        interp.check_output(e, output, resolve_model_name(bases[0]))

    await b.engine_call(free)

    def fn(e: Any) -> str:
        from mint_envkit.local.engine import interpolate as interp

        return str(
            interp.interpolate_checkpoints(e, op.source_paths, op.coefficients, output=output)
        )

    def convert(path: str) -> dict[str, Any]:
        return {
            "type": "mint_interpolate_checkpoints",
            "path": path,
            "checkpoint_type": "sampler",
            "source_paths": op.source_paths,
            "coefficients": op.coefficients,
            "has_rank_shards": False,
        }

    def on_success(path: str) -> None:
        b.known_runs.add(run_id_of(path))
        b.checkpoint_bases[path] = bases[0]

    request_id = b.futures.create("interpolate_checkpoints")
    b.start_op(request_id, fn, convert, on_success)
    return {"request_id": request_id}
