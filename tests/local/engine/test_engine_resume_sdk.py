"""Resume after a server restart through the SDK: weights_info carries the LoRA flags."""

from __future__ import annotations

import os

import pytest
from engine_kit import SMALL

from mint_envkit.local.server import LocalServer

pytestmark = pytest.mark.integration


def test_a_run_with_non_default_flags_resumes_after_a_restart(tmp_path):
    import mint

    os.environ.setdefault("TINKER_TELEMETRY", "0")
    flags = {"train_mlp": False, "train_attn": True, "train_unembed": False}
    with LocalServer(models=[SMALL], state_dir=str(tmp_path)) as server:
        client = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:
            training = client.create_lora_training_client(base_model=SMALL, rank=4, **flags)
            path = training.save_state("before-restart").result().path
        finally:
            client.holder.close()
    with LocalServer(models=[SMALL], state_dir=str(tmp_path)) as server:  # nothing in memory
        client = mint.ServiceClient(base_url=server.base_url, api_key="sk-test")
        try:
            rest = client.create_rest_client()
            info = rest.get_weights_info_by_tinker_path(path).result()
            assert (info.train_mlp, info.train_attn, info.train_unembed) == (False, True, False)
            restored = client.create_training_client_from_state_with_optimizer(path)
            assert restored.get_info().lora_rank == 4
        finally:
            client.holder.close()
