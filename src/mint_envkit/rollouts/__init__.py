"""The rollout layer: sample a model on an env's problems, score, and the figures of it.

Everything that samples and scores sits here, below the training loop, so that the loop,
evaluations, the audit and your scripts share it: the sampler protocol
(:data:`Sampler`, :class:`SampleRequest`), rolling groups out (:func:`rollout_groups`),
:class:`ScriptedPolicy` for fixed replies, the two settings values
(:class:`SamplingSettings`, :class:`BackendSettings`), and the backend connection
(:func:`connect`, :func:`local_backend`, :func:`sampling_client`), and the files a run
writes (:class:`RunFiles`); :class:`OpenAIEndpoint` samples an OpenAI-compatible server.

Example::

    from mint_envkit import DatasetBuilder, SingleTurnEnv
    from mint_envkit.rollouts import ScriptedPolicy, rollout_groups

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    train, _ = await builder()
    rollouts = await rollout_groups(train.get_batch(0), ScriptedPolicy(["5", "7"]))
    assert rollouts[0].rewards == [1.0, 0.0]
"""

from mint_envkit.rollouts.backend import (
    Connection,
    connect,
    idle_machine_threads,
    local_api_key,
    local_backend,
    pretrained_local_model,
    resolve_connection,
    sampling_client,
    service_client,
    shared_local_backend,
)
from mint_envkit.rollouts.openai_endpoint import OpenAIEndpoint
from mint_envkit.rollouts.run import rollout_groups
from mint_envkit.rollouts.sampler import Sampler, SampleRequest
from mint_envkit.rollouts.scripted import GroupReport, ScriptedPolicy, ScriptedReport
from mint_envkit.rollouts.settings import BackendSettings, SamplingSettings
from mint_envkit.rollouts.types import GroupRollout, SampledTokens, Trajectory, Transition
from mint_envkit.runs.files import RunFiles, read_jsonl

__all__ = [
    "BackendSettings",
    "Connection",
    "GroupReport",
    "GroupRollout",
    "OpenAIEndpoint",
    "RunFiles",
    "SampleRequest",
    "SampledTokens",
    "Sampler",
    "SamplingSettings",
    "ScriptedPolicy",
    "ScriptedReport",
    "Trajectory",
    "Transition",
    "connect",
    "idle_machine_threads",
    "local_api_key",
    "local_backend",
    "pretrained_local_model",
    "read_jsonl",
    "resolve_connection",
    "rollout_groups",
    "sampling_client",
    "service_client",
    "shared_local_backend",
]
