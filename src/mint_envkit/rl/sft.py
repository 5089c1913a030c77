"""Fine-tuning on good rollouts: keep the episodes that scored, train on them with cross-entropy.

The ``rollouts.jsonl`` of a run or an eval (docs/rollouts.md) holds every
episode's conversation, reward and metrics. :func:`good_rollouts` keeps the
episodes that pass a filter (reward at least ``min_reward``, ``correct``);
:func:`supervised_examples` renders each kept episode into a prompt and the
reply to learn; :func:`fine_tune_on_rollouts` trains on them with the
``cross_entropy`` loss through the same backend as RL (MinT or the embedded
one) and saves a checkpoint. Pass its ``state_path`` to a later RL run as
``Config.load_checkpoint_path``: a warm start.

Example::

    # not run: needs a run's rollouts.jsonl and a training client
    records = good_rollouts("runs/eval/rollouts.jsonl", correct=True)
    examples = supervised_examples(records, builder.renderer())
    sft = await fine_tune_on_rollouts(attrs.evolve(config, log_path="runs/sft"), examples)
    await run_training(attrs.evolve(config, load_checkpoint_path=sft.state_path))
"""

from __future__ import annotations

import math
import os
import random
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from mint_envkit.checks import check_integer
from mint_envkit.envs.base import Message
from mint_envkit.errors import ConfigError, MintEnvkitError
from mint_envkit.rl.checkpoints import save_checkpoint
from mint_envkit.rl.config import Config, adam_params
from mint_envkit.rollouts.backend import connect, service_client
from mint_envkit.runs.files import RunFiles, read_jsonl


def _passes(
    record: Mapping[str, Any], min_reward: float | None, correct: bool | None, split: str | None
) -> bool:
    if record.get("error") is not None or (
        not record.get("messages") and not record.get("replies")
    ):
        return False
    if split is not None and record.get("split") != split:
        return False
    if min_reward is not None and not float(record.get("reward", -math.inf)) >= min_reward:
        return False
    if correct is not None:
        value = (record.get("metrics") or {}).get("correct")
        if value is None or (float(value) >= 1.0) != correct:
            return False
    return True


def good_rollouts(
    source: str | os.PathLike[str] | Iterable[Mapping[str, Any]],
    *,
    min_reward: float | None = None,
    correct: bool | None = None,
    split: str | None = None,
) -> list[dict[str, Any]]:
    """The episode records of ``source`` that pass every filter given, in file order.

    ``source`` is a ``rollouts.jsonl`` path (of a run or an eval) or its
    records. Filters: ``min_reward`` keeps rewards ``>= min_reward``;
    ``correct=True`` keeps episodes whose ``metrics["correct"]`` is 1
    (``False``: those where it is below 1; episodes without the metric are
    dropped either way); ``split`` keeps one split (``"train"``, ``"test"``,
    ``"test_final"``). Failed groups are always dropped.

    Raises:
        ConfigError: no filter is given (every episode would be kept: say
            ``min_reward=-math.inf`` to mean it).

    Example::

        # not run: needs a run's rollouts.jsonl
        good_rollouts("runs/eval/rollouts.jsonl", correct=True)       # the right answers
        good_rollouts(records, min_reward=0.5, split="train")
    """
    if min_reward is None and correct is None and split is None:
        raise ConfigError(
            "good_rollouts needs a filter: min_reward=..., correct=True or split=...; "
            "pass min_reward=-math.inf to keep every episode"
        )
    if isinstance(source, (str, os.PathLike)):
        if not os.path.exists(source):
            raise ConfigError(f"good_rollouts: {os.fspath(source)!r} does not exist")
        records: Iterable[Mapping[str, Any]] = read_jsonl(source)
    else:
        records = source
    return [dict(r) for r in records if _passes(r, min_reward, correct, split)]


@attrs.frozen
class SupervisedExample:
    """A prompt and the reply to learn after it, as tokens.

    Example::

        SupervisedExample(prompt=[1, 2, 3], completion=[7, 8, 2]).total_tokens  # 6
    """

    prompt: list[int]
    completion: list[int]

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return len(self.prompt) + len(self.completion)


