"""The Tinker wire protocol, as the embedded server reads and writes it.

Pure functions, no HTTP and no torch: request bodies (already decoded JSON)
are validated with the SDK's own pydantic request types and turned into
plain Python values for the engine; engine results are turned into the JSON
shapes the SDK's response types accept (the SDK validates responses
strictly). Every problem with a request raises :class:`ProtocolError`, which
carries the HTTP status and a message a person can act on.

Example::

    from mint_envkit.local.protocol import ProtocolError, parse_sample

    req = parse_sample({
        "sampling_session_id": "s-1", "seq_id": 0, "num_samples": 2,
        "prompt": {"chunks": [{"tokens": [1, 2, 3], "type": "encoded_text"}]},
        "sampling_params": {"max_tokens": 4, "temperature": 1.0},
    })
    req.prompt          # [1, 2, 3]
    req.max_tokens      # 4

    try:
        parse_sample({"prompt": {"chunks": []}, "sampling_params": {}})
    except ProtocolError as err:
        err.status, err.message   # (422, 'the prompt is empty: ...')
"""

from __future__ import annotations

import base64
import json
import math
import re
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import attrs
import pydantic
from tinker import types as tt
from tinker.types._pydantic_types.forward_backward_request import (
    ForwardBackwardRequest as _FwdBwdRequest,
)
from tinker.types._pydantic_types.forward_request import ForwardRequest as _FwdRequest

__all__ = [
    "LOSS_FN_REQUIRED_INPUTS",
    "ForwardOp",
    "ProtocolError",
    "SampleOp",
    "check_checkpoint_name",
    "checkpoint_json",
    "forward_output_json",
    "make_jwt",
    "parse_create_model",
    "parse_create_sampling_session",
    "parse_forward",
    "parse_json_body",
    "parse_load_weights",
    "parse_model_id_request",
    "parse_optim_step",
    "parse_retrieve_future",
    "parse_sample",
    "parse_save_weights",
    "parse_save_weights_for_sampler",
    "parse_weights_info",
    "sample_response_json",
    "sanitize_metrics",
]

LOSS_FN_REQUIRED_INPUTS: dict[str, tuple[str, ...]] = {
    "cross_entropy": ("target_tokens",),
    "importance_sampling": ("target_tokens", "logprobs", "advantages"),
    "ppo": ("target_tokens", "logprobs", "advantages"),
}
"""The loss functions the local backend supports (the engine's ``SUPPORTED_LOSSES``), and
the ``loss_fn_inputs`` each needs. ``cispo`` and ``dro`` (in the SDK's enum) are refused."""

_MAX_ERRORS_SHOWN = 4


@attrs.define
class ProtocolError(Exception):
    """A request the server refuses, with the HTTP status to answer and a readable message.

    Example::

        raise ProtocolError(404, "unknown model_id 'm-7'; create one with create_lora_training_client")
    """

    status: int
    message: str

    def __str__(self) -> str:
        return self.message


@attrs.frozen
class ForwardOp:
    """A validated ``forward`` / ``forward_backward`` request in engine terms.

    ``data`` items are ``{"model_input": [ids], "loss_fn_inputs": {name: [values]}}``.

    Example::

        op = parse_forward(body, backward=True)
        engine.forward(op.model_id, op.data, op.loss_fn, op.loss_fn_config, backward=True)
    """

    model_id: str
    seq_id: int | None
    data: list[dict[str, Any]]
    loss_fn: str
    loss_fn_config: dict[str, float] | None


@attrs.frozen
class SampleOp:
    """A validated ``asample`` request in engine terms.

    Example::

        op = parse_sample(body)
        engine.sample(sampler_id, op.prompt, num_samples=op.num_samples, max_tokens=op.max_tokens)
    """

    sampling_session_id: str | None
    base_model: str | None
    model_path: str | None
    prompt: list[int]
    num_samples: int
    max_tokens: int | None
    temperature: float
    top_p: float
    top_k: int
    seed: int | None
    stop: list[str] | list[int] | None
    prompt_logprobs: bool


