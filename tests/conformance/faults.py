"""A faulty proxy: a correct embedded server behind a proxy that plants one fault at a time.

:class:`FaultyProxy` listens on 127.0.0.1 and forwards every request to the server,
unchanged unless its ``fault`` says otherwise: a :class:`Fault` may rewrite a request's
body (a learning rate of 0, a temperature ignored, weights negated), answer it itself
(a 422 refusal, a 500), or rewrite an operation's result when the SDK fetches it from
``retrieve_future`` (a loss times -3, sampled logprobs + 0.5). :data:`FAULTS` is every
fault the conformance rows are tested against, with the rows that must fail on it
(docs/local-backend.md lists them).
"""

from __future__ import annotations

import asyncio
import copy
import threading
import time
from collections.abc import Callable
from typing import Any

import attrs

Body = dict[str, Any]


@attrs.frozen
class Fault:
    """One planted fault: how it changes requests and results, and the rows that must fail.

    ``request(route, body)`` returns the body to forward, or ``(status, body)`` to answer
    with instead; ``result(route, request_body, result)`` returns the result the SDK gets.
    ``rows``: the rows conformance must fail on it; ``also``: rows to run with them that
    the fault must leave ``ok`` (one failing row never skips unrelated rows).
    """

    name: str
    rows: tuple[str, ...]
    request: Callable[[str, Body], Any] | None = None
    result: Callable[[str, Body, Body], Body] | None = None
    also: tuple[str, ...] = ()
    detail: str = ""
    """Text that the first failed row's detail must contain."""


def _inputs(body: Body) -> list[Body]:
    return body.get("forward_backward_input", {}).get("data", [])


def _negate_gradient(route: str, body: Body) -> Body:
    """forward_backward: weights / advantages negated (the gradient flips); the loss is
    negated back in the result, so the reported loss stays right."""
    if route != "forward_backward":
        return body
    for datum in _inputs(body):
        for key in ("weights", "advantages"):
            tensor = datum.get("loss_fn_inputs", {}).get(key)
            if tensor is not None:
                tensor["data"] = [-v for v in tensor["data"]]
    return body


def _scale_loss(factor: float, routes: tuple[str, ...]) -> Callable[[str, Body, Body], Body]:
    def result(route: str, request: Body, value: Body) -> Body:
        metrics = value.get("metrics") or {}
        if route in routes and "loss:sum" in metrics:
            metrics["loss:sum"] = metrics["loss:sum"] * factor
        return value

    return result


def _ppo_unclipped(route: str, body: Body) -> Body:
    fb = body.get("forward_backward_input", {})
    if route in ("forward", "forward_backward") and fb.get("loss_fn") == "ppo":
        fb["loss_fn"] = "importance_sampling"
        fb["loss_fn_config"] = None
    return body


def _no_ratio(route: str, body: Body) -> Body:
    """importance_sampling computed as cross_entropy weighted by the advantages: no ratio."""
    fb = body.get("forward_backward_input", {})
    if route in ("forward", "forward_backward") and fb.get("loss_fn") == "importance_sampling":
        fb["loss_fn"] = "cross_entropy"
        for datum in fb.get("data", []):
            inputs = datum["loss_fn_inputs"]
            inputs["weights"] = inputs.pop("advantages")
            inputs.pop("logprobs", None)
    return body


def _refuse(route_name: str) -> Callable[[str, Body], Any]:
    def request(route: str, body: Body) -> Any:
        if route == route_name:
            return 422, {"error": f"{route_name} is not supported by this server"}
        return body

    return request


def _sampling(**changes: Any) -> Callable[[str, Body], Body]:
    def request(route: str, body: Body) -> Body:
        params = body.get("sampling_params")
        if route == "asample" and params is not None:
            for key, value in changes.items():
                if value is None:
                    params.pop(key, None)
                else:
                    params[key] = value
        return body

    return request


def _shift_sampled(route: str, request: Body, value: Body) -> Body:
    if route == "asample":
        for sequence in value.get("sequences") or []:
            if sequence.get("logprobs"):
                sequence["logprobs"] = [lp + 0.5 for lp in sequence["logprobs"]]
    return value


def _zero_learning_rate(route: str, body: Body) -> Body:
    if route == "optim_step":
        body["adam_params"]["learning_rate"] = 0.0
    return body


def _no_optimizer(route: str, body: Body) -> Body:
    if route == "load_weights":
        body["optimizer"] = False
    return body


def _error_at_temperature(route: str, body: Body) -> Any:
    params = body.get("sampling_params") or {}
    if route == "asample" and params.get("temperature") == 0.7:
        return 500, {"error": "injected fault: the sampler crashed at temperature 0.7"}
    return body


TRAINING = "create_lora_training_client"
LOSS_ROWS = tuple(
    f"{kind}: {loss}"
    for kind in ("forward", "forward_backward")
    for loss in ("cross_entropy", "importance_sampling", "ppo")
)

