"""The rows of a conformance run that save, load, list and delete weights.

:data:`SAMPLER_CHECKS` (sampler weights and the sampling clients made from them) run
before the sampler-vs-learner row, :data:`STATE_CHECKS` (training state with and
without the optimizer, the REST routes, MinT's ``mint.mint`` calls, deleting what the
run saved) after it. Every checkpoint a row saves is deleted by the last row.

Example::

    # not run: needs a running backend
    rows = await run_checks((*SAMPLER_CHECKS, *STATE_CHECKS), probe, timeout_s=120)
"""

from __future__ import annotations

from typing import Any

from mint_envkit.conformance.probe import (
    Probe,
    check_logprobs,
    done,
    largest_difference,
    on_sdk_loop,
    reply_logprobs,
    same_logprobs,
    train_step,
)
from mint_envkit.conformance.rows import Check
from mint_envkit.errors import BackendError
from mint_envkit.rollouts.sampler import sampler_snapshot


def _tokens(probe: Probe) -> Any:
    import tinker

    return tinker.ModelInput.from_ints(probe.prompt + probe.reply)


async def _scored(client: Any, probe: Probe) -> list[float]:
    """``compute_logprobs`` of the prompt and reply, without the first (None) value."""
    values = await client.compute_logprobs_async(_tokens(probe))
    count = len(probe.prompt) + len(probe.reply) - 1
    return check_logprobs(values[1:], count, "compute_logprobs")


def _tinker_path(path: Any, kind: str) -> str:
    if not isinstance(path, str) or not path.startswith("tinker://"):
        raise BackendError(f"{kind} answered path {path!r}, not a tinker:// path")
    return path


async def _save_sampler(probe: Probe) -> str:
    response = await done(probe.training.save_weights_for_sampler_async(probe.tinker_name("s")))
    probe.sampler_path = _tinker_path(response.path, "save_weights_for_sampler")
    probe.created.append(probe.sampler_path)
    return probe.sampler_path


async def _sampler_of_path(probe: Probe) -> str:
    probe.snapshot = await probe.service.create_sampling_client_async(model_path=probe.sampler_path)
    probe.snapshot_logprobs = await _scored(probe.snapshot, probe)
    return "compute_logprobs of the saved weights answered"


async def _sampler_of_both(probe: Probe) -> str:
    """tinker-cookbook's call for a checkpoint teacher or a KL reference: both names."""
    client = await probe.service.create_sampling_client_async(
        base_model=probe.model, model_path=probe.sampler_path
    )
    diff = same_logprobs(await _scored(client, probe), probe.snapshot_logprobs, probe, "both")
    return f"the saved weights' logprobs (max |diff| {diff:.3g} from model_path alone)"


async def _save_and_sample(probe: Probe) -> str:
    client = await sampler_snapshot(probe.training)
    diff = same_logprobs(await _scored(client, probe), probe.snapshot_logprobs, probe, "snapshot")
    return f"an unnamed snapshot of the same weights (max |diff| {diff:.3g})"


async def _save_state(probe: Probe) -> str:
    # one step first, so the saved optimizer holds moments a fresh one does not (whatever
    # rows ran before): restoring it must then give another next step than a fresh one
    await train_step(probe)
    response = await done(probe.training.save_state_async(probe.tinker_name("w")))
    probe.state_path = _tinker_path(response.path, "save_state")
    probe.created.append(probe.state_path)
    probe.at_state = await reply_logprobs(probe)
    probe.step_from_state = await train_step(probe)
    moved = largest_difference(probe.step_from_state, probe.at_state)
    return f"{probe.state_path}; the next step moved logprobs by up to {moved:.3g}"


async def _load_state(probe: Probe) -> str:
    await done(probe.training.load_state_async(probe.state_path))
    diff = same_logprobs(await reply_logprobs(probe), probe.at_state, probe, "load_state")
    step = largest_difference(await train_step(probe), probe.step_from_state)
    if step == 0.0:
        raise BackendError(
            "load_state: the next step equals the step with the saved optimizer: the "
            "optimizer was restored too (load_state gives a fresh one; "
            "load_state_with_optimizer restores it)"
        )
    return (
        f"the saved weights (max |diff| {diff:.3g}); a fresh optimizer: the next step differs "
        f"by up to {step:.3g} from the step with the saved optimizer"
    )


