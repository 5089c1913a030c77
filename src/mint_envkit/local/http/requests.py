"""Request parsing: the server's one validator of request values (Tinker wire protocol).

Pure functions, no HTTP and no torch: a decoded JSON body is validated (with
the SDK's public pydantic request types where it has them) and turned into
plain Python values for the engine, which trusts them. Every problem raises
:class:`ProtocolError`, which carries the HTTP status and one message a person
can act on. What only the loaded model knows (its vocabulary and context
length) is left to the engine. The bodies that carry training data
(``forward``, ``forward_backward``, ``forward_backward_reverse_kl``) are parsed
in :mod:`mint_envkit.local.http.datums`, sampling requests in
:mod:`mint_envkit.local.http.samples`; the rest here.

Example::

    from mint_envkit.local.http.requests import ProtocolError, parse_optim_step

    req = parse_optim_step({"model_id": "m-1", "adam_params": {"learning_rate": 1e-3}})
    assert req.adam_params.beta1 == 0.9

    try:
        parse_optim_step({"model_id": "m-1", "adam_params": {"learning_rate": -1}})
    except ProtocolError as err:
        assert err.status == 422   # 'invalid adam_params: learning_rate must be ...'
        assert err.message.startswith("invalid adam_params: learning_rate must be")
    else:
        raise AssertionError("a negative learning rate is refused")
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from typing import Any, Literal

import attrs
import pydantic
from tinker import types as tt

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.bounds import coefficient_problem, learning_rate_problem
from mint_envkit.tools.arguments import json_depth

MAX_LORA_RANK = 4096
"""The largest LoRA rank ``create_model`` accepts."""

_MAX_ERRORS_SHOWN = 4
_NAME_RE = re.compile(r"[A-Za-z0-9._-]{1,128}")
MAX_JSON_DEPTH = 64
"""Deepest nesting of arrays and objects a request body may have (the SDK sends under 10)."""
MAX_INT_DIGITS = 40
"""Longest integer literal a request body may hold (int64 needs 19 digits)."""
_CHECKPOINT_KINDS = ("weights", "sampler_weights")
MAX_INTERPOLATE_SOURCES = 64
"""The most ``source_paths`` one ``interpolate_checkpoints`` may combine (each is read in full)."""
THREAD_PARSE_BYTES = 64 << 10
"""Bodies bigger than this are decoded and validated in a worker thread, so the event loop
keeps answering (health checks while a big batch is parsed)."""


@attrs.define
class ProtocolError(MintEnvkitError):
    """A request the server refuses, with the HTTP status to answer and a readable message.

    Example::

        err = ProtocolError(404, "unknown model_id 'm-7'; create one with create_lora_training_client")
        assert str(err) == err.message   # raise it; the server answers err.status
    """

    status: int
    message: str

    def __str__(self) -> str:
        return self.message


# --------------------------------------------------------------------------- helpers


class _Strict(pydantic.BaseModel):
    """A wire shape declared here: frozen, extra fields forbidden (dropped by validate_body)."""

    model_config = pydantic.ConfigDict(extra="forbid", frozen=True, protected_namespaces=())


def parse_json_body(raw: bytes) -> dict[str, Any]:
    """Decode a request body; anything but a JSON object is a 400.

    Depth and size are safe: nesting past :data:`MAX_JSON_DEPTH` and integers
    longer than :data:`MAX_INT_DIGITS` digits are a 400, never a crash.

    Example::

        assert parse_json_body(b'{"model_id": "m"}') == {"model_id": "m"}
        try:
            parse_json_body(b"{oops")
        except ProtocolError as err:
            assert err.status == 400   # 'request body is not valid JSON: ...'
        else:
            raise AssertionError("not JSON is refused")
    """
    if not raw.strip():
        raise ProtocolError(400, "request body is empty; send a JSON object")
    try:
        body = json.loads(raw, parse_int=_parse_int)
    except RecursionError:
        raise ProtocolError(
            400, f"request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
        ) from None
    except ValueError as err:  # also JSONDecodeError, UnicodeDecodeError, int digit limit
        raise ProtocolError(400, f"request body is not valid JSON: {err}") from None
    if json_depth(body, MAX_JSON_DEPTH) > MAX_JSON_DEPTH:
        raise ProtocolError(
            400, f"request body is nested too deeply (at most {MAX_JSON_DEPTH} levels)"
        )
    if not isinstance(body, dict):
        raise ProtocolError(400, f"request body must be a JSON object, got {type(body).__name__}")
    return body


def _parse_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise ValueError(f"an integer of {len(text)} digits (at most {MAX_INT_DIGITS})")
    return int(text)


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


def validate_body(model_cls: type[pydantic.BaseModel], body: Mapping[str, Any], what: str) -> Any:
    """Validate ``body`` with a pydantic request type; unknown extra fields are dropped.

    Request types forbid extra fields; a newer client that adds one should
    still work here, so extras are removed and validation retried once.

    Example::

        body = {"model_id": "m-1", "adam_params": {"learning_rate": 1e-3}, "newer_field": 1}
        req = validate_body(tt.OptimStepRequest, body, "optim_step")   # the extra is dropped
        assert req.adam_params.learning_rate == 1e-3
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


