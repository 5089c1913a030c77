"""Checkpoints no client can poison or overwrite (issue 33, item 5), through the real SDK.

Each test is one break the issue's probe found against the embedded server, driven by
the unmodified ``mint`` SDK: interpolation coefficients of 1e30, NaN in an answer (the
SDK failed with a non-retryable ``JSONDecodeError``), an ``output_path`` over another
run's checkpoint or over one of another base model, a reverse-KL temperature of 1e-30, a
corrupted or foreign checkpoint (an internal ``SafetensorError``), a file symlinked out
of the state directory, and ``.tmp-*`` folders a ``kill -9`` during a save left behind.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from server_helpers import SMALL, FakeEngine

os.environ["TINKER_TELEMETRY"] = "0"

pytestmark = pytest.mark.integration

import mint  # noqa: E402
import tinker  # noqa: E402
from mint import types  # noqa: E402
from mint.mint import (  # noqa: E402
    ReverseKLDatum,
    forward_backward_reverse_kl,
    interpolate_checkpoints,
)

from mint_envkit.local.server import LocalServer  # noqa: E402

OTHER = "mint-envkit/tiny-qwen3"
PROMPT = types.ModelInput.from_ints([5, 6, 7])


@pytest.fixture(scope="module")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mint-state")


@pytest.fixture(scope="module")
def server(state_dir: Path) -> Iterator[LocalServer]:
    with LocalServer(models=[SMALL, OTHER], state_dir=str(state_dir)) as running:
        assert running.preload_errors(timeout=300) == {}
        yield running


def _beside(path: str, name: str) -> str:
    """``path`` with its last part (the checkpoint's name) replaced by ``name``: a run id
    is random hex, so a plain replace of "/a" also hit a run id that starts with "a"."""
    return f"{path.rsplit('/', 1)[0]}/{name}"


@pytest.fixture(scope="module")
def client(server: LocalServer) -> Iterator[Any]:
    service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
    yield service
    service.holder.close()


def _trained(client: Any, base: str, name: str, seed: int) -> tuple[Any, str]:
    """A training client one step away from its base model, and a sampler checkpoint of it."""
    tc = client.create_lora_training_client(base_model=base, rank=2, seed=seed)
    datum = types.Datum(
        model_input=types.ModelInput.from_ints([5, 6, 7, 8]),
        loss_fn_inputs={"target_tokens": [6, 7, 8, 5]},
    )
    tc.forward_backward([datum], "cross_entropy").result()
    tc.optim_step(types.AdamParams(learning_rate=0.05)).result()
    return tc, tc.save_weights_for_sampler(name).result().path


@pytest.fixture(scope="module")
def trained(client: Any) -> dict[str, Any]:
    tc, a = _trained(client, SMALL, "a", seed=1)
    _, b = _trained(client, SMALL, "b", seed=2)
    _, other = _trained(client, OTHER, "other", seed=3)
    return {"client": tc, "a": a, "b": b, "other": other}


def _folder(state_dir: Path, path: str) -> Path:
    return state_dir / path.removeprefix("tinker://")


def _status(call: Any) -> tuple[int, str]:
    with pytest.raises(tinker.APIStatusError) as info:
        call()
    return info.value.status_code, str(info.value)


def _logprobs(client: Any, path: str) -> list[float]:
    sampler = client.create_sampling_client(model_path=path)
    return sampler.compute_logprobs(types.ModelInput.from_ints([5, 6, 7, 8, 9])).result()[1:]


# --------------------------------------------------------------------------- interpolation


def test_huge_coefficients_are_refused_before_anything_is_written(client, trained, state_dir):
    before = sorted(p.name for p in _folder(state_dir, trained["a"]).parent.iterdir())
    status, text = _status(
        lambda: interpolate_checkpoints(
            client, source_paths=[trained["a"], trained["b"]], coefficients=[1e30, 1e30]
        )
    )
    assert status == 422 and "coefficients[0]" in text and "[-10, 10]" in text
    assert sorted(p.name for p in _folder(state_dir, trained["a"]).parent.iterdir()) == before
    # the chain's edge (sum of |coefficient| x each source's gain: 10) is accepted and
    # samples finite logprobs; one step past it is refused (issue 46: the bound is the
    # whole chain's, not each call's)
    mix = interpolate_checkpoints(
        client, source_paths=[trained["a"], trained["b"]], coefficients=[5.0, -5.0]
    )
    assert all(-1e4 < v <= 0 for v in _logprobs(client, mix.path))


def test_output_path_never_names_another_run(client, trained, state_dir):
    victim = trained["other"]  # another run's checkpoint, of another base model even
    files = {f.name: f.read_bytes() for f in _folder(state_dir, victim).iterdir()}
    expected = _logprobs(client, victim)
    for output in (victim, victim.replace("/other", "/fresh-name")):
        status, text = _status(
            lambda output=output: interpolate_checkpoints(
                client,
                source_paths=[trained["a"], trained["b"]],
                coefficients=[0.5, 0.5],
                output_path=output,
            )
        )
        assert status == 422 and "output_path" in text and "run" in text
    assert {f.name: f.read_bytes() for f in _folder(state_dir, victim).iterdir()} == files
    assert _logprobs(client, victim) == expected
    assert not _folder(state_dir, victim.replace("/other", "/fresh-name")).exists()
    # a full path in the first source's own run is fine
    own = _beside(trained["a"], "mix-own")
    got = interpolate_checkpoints(
        client, source_paths=[trained["a"], trained["b"]], coefficients=[0.5, 0.5], output_path=own
    )
    assert got.path == own


def test_output_path_never_replaces_a_checkpoint_of_another_base_model(client, trained, state_dir):
    # a checkpoint of the other base model copied into the first source's run by hand
    planted = _folder(state_dir, trained["a"]).parent / "planted"
    shutil.copytree(_folder(state_dir, trained["other"]), planted)
    files = {f.name: f.read_bytes() for f in planted.iterdir()}
    status, text = _status(
        lambda: interpolate_checkpoints(
            client,
            source_paths=[trained["a"], trained["b"]],
            coefficients=[0.5, 0.5],
            output_path="planted",
        )
    )
    assert status == 422 and "output_path" in text and OTHER in text and "not replaced" in text
    assert {f.name: f.read_bytes() for f in planted.iterdir()} == files
    # a checkpoint of the same base model is replaced, as documented
    for coefs in ([1.0, 0.0], [0.0, 1.0]):
        again = interpolate_checkpoints(
            client,
            source_paths=[trained["a"], trained["b"]],
            coefficients=coefs,
            output_path="same",
        )
    assert again.path == _beside(trained["a"], "same")
    assert _logprobs(client, again.path) == pytest.approx(_logprobs(client, trained["b"]), abs=1e-5)


def test_an_interpolation_request_is_bounded_in_size(client, trained):
    many = [trained["a"]] * 65
    status, text = _status(
        lambda: interpolate_checkpoints(client, source_paths=many, coefficients=[0.0] * 65)
    )
    assert status == 413 and "64" in text


# --------------------------------------------------------------------------- no NaN on the wire


def test_weights_that_overflow_fail_with_the_cause_not_a_json_error(client, trained, state_dir):
    """A checkpoint whose finite weights overflow the model (what 1e30 used to write)."""
    from safetensors.torch import load_file, save_file

    folder = _folder(state_dir, trained["a"]).parent / "overflows"
    shutil.copytree(_folder(state_dir, trained["a"]), folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "name": "overflows"}))
    tensors = load_file(str(folder / "adapter_model.safetensors"))
    scaled = {k: v * 1e30 if "lora_B" in k else v for k, v in tensors.items()}
    save_file(scaled, str(folder / "adapter_model.safetensors"))
    path = _beside(trained["a"], "overflows")
    sampler = client.create_sampling_client(model_path=path)
    with pytest.raises(tinker.RequestFailedError, match="are not finite") as info:
        sampler.sample(PROMPT, 1, types.SamplingParams(max_tokens=4)).result()
    assert "overflows" in str(info.value)
    with pytest.raises(tinker.RequestFailedError, match="are not finite"):
        sampler.compute_logprobs(PROMPT).result()


class _NaNEngine(FakeEngine):
    """An engine whose samples carry NaN logprobs (the serialisation layer is the check)."""

    def sample(self, sampler_id, prompt, *, num_samples=1, max_tokens=16, seed=None, **kw):
        seqs = super().sample(sampler_id, prompt, num_samples=num_samples, max_tokens=max_tokens)
        return [
            type(s)([0] * len(s.tokens), [float("nan")] * len(s.tokens), "length") for s in seqs
        ]


def test_an_answer_never_carries_nan_whatever_the_engine_returns(tmp_path):
    engine = _NaNEngine()
    with LocalServer(
        models=[SMALL], state_dir=str(tmp_path), engine_factory=lambda: engine, preload=False
    ) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:
            sampler = service.create_sampling_client(base_model=SMALL)
            # retrieve_future answers 422 with the reason; the SDK raises it at once (a
            # non-retryable ValueError naming the status), not a JSONDecodeError
            with pytest.raises(ValueError, match="422") as info:
                sampler.sample(PROMPT, 1, types.SamplingParams(max_tokens=4)).result()
            assert "non-finite number (nan at sequences[0].logprobs[0])" in str(info.value)
        finally:
            service.holder.close()


# --------------------------------------------------------------------------- reverse KL


def _rkl_datum() -> ReverseKLDatum:
    return ReverseKLDatum(
        student_input=types.ModelInput.from_ints([1, 2, 3]),
        reference_input=types.ModelInput.from_ints([9, 1, 2, 3]),
        target_tokens=types.TensorData(data=[2, 3, 4], dtype="int64", shape=[3]),
        weights=types.TensorData(data=[1.0, 1.0, 1.0], dtype="float32", shape=[3]),
    )


@pytest.mark.parametrize("temperature", [1e-30, 1e-4])
def test_reverse_kl_temperature_has_the_sampling_floor(client, trained, temperature):
    student = client.create_lora_training_client(base_model=SMALL, rank=2, seed=0)
    status, text = _status(
        lambda: forward_backward_reverse_kl(
            student, reference_model_path=trained["a"], data=[_rkl_datum()], temperature=temperature
        )
    )
    assert status == 422 and "temperature" in text and "0.001" in text
    out = forward_backward_reverse_kl(
        student, reference_model_path=trained["a"], data=[_rkl_datum()], temperature=1e-3
    )
    assert all(0 <= o.loss.data[0] < 1e6 for o in out.outputs)


# --------------------------------------------------------------------------- files on disk


def _copy(state_dir: Path, path: str, name: str) -> tuple[Path, str]:
    """A copy of checkpoint ``path`` under another name in its run (never read by the server)."""
    folder = _folder(state_dir, path).parent / name
    shutil.copytree(_folder(state_dir, path), folder)
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "name": name}))
    return folder, path.rsplit("/", 1)[0] + "/" + name


def test_a_corrupted_checkpoint_is_a_4xx_naming_the_file(client, trained, state_dir):
    folder, path = _copy(state_dir, trained["a"], "corrupted")
    (folder / "adapter_model.safetensors").write_bytes(b"garbage" * 10)
    status, text = _status(lambda: client.create_sampling_client(model_path=path))
    assert status == 422 and "is unreadable" in text
    assert str(folder / "adapter_model.safetensors") in text
    with pytest.raises(tinker.RequestFailedError, match="is unreadable") as info:
        trained["client"].load_state(path).result()
    assert info.value.category == types.RequestErrorCategory.User
    folder, path = _copy(state_dir, trained["a"], "bad-meta")
    (folder / "meta.json").write_text("{not json")
    status, text = _status(lambda: client.create_sampling_client(model_path=path))
    assert status == 422 and "is unreadable" in text and str(folder / "meta.json") in text


def test_a_foreign_checkpoint_is_a_4xx_naming_the_file(client, trained, state_dir):
    # the other base model's weights, with a meta.json that claims this one
    folder, path = _copy(state_dir, trained["other"], "foreign")
    meta = json.loads((folder / "meta.json").read_text())
    (folder / "meta.json").write_text(json.dumps({**meta, "base_model": SMALL}))
    status, text = _status(lambda: client.create_sampling_client(model_path=path))
    assert status == 422 and "is unreadable" in text
    assert str(folder / "adapter_model.safetensors") in text


def test_a_symlink_out_of_the_state_directory_is_refused(client, trained, state_dir, tmp_path):
    folder, path = _copy(state_dir, trained["a"], "linked")
    outside = tmp_path / "outside.safetensors"
    (folder / "adapter_model.safetensors").rename(outside)
    (folder / "adapter_model.safetensors").symlink_to(outside)
    status, text = _status(lambda: client.create_sampling_client(model_path=path))
    assert status == 422 and "out of the state directory" in text and str(outside) in text
    # a whole checkpoint folder linked from outside
    target = tmp_path / "elsewhere"
    shutil.copytree(_folder(state_dir, trained["a"]), target)
    (folder.parent / "linked-dir").symlink_to(target)
    status, text = _status(
        lambda: client.create_sampling_client(model_path=path.replace("/linked", "/linked-dir"))
    )
    assert status == 422 and "out of the state directory" in text


_KILLED_SAVE = textwrap.dedent(
    """
    import os, signal, sys
    import safetensors.torch
    from mint_envkit.local import Engine

    engine = Engine(state_dir=sys.argv[1])
    model_id = engine.create_lora("mint-envkit/tiny-qwen3-small", rank=2, seed=0)
    engine.save_state(model_id, "kept", kind="state")
    save = safetensors.torch.save_file
    def killed(tensors, filename, *args, **kwargs):  # kill -9 in the middle of a save
        save(tensors, filename, *args, **kwargs)
        if filename.endswith("optimizer.safetensors"):
            os.kill(os.getpid(), signal.SIGKILL)
    safetensors.torch.save_file = killed
    print(model_id, flush=True)
    engine.save_state(model_id, "torn", kind="state")
    """
)


def test_a_restart_removes_what_a_killed_save_left(tmp_path):
    state = tmp_path / "state"
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_SAVE, str(state)],
        capture_output=True,
        text=True,
        timeout=100,
        check=False,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr[-2000:]
    model_id = proc.stdout.split()[0]
    weights = state / model_id / "weights"
    left = [p for p in weights.iterdir() if p.name.startswith(".tmp-")]
    assert left and (left[0] / "adapter_model.safetensors").is_file()  # what kill -9 left
    with LocalServer(models=[SMALL], state_dir=str(state), preload=False) as server:
        service = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:  # the engine starts (and sweeps) with the first call
            rest = service.create_rest_client()
            listed = rest.list_checkpoints(model_id).result().checkpoints
            assert [c.checkpoint_id for c in listed] == ["weights/kept"]
        finally:
            service.holder.close()
    assert sorted(p.name for p in weights.iterdir()) == ["kept"]


# --------------------------------------------------------------------------- both names (issue 32)


def test_a_sampling_client_takes_base_model_and_model_path_when_they_agree(client, trained):
    both = client.create_sampling_client(model_path=trained["a"], base_model=SMALL)
    lp = both.compute_logprobs(types.ModelInput.from_ints([5, 6, 7, 8, 9])).result()[1:]
    assert lp == pytest.approx(_logprobs(client, trained["a"]), abs=1e-6)  # the checkpoint's
    base = client.create_sampling_client(base_model=SMALL)
    plain = base.compute_logprobs(types.ModelInput.from_ints([5, 6, 7, 8, 9])).result()[1:]
    assert max(abs(x - y) for x, y in zip(lp, plain, strict=True)) > 1e-3  # not the base's
    status, text = _status(
        lambda: client.create_sampling_client(model_path=trained["a"], base_model=OTHER)
    )
    assert status == 422 and trained["a"] in text and OTHER in text and SMALL in text