async def _load_state_with_optimizer(probe: Probe) -> str:
    await done(probe.training.load_state_with_optimizer_async(probe.state_path))
    diff = same_logprobs(await reply_logprobs(probe), probe.at_state, probe, "the load")
    step = same_logprobs(await train_step(probe), probe.step_from_state, probe, "the next step")
    return f"the saved weights (max |diff| {diff:.3g}) and optimizer (next step: {step:.3g})"


async def _from_state(probe: Probe) -> str:
    client = await probe.service.create_training_client_from_state_async(probe.state_path)
    diff = same_logprobs(await reply_logprobs(probe, client), probe.at_state, probe, "new client")
    return f"a new client with the saved weights (max |diff| {diff:.3g})"


async def _from_state_with_optimizer(probe: Probe) -> str:
    service = probe.service
    client = await service.create_training_client_from_state_with_optimizer_async(probe.state_path)
    diff = same_logprobs(await reply_logprobs(probe, client), probe.at_state, probe, "new client")
    after = await train_step(probe, client)
    step = same_logprobs(after, probe.step_from_state, probe, "its next step")
    return f"the saved weights (max |diff| {diff:.3g}) and optimizer (next step: {step:.3g})"


async def _snapshot_frozen(probe: Probe) -> str:
    diff = same_logprobs(
        await _scored(probe.snapshot, probe), probe.snapshot_logprobs, probe, "now"
    )
    return f"later training did not change it (max |diff| {diff:.3g})"


async def _weights_info(probe: Probe) -> str:
    rest = probe.service.create_rest_client()
    info = await rest.get_weights_info_by_tinker_path(probe.state_path)
    if getattr(info, "base_model", None) != probe.model:
        raise BackendError(f"base_model {getattr(info, 'base_model', None)!r}, not {probe.model!r}")
    return f"base_model {info.base_model}, lora_rank {getattr(info, 'lora_rank', None)}"


async def _listed(probe: Probe, run_id: str) -> set[str]:
    rest = probe.service.create_rest_client()
    return {c.tinker_path for c in (await rest.list_checkpoints_async(run_id)).checkpoints}


async def _list_checkpoints(probe: Probe) -> str:
    listed = await _listed(probe, str(probe.training.model_id))
    missing = [path for path in probe.created if path not in listed]
    if missing:
        raise BackendError(f"{missing[0]} is not listed (listed: {sorted(listed)[:5]})")
    return f"{len(listed)} checkpoint(s) of the run, the {len(probe.created)} saved among them"


async def _list_user_checkpoints(probe: Probe) -> str:
    rest, seen = probe.service.create_rest_client(), 0
    while True:
        page = await rest.list_user_checkpoints_async(limit=100, offset=seen)
        seen += len(page.checkpoints)
        if any(c.tinker_path == probe.state_path for c in page.checkpoints):
            return f"the saved state among the first {seen} listed"
        total = page.cursor.total_count if page.cursor is not None else None
        if not page.checkpoints or total is None or seen >= total:
            raise BackendError(f"{probe.state_path} is not among the {seen} listed")


async def _archive_url(probe: Probe) -> str:
    rest = probe.service.create_rest_client()
    response = await rest.get_checkpoint_archive_url_from_tinker_path_async(probe.state_path)
    url = getattr(response, "url", None)
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise BackendError(f"archive url {url!r} is not an http(s) URL")
    return f"a URL, expires {getattr(response, 'expires_at', None)}"


async def _reverse_kl(probe: Probe) -> str:
    import mint
    import tinker

    tokens = probe.prompt + probe.reply
    n = len(tokens) - 1
    weights = [0.0] * (len(probe.prompt) - 1) + [1.0] * len(probe.reply)
    datum = mint.mint.ReverseKLDatum(
        student_input=tinker.ModelInput.from_ints(tokens[:-1]),
        reference_input=tinker.ModelInput.from_ints(tokens[:-1]),
        target_tokens=tinker.TensorData(data=tokens[1:], dtype="int64", shape=[n]),
        weights=tinker.TensorData(data=weights, dtype="float32", shape=[n]),
    )
    call = mint.mint.forward_backward_reverse_kl_async(
        probe.training, reference_model_path=probe.sampler_path, data=[datum]
    )
    result = await on_sdk_loop(probe.training, call, mint.mint.ForwardBackwardReverseKLResponse)
    losses = [float(v) for out in result.outputs for v in _values(out.loss.data)]
    if len(result.outputs) != 1 or not losses or not all(v >= -1e-4 for v in losses):
        raise BackendError(f"expected one datum's KL loss >= 0, got {result.outputs!r:.200}")
    return f"loss {losses[0]:.4g} against the saved sampler; metrics {sorted(result.metrics)}"