def model_input_tokens(model_input: tt.ModelInput, what: str) -> list[int]:
    """The token ids of a validated ``ModelInput``: token chunks only, ids non-negative.

    Example::

        assert model_input_tokens(tt.ModelInput.from_ints([1, 2]), "prompt") == [1, 2]
    """
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


def _check_name(name: str, what: str = "checkpoint name") -> str:
    """1-128 characters from ``[A-Za-z0-9._-]``, not starting with '.', no '..' anywhere."""
    if not _NAME_RE.fullmatch(name) or name.startswith(".") or ".." in name:
        raise ProtocolError(
            422,
            f"invalid {what} {name!r}: use 1-128 characters from [A-Za-z0-9._-], "
            "not starting with '.', with no '..' (names cannot leave the state directory)",
        )
    return name


def check_tinker_path(path: str, what: str) -> str:
    """A checkpoint path ``tinker://<model_id>/<weights|sampler_weights>/<name>``, checked.

    Example::

        assert check_tinker_path("tinker://m-1/weights/a", "load_weights") == "tinker://m-1/weights/a"
        try:
            check_tinker_path("tinker://m-1/../x", "load_weights")
        except ProtocolError as err:
            assert err.status == 422   # "load_weights: 'tinker://m-1/../x' must not contain '..'"
        else:
            raise AssertionError("'..' is refused")
    """
    if not path.startswith("tinker://"):
        raise ProtocolError(
            422, f"{what}: {path!r} is not a tinker:// path (as returned by save_state)"
        )
    parts = path.removeprefix("tinker://").split("/")
    if ".." in parts:
        raise ProtocolError(422, f"{what}: {path!r} must not contain '..'")
    if len(parts) != 3 or parts[1] not in _CHECKPOINT_KINDS:
        raise ProtocolError(
            422,
            f"{what}: checkpoint path {path!r} must have the form "
            "tinker://<model_id>/weights/<name> or tinker://<model_id>/sampler_weights/<name>",
        )
    _check_name(parts[0], "model_id in checkpoint path")
    _check_name(parts[2])
    return path


def run_id_of(path: str) -> str:
    """The training run (model_id) a ``tinker://`` checkpoint path belongs to.

    Example::

        assert run_id_of("tinker://model-1/weights/a") == "model-1"
    """
    return path.removeprefix("tinker://").split("/", 1)[0]


def _required_string(body: Mapping[str, Any], key: str, what: str) -> str:
    value = body.get(key)
    if not isinstance(value, str) or not value:
        raise ProtocolError(422, f"invalid {what} request: {key} (a string) is required")
    return value


# --------------------------------------------------------------------------- models


def parse_create_model(body: Mapping[str, Any]) -> tt.CreateModelRequest:
    """Validate a ``create_model`` body: LoRA rank 1..4096, at least one part trained.

    Example::

        req = parse_create_model({"session_id": "s", "model_seq_id": 0,
                                  "base_model": "mint-envkit/tiny-qwen3",
                                  "lora_config": {"rank": 8}})
        assert req.lora_config.rank == 8
    """
    req = validate_body(tt.CreateModelRequest, body, "create_model")
    lora = req.lora_config
    if lora is not None and not 1 <= lora.rank <= MAX_LORA_RANK:
        raise ProtocolError(
            422, f"lora_config.rank must be at least 1 and at most {MAX_LORA_RANK}, got {lora.rank}"
        )
    if lora is not None and not (lora.train_mlp or lora.train_attn or lora.train_unembed):
        raise ProtocolError(
            422, "lora_config: at least one of train_mlp, train_attn, train_unembed must be true"
        )
    return req