def _conversation(record: Mapping[str, Any]) -> list[Message]:
    messages = record.get("messages")
    if messages:
        return [dict(m) for m in messages]
    replies = record.get("replies") or []
    opening = [dict(m) for m in record.get("prompt") or []]
    return [*opening, {"role": "assistant", "content": replies[-1] or ""}] if replies else opening


def supervised_examples(
    records: Iterable[Mapping[str, Any]], renderer: Any
) -> list[SupervisedExample]:
    """One example per record: its last assistant reply after the conversation before it.

    The prompt is the conversation up to that reply rendered with
    ``renderer`` (generation prompt included, as the model saw it); the
    completion is the reply's text (after a ``<think>`` block when the reply
    had thinking) encoded, then the renderer's stop token, so the model
    learns to stop. Records with no assistant reply are skipped. Tool specs
    are not in ``rollouts.jsonl``, so a tool env's prompt is rendered without
    them.

    Example::

        # not run: needs a run's rollouts.jsonl
        examples = supervised_examples(good_rollouts(path, correct=True), builder.renderer())
    """
    stop = renderer.get_stop_sequences()
    out: list[SupervisedExample] = []
    for record in records:
        messages = _conversation(record)
        at = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
        if not at:
            continue
        reply = messages[at[-1]]
        text = str(reply.get("content") or "")
        if reply.get("thinking"):
            text = f"<think>\n{reply['thinking']}\n</think>\n\n{text}"
        prompt = list(renderer.render_tokens(messages[: at[-1]]))
        completion = list(renderer.tokenizer.encode(text, add_special_tokens=False)) + stop[:1]
        out.append(SupervisedExample(prompt, completion))
    return out


def supervised_datum(example: SupervisedExample) -> Any:
    """The ``cross_entropy`` datum of one example: weights 1 on the completion only.

    Example::

        datum = supervised_datum(SupervisedExample([1, 2], [3, 4]))
        datum.loss_fn_inputs["weights"].data  # [0.0, 1.0, 1.0]
    """
    import tinker

    if not example.prompt or not example.completion:
        raise MintEnvkitError(
            f"a supervised example needs a prompt and a completion; got "
            f"{len(example.prompt)} and {len(example.completion)} tokens"
        )
    tokens = example.prompt + example.completion
    n = len(tokens) - 1
    weights = [0.0] * (len(example.prompt) - 1) + [1.0] * len(example.completion)
    return tinker.Datum(
        model_input=tinker.ModelInput.from_ints(tokens[:-1]),
        loss_fn_inputs={
            "target_tokens": tinker.TensorData(data=tokens[1:], dtype="int64", shape=[n]),
            "weights": tinker.TensorData(data=weights, dtype="float32", shape=[n]),
        },
    )


@attrs.frozen
class SFTResult:
    """What :func:`fine_tune_on_rollouts` reports.

    Attributes:
        log_path: the run directory (metrics.jsonl, checkpoints.jsonl).
        steps: optimizer steps taken.
        state_path: the final training state (``Config.load_checkpoint_path``
            of a later RL run); sampler_path: its sampler weights.
        losses: the mean cross-entropy per completion token, one per step.

    Example::

        # not run: needs a run's rollouts.jsonl and a training client
        sft.state_path, sft.losses[0] > sft.losses[-1]  # ('tinker://.../final-s0-8', True)
    """

    log_path: str
    steps: int
    state_path: str
    sampler_path: str
    losses: list[float]


def _batches(n: int, batch_size: int, epochs: int, seed: int) -> list[list[int]]:
    rng = random.Random(seed)
    out: list[list[int]] = []
    for _ in range(epochs):
        order = list(range(n))
        rng.shuffle(order)
        out += [order[i : i + batch_size] for i in range(0, n, batch_size)]
    return out


def _check_sizes(examples: Sequence[SupervisedExample], epochs: Any, batch_size: Any) -> None:
    for name, value in (("epochs", epochs), ("batch_size", batch_size)):
        check_integer(value, f"fine_tune_on_rollouts({name}=...)")
    if not examples:
        raise ConfigError(
            "fine_tune_on_rollouts got no examples: the filter kept no episode; loosen it "
            "(a lower min_reward) or evaluate more problems"
        )


