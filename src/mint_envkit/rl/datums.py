"""From scored rollouts to training data: one sample per reply, datums.

A multi-turn episode whose observations extend each other (each prompt is
the previous prompt + the sampled reply + the env's new messages, as the
token-faithful :class:`~mint_envkit.rendering.EnvFromMessageEnv` builds them) trains as
ONE datum: the sampled tokens carry the advantage, the env's tokens get zero
advantage and zero logprob. That is O(T) tokens for T turns instead of the
O(T^2) of one datum per turn. Where an observation does not extend the
previous one, the episode is split there (counted in
``train/turn_fallbacks``). :func:`plan_datums` says which samples share a datum.

Example::

    from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv
    from mint_envkit.rollouts.run import rollout_groups

    builder = DatasetBuilder(env=SingleTurnEnv, problems=[{"question": "2 + 3?", "answer": "5"}],
                             batch_size=1, group_size=2, model_name="mint-envkit/tiny-qwen3")
    train, _ = await builder()
    rollouts = await rollout_groups(train.get_batch(0), ScriptedPolicy(["5", "7"]))
    advantages = {0: [0.5, -0.5]}  # group 0: one advantage per episode

    samples = training_samples(rollouts, advantages)
    token_advantages = [sample.token_advantages() for sample in samples]
    data = to_datums(samples, token_advantages)
    assert len(data) == 2  # two single-turn episodes: one datum each
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.errors import MintEnvkitError
from mint_envkit.rollouts.types import GroupRollout


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
    episode: int | None = attrs.field(default=None, eq=False)
    """Which episode of the batch the reply belongs to (None: train it alone)."""
    parse_failed: bool = attrs.field(default=False, eq=False)
    """Whether the reply failed to parse (see :func:`reply_parse_failed`)."""

    def token_advantages(self) -> list[float]:
        """The advantage repeated once per reply token.

        Example::

            sample = samples[0]  # the module example's: reply "5" and the stop token
            assert sample.token_advantages() == [0.5, 0.5]
        """
        return [self.advantage] * len(self.reply)


def training_samples(
    rollouts: Sequence[GroupRollout], advantages: Mapping[int, Sequence[float]]
) -> list[Sample]:
    """One :class:`Sample` per non-empty reply of every group that has advantages.

    ``advantages`` maps a group's position in ``rollouts`` to one advantage
    per episode; a reply sampled without logprobs gets zeros.

    Example::

        samples = training_samples(rollouts, {0: [0.5, -0.5]})  # rollouts: the module example's
        assert [s.advantage for s in samples] == [0.5, -0.5]
    """
    out = []
    episode = 0
    for position, values in advantages.items():
        for trajectory, value in zip(rollouts[position].trajectories, values, strict=True):
            for transition in trajectory.transitions:
                tokens = transition.ac.tokens
                if tokens:
                    logprobs = list(transition.ac.logprobs or [0.0] * len(tokens))
                    failed = reply_parse_failed(transition.metrics, transition.logs)
                    sample = Sample(transition.ob, tokens, logprobs, value, episode, failed)
                    out.append(sample)
            episode += 1
    return out


def reply_parse_failed(metrics: Mapping[str, Any], logs: Mapping[str, Any]) -> bool:
    """Whether a step's reply failed to parse, from the step's metrics and logs.

    True when the env's answer parser logged a ``parse_status`` other than
    ``"ok"`` (a :data:`~mint_envkit.parsers.Status` such as ``"no_match"`` or
    ``"truncated"``), or the renderer could not parse the reply (the
    ``parse_error`` metric of the token-level env, e.g. no stop token). A
    step that logs neither (no answer was read) did not fail.

    Example::

        reply_parse_failed({}, {"parse_status": "no_match"})  # True
        reply_parse_failed({"parse_error": 0.0}, {"parse_status": "ok"})  # False
    """
    status = logs.get("parse_status")
    return (status is not None and status != "ok") or bool(metrics.get("parse_error", 0.0))


def mask_parse_failures(
    samples: Sequence[Sample], token_advantages: Sequence[list[float]]
) -> tuple[list[list[float]], dict[str, float]]:
    """Zero the token advantages of the samples whose reply failed to parse; count them.

    The advantages are the datums' weights (both losses multiply each token's
    term by its advantage), so a zeroed reply adds no gradient; it still goes
    into its datum (a multi-turn episode's other turns keep theirs). Returns
    the new advantages and ``train/masked_parse_failures`` (replies masked)
    and ``train/masked_tokens`` (their tokens).

    Example::

        samples = [Sample([1], [2, 3], [-0.1, -0.2], 1.0, parse_failed=True),
                   Sample([1], [4], [-0.3], -1.0)]
        mask_parse_failures(samples, [[1.0, 1.0], [-1.0]])
        # ([[0.0, 0.0], [-1.0]], {'train/masked_parse_failures': 1, 'train/masked_tokens': 2})
    """
    if len(samples) != len(token_advantages):
        raise MintEnvkitError(
            f"{len(samples)} samples but {len(token_advantages)} lists of token advantages"
        )
    out: list[list[float]] = []
    replies = tokens = 0
    for sample, values in zip(samples, token_advantages, strict=True):
        if sample.parse_failed:
            replies += 1
            tokens += len(values)
            out.append([0.0] * len(values))
        else:
            out.append(list(values))
    return out, {"train/masked_parse_failures": replies, "train/masked_tokens": tokens}


def _extends(before: Sample, after: Sample) -> bool:
    """Whether ``after``'s prompt starts with ``before``'s prompt + reply."""
    context = before.prompt + before.reply
    return after.prompt[: len(context)] == context


def plan_datums(samples: Sequence[Sample]) -> list[list[int]]:
    """Which samples train together: a list of sample positions per datum, in order.

    Consecutive samples of the same episode share a datum while each prompt
    extends the previous prompt + reply; a break starts a new datum.

    Example::

        assert plan_datums(samples) == [[0], [1]]  # the module example's single-turn samples
        # a batch of multi-turn episodes gives e.g. [[0, 1, 2], [3], [4, 5]]: turns merged
    """
    plan: list[list[int]] = []
    for index, sample in enumerate(samples):
        if plan and sample.episode is not None:
            previous = samples[plan[-1][-1]]
            if previous.episode == sample.episode and _extends(previous, sample):
                plan[-1].append(index)
                continue
        plan.append([index])
    return plan


def datum_metrics(samples: Sequence[Sample], plan: Sequence[Sequence[int]]) -> dict[str, float]:
    """``train/datums``, ``train/datum_tokens`` (model input tokens sent) and ``train/turn_fallbacks``.

    ``turn_fallbacks`` counts the places where a later turn of an episode
    could not join its datum (its observation did not extend the previous
    one), so it trained as a datum of its own.

    Example::

        metrics = datum_metrics(samples, plan_datums(samples))  # samples: the module example's
        assert metrics == {"train/datums": 2, "train/datum_tokens": 32, "train/turn_fallbacks": 0}
    """
    tokens = 0
    fallbacks = 0
    for number, group in enumerate(plan):
        last = samples[group[-1]]
        tokens += len(last.prompt) + len(last.reply) - 1
        previous = plan[number - 1] if number else None
        if previous and samples[group[0]].episode is not None:
            fallbacks += samples[previous[-1]].episode == samples[group[0]].episode
    return {
        "train/datums": len(plan),
        "train/datum_tokens": tokens,
        "train/turn_fallbacks": fallbacks,
    }


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


def _merged(samples: Sequence[Sample], token_advantages: Sequence[list[float]]) -> Any:
    """One datum for consecutive turns that extend each other; env tokens get zeros."""
    first = samples[0].prompt
    tokens = list(first)
    logprobs: list[float] = []
    advantages: list[float] = []
    for sample, values in zip(samples, token_advantages, strict=True):
        observed = sample.prompt[len(tokens) :]
        tokens += observed + sample.reply
        logprobs += [0.0] * len(observed) + list(sample.logprobs)
        advantages += [0.0] * len(observed) + list(values)
    return to_datum(first, tokens[len(first) :], advantages, logprobs)


def to_datums(samples: Sequence[Sample], token_advantages: Sequence[list[float]]) -> list[Any]:
    """The datums of ``samples`` with their per-token advantages, one per :func:`plan_datums` entry.

    A single-turn sample is one datum; a multi-turn episode whose
    observations extend each other is one datum for all its turns.

    Example::

        data = to_datums(samples, [s.token_advantages() for s in samples])
    """
    if len(samples) != len(token_advantages):
        raise MintEnvkitError(
            f"{len(samples)} samples but {len(token_advantages)} lists of token advantages"
        )
    return [
        _merged([samples[i] for i in group], [token_advantages[i] for i in group])
        for group in plan_datums(samples)
    ]
