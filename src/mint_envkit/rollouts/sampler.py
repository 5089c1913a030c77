"""Samplers: what answers a rollout's sampling requests, and the SDK-backed ones.

A *sampler* is any async function that answers a :class:`SampleRequest` with
``num_samples`` replies: :class:`ClientSampler` samples a ``mint`` sampling client
(the training loop's), :class:`SeededSampler` does too with a seed fixed by the problem,
the env and the turn (every evaluation's), :class:`OpenAISampler` samples an
OpenAI-compatible server (:class:`~mint_envkit.rollouts.OpenAIEndpoint`) the same way,
and :class:`~mint_envkit.rollouts.ScriptedPolicy` returns fixed text.

Example::

    # not run: needs a sampling client (a running backend)
    sampler = ClientSampler.from_settings(sampling_client, SamplingSettings(max_tokens=32), salt=0)
    rollouts = await rollout_groups(groups, sampler)
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import threading
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import attrs

from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError
from mint_envkit.rendering.renderer import Renderer
from mint_envkit.rollouts.openai_endpoint import OpenAIEndpoint
from mint_envkit.rollouts.settings import SamplingSettings
from mint_envkit.rollouts.types import SampledTokens


@attrs.frozen
class SampleRequest:
    """One sampling request of a rollout.

    Attributes:
        prompt: the prompt tokens.
        stop: stop tokens (or strings).
        num_samples: how many replies to return.
        messages: the conversation the prompt renders (for scripted policies).
        renderer: the group's renderer.
        env_index: the position in its group of the first env this request
            serves (replies ``i`` go to env ``env_index + i``).
        turn: the episode's turn this request samples (0 for the first reply).

    Example::

        # not run: `renderer` is a group's renderer, built elsewhere
        request = SampleRequest(prompt=[1, 2, 3], stop=["<|im_end|>"], num_samples=4,
                                messages=[{"role": "user", "content": "2 + 3?"}],
                                renderer=renderer)
    """

    prompt: list[int]
    stop: list[int] | list[str]
    num_samples: int
    messages: list[Message]
    renderer: Renderer
    env_index: int = 0
    turn: int = 0


Sampler = Callable[[SampleRequest], Awaitable[Sequence[SampledTokens]]]
"""An async function answering a :class:`SampleRequest` with ``num_samples`` replies.

Example::

    async def always_five(request: SampleRequest) -> list[SampledTokens]:
        tokens = request.renderer.tokenizer.encode("5") + request.renderer.get_stop_sequences()
        return [SampledTokens(tokens, None, "stop")] * request.num_samples