# --------------------------------------------------------------------------- helpers


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """Decode a request body; anything but a JSON object is a 400.

    Example::

        parse_json_body(b'{"model_id": "m"}')   # {'model_id': 'm'}
        parse_json_body(b'{oops')                # ProtocolError(400, 'request body is not valid JSON ...')
    """
    if not raw.strip():
        raise ProtocolError(400, "request body is empty; send a JSON object")
    try:
        body = json.loads(raw)
    except (UnicodeDecodeError, json.JSONDecodeError) as err:
        raise ProtocolError(400, f"request body is not valid JSON: {err}") from None
    if not isinstance(body, dict):
        raise ProtocolError(400, f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _format_validation_error(err: pydantic.ValidationError) -> str:
    parts = []
    for item in err.errors()[:_MAX_ERRORS_SHOWN]:
        loc = ".".join(str(p) for p in item.get("loc", ())) or "(body)"
        parts.append(f"{loc}: {item.get('msg', 'invalid')}")
    more = len(err.errors()) - _MAX_ERRORS_SHOWN
    if more > 0:
        parts.append(f"... and {more} more")
    return "; ".join(parts)


def _strip_locs(body: Any, locs: list[tuple[Any, ...]]) -> Any:
    body = json.loads(json.dumps(body))  # deep copy of plain JSON
    for loc in locs:
        node = body
        for key in loc[:-1]:
            try:
                node = node[key]
            except (KeyError, IndexError, TypeError):
                node = None
                break
        if isinstance(node, dict):
            node.pop(loc[-1], None)
    return body


def _validate(model_cls: type[pydantic.BaseModel], body: Mapping[str, Any], what: str) -> Any:
    """Validate with an SDK request type; unknown extra fields are dropped, not fatal.

    The SDK's request types forbid extra fields; a newer client that adds one
    should still work here, so extras are removed and validation retried once.
    """
    try:
        return model_cls.model_validate(body)
    except pydantic.ValidationError as err:
        errors = err.errors()
        extras = [e["loc"] for e in errors if e.get("type") == "extra_forbidden"]
        if extras and len(extras) == len(errors):
            try:
                return model_cls.model_validate(_strip_locs(body, extras))
            except pydantic.ValidationError as err2:
                err = err2
        raise ProtocolError(
            422, f"invalid {what} request: {_format_validation_error(err)}"
        ) from None


def _model_input_tokens(model_input: Any, what: str) -> list[int]:
    tokens: list[int] = []
    for i, chunk in enumerate(model_input.chunks):
        if not isinstance(chunk, tt.EncodedTextChunk):
            raise ProtocolError(
                422,
                f"{what}: chunk {i} is a {getattr(chunk, 'type', type(chunk).__name__)!r} chunk; "
                "the local backend takes token chunks (type 'encoded_text') only",
            )
        tokens.extend(int(t) for t in chunk.tokens)
    negative = [t for t in tokens if t < 0]
    if negative:
        raise ProtocolError(422, f"{what}: token ids must be non-negative, got {negative[:5]}")
    return tokens


def _tensor_list(name: str, tensor: Any, where: str) -> list[float] | list[int]:
    try:
        arr = tensor.to_numpy()
    except Exception as err:  # bad shape / sparse layout
        raise ProtocolError(422, f"{where}: loss_fn_inputs[{name!r}] is malformed: {err}") from None
    if arr.ndim != 1:
        raise ProtocolError(
            422,
            f"{where}: loss_fn_inputs[{name!r}] has shape {list(arr.shape)}; "
            "the local backend takes 1-D arrays (one value per position)",
        )
    values = arr.tolist()
    if tensor.dtype == "float32" and not all(math.isfinite(v) for v in values):
        raise ProtocolError(422, f"{where}: loss_fn_inputs[{name!r}] contains NaN or infinity")
    if name == "target_tokens":
        if any(float(v) != int(v) for v in values):
            raise ProtocolError(422, f"{where}: target_tokens must be integers")
        values = [int(v) for v in values]
        if any(v < 0 for v in values):
            raise ProtocolError(422, f"{where}: target_tokens must be non-negative token ids")
    return values


# --------------------------------------------------------------------------- requests


def parse_create_model(body: Mapping[str, Any]) -> tt.CreateModelRequest:
    """Validate a ``create_model`` body; the LoRA rank must be positive.

    Example::

        req = parse_create_model({"session_id": "s", "model_seq_id": 0,
                                  "base_model": "mint-envkit/tiny-qwen3",
                                  "lora_config": {"rank": 8}})
        req.lora_config.rank   # 8
    """
    req = _validate(tt.CreateModelRequest, body, "create_model")
    if req.lora_config is not None and req.lora_config.rank < 1:
        raise ProtocolError(422, f"lora_config.rank must be at least 1, got {req.lora_config.rank}")
    if req.lora_config is not None and not (
        req.lora_config.train_mlp or req.lora_config.train_attn or req.lora_config.train_unembed
    ):
        raise ProtocolError(
            422, "lora_config: at least one of train_mlp, train_attn, train_unembed must be true"
        )
    return req


def parse_model_id_request(body: Mapping[str, Any], what: str) -> str:
    """The ``model_id`` of a ``get_info`` / ``unload_model`` body.

    Example::

        parse_model_id_request({"model_id": "m-1", "type": "get_info"}, "get_info")  # 'm-1'
    """
    model_id = body.get("model_id")
    if not isinstance(model_id, str) or not model_id:
        raise ProtocolError(422, f"invalid {what} request: model_id (a string) is required")
    return model_id


def parse_forward(body: Mapping[str, Any], *, backward: bool) -> ForwardOp:
    """Validate a ``forward`` / ``forward_backward`` body and convert it for the engine.

    Checks the loss function, that each datum has the inputs its loss needs,
    and that every ``loss_fn_inputs`` array has one value per input token.

    Example::

        op = parse_forward({
            "model_id": "m-1", "seq_id": 1,
            "forward_backward_input": {"loss_fn": "cross_entropy", "data": [{
                "model_input": {"chunks": [{"tokens": [1, 2], "type": "encoded_text"}]},
                "loss_fn_inputs": {"target_tokens": {"data": [2, 3], "dtype": "int64"}},
            }]},
        }, backward=True)
        op.data[0]   # {'model_input': [1, 2], 'loss_fn_inputs': {'target_tokens': [2, 3]}}
    """
    what = "forward_backward" if backward else "forward"
    input_key = "forward_backward_input" if backward else "forward_input"
    raw_input = body.get(input_key)
    if isinstance(raw_input, Mapping):
        loss_fn = raw_input.get("loss_fn")
        if loss_fn not in LOSS_FN_REQUIRED_INPUTS:
            raise ProtocolError(
                422,
                f"unsupported loss_fn {loss_fn!r}; the local backend supports "
                f"{', '.join(sorted(LOSS_FN_REQUIRED_INPUTS))}",
            )
    req = _validate(_FwdBwdRequest if backward else _FwdRequest, body, what)
    fb_input = req.forward_backward_input if backward else req.forward_input
    if not fb_input.data:
        raise ProtocolError(422, f"{what}: data is empty; send at least one Datum")
    required = LOSS_FN_REQUIRED_INPUTS[fb_input.loss_fn]
    data: list[dict[str, Any]] = []
    for i, datum in enumerate(fb_input.data):
        where = f"{what}: datum {i}"
        tokens = _model_input_tokens(datum.model_input, f"{where} model_input")
        if not tokens:
            raise ProtocolError(422, f"{where}: model_input is empty")
        missing = [k for k in required if k not in datum.loss_fn_inputs]
        if missing:
            raise ProtocolError(
                422,
                f"{where}: loss_fn {fb_input.loss_fn!r} needs loss_fn_inputs "
                f"{list(required)}; missing {missing}",
            )
        inputs: dict[str, Any] = {}
        for name, tensor in datum.loss_fn_inputs.items():
            values = _tensor_list(name, tensor, where)
            if len(values) != len(tokens):
                raise ProtocolError(
                    422,
                    f"{where}: loss_fn_inputs[{name!r}] has {len(values)} values but "
                    f"model_input has {len(tokens)} tokens; they must be the same length",
                )
            inputs[name] = values
        data.append({"model_input": tokens, "loss_fn_inputs": inputs})
    config = dict(fb_input.loss_fn_config) if fb_input.loss_fn_config else None
    return ForwardOp(
        model_id=req.model_id,
        seq_id=req.seq_id,
        data=data,
        loss_fn=fb_input.loss_fn,
        loss_fn_config=config,
    )


def parse_optim_step(body: Mapping[str, Any]) -> tt.OptimStepRequest:
    """Validate an ``optim_step`` body (Adam parameters in their valid ranges).

    Example::

        req = parse_optim_step({"model_id": "m-1", "seq_id": 2,
                                "adam_params": {"learning_rate": 1e-3}})
        req.adam_params.beta2   # 0.95
    """
    req = _validate(tt.OptimStepRequest, body, "optim_step")
    p = req.adam_params
    problems = []
    if not (math.isfinite(p.learning_rate) and p.learning_rate >= 0):
        problems.append(f"learning_rate must be >= 0, got {p.learning_rate}")
    for name in ("beta1", "beta2"):
        value = getattr(p, name)
        if not (0.0 <= value < 1.0):
            problems.append(f"{name} must be in [0, 1), got {value}")
    if not (p.eps >= 0):
        problems.append(f"eps must be >= 0, got {p.eps}")
    if not (p.weight_decay >= 0):
        problems.append(f"weight_decay must be >= 0, got {p.weight_decay}")
    if not (p.grad_clip_norm >= 0):
        problems.append(
            f"grad_clip_norm must be >= 0 (0 turns clipping off), got {p.grad_clip_norm}"
        )
    if problems:
        raise ProtocolError(422, "invalid adam_params: " + "; ".join(problems))
    return req


_NAME_RE = re.compile(r"^[A-Za-z0-9._-]{1,128}$")


def check_checkpoint_name(name: str) -> str:
    """Refuse checkpoint names that could leave the state directory or break a path.

    The rule is the engine's: 1-128 characters from ``[A-Za-z0-9._-]``, not
    starting with '.', and (stricter) no '..' anywhere.

    Example::

        check_checkpoint_name("step-000010")   # 'step-000010'
        check_checkpoint_name("../etc")         # ProtocolError(422, ...)
    """
    if not _NAME_RE.match(name) or name.startswith(".") or ".." in name:
        raise ProtocolError(
            422,
            f"invalid checkpoint name {name!r}: use 1-128 characters from [A-Za-z0-9._-], "
            "not starting with '.', with no '..' (names cannot leave the state directory)",
        )
    return name


def parse_save_weights(body: Mapping[str, Any]) -> tt.SaveWeightsRequest:
    """Validate a ``save_weights`` body (``save_state``); the name is checked.

    Example::

        parse_save_weights({"model_id": "m-1", "path": "step-1", "seq_id": 3}).path  # 'step-1'
    """
    req = _validate(tt.SaveWeightsRequest, body, "save_weights")
    if req.path is not None:
        check_checkpoint_name(req.path)
    return req


def parse_save_weights_for_sampler(body: Mapping[str, Any]) -> tt.SaveWeightsForSamplerRequest:
    """Validate a ``save_weights_for_sampler`` body; a name, when given, is checked.

    Example::

        parse_save_weights_for_sampler({"model_id": "m-1", "seq_id": 4}).path   # None
    """
    req = _validate(tt.SaveWeightsForSamplerRequest, body, "save_weights_for_sampler")
    if req.path is not None:
        check_checkpoint_name(req.path)
    return req


def _check_tinker_path(path: str, what: str) -> str:
    if not path.startswith("tinker://"):
        raise ProtocolError(
            422, f"{what}: {path!r} is not a tinker:// path (as returned by save_state)"
        )
    if ".." in path.split("://", 1)[1].split("/"):
        raise ProtocolError(422, f"{what}: {path!r} must not contain '..'")
    return path


def parse_load_weights(body: Mapping[str, Any]) -> tt.LoadWeightsRequest:
    """Validate a ``load_weights`` body (resume from a ``tinker://`` path).

    Example::

        req = parse_load_weights({"model_id": "m-2", "path": "tinker://m-1/weights/a",
                                  "optimizer": True, "seq_id": 1})
        req.optimizer   # True
    """
    req = _validate(tt.LoadWeightsRequest, body, "load_weights")
    _check_tinker_path(req.path, "load_weights")
    return req


def parse_weights_info(body: Mapping[str, Any]) -> str:
    """The ``tinker_path`` of a ``weights_info`` body.

    Example::

        parse_weights_info({"tinker_path": "tinker://m-1/weights/a"})   # 'tinker://m-1/weights/a'
    """
    path = body.get("tinker_path")
    if not isinstance(path, str):
        raise ProtocolError(422, "invalid weights_info request: tinker_path (a string) is required")
    return _check_tinker_path(path, "weights_info")


def parse_create_sampling_session(body: Mapping[str, Any]) -> tt.CreateSamplingSessionRequest:
    """Validate a ``create_sampling_session`` body: exactly one of base_model / model_path.

    Example::

        req = parse_create_sampling_session({"session_id": "s", "sampling_session_seq_id": 0,
                                             "base_model": "mint-envkit/tiny-qwen3"})
        req.base_model   # 'mint-envkit/tiny-qwen3'
    """
    req = _validate(tt.CreateSamplingSessionRequest, body, "create_sampling_session")
    if (req.base_model is None) == (req.model_path is None):
        raise ProtocolError(
            422, "create_sampling_session: give exactly one of base_model or model_path"
        )
    if req.model_path is not None:
        _check_tinker_path(req.model_path, "create_sampling_session")
    return req


def parse_sample(body: Mapping[str, Any]) -> SampleOp:
    """Validate an ``asample`` body and convert it for the engine.

    Refuses empty prompts, non-positive ``max_tokens`` or ``num_samples``, and
    sampling parameters out of range; ``topk_prompt_logprobs`` is not supported.

    Example::

        op = parse_sample({"sampling_session_id": "s-1", "num_samples": 4,
                           "prompt": {"chunks": [{"tokens": [5, 6], "type": "encoded_text"}]},
                           "sampling_params": {"max_tokens": 8, "stop": "\\n"}})
        op.stop   # ['\\n']
    """
    req = _validate(tt.SampleRequest, body, "asample")
    prompt = _model_input_tokens(req.prompt, "prompt")
    if not prompt:
        raise ProtocolError(422, "the prompt is empty: send at least one token")
    if req.num_samples < 1:
        raise ProtocolError(422, f"num_samples must be at least 1, got {req.num_samples}")
    sp = req.sampling_params
    if sp.max_tokens is not None and sp.max_tokens < 1:
        raise ProtocolError(
            422,
            f"max_tokens must be a positive number of tokens, got {sp.max_tokens}",
        )
    if not (math.isfinite(sp.temperature) and sp.temperature > 0):
        raise ProtocolError(
            422,
            f"temperature must be > 0, got {sp.temperature} "
            "(use a small value such as 1e-3 for near-greedy decoding)",
        )
    if not (0.0 < sp.top_p <= 1.0):
        raise ProtocolError(422, f"top_p must be in (0, 1], got {sp.top_p}")
    if sp.top_k == 0 or sp.top_k < -1:
        raise ProtocolError(422, f"top_k must be -1 (off) or a positive integer, got {sp.top_k}")
    if req.topk_prompt_logprobs:
        raise ProtocolError(
            422, "topk_prompt_logprobs is not supported by the local backend; use prompt_logprobs"
        )
    stop: list[str] | list[int] | None
    if sp.stop is None:
        stop = None
    elif isinstance(sp.stop, str):
        stop = [sp.stop]
    else:
        stop = list(sp.stop)  # type: ignore[arg-type]
        if any(isinstance(s, int) and s < 0 for s in stop):
            raise ProtocolError(422, f"stop token ids must be non-negative, got {stop}")
    if req.sampling_session_id is None and req.base_model is None and req.model_path is None:
        raise ProtocolError(
            422, "asample: give sampling_session_id (from create_sampling_session) or base_model"
        )
    if req.model_path is not None:
        _check_tinker_path(req.model_path, "asample")
    return SampleOp(
        sampling_session_id=req.sampling_session_id,
        base_model=req.base_model,
        model_path=req.model_path,
        prompt=prompt,
        num_samples=req.num_samples,
        max_tokens=sp.max_tokens,
        temperature=float(sp.temperature),
        top_p=float(sp.top_p),
        top_k=int(sp.top_k),
        seed=sp.seed,
        stop=stop,
        prompt_logprobs=bool(req.prompt_logprobs),
    )


def parse_retrieve_future(body: Mapping[str, Any]) -> str:
    """The ``request_id`` of a ``retrieve_future`` body.

    Example::

        parse_retrieve_future({"request_id": "req-1", "allow_metadata_only": True})  # 'req-1'
    """
    request_id = body.get("request_id")
    if not isinstance(request_id, str) or not request_id:
        raise ProtocolError(
            422, "invalid retrieve_future request: request_id (a string) is required"
        )
    return request_id


# --------------------------------------------------------------------------- responses


def sanitize_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """Metrics as the SDK can combine them: ``name:reduction`` keys, float values.

    The SDK splits every key on ':' when it merges chunked results, so a key
    without exactly one ':' gets ':mean' appended (a key with more is dropped).

    Example::

        sanitize_metrics({"loss:sum": 1, "lr": 0.1})   # {'loss:sum': 1.0, 'lr:mean': 0.1}
    """
    out: dict[str, float] = {}
    for key, value in (metrics or {}).items():
        try:
            number = float(value)
        except (TypeError, ValueError):
            continue
        key = str(key)
        colons = key.count(":")
        if colons == 0:
            key = f"{key}:mean"
        elif colons > 1:
            continue
        out[key] = number
    return out


def forward_output_json(logprobs: Sequence[Sequence[float]], metrics: Mapping[str, Any]) -> dict:
    """A ``ForwardBackwardOutput`` body: learner logprobs per datum, and metrics.

    Example::

        forward_output_json([[-0.5, -1.0]], {"loss:sum": 1.5})["loss_fn_outputs"][0]["logprobs"]
        # {'data': [-0.5, -1.0], 'dtype': 'float32', 'shape': [2]}
    """
    outputs = []
    for lp in logprobs:
        values = [float(v) for v in lp]
        outputs.append({"logprobs": {"data": values, "dtype": "float32", "shape": [len(values)]}})
    return {
        "loss_fn_output_type": "TorchLossReturn",
        "loss_fn_outputs": outputs,
        "metrics": sanitize_metrics(metrics),
    }


def sample_response_json(
    sequences: Sequence[Any], prompt_logprobs: Sequence[float | None] | None
) -> dict:
    """A ``SampleResponse`` body from engine ``SampledSequence`` objects.

    Example::

        sample_response_json([seq], None)
        # {'type': 'sample', 'sequences': [{'tokens': [...], 'logprobs': [...], 'stop_reason': 'stop'}]}
    """
    body: dict[str, Any] = {
        "type": "sample",
        "sequences": [
            {
                "tokens": [int(t) for t in s.tokens],
                "logprobs": [float(v) for v in s.logprobs],
                "stop_reason": s.stop_reason,
            }
            for s in sequences
        ],
    }
    if prompt_logprobs is not None:
        body["prompt_logprobs"] = [None if v is None else float(v) for v in prompt_logprobs]
    return body


def _iso_time(value: Any) -> str:
    if isinstance(value, datetime):
        dt = value if value.tzinfo else value.replace(tzinfo=UTC)
        return dt.isoformat()
    if isinstance(value, int | float):
        return datetime.fromtimestamp(float(value), tz=UTC).isoformat()
    if isinstance(value, str) and value:
        return value
    return datetime.now(tz=UTC).isoformat()


def checkpoint_json(info: Mapping[str, Any]) -> dict[str, Any]:
    """A ``Checkpoint`` body from an engine checkpoint record.

    The checkpoint id and type are derived from the ``tinker://run/kind/name``
    path when it has that shape, so the SDK's path-based delete works.

    Example::

        checkpoint_json({"tinker_path": "tinker://m-1/weights/a", "time": 0, "size_bytes": 10})
        # {'checkpoint_id': 'weights/a', 'checkpoint_type': 'training', ...}
    """
    path = str(info.get("tinker_path", ""))
    try:
        parsed = tt.ParsedCheckpointTinkerPath.from_tinker_path(path)
        checkpoint_id, checkpoint_type = parsed.checkpoint_id, parsed.checkpoint_type
    except ValueError:
        checkpoint_id = str(info.get("checkpoint_id", path))
        kind = str(info.get("checkpoint_type", "training"))
        checkpoint_type = "sampler" if kind in ("sampler", "sampler_weights") else "training"
    size = info.get("size_bytes")
    return {
        "checkpoint_id": checkpoint_id,
        "checkpoint_type": checkpoint_type,
        "time": _iso_time(info.get("time")),
        "tinker_path": path,
        "size_bytes": int(size) if isinstance(size, int | float) else None,
    }


def make_jwt(subject: str = "mint-envkit-local", lifetime_s: float = 10 * 365 * 24 * 3600) -> str:
    """An unsigned JWT whose ``exp`` the SDK can parse (the local server checks no keys).

    Example::

        token = make_jwt()
        token.startswith("eyJ")   # True: the SDK recognises it as a JWT
    """

    def b64(obj: dict) -> str:
        raw = json.dumps(obj, separators=(",", ":")).encode()
        return base64.urlsafe_b64encode(raw).rstrip(b"=").decode()

    now = int(time.time())
    header = {"alg": "none", "typ": "JWT"}
    payload = {"sub": subject, "iat": now, "exp": now + int(lifetime_s), "iss": "mint-envkit"}
    return f"{b64(header)}.{b64(payload)}."