def parse_model_id_request(body: Mapping[str, Any], what: str) -> str:
    """The ``model_id`` of a ``get_info`` / ``unload_model`` body.

    Example::

        assert parse_model_id_request({"model_id": "m-1", "type": "get_info"}, "get_info") == "m-1"
    """
    return _required_string(body, "model_id", what)


def parse_paging(query: Mapping[str, str], default_limit: int) -> tuple[int, int]:
    """``(offset, limit)`` of a listing from its query parameters (negative values become 0).

    Example::

        assert parse_paging({"limit": "5"}, 20) == (0, 5)
    """
    try:
        limit = int(query.get("limit", default_limit))
        offset = int(query.get("offset", 0))
    except ValueError:
        raise ProtocolError(422, "limit and offset must be integers") from None
    return max(0, offset), max(0, limit)


def parse_run_id(run_id: str) -> str:
    """A training run id from a REST path (``/training_runs/{run_id}/...``), checked.

    Example::

        assert parse_run_id("model-1") == "model-1"
        try:
            parse_run_id("..")
        except ProtocolError as err:
            assert err.status == 422   # "invalid training run id (model_id) '..': use ..."
        else:
            raise AssertionError("'..' is refused")
    """
    return _check_name(run_id, "training run id (model_id)")


def parse_delete_checkpoint(run_id: str, checkpoint_id: str) -> str:
    """The ``tinker://`` path of a ``DELETE .../checkpoints/{checkpoint_id}`` request.

    Example::

        assert parse_delete_checkpoint("m-1", "weights/a") == "tinker://m-1/weights/a"
    """
    parse_run_id(run_id)
    if not checkpoint_id or ".." in checkpoint_id.split("/"):
        raise ProtocolError(
            422,
            f"invalid checkpoint id {checkpoint_id!r}: use <weights|sampler_weights>/<name>",
        )
    return check_tinker_path(f"tinker://{run_id}/{checkpoint_id}", "delete_checkpoint")


# --------------------------------------------------------------------------- training


def parse_optim_step(body: Mapping[str, Any]) -> tt.OptimStepRequest:
    """Validate an ``optim_step`` body (Adam parameters finite and in their ranges).

    Example::

        req = parse_optim_step({"model_id": "m-1", "seq_id": 2,
                                "adam_params": {"learning_rate": 1e-3}})
        assert req.adam_params.beta2 == 0.95
    """
    req = validate_body(tt.OptimStepRequest, body, "optim_step")
    p = req.adam_params
    problems = []
    lr_problem = learning_rate_problem(p.learning_rate)
    if lr_problem is not None:
        problems.append(lr_problem)
    for name in ("eps", "weight_decay", "grad_clip_norm"):
        value = getattr(p, name)
        if not (math.isfinite(value) and value >= 0):
            off = " (0 turns clipping off)" if name == "grad_clip_norm" else ""
            problems.append(f"{name} must be finite and >= 0{off}, got {value}")
    for name in ("beta1", "beta2"):
        value = getattr(p, name)
        if not (0.0 <= value < 1.0):
            problems.append(f"{name} must be in [0, 1), got {value}")
    if problems:
        raise ProtocolError(422, "invalid adam_params: " + "; ".join(problems))
    return req


def _named_save(model_cls: type[pydantic.BaseModel], body: Mapping[str, Any], what: str) -> Any:
    req = validate_body(model_cls, body, what)
    if req.path is not None:
        _check_name(req.path)
    return req


def parse_save_weights(body: Mapping[str, Any]) -> tt.SaveWeightsRequest:
    """Validate a ``save_weights`` body (``save_state``); the name is checked.

    Example::

        assert parse_save_weights({"model_id": "m-1", "path": "step-1", "seq_id": 3}).path == "step-1"
    """
    return _named_save(tt.SaveWeightsRequest, body, "save_weights")