"""


def _seed(*parts: Any) -> int:
    digest = hashlib.sha256(":".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:4], "little") & 0x7FFFFFFF


class ClientSampler:
    """A rollout sampler backed by a ``mint`` sampling client.

    Each request gets its own seed, derived from ``seed``, ``salt`` (the step),
    the request count and the prompt, so a run is reproducible. ``calls``
    counts the sample requests sent.

    Example::

        # not run: needs a sampling client (a running backend)
        sampler = ClientSampler(sampling_client, max_tokens=32, temperature=0.7, seed=0, salt=step)
        rollouts = await rollout_groups(groups, sampler)
    """

    def __init__(
        self,
        client: Any,
        *,
        max_tokens: int,
        temperature: float = 1.0,
        top_p: float = 1.0,
        top_k: int = -1,
        seed: int = 0,
        salt: int = 0,
    ) -> None:
        self.client = client
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.top_p = top_p
        self.top_k = top_k
        self.seed = seed
        self.salt = salt
        self.calls = 0

    @classmethod
    def from_settings(
        cls, client: Any, settings: SamplingSettings, *, salt: int = 0
    ) -> ClientSampler:
        """A sampler with ``settings``' distribution, reply limit and seed.

        Raises:
            ConfigError: ``settings.max_tokens`` is None (resolve it against the
                builder first: :meth:`SamplingSettings.reply_limit`).

        Example::

            # not run: needs a sampling client (a running backend)
            sampler = ClientSampler.from_settings(sampling_client, config.sampling, salt=step)
        """
        if settings.max_tokens is None:
            raise ConfigError(
                "a sampler needs a reply limit: settings.max_tokens is None; give max_tokens "
                "(or take the builder's with settings.reply_limit(builder.max_generation_tokens))"
            )
        return cls(
            client,
            max_tokens=settings.max_tokens,
            temperature=settings.temperature,
            top_p=settings.top_p,
            top_k=settings.top_k,
            seed=settings.seed,
            salt=salt,
        )

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        import tinker

        self.calls += 1
        params = tinker.SamplingParams(
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            top_p=self.top_p,
            top_k=self.top_k,
            stop=list(request.stop),
            seed=_seed(self.seed, self.salt, self.calls, request.prompt[-8:]),
        )
        response = await self.client.sample_async(
            prompt=tinker.ModelInput.from_ints(request.prompt),
            num_samples=request.num_samples,
            sampling_params=params,
        )
        return [
            SampledTokens(
                tokens=list(seq.tokens),
                logprobs=list(seq.logprobs or [0.0] * len(seq.tokens)),
                stop_reason=str(seq.stop_reason),
            )
            for seq in response.sequences
        ]


async def sampler_snapshot(training: Any) -> Any:
    """A sampling client of ``training``'s current weights (an unnamed snapshot).

    :func:`begin_snapshot`, awaited.

    Example::

        # not run: needs a training client
        client = await sampler_snapshot(training_client)
    """
    task, _ = begin_snapshot(training)
    return await task


def begin_snapshot(training: Any) -> tuple[asyncio.Task[Any], bool]:
    """Ask for an unnamed snapshot of ``training``'s weights now: a task for its sampling
    client, and whether the snapshot's place among the client's calls is already taken.

    The service runs a training client's calls in the order the SDK numbers them, and
    the SDK numbers a call when it is made. The SDK's
    ``save_weights_and_get_sampling_client`` numbers its save and then blocks until the
    snapshot is ready; here the two halves are split (the SDK's own two calls, as that
    method makes them: the save, then the sampling client of its session): the save is
    numbered before this returns, so whatever the caller submits next (the next update)
    is sequenced after it and the snapshot holds exactly the weights of now, while the
    task awaits the result without blocking the event loop (and without a thread: a
    run whose backend dies can stop at once). ``True`` says so.

    A training client without those halves (an SDK other than the pinned one, a
    stand-in) gets the SDK's public call, run in a daemon thread of its own (it blocks
    on a future); its save is numbered when the thread runs, so the caller must await
    the task before submitting anything that changes the weights: ``False`` says so.

    Example::

        # not run: needs a training client
        task, placed = begin_snapshot(training_client)
        # placed: the next update may be submitted now, before the snapshot is ready
        client = await task
    """
    save = getattr(training, "_save_weights_for_sampler_impl", None)
    holder = getattr(training, "holder", None)
    if callable(save) and holder is not None:
        saved = save(None, None)  # numbered now: before anything the caller submits next
        return asyncio.ensure_future(_session_client(holder, saved)), True
    return asyncio.ensure_future(_threaded_snapshot(training)), False


async def _session_client(holder: Any, saved: Any) -> Any:
    """The sampling client of an unnamed save's session, as the SDK's own method makes it."""
    from tinker.lib.public_interfaces.sampling_client import SamplingClient

    session_id = await saved
    if not isinstance(session_id, str):
        raise TypeError(f"an unnamed save returned {session_id!r}, not a sampling session id")
    return await SamplingClient.create(holder, sampling_session_id=session_id)


async def _threaded_snapshot(training: Any) -> Any:
    """The SDK's ``save_weights_and_get_sampling_client`` in a daemon thread of its own (it
    waits on a future): when the backend dies mid-call the run fails on time (the health
    watchdog) and the process can exit, instead of ``asyncio.run`` waiting for that
    thread while the SDK retries."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[Any] = loop.create_future()

    def settle(result: Any, error: BaseException | None) -> None:
        if done.done():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(result)

    def work() -> None:
        result, error = None, None
        try:
            result = training.save_weights_and_get_sampling_client()
        except BaseException as exc:  # handed to the awaiting task
            error = exc
        # RuntimeError: the loop has closed, nobody waits for this snapshot
        with contextlib.suppress(RuntimeError):
            loop.call_soon_threadsafe(settle, result, error)

    threading.Thread(target=work, name="mint-envkit-sampler-snapshot", daemon=True).start()
    return await done