async def _train_steps(
    training: Any,
    config: Config,
    examples: Sequence[SupervisedExample],
    plan: list[list[int]],
    files: RunFiles,
) -> list[float]:
    adam = adam_params(config)
    losses: list[float] = []
    for step, batch in enumerate(plan):
        t0 = time.monotonic()
        chosen = [examples[i] for i in batch]
        fb_future = await training.forward_backward_async(
            [supervised_datum(e) for e in chosen], "cross_entropy"
        )
        opt_future = await training.optim_step_async(adam)
        fb, _ = await fb_future, await opt_future
        tokens = sum(len(e.completion) for e in chosen)
        loss = float((fb.metrics or {}).get("loss:sum", math.nan)) / tokens
        losses.append(loss)
        files.append_metrics(
            {
                "step": step,
                "sft/loss": loss,
                "train/tokens": tokens,
                "train/datums": len(chosen),
                "time/step": time.monotonic() - t0,
            }
        )
        print(f"  sft step {step + 1}/{len(plan)}  loss {loss:.4f}", file=sys.stderr, flush=True)
    return losses


async def fine_tune_on_rollouts(
    config: Config,
    examples: Sequence[SupervisedExample],
    *,
    epochs: int = 1,
    batch_size: int = 8,
) -> SFTResult:
    """Train ``config``'s model on ``examples`` with ``cross_entropy``; save a final checkpoint.

    Uses ``config``'s model, LoRA, Adam fields, seed (the example order),
    backend and ``log_path`` (metrics.jsonl gets ``sft/loss`` per step, the
    mean cross-entropy per completion token before the step's update;
    checkpoints.jsonl the final checkpoint). ``config.load_checkpoint_path``
    is the starting point when set. A directory that already holds a final
    checkpoint is not trained again: its checkpoint is returned.

    Raises:
        ConfigError: no examples, or ``epochs`` / ``batch_size`` below 1.
        BackendError: the backend is unreachable.

    Example::

        # not run: needs a run's rollouts.jsonl and a training client
        sft = await fine_tune_on_rollouts(attrs.evolve(config, log_path="runs/sft"), examples,
                                          epochs=2, batch_size=8)
        rl = attrs.evolve(config, log_path="runs/rl", load_checkpoint_path=sft.state_path)
    """
    _check_sizes(examples, epochs, batch_size)
    files = RunFiles(config.log_path)
    files.ensure()
    done = files.last_checkpoint()
    if done is not None:
        losses = [float(m["sft/loss"]) for m in files.metrics() if "sft/loss" in m]
        return SFTResult(
            config.log_path, int(done["step"]), done["state_path"], done["sampler_path"], losses
        )
    files.forget_after(0)
    public = {
        **config.public_dict(),
        "sft_examples": len(examples),
        "sft_epochs": epochs,
        "sft_batch_size": batch_size,
    }
    files.write_config(public)
    files.write_code_state()
    plan = _batches(len(examples), batch_size, epochs, config.sampling_seed)
    async with (
        connect(config.backend_settings) as connection,
        service_client(connection) as service,
    ):
        warm = config.load_checkpoint_path
        if warm:
            training = await service.create_training_client_from_state_async(warm)
        else:
            training = await service.create_lora_training_client_async(
                base_model=config.model_name,
                rank=config.lora_rank,
                seed=config.sampling_seed,
                train_mlp=config.train_mlp,
                train_attn=config.train_attn,
                train_unembed=config.train_unembed,
            )
        # Config.loggers get every metrics row; a run trained again starts new tracker runs
        with files.tracking(config.loggers, public, fresh=True):
            losses = await _train_steps(training, config, examples, plan, files)
        checkpoint = await save_checkpoint(
            training, attrs.evolve(config, save_every=0), len(plan), len(plan)
        )
    if checkpoint is None:  # pragma: no cover - the final save is always due
        raise MintEnvkitError("fine_tune_on_rollouts: the final checkpoint was not saved")
    files.append_checkpoint(checkpoint)
    return SFTResult(
        config.log_path, len(plan), checkpoint["state_path"], checkpoint["sampler_path"], losses
    )
