"""One run of our :class:`~mint_envkit.Config` through tinker-cookbook 0.3.0's own
``rl.train.main``: what ``to_cookbook(builder).train(config)`` does, and the main job's
``--loop cookbook`` (each sweep config trained by the cookbook's loop).

The cookbook's ``Config`` gets our model, renderer and reply limit (the builder's), the
learning rate, LoRA rank, temperature, KL penalty and its reference, loss, substeps,
steps, checkpoint and eval cadence, and the backend our config names (an embedded server
is started, or shared, as for our loop). Sampling, advantages, datums, the update and the
logs are the cookbook's. After its last step, the final sampler checkpoint is evaluated
on the builder's test split with our one evaluation (``evaluate``, at the config's eval
sampling) and the figures are added to the last line of the run's ``metrics.jsonl`` as
``test_final/env/all/...`` (with ``"loop": "tinker-cookbook"``), where our loop writes
them, so a sweep's table reads both loops alike. The cookbook logs no ``train/datums``;
while it trains, its step's end (``compute_full_batch_metrics_and_get_sampling_client``,
which receives the step's datums) is wrapped to add ``train/datums`` to that step's
metrics, so a sweep's "What each config trained" counts what the cookbook trained
(every datum: it has no zero-advantage skip).

Example::

    # not run: trains through the cookbook's loop (needs the cookbook extra and a backend)
    await to_cookbook(config.dataset_builder).train(config)
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.errors import ConfigError
from mint_envkit.evaluation.run import evaluate
from mint_envkit.rollouts.backend import connect
from mint_envkit.runs.record import FINAL, eval_prefix

_NO_COOKBOOK_EQUIVALENT = {
    "top_p": 1.0,
    "top_k": -1,
    "max_steps_off_policy": 0,
}
"""Our Config fields the cookbook's loop has no setting for, with the value it trains as."""


def cookbook_config(config: Any, *, base_url: str | None) -> Any:
    """tinker-cookbook's ``rl.train.Config`` for our ``config`` (see the module).

    Raises:
        ConfigError: a field the cookbook cannot honour differs from what it trains as.

    Example::

        # not run: needs the cookbook extra
        cb = cookbook_config(config, base_url="http://127.0.0.1:8765")
        cb.learning_rate == config.learning_rate   # True
    """
    from tinker_cookbook.rl import train

    from mint_envkit.adapters.cookbook import to_cookbook

    for name, value in _NO_COOKBOOK_EQUIVALENT.items():
        if getattr(config, name) != value:
            raise ConfigError(
                f"Config.{name}={getattr(config, name)!r} has no equivalent in tinker-cookbook's "
                f"loop (it trains as {name}={value!r}); set it so, or train with our loop"
            )
    reference = config.kl_reference_config
    return to_cookbook(config.dataset_builder).train_config(
        log_path=str(config.log_path),
        learning_rate=config.learning_rate,
        lora_rank=config.lora_rank,
        temperature=config.temperature,
        kl_penalty_coef=config.kl_penalty_coef,
        kl_discount_factor=config.kl_discount_factor,
        kl_reference_config=None
        if reference is None
        else train.KLReferenceConfig(
            base_model=reference.base_model,
            load_checkpoint_path=reference.load_checkpoint_path,
        ),
        loss_fn=config.loss_fn,
        loss_fn_config=config.loss_fn_config,
        num_substeps=config.num_substeps,
        compute_post_kl=config.compute_post_kl,
        remove_constant_reward_groups=config.remove_constant_reward_groups,
        load_checkpoint_path=config.load_checkpoint_path,
        max_steps=config.max_steps,
        save_every=config.save_every,
        eval_every=config.eval_every,
        base_url=base_url,
    )


def _final_sampler(log_path: Path) -> str | None:
    found = None
    checkpoints = log_path / "checkpoints.jsonl"
    if checkpoints.is_file():
        for line in checkpoints.read_text().splitlines():
            if line.strip():
                found = json.loads(line).get("sampler_path") or found
    return found


def _add_to_last_step(metrics: Path, figures: dict[str, Any]) -> None:
    """Add ``figures`` to the last line of ``metrics.jsonl`` (the final step's, where our
    loop writes its ``test_final`` figures), rewriting the file atomically."""
    lines = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    if not lines:
        lines = [{"step": 0}]
    lines[-1] = {**lines[-1], **figures, "loop": "tinker-cookbook"}
    scratch = metrics.with_suffix(".jsonl.tmp")
    scratch.write_text("".join(json.dumps(line) + "\n" for line in lines))
    scratch.replace(metrics)


async def _final_eval(config: Any, connection: Any, sampler: str | None) -> dict[str, Any]:
    """Our evaluation of the final checkpoint on the test split, added to metrics.jsonl."""
    _, test = await config.dataset_builder()
    if sampler is None or test is None or config.eval_every <= 0:
        return {}
    backend = attrs.evolve(
        config.backend_settings, backend=connection.backend, base_url=connection.base_url
    )
    result = await evaluate(
        config.dataset_builder,
        checkpoint=sampler,
        sampling=config.eval_sampling,
        backend=backend,
        split="test",
        quiet=True,
    )
    figures = {**result.metrics(eval_prefix(FINAL)), **result.figures.metrics(FINAL)}
    _add_to_last_step(Path(config.log_path) / "metrics.jsonl", figures)
    return figures


@contextlib.contextmanager
def _counting_datums(train: Any) -> Iterator[None]:
    """While the cookbook trains, each step's metrics also say how many datums it trained."""
    original = train.compute_full_batch_metrics_and_get_sampling_client

    async def counted(training_client: Any, i_batch: int, data_D: Any, *args: Any, **kw: Any):
        sampling_client, metrics = await original(training_client, i_batch, data_D, *args, **kw)
        return sampling_client, {**metrics, "train/datums": len(data_D)}

    train.compute_full_batch_metrics_and_get_sampling_client = counted
    try:
        yield
    finally:
        train.compute_full_batch_metrics_and_get_sampling_client = original


async def train_with_cookbook(config: Any) -> dict[str, Any]:
    """Train ``config`` with tinker-cookbook's ``rl.train.main``; then evaluate its final
    checkpoint on the test split with our evaluation (see the module).

    Returns ``{"sampler_path": ..., "test_final": {figures}}``.

    Example::

        # not run: trains through the cookbook's loop
        await train_with_cookbook(config)
    """
    import mint  # noqa: F401  (MinT's patch: tinker then takes sk- keys, as a MinT user's run)
    from tinker_cookbook.rl import train

    async with connect(config.backend_settings) as connection:
        previous = os.environ.get("TINKER_API_KEY")
        # the cookbook's loop talks through tinker, which reads its key from here
        os.environ["TINKER_API_KEY"] = connection.api_key or previous or "tml-mint-envkit"
        try:
            with _counting_datums(train):
                await train.main(cookbook_config(config, base_url=connection.base_url))
            sampler = _final_sampler(Path(config.log_path))
            figures = await _final_eval(config, connection, sampler)
        finally:
            if previous is None:
                os.environ.pop("TINKER_API_KEY", None)
            else:
                os.environ["TINKER_API_KEY"] = previous
    return {"sampler_path": sampler, FINAL: figures}
