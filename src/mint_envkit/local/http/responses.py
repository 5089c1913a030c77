"""Response shaping: engine results and errors as the JSON bodies the SDK accepts.

The SDK validates responses strictly, so every body is built here in its
wire shape: forward outputs, samples, checkpoints, the unsigned JWT, and the
error answers (a failed future's ``(message, category)``, a 4xx for a direct
endpoint). Pure functions apart from :class:`JSONResponse`; no torch.

No answer carries NaN or Infinity: they are not JSON, and the SDK's parser fails on
them with a non-retryable ``JSONDecodeError`` (issue 33: a sample of an interpolation
with coefficients 1e30 answered ``"logprobs":[NaN,...]``). :class:`JSONResponse` is the
one encoder of every answer; a body with a non-finite number raises
:func:`non_finite_error`, a ``ProtocolError`` 422 naming where the number is (the
route table answers it as any refused request). The engine refuses
non-finite results where it makes them (samples, forward, the reverse-KL loss, an
interpolation), so this is the last line, not the usual one.

Example::

    from mint_envkit.local.http.requests import ProtocolError
    from mint_envkit.local.http.responses import JSONResponse, sanitize_metrics

    assert sanitize_metrics({"loss:sum": 1, "lr": 0.1}) == {"loss:sum": 1.0, "lr:mean": 0.1}
    try:
        JSONResponse({"loss:sum": float("nan")})
    except ProtocolError as err:
        assert err.status == 422 and "loss:sum" in err.message
    else:
        raise AssertionError("NaN is never sent")
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

from starlette.responses import Response
from tinker import types as tt

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.http.requests import ProtocolError
from mint_envkit.local.state_dir import disk_error_message

logger = logging.getLogger("mint_envkit.local.server")

_NOT_FOUND_HINTS = (
    "not found",
    "unknown",
    "does not exist",
    "no such",
    "not available",
    "no checkpoint",
)


def non_finite_error(content: Any) -> ProtocolError:
    """The 422 for an answer that would carry NaN or Infinity (not JSON), naming where.

    Example::

        err = non_finite_error({"sequences": [{"logprobs": [-1.0, float("nan")]}]})
        assert err.status == 422 and "nan at sequences[0].logprobs[1]" in err.message
    """
    where, value = _first_non_finite(content, "") or ("the body", None)
    return ProtocolError(
        422,
        f"the answer holds a non-finite number ({value!r} at {where or 'the top'}), "
        "which JSON cannot carry; it is not sent. The weights or inputs that made it "
        "overflow (a checkpoint trained or interpolated with huge values, extreme "
        "inputs) are the cause: use other ones",
    )


def _first_non_finite(value: Any, where: str) -> tuple[str, float] | None:
    if isinstance(value, float) and not math.isfinite(value):
        return where, value
    if isinstance(value, Mapping):
        items: Any = ((f"{where}.{k}" if where else str(k), v) for k, v in value.items())
    elif isinstance(value, list | tuple):
        items = ((f"{where}[{i}]", v) for i, v in enumerate(value))
    else:
        return None
    for place, item in items:
        found = _first_non_finite(item, place)
        if found is not None:
            return found
    return None


class JSONResponse(Response):
    """Every answer's JSON encoder: NaN and Infinity raise :func:`non_finite_error`'s 422.

    Example::

        assert JSONResponse({"loss:sum": 1.5}).body == b'{"loss:sum":1.5}'
    """

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        try:
            text = json.dumps(content, allow_nan=False, separators=(",", ":"))
        except ValueError as err:
            if "out of range float" not in str(err).lower():
                raise
            raise non_finite_error(content) from None
        return text.encode("utf-8")


def error_response(status: int, message: str, **headers: str) -> JSONResponse:
    """An ``{"error": message}`` answer with ``status`` (and extra headers).

    Example::

        answer = error_response(404, "unknown session 's-9'")
        assert answer.status_code == 404
        assert json.loads(answer.body) == {"error": "unknown session 's-9'"}
    """
    return JSONResponse({"error": message}, status_code=status, headers=headers or None)


# --------------------------------------------------------------------------- errors


def describe_error(err: BaseException) -> tuple[str, str]:
    """``(message, category)`` for a failed operation, as the SDK shows it.

    Engine errors carry their category (``user`` / ``server``); a refused
    request is ``user``; anything unexpected is logged and reported as ``server``.

    Example::

        assert describe_error(ProtocolError(422, "bad")) == ("bad", "user")
        assert describe_error(MintEnvkitError("broken"))[1] == "server"
    """
    disk = disk_error_message(err)
    if disk is not None:
        return disk, "user"
    category = getattr(err, "category", None)
    if isinstance(err, MintEnvkitError) and category in ("user", "server"):
        return str(err), str(category)
    if isinstance(err, ProtocolError):
        return err.message, "user"
    if isinstance(err, MintEnvkitError):
        return str(err), "server"
    logger.error("operation failed unexpectedly", exc_info=err)
    return (
        f"internal error in the local backend ({type(err).__name__}: {err}); see the server log",
        "server",
    )


def engine_error(err: BaseException) -> ProtocolError:
    """The 4xx for an engine error on a direct (non-future) endpoint.

    User errors are 404 (something named does not exist) or 422; server
    errors are 400, because the SDK retries any 5xx for minutes.

    Example::

        from mint_envkit.local.engine.records import EngineError

        assert engine_error(EngineError("no checkpoint at 'tinker://x/weights/y'")).status == 404
        assert engine_error(EngineError("rank must be positive")).status == 422
    """
    message, category = describe_error(err)
    if category == "user":
        text = message.lower()
        return ProtocolError(404 if any(s in text for s in _NOT_FOUND_HINTS) else 422, message)
    # A deliberate server-side failure: answer with a status the SDK does not
    # retry for minutes (it retries 5xx), so the user sees the message now.
    return ProtocolError(400, f"local backend error: {message}")


# --------------------------------------------------------------------------- bodies


def _floats(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """The numeric values of ``metrics`` as floats, by string key (others dropped)."""
    out: dict[str, float] = {}
    for key, value in (metrics or {}).items():
        try:
            out[str(key)] = float(value)
        except (TypeError, ValueError):
            continue
    return out


def sanitize_metrics(metrics: Mapping[str, Any] | None) -> dict[str, float]:
    """Metrics as the SDK can combine them: ``name:reduction`` keys, float values.

    The SDK splits every key on ':' when it merges chunked results, so a key
    without exactly one ':' gets ':mean' appended (a key with more is dropped).

    Example::

        assert sanitize_metrics({"loss:sum": 1, "lr": 0.1}) == {"loss:sum": 1.0, "lr:mean": 0.1}
        assert sanitize_metrics({"a:b:c": 1}) == {}   # more than one ':' is dropped
    """
    return {
        key if ":" in key else f"{key}:mean": number
        for key, number in _floats(metrics).items()
        if key.count(":") <= 1
    }


def optim_metrics_json(metrics: Mapping[str, Any] | None) -> dict[str, Any]:
    """An ``OptimStepResponse`` body: the engine's numeric metrics as floats, names kept.

    Example::

        assert optim_metrics_json({"grad_norm": 1, "note": "x"}) == {"metrics": {"grad_norm": 1.0}}
    """
    return {"metrics": _floats(metrics)}


def forward_output_json(logprobs: Sequence[Sequence[float]], metrics: Mapping[str, Any]) -> dict:
    """A ``ForwardBackwardOutput`` body: learner logprobs per datum, and metrics.

    Example::

        body = forward_output_json([[-0.5, -1.0]], {"loss:sum": 1.5})
        assert body["loss_fn_outputs"][0]["logprobs"] == {
            "data": [-0.5, -1.0], "dtype": "float32", "shape": [2]}
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

        from mint_envkit.local.engine.records import SampledSequence

        seq = SampledSequence(tokens=[5, 7], logprobs=[-1.5, -0.25], stop_reason="stop")
        assert sample_response_json([seq], None) == {
            "type": "sample",
            "sequences": [{"tokens": [5, 7], "logprobs": [-1.5, -0.25], "stop_reason": "stop"}],
        }
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


def cursor_json(offset: int, limit: int, total: int) -> dict[str, int]:
    """A ``Cursor`` body for a page of a listing.

    Example::

        assert cursor_json(0, 20, 3) == {"offset": 0, "limit": 20, "total_count": 3}
    """
    return {"offset": offset, "limit": limit, "total_count": total}


def iso_time(value: Any) -> str:
    """An ISO-8601 UTC time from a datetime, a UNIX time or a string (now when missing).

    Example::

        assert iso_time(0) == "1970-01-01T00:00:00+00:00"
    """
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

        body = checkpoint_json({"tinker_path": "tinker://m-1/weights/a", "time": 0, "size_bytes": 10})
        assert (body["checkpoint_id"], body["checkpoint_type"]) == ("weights/a", "training")
        assert body["time"] == "1970-01-01T00:00:00+00:00"
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
        "time": iso_time(info.get("time")),
        "tinker_path": path,
        "size_bytes": int(size) if isinstance(size, int | float) else None,
    }