@attrs.frozen
class SeededSampler:
    """Samples ``client`` with a seed fixed by (``key``, env, turn): the same in every run.

    What every evaluation samples with: two checkpoints evaluated with the same
    settings see the same seeds on the same problems, whatever else runs at the time
    (``key`` names the problem: its split and index).

    Example::

        # not run: needs a sampling client (a running backend)
        sampler = SeededSampler(client, SamplingSettings(max_tokens=48), key="test:3")
    """

    client: Any
    settings: SamplingSettings
    key: str

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        salt = _seed(self.key, request.env_index, request.turn)
        return await ClientSampler.from_settings(self.client, self.settings, salt=salt)(request)


# ------------------------------------------------------------- OpenAI-compatible servers


@attrs.frozen
class OpenAISampler:
    """Samples an :class:`OpenAIEndpoint` with a seed fixed by (``key``, env, turn), as
    :class:`SeededSampler` samples a ``mint`` client: what an evaluation of an
    OpenAI-compatible server samples with.

    Example::

        # not run: needs a running OpenAI-compatible server
        sampler = OpenAISampler(endpoint, SamplingSettings(max_tokens=48), key="test:3")
    """

    endpoint: OpenAIEndpoint
    settings: SamplingSettings
    key: str

    async def one(self, request: SampleRequest, env: int) -> SampledTokens:
        """One reply, for env ``env`` of the request's group."""
        body: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": [
                {"role": str(m.get("role")), "content": str(m.get("content") or "")}
                for m in request.messages
            ],
            "max_tokens": self.settings.max_tokens,
            "temperature": self.settings.temperature,
            "top_p": self.settings.top_p,
            "seed": _seed(self.settings.seed, self.key, env, request.turn),
            "n": 1,
        }
        strings = [s for s in request.stop if isinstance(s, str)]
        if strings:
            body["stop"] = strings[:4]
        answer = await self.endpoint.chat(body)
        choice = (answer.get("choices") or [{}])[0]
        text = str((choice.get("message") or {}).get("content") or "")
        tokens = list(request.renderer.tokenizer.encode(text, add_special_tokens=False))
        finish = choice.get("finish_reason")
        stop_tokens = [t for t in request.renderer.get_stop_sequences() if isinstance(t, int)]
        if finish != "length" and stop_tokens:
            tokens.append(stop_tokens[0])
        return SampledTokens(tokens, None, "length" if finish == "length" else "stop")

    async def __call__(self, request: SampleRequest) -> list[SampledTokens]:
        if self.settings.top_k != -1:
            raise ConfigError(
                f"top_k={self.settings.top_k}: OpenAI's API has no top_k; leave it at -1"
            )
        envs = range(request.env_index, request.env_index + request.num_samples)
        return list(await asyncio.gather(*(self.one(request, env) for env in envs)))


def seeded_sampler(client: Any, settings: SamplingSettings, key: str) -> Sampler:
    """The evaluation's sampler of ``client``: an :class:`OpenAISampler` for an
    :class:`OpenAIEndpoint`, else a :class:`SeededSampler` of a ``mint`` sampling client.

    Example::

        # not run: needs a sampling client (a running backend)
        sampler = seeded_sampler(client, SamplingSettings(max_tokens=48), key="test:3")
    """
    if isinstance(client, OpenAIEndpoint):
        return OpenAISampler(client, settings, key)
    return SeededSampler(client, settings, key)