FAULTS: tuple[Fault, ...] = (
    Fault(
        "gradient sign flipped (the loss reported right)",
        ("gradient direction: cross_entropy", "gradient direction: negated weights"),
        request=_negate_gradient,
        result=_scale_loss(-1.0, ("forward_backward",)),
        also=("forward_backward: cross_entropy",),
        detail="the gradient does not descend the loss",
    ),
    Fault(
        "gradient sign flipped (and the loss with it)",
        ("forward_backward: cross_entropy", "gradient direction: cross_entropy"),
        request=_negate_gradient,
        also=("forward: cross_entropy",),
        detail="but the returned logprobs give",
    ),
    Fault(
        "loss x -3",
        LOSS_ROWS,
        result=_scale_loss(-3.0, ("forward", "forward_backward")),
        detail="but the returned logprobs give",
    ),
    Fault(
        "PPO without clipping",
        ("forward_backward: ppo clipping",),
        request=_ppo_unclipped,
        also=("forward_backward: importance_sampling",),
        detail="but the returned logprobs give",
    ),
    Fault(
        "importance sampling without the ratio",
        ("forward_backward: importance_sampling weights by the ratio",),
        request=_no_ratio,
        detail="but the returned logprobs give",
    ),
    Fault(
        "forward_backward refused as not supported",
        (
            "forward_backward: cross_entropy",
            "forward_backward: importance_sampling",
            "forward_backward: ppo",
        ),
        request=_refuse("forward_backward"),
        also=("forward: cross_entropy",),
        detail="refused, but a training loop needs it",
    ),
    Fault(
        "temperature ignored",
        ("sample: temperature 0.7",),
        request=_sampling(temperature=1.0),
        detail="not those of the temperature-scaled distribution",
    ),
    Fault(
        "top_k ignored",
        ("sample: top_k",),
        request=_sampling(top_k=-1),
        detail="different replies of 8, not 1",
    ),
    Fault(
        "top_p ignored",
        ("sample: top_p",),
        request=_sampling(top_p=1.0),
        detail="different replies of 8, not 1",
    ),
    Fault(
        "sampled logprobs + 0.5",
        ("sampler vs learner logprobs",),
        result=_shift_sampled,
    ),
    Fault(
        "optim_step with learning rate 0",
        ("optim_step", "gradient direction: cross_entropy"),
        request=_zero_learning_rate,
        detail="no update",
    ),
    Fault(
        "optimizer state not restored",
        ("load_state_with_optimizer",),
        request=_no_optimizer,
        also=("load_state",),
        detail="the next step",
    ),
    Fault(
        "stop strings dropped",
        ("sample: stop strings",),
        request=_sampling(stop=None),
        detail="stop_reason",
    ),
    Fault(
        "500 from the sampler",
        ("sample: temperature 0.7",),
        request=_error_at_temperature,
        also=("sample: top_k", "compute_logprobs"),
        detail="HTTP 500 from POST /api/v1/asample: injected fault: the sampler crashed",
    ),
)
"""Every planted fault, each with the rows conformance must fail on it."""


class FaultyProxy:
    """A proxy on 127.0.0.1 in front of ``upstream``, planting ``self.fault`` (None: none).

    Use as a context manager; ``base_url`` is where to point the SDK.
    """

    def __init__(self, upstream: str) -> None:
        self.upstream = upstream.rstrip("/")
        self.fault: Fault | None = None
        self._futures: dict[str, tuple[str, Body]] = {}
        self._server: Any = None
        self._thread: threading.Thread | None = None
        self.base_url = ""

    def _app(self) -> Any:
        import httpx
        from starlette.applications import Starlette
        from starlette.requests import Request
        from starlette.responses import JSONResponse, Response
        from starlette.routing import Route

        client = httpx.AsyncClient(base_url=self.upstream, timeout=120.0)

        async def forward(request: Request) -> Response:
            path = request.url.path
            route = path.removeprefix("/api/v1/")
            raw = await request.body()
            fault = self.fault
            body: Any = None
            if raw and request.method == "POST":
                import json

                body = json.loads(raw)
                if fault is not None and fault.request is not None and route != "retrieve_future":
                    changed = fault.request(route, copy.deepcopy(body))
                    if isinstance(changed, tuple):
                        status, answer = changed
                        return JSONResponse(answer, status_code=status)
                    body = changed
                raw = json.dumps(body).encode()
            headers = {
                k: v
                for k, v in request.headers.items()
                if k.lower() not in ("host", "content-length")
            }
            upstream = await client.request(
                request.method, path, params=request.query_params, content=raw, headers=headers
            )
            content = upstream.content
            if upstream.status_code == 200 and isinstance(body, dict):
                answer = upstream.json()
                if (
                    isinstance(answer, dict)
                    and "request_id" in answer
                    and route != "retrieve_future"
                ):
                    self._futures[answer["request_id"]] = (route, body)
                if (
                    route == "retrieve_future"
                    and fault is not None
                    and fault.result is not None
                    and isinstance(answer, dict)
                    and body.get("request_id") in self._futures
                ):
                    origin, sent = self._futures[body["request_id"]]
                    return JSONResponse(fault.result(origin, sent, answer))
            kept = {k: v for k, v in upstream.headers.items() if k.lower() in ("content-type",)}
            return Response(content, status_code=upstream.status_code, headers=kept)

        methods = ["GET", "POST", "DELETE", "PUT"]
        return Starlette(routes=[Route("/{path:path}", forward, methods=methods)])

    def __enter__(self) -> FaultyProxy:
        import uvicorn

        config = uvicorn.Config(self._app(), host="127.0.0.1", port=0, log_level="warning")
        self._server = uvicorn.Server(config)
        self._server.install_signal_handlers = lambda: None  # not the main thread
        self._thread = threading.Thread(target=self._server.run, daemon=True)
        self._thread.start()
        deadline = time.monotonic() + 30
        while not self._server.started:
            if time.monotonic() > deadline or not self._thread.is_alive():
                raise RuntimeError("the faulty proxy did not start")
            time.sleep(0.02)
        port = self._server.servers[0].sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def run_rows(coroutine: Any) -> Any:
    """Run a coroutine to its end (the tests call the async API from sync tests)."""
    return asyncio.run(coroutine)