def parse_save_weights_for_sampler(body: Mapping[str, Any]) -> tt.SaveWeightsForSamplerRequest:
    """Validate a ``save_weights_for_sampler`` body; a name, when given, is checked.

    Example::

        assert parse_save_weights_for_sampler({"model_id": "m-1", "seq_id": 4}).path is None
    """
    return _named_save(tt.SaveWeightsForSamplerRequest, body, "save_weights_for_sampler")


def parse_load_weights(body: Mapping[str, Any]) -> tt.LoadWeightsRequest:
    """Validate a ``load_weights`` body (resume from a ``tinker://`` path).

    Example::

        req = parse_load_weights({"model_id": "m-2", "path": "tinker://m-1/weights/a",
                                  "optimizer": True, "seq_id": 1})
        assert req.optimizer is True
    """
    req = validate_body(tt.LoadWeightsRequest, body, "load_weights")
    check_tinker_path(req.path, "load_weights")
    return req


def parse_weights_info(body: Mapping[str, Any]) -> str:
    """The ``tinker_path`` of a ``weights_info`` body.

    Example::

        assert parse_weights_info({"tinker_path": "tinker://m-1/weights/a"}) == "tinker://m-1/weights/a"
    """
    path = body.get("tinker_path")
    if not isinstance(path, str):
        raise ProtocolError(422, "invalid weights_info request: tinker_path (a string) is required")
    return check_tinker_path(path, "weights_info")


def parse_retrieve_future(body: Mapping[str, Any]) -> str:
    """The ``request_id`` of a ``retrieve_future`` body.

    Example::

        assert parse_retrieve_future({"request_id": "req-1", "allow_metadata_only": True}) == "req-1"
    """
    return _required_string(body, "request_id", "retrieve_future")


# --------------------------------------------------------------------------- MinT


class _InterpolateRequest(_Strict):
    source_paths: list[str]
    coefficients: list[float]
    output_path: str | None = None
    output_checkpoint_type: Literal["sampler"] = "sampler"
    type: Literal["mint_interpolate_checkpoints"] = "mint_interpolate_checkpoints"


@attrs.frozen
class InterpolateOp:
    """A validated ``checkpoints/interpolate`` request.

    Example::

        op = parse_interpolate({"source_paths": ["tinker://a/sampler_weights/s"],
                                "coefficients": [1.0], "output_path": "mix"})
        assert (op.coefficients, op.output_path) == ([1.0], "mix")
    """

    source_paths: list[str]
    coefficients: list[float]
    output_path: str | None


def parse_interpolate(body: Mapping[str, Any]) -> InterpolateOp:
    """Validate a ``checkpoints/interpolate`` body (counts, bounded finite coefficients).

    Example::

        op = parse_interpolate({"source_paths": ["tinker://a/sampler_weights/s"],
                                "coefficients": [1.0]})
        assert op.output_path is None
    """
    req = validate_body(_InterpolateRequest, body, "interpolate_checkpoints")
    if not req.source_paths:
        raise ProtocolError(
            422, "interpolate_checkpoints: source_paths is empty; name at least one checkpoint"
        )
    if len(req.coefficients) != len(req.source_paths):
        raise ProtocolError(
            422,
            f"interpolate_checkpoints: coefficients has {len(req.coefficients)} entries but "
            f"source_paths has {len(req.source_paths)}; give one coefficient per source path",
        )
    if len(req.source_paths) > MAX_INTERPOLATE_SOURCES:
        raise ProtocolError(
            413,
            f"interpolate_checkpoints: source_paths names {len(req.source_paths)} checkpoints, "
            f"over this server's limit of {MAX_INTERPOLATE_SOURCES}; combine them in steps",
        )
    for i, c in enumerate(req.coefficients):
        problem = coefficient_problem(c, field=f"coefficients[{i}]")
        if problem is not None:
            raise ProtocolError(422, f"interpolate_checkpoints: {problem}")
    return InterpolateOp(
        source_paths=list(req.source_paths),
        coefficients=[float(c) for c in req.coefficients],
        output_path=req.output_path,
    )
