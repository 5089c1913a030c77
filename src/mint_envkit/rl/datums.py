"""From scored rollouts to training data: one sample per reply, datums.

Example::

    samples = training_samples(rollouts, advantages)
    token_advantages = [sample.token_advantages() for sample in samples]
    data = to_datums(samples, token_advantages)
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.rl.types import GroupRollout

__all__ = ["Sample", "to_datum", "to_datums", "training_samples"]


@attrs.frozen
class Sample:
    """One reply that trains: its prompt and reply tokens, reply logprobs and advantage.

    Example::

        Sample(prompt=[1, 2], reply=[3], logprobs=[-0.5], advantage=1.0).token_advantages()
        # [1.0]
    """

    prompt: list[int]
    reply: list[int]
    logprobs: list[float]
    advantage: float

    def token_advantages(self) -> list[float]:
        """The advantage repeated once per reply token.

        Example::

            sample.token_advantages()  # [1.0, 1.0, 1.0]
        """
        return [self.advantage] * len(self.reply)


def training_samples(
    rollouts: Sequence[GroupRollout], advantages: Mapping[int, Sequence[float]]
) -> list[Sample]:
    """One :class:`Sample` per non-empty reply of every group that has advantages.

    ``advantages`` maps a group's position in ``rollouts`` to one advantage
    per episode; a reply sampled without logprobs gets zeros.

    Example::

        samples = training_samples(rollouts, {0: [0.5, -0.5]})
    """
    out = []
    for position, values in advantages.items():
        for trajectory, value in zip(rollouts[position].trajectories, values, strict=True):
            for transition in trajectory.transitions:
                tokens = transition.ac.tokens
                if tokens:
                    logprobs = list(transition.ac.logprobs or [0.0] * len(tokens))
                    out.append(Sample(transition.ob, tokens, logprobs, value))
    return out


def to_datum(
    prompt: list[int], reply: list[int], token_advantages: list[float], logprobs: list[float]
) -> Any:
    """A ``tinker.Datum`` for the loss: next-token targets, reply logprobs and advantages.

    Prompt positions carry zero logprob and zero advantage, so only the reply
    trains.

    Example::

        datum = to_datum([1, 2], [3, 4], [0.5, 0.5], [-0.1, -0.2])
    """
    import tinker

    tokens = prompt + reply
    n_prompt = len(prompt) - 1
    shape = [len(tokens) - 1]
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=tokens[1:], dtype="int64", shape=shape),
            "logprobs": tinker.TensorData(
                data=[0.0] * n_prompt + logprobs, dtype="float32", shape=shape
            ),
            "advantages": tinker.TensorData(
                data=[0.0] * n_prompt + token_advantages, dtype="float32", shape=shape
            ),
        },
    )


def to_datums(samples: Sequence[Sample], token_advantages: Sequence[list[float]]) -> list[Any]:
    """One datum per sample, with its per-token advantages.

    Example::

        data = to_datums(samples, [s.token_advantages() for s in samples])
    """
    return [
        to_datum(s.prompt, s.reply, adv, s.logprobs)
        for s, adv in zip(samples, token_advantages, strict=True)
    ]
