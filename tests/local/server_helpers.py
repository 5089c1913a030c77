"""A recording fake engine and HTTP helpers for the server tests (fixtures: conftest.py).

``FakeEngine`` implements the Engine interface with plain Python (no torch),
records every call in order, and can be told to sleep, so the protocol
layer (ordering, latency, futures, error mapping) is tested in milliseconds.
The SDK integration tests use the real engine. ``wait_until`` and
``read_line`` wait with a deadline (a test polls for the state it needs,
never sleeps hoping it is there).

Example::

    from server_helpers import FakeEngine, fake_server

    with fake_server() as (server, engine):
        ...
        engine.calls   # [('create_lora', 'mint-envkit/tiny-qwen3-small'), ...]
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import random
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from typing import IO, Any, ClassVar

import attrs
import httpx

from mint_envkit.errors import MintEnvkitError
from mint_envkit.local.server import LocalServer

os.environ.setdefault("TINKER_TELEMETRY", "0")

SMALL = "mint-envkit/tiny-qwen3-small"
VOCAB = 2048


class FakeEngineError(MintEnvkitError):
    """Stands in for EngineError: has ``category``."""

    def __init__(self, message: str, category: str = "user") -> None:
        super().__init__(message)
        self.category = category


@attrs.frozen
class FakeSeq:
    tokens: list[int]
    logprobs: list[float]
    stop_reason: str


@attrs.frozen
class FakeForward:
    logprobs: list[list[float]]
    metrics: dict[str, float]


class FakeEngine:
    """The Engine interface, in plain Python; ``calls`` records (method, first arg) in order.

    Example::

        engine = FakeEngine(delay_s=0.05)   # every call sleeps 50 ms on the worker thread
    """

    supported_models: ClassVar[list[str]] = [SMALL, "mint-envkit/tiny-qwen3"]

    def __init__(self, delay_s: float = 0.0) -> None:
        self.delay_s = delay_s
        self.calls: list[tuple[str, Any]] = []
        self.threads: set[str] = set()
        self._lock = threading.Lock()
        self._n = 0
        self.models: dict[str, dict[str, Any]] = {}
        self.samplers: dict[str, str] = {}
        self.checkpoints: dict[str, dict[str, Any]] = {}
        self.steps: dict[str, int] = {}

    def _record(self, name: str, arg: Any = None) -> None:
        with self._lock:
            self.calls.append((name, arg))
            self.threads.add(threading.current_thread().name)
        if self.delay_s:
            time.sleep(self.delay_s)

    def _id(self, prefix: str) -> str:
        self._n += 1
        return f"{prefix}-{self._n}"

    def ensure_base_model(self, name: str) -> None:
        self._record("ensure_base_model", name)
        if name not in self.supported_models:
            raise FakeEngineError(f"model {name!r} is not available offline", "user")

    def tokenizer_dir(self, base_model: str) -> str:
        return "/tmp/fake/tokenizer"

    def create_lora(self, base_model: str, **kwargs: Any) -> str:
        self._record("create_lora", base_model)
        self.ensure_base_model(base_model)
        model_id = self._id("model")
        self.models[model_id] = {"base_model": base_model, "lora_rank": kwargs.get("rank", 32)}
        self.steps[model_id] = 0
        return model_id

    def model_info(self, model_id: str) -> dict[str, Any]:
        self._need(model_id)
        info = self.models[model_id]
        return {**info, "tokenizer_dir": "/tmp/fake/tokenizer", "arch": "qwen3"}

    def _need(self, model_id: str) -> None:
        if model_id not in self.models:
            raise FakeEngineError(f"unknown model_id {model_id!r}")

    def unload(self, model_id: str) -> None:
        self._record("unload", model_id)
        self._need(model_id)
        del self.models[model_id]

    def forward(self, model_id, data, loss_fn, loss_fn_config, *, backward):
        self._record("forward_backward" if backward else "forward", model_id)
        self._need(model_id)
        for d in data:
            if any(t >= VOCAB for t in d["model_input"]):
                raise FakeEngineError(f"token id outside the vocabulary of {VOCAB}")
        step = self.steps[model_id]
        lps = [[-1.0 - 0.01 * step] * len(d["model_input"]) for d in data]
        return FakeForward(lps, {"loss:sum": float(sum(len(x) for x in lps))})

    def optim_step(self, model_id: str, **kwargs: Any) -> dict[str, float]:
        self._record("optim_step", model_id)
        self._need(model_id)
        self.steps[model_id] += 1
        return {"learning_rate": kwargs["learning_rate"]}

    def save_for_sampler(self, model_id: str, name: str | None) -> tuple[str, str]:
        self._record("save_for_sampler", model_id)
        self._need(model_id)
        sampler_id = self._id("sampler")
        self.samplers[sampler_id] = model_id
        path = f"tinker://{model_id}/sampler_weights/{name}" if name else ""
        if path:
            self.checkpoints[path] = {"model_id": model_id, "time": time.time()}
        return sampler_id, path

    def create_sampler(self, *, base_model=None, model_path=None) -> str:
        self._record("create_sampler", base_model or model_path)
        if model_path is not None and model_path not in self.checkpoints:
            raise FakeEngineError(f"checkpoint {model_path!r} not found")
        sampler_id = self._id("sampler")
        self.samplers[sampler_id] = base_model or model_path
        return sampler_id

    def sample_many(self, requests):
        out = []
        for sampler_id, prompt, kwargs in requests:
            try:
                out.append(self.sample(sampler_id, prompt, **kwargs))
            except FakeEngineError as err:
                out.append(err)
        return out

    def sample(self, sampler_id, prompt, *, num_samples=1, max_tokens=16, seed=None, **kw):
        self._record("sample", sampler_id)
        if sampler_id not in self.samplers:
            raise FakeEngineError(f"unknown sampler {sampler_id!r}")
        bad = [t for t in prompt if t >= VOCAB]
        if bad:
            raise FakeEngineError(
                f"prompt token ids {bad} are outside the vocabulary (size {VOCAB})"
            )
        rng = random.Random(seed)
        return [
            FakeSeq(
                [rng.randrange(VOCAB) for _ in range(max_tokens)],
                [math.log(1 / VOCAB)] * max_tokens,
                "length",
            )
            for _ in range(num_samples)
        ]

    def compute_logprobs(self, sampler_id, prompt):
        self._record("compute_logprobs", sampler_id)
        return [None] + [-2.0] * (len(prompt) - 1)

    def save_state(self, model_id, name, *, kind="state"):
        self._record("save_state", model_id)
        self._need(model_id)
        path = f"tinker://{model_id}/weights/{name}"
        self.checkpoints[path] = {"model_id": model_id, "time": time.time()}
        return path

    def load_state(self, model_id, path, *, with_optimizer):
        self._record("load_state", model_id)
        if path not in self.checkpoints:
            raise FakeEngineError(f"checkpoint {path!r} not found")

    def create_lora_from_state(self, path, *, with_optimizer):
        raise NotImplementedError

    def list_checkpoints(self, model_id=None):
        return [
            {
                "checkpoint_id": p.rsplit("/", 1)[1],
                "checkpoint_type": "sampler" if "/sampler_weights/" in p else "state",
                "tinker_path": p,
                "time": c["time"],
                "size_bytes": 123,
            }
            for p, c in self.checkpoints.items()
            if model_id is None or c["model_id"] == model_id
        ]

    def delete_checkpoint(self, path):
        self._record("delete_checkpoint", path)
        if path not in self.checkpoints:
            raise FakeEngineError(f"checkpoint {path!r} not found")
        del self.checkpoints[path]

    def weights_info(self, path):
        if path not in self.checkpoints:
            raise FakeEngineError(f"checkpoint {path!r} not found")
        model_id = self.checkpoints[path]["model_id"]
        return {"base_model": SMALL, "is_lora": True, "lora_rank": 8, "model_id": model_id}


@contextlib.contextmanager
def fake_server(**kwargs: Any) -> Iterator[tuple[LocalServer, FakeEngine]]:
    """A LocalServer on a FakeEngine; yields ``(server, engine)``.

    Example::

        with fake_server(latency_ms=100) as (server, engine):
            httpx.get(server.base_url + "/api/v1/healthz")
    """
    engine = FakeEngine(delay_s=kwargs.pop("engine_delay_s", 0.0))
    kwargs.setdefault("models", [SMALL])
    kwargs.setdefault("preload", False)
    with LocalServer(engine_factory=lambda: engine, **kwargs) as server:
        yield server, engine


def post(server: LocalServer, path: str, body: Any, **kw: Any) -> httpx.Response:
    """POST JSON to ``/api/v1/<path>`` of ``server``.

    Example::

        post(server, "get_info", {"model_id": model_id}).json()["model_data"]
    """
    return httpx.post(f"{server.base_url}/api/v1/{path}", json=body, timeout=60, **kw)


def tokens(ids: list[int]) -> dict[str, Any]:
    """A ModelInput body from token ids.

    Example::

        tokens([1, 2])   # {'chunks': [{'tokens': [1, 2], 'type': 'encoded_text'}]}
    """
    return {"chunks": [{"tokens": list(ids), "type": "encoded_text"}]}


def datum(ids: list[int], **inputs: list[float]) -> dict[str, Any]:
    """A Datum body: ``model_input`` ids and ``loss_fn_inputs`` arrays (target_tokens as int64).

    Example::

        datum([1, 2, 3], target_tokens=[2, 3, 4], weights=[0.0, 1.0, 1.0])
    """
    lfi = {
        k: {"data": v, "dtype": "int64" if k == "target_tokens" else "float32", "shape": [len(v)]}
        for k, v in inputs.items()
    }
    return {"model_input": tokens(ids), "loss_fn_inputs": lfi}


def wait_future(server: LocalServer, request_id: str, timeout: float = 30.0) -> dict[str, Any]:
    """Poll ``retrieve_future`` until the result is there; returns the body.

    Example::

        wait_future(server, post(server, "optim_step", body).json()["request_id"])
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r = post(server, "retrieve_future", {"request_id": request_id})
        if r.status_code == 408 and r.json().get("type") == "try_again":
            continue  # not ready within the server's wait window: poll again, as the SDK does
        r.raise_for_status()
        body = r.json()
        if body.get("type") != "try_again":
            return body
    raise TimeoutError(request_id)