def _values(data: Any) -> list[Any]:
    return list(data) if isinstance(data, list) else [data]


async def _interpolate(probe: Probe) -> str:
    import mint
    import tinker

    second = await done(probe.training.save_weights_for_sampler_async(probe.tinker_name("s2")))
    probe.created.append(_tinker_path(second.path, "save_weights_for_sampler"))
    call = mint.mint.interpolate_checkpoints_async(
        probe.service, source_paths=[probe.sampler_path, second.path], coefficients=[0.5, 0.5]
    )
    mixed = await on_sdk_loop(probe.service, call, mint.mint.InterpolateCheckpointsResponse)
    path = _tinker_path(mixed.path, "interpolate_checkpoints")
    probe.created.append(path)
    client = await probe.service.create_sampling_client_async(model_path=path)
    params = tinker.SamplingParams(max_tokens=4, seed=7)
    seq = await client.sample_async(tinker.ModelInput.from_ints(probe.prompt), 1, params)
    check_logprobs(seq.sequences[0].logprobs or [], len(seq.sequences[0].tokens), "sample")
    return f"{path} samples"


async def _delete_checkpoints(probe: Probe) -> str:
    if not probe.created:
        raise BackendError("nothing to delete: no row saved a checkpoint")
    rest = probe.service.create_rest_client()
    first: Exception | None = None
    for path in probe.created:  # every one, even after a failure: nothing is left behind
        try:
            await rest.delete_checkpoint_from_tinker_path_async(path)
        except Exception as err:  # the first is the row's reason
            first = first or err
    if first is not None:
        raise first
    runs = {path.removeprefix("tinker://").split("/", 1)[0] for path in probe.created}
    left = [
        path for run in sorted(runs) for path in await _listed(probe, run) if path in probe.created
    ]
    if left:
        raise BackendError(f"still listed after the delete: {left}")
    count = len(probe.created)
    probe.created.clear()
    return f"the {count} checkpoint(s) this run saved; no longer listed"


SAMPLER_CHECKS: tuple[Check, ...] = (
    Check("save_weights_for_sampler", _save_sampler, needs=("create_lora_training_client",)),
    Check(
        "create_sampling_client(model_path)", _sampler_of_path, needs=("save_weights_for_sampler",)
    ),
    Check(
        "create_sampling_client(base_model, model_path)",
        _sampler_of_both,
        needs=("create_sampling_client(model_path)",),
    ),
    Check(
        "save_weights_and_get_sampling_client",
        _save_and_sample,
        needs=("create_sampling_client(model_path)",),
    ),
)
"""Sampler weights and their sampling clients."""

_STATE = ("save_state",)

STATE_CHECKS: tuple[Check, ...] = (
    Check("save_state", _save_state, needs=("create_lora_training_client",)),
    Check("load_state", _load_state, needs=_STATE),
    Check("load_state_with_optimizer", _load_state_with_optimizer, needs=_STATE),
    Check("create_training_client_from_state", _from_state, needs=_STATE),
    Check(
        "create_training_client_from_state_with_optimizer", _from_state_with_optimizer, needs=_STATE
    ),
    Check(
        "sampling client is a snapshot",
        _snapshot_frozen,
        needs=("create_sampling_client(model_path)",),
    ),
    Check("get_weights_info_by_tinker_path", _weights_info, needs=_STATE, required=False),
    Check("list_checkpoints", _list_checkpoints, needs=_STATE),
    Check("list_user_checkpoints", _list_user_checkpoints, needs=_STATE, required=False),
    Check("get_checkpoint_archive_url", _archive_url, needs=_STATE, required=False),
    Check(
        "mint.forward_backward_reverse_kl",
        _reverse_kl,
        needs=("save_weights_for_sampler",),
        required=False,
    ),
    Check(
        "mint.interpolate_checkpoints",
        _interpolate,
        needs=("save_weights_for_sampler",),
        required=False,
    ),
    Check("delete_checkpoint", _delete_checkpoints),
)
"""Training state, the REST routes, MinT's own calls, and deleting what was saved."""
