"""What a distillation teacher reads: its prompts, and the reverse-KL datums sent to MinT.

On-policy distillation scores every reply the student sampled with a
teacher. The teacher reads its own view of the conversation (the env's
:meth:`~mint_envkit.MessageEnv.teacher_messages`, by default the student's
messages) followed by the student's exact reply tokens. One
:class:`TeacherSample` per reply holds both prompts and the reply;
:func:`reverse_kl_datum` turns it into the ``mint.mint.ReverseKLDatum`` of
``forward_backward_reverse_kl``:

- ``student_input`` = (student prompt + reply) without its last token,
- ``reference_input`` = (teacher prompt + reply) without its last token,
- ``target_tokens`` = (student prompt + reply) shifted by one,
- ``weights`` = 0 on the prompt's positions, 1 on the reply's.

Targets and weights align with the student's positions; the reply is the
common suffix of both inputs, so the teacher's position for a reply token
is the student's shifted by ``len(teacher prompt) - len(student prompt)``.

Example::

    # not run: needs a sampling client (a running backend)
    groups = [RecordingGroup(g) for g in train.get_batch(0)]
    batch = await sample_batch(config, sampling_client, groups, salt=0)
    samples = teacher_samples(batch.rollouts, [g.envs for g in groups])
    data = [reverse_kl_datum(s) for s in samples]
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import attrs

from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rollouts.types import GroupRollout, Trajectory


@attrs.frozen
class TeacherSample:
    """One sampled reply as the student and the teacher read it.

    Attributes:
        student_prompt: the prompt tokens the student sampled the reply from.
        teacher_prompt: the teacher's prompt tokens (the student's when the
            env's ``teacher_messages`` changes nothing).
        reply: the student's sampled reply tokens.
        episode: the episode's position in the batch.

    Example::

        TeacherSample(student_prompt=[1, 2], teacher_prompt=[9, 1, 2], reply=[3, 4], episode=0)
    """

    student_prompt: list[int]
    teacher_prompt: list[int]
    reply: list[int]
    episode: int = 0


class RecordingGroup:
    """A group builder that remembers the envs it made, so their hooks can be asked later.

    It stands in for a :class:`~mint_envkit.GroupBuilder` (every other
    attribute is the wrapped group's); after the rollout ``envs`` holds the
    token-level envs of the episodes, in member order.

    Example::

        # not run: needs a sampling client (a running backend)
        groups = [RecordingGroup(g) for g in train.get_batch(step)]
        rollouts = await rollout_groups(groups, sampler)
        groups[0].envs[0].message_env.teacher_messages(...)
    """

    def __init__(self, group: Any) -> None:
        self.group = group
        self.envs: list[Any] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self.group, name)

    async def make_envs(self) -> list[Any]:
        """The wrapped group's envs, remembered in ``envs``."""
        envs = await self.group.make_envs()
        self.envs = list(envs)
        return envs


def _history(trajectory: Trajectory, turn: int) -> list[Message]:
    """The conversation that the reply of ``turn`` answered."""
    assistant_at = [i for i, m in enumerate(trajectory.messages) if m.get("role") == "assistant"]
    if turn < len(assistant_at):
        return [dict(m) for m in trajectory.messages[: assistant_at[turn]]]
    return [dict(m) for m in trajectory.messages]  # an unparsed last reply is not in it


def teacher_prompt(env: Any, history: list[Message], student_prompt: list[int]) -> list[int]:
    """The teacher's prompt tokens for a reply that answered ``history``.

    ``env`` is the episode's token-level env. When its message env's
    ``teacher_messages(history)`` returns ``history`` unchanged (the default)
    the teacher reads exactly the student's tokens; otherwise the returned
    messages are rendered with the env's renderer (and tools).

    Raises:
        ConfigError: ``teacher_messages`` did not return a list of messages.

    Example::

        # not run: needs an env and a student prompt built elsewhere
        teacher_prompt(env, [{"role": "user", "content": "2 + 3?"}], student_prompt=ob)
    """
    message_env = env.message_env
    view = message_env.teacher_messages([dict(m) for m in history])
    if not isinstance(view, list) or not all(isinstance(m, dict) for m in view):
        raise ConfigError(
            f"{type(message_env).__name__}.teacher_messages must return a list of message "
            f"dicts, got {type(view).__name__}; return e.g. [system_hint, *messages]"
        )
    if view == history:
        return list(student_prompt)
    return list(env.renderer.render_tokens(view, env.tools))


def teacher_samples(
    rollouts: Sequence[GroupRollout], envs: Sequence[Sequence[Any]]
) -> list[TeacherSample]:
    """One :class:`TeacherSample` per non-empty reply of every group that ran.

    ``envs[position]`` are the token-level envs of group ``position`` (a
    :class:`RecordingGroup`'s ``envs``), one per episode. Failed groups are
    skipped. Each turn of a multi-turn episode is a sample of its own.

    Raises:
        MintEnvkitError: a group has fewer envs than episodes.

    Example::

        # not run: needs a sampling client (a running backend)
        samples = teacher_samples(batch.rollouts, [g.envs for g in groups])
    """
    out: list[TeacherSample] = []
    episode = 0
    for position, rollout in enumerate(rollouts):
        if rollout.error is not None:
            continue
        group_envs = envs[position]
        if len(group_envs) < len(rollout.trajectories):
            raise MintEnvkitError(
                f"group {rollout.index} has {len(rollout.trajectories)} episodes but "
                f"{len(group_envs)} recorded envs; wrap the groups in RecordingGroup"
            )
        for trajectory, env in zip(rollout.trajectories, group_envs, strict=False):
            for turn, transition in enumerate(trajectory.transitions):
                reply = list(transition.ac.tokens)
                if not reply:
                    continue
                prompt = teacher_prompt(env, _history(trajectory, turn), list(transition.ob))
                out.append(TeacherSample(list(transition.ob), prompt, reply, episode))
            episode += 1
    return out


def reverse_kl_datum(sample: TeacherSample) -> Any:
    """The ``mint.mint.ReverseKLDatum`` of one sample (see the module's docstring).

    Raises:
        MintEnvkitError: the sample has an empty prompt or reply.

    Example::

        datum = reverse_kl_datum(TeacherSample([1, 2], [9, 1, 2], [3, 4]))
        datum.target_tokens.data  # [2, 3, 4]
        datum.weights.data        # [0.0, 1.0, 1.0]
    """
    import tinker
    from mint.mint import ReverseKLDatum

    if not sample.student_prompt or not sample.teacher_prompt or not sample.reply:
        raise MintEnvkitError(
            "a teacher sample needs a non-empty student prompt, teacher prompt and reply; got "
            f"{len(sample.student_prompt)}, {len(sample.teacher_prompt)} and "
            f"{len(sample.reply)} tokens"
        )
    student = sample.student_prompt + sample.reply
    teacher = sample.teacher_prompt + sample.reply
    n = len(student) - 1
    weights = [0.0] * (len(sample.student_prompt) - 1) + [1.0] * len(sample.reply)
    return ReverseKLDatum(
        student_input=tinker.ModelInput.from_ints(student[:-1]),
        reference_input=tinker.ModelInput.from_ints(teacher[:-1]),
        target_tokens=tinker.TensorData(data=student[1:], dtype="int64", shape=[n]),
        weights=tinker.TensorData(data=weights, dtype="float32", shape=[n]),
    )