def create_model(server: LocalServer, base_model: str = SMALL, rank: int = 4) -> str:
    """Create a LoRA model through raw HTTP; returns its model_id.

    Example::

        model_id = create_model(server, rank=8)
    """
    r = post(
        server,
        "create_model",
        {
            "session_id": "s",
            "model_seq_id": 0,
            "base_model": base_model,
            "lora_config": {"rank": rank},
        },
    )
    r.raise_for_status()
    return wait_future(server, r.json()["request_id"])["model_id"]


def wait_until(
    predicate: Callable[[], object], what: str, timeout: float = 10.0, interval: float = 0.01
) -> None:
    """Poll ``predicate()`` until it is true; AssertionError naming ``what`` after ``timeout`` s.

    Example::

        wait_until(lambda: server.request_counts()["retrieve_future"] == 1,
                   "the long-poll to reach the server")
    """
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


def _read_within(stream: IO[str] | None, timeout: float) -> str:
    """All of ``stream`` (to EOF), waiting at most ``timeout`` s ('' when there is no stream)."""
    if stream is None:
        return ""
    out: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: out.put(stream.read()), daemon=True).start()
    try:
        return out.get(timeout=timeout)
    except queue.Empty:
        return f"(stderr not closed within {timeout} s)"


def read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    """The next line ``proc`` writes on stdout, waiting at most ``timeout`` s.

    When no line comes in time (or stdout closes first), ``proc`` is killed and
    the AssertionError carries its exit code and stderr.

    Example::

        line = read_line(proc, timeout=60)   # 'mint-envkit serve: listening on http://...'
    """
    stdout = proc.stdout
    assert stdout is not None, "start the process with stdout=subprocess.PIPE"
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: lines.put(stdout.readline()), daemon=True).start()
    try:
        line = lines.get(timeout=timeout)
    except queue.Empty:
        why = f"no line on stdout within {timeout} s"
    else:
        if line:
            return line
        why = "stdout closed before a line came"
    proc.kill()
    try:
        code: int | None = proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        code = None
    raise AssertionError(
        f"{why} (exit code {code}); stderr:\n{_read_within(proc.stderr, timeout=10)}"
    )
