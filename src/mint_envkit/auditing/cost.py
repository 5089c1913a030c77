"""The MinT cost preview of an audit: tokens per step from real samples, times the steps.

Money only with a price list (``prices``: US dollars per million sampled, prompt and
trained tokens); the kit ships none.

Example::

    # not run: needs an evaluation's samples, built elsewhere
    preview = await cost_preview(groups, result, builder, planned_steps=100, prices=None)
    preview["total_tokens"]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.errors import ConfigError

PRICE_KEYS = ("sample", "prefill", "train")
"""The keys of ``prices``: US dollars per million sampled, prompt and trained tokens.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    await audit(builder, sample_model=model, prices={"sample": 0.6, "prefill": 0.2, "train": 1.8})
"""


async def cost_preview(
    groups: Sequence[Any],
    result: Any,
    builder: DatasetBuilder | None,
    planned_steps: int | None,
    prices: Mapping[str, float] | None,
) -> dict[str, Any]:
    """Tokens per step from the samples, rendered with the audited builder's tokenizer.

    Raises:
        ConfigError: ``prices`` has a key other than :data:`PRICE_KEYS`.

    Example::

        # not run: needs an evaluation's samples, built elsewhere
        (await cost_preview(groups, result, builder, None, None))["sampled_tokens_per_step"]
    """
    renderer = groups[0].renderer()
    encode = renderer.tokenizer.encode
    replies = [r for p in result.problems for r in p.replies if isinstance(r, str)]
    reply_tokens = sum(len(encode(r, add_special_tokens=False)) + 1 for r in replies)
    mean_reply = reply_tokens / max(1, len(replies))
    prompts = []
    for group in groups:
        envs = await group.make_envs()
        prompts.append(len(renderer.render_tokens(await envs[0].initial_messages_async())))
    mean_prompt = sum(prompts) / max(1, len(prompts))
    batch = builder.batch_size if builder else 1
    size = builder.group_size if builder else 1
    if planned_steps is None and builder is not None:
        train, _ = await builder()
        planned_steps = len(train)
    steps = planned_steps or 1
    per_step = {
        "sampled_tokens_per_step": round(batch * size * mean_reply),
        "prefill_tokens_per_step": round(batch * mean_prompt),
        "trained_tokens_per_step": round(batch * size * (mean_prompt + mean_reply)),
    }
    cost: dict[str, Any] = {**per_step, "planned_steps": steps, "batch_size": batch}
    cost["group_size"] = size
    cost["total_tokens"] = steps * sum(per_step.values())
    cost["total_usd"] = None
    if prices:
        unknown = set(prices) - set(PRICE_KEYS)
        if unknown:
            raise ConfigError(f"prices takes {', '.join(PRICE_KEYS)}; unknown: {sorted(unknown)}")
        cost["prices_usd_per_mtok"] = dict(prices)
        cost["total_usd"] = (
            steps
            * (
                per_step["sampled_tokens_per_step"] * prices.get("sample", 0.0)
                + per_step["prefill_tokens_per_step"] * prices.get("prefill", 0.0)
                + per_step["trained_tokens_per_step"] * prices.get("train", 0.0)
            )
            / 1e6
        )
    return cost
