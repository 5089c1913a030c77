"""What each config of a sweep trained, in words: one short paragraph per config.

Read from the files each run wrote: ``metrics.jsonl`` (datums, reply tokens, datums
with zero advantages, the KL to the base model, the held-out figures beside the best
trivial baseline), ``config.json`` (the KL reference model) and ``checkpoints.jsonl``
(the last checkpoint). Nothing is recomputed; a figure a run did not log is left out
of its sentence.

Example::

    import json
    import os

    from mint_envkit.sweep._rows import SummaryRow, read_run_metrics

    os.makedirs("runs/sweep/kl0p02-t1p0-g4")
    with open("runs/sweep/kl0p02-t1p0-g4/metrics.jsonl", "w") as fh:
        print(json.dumps({"step": 0, "train/datums": 16, "train/tokens": 70,
                          "env/all/by_group/frac_mixed": 0.5,
                          "train/zero_advantage_datums": 4, "kl_policy_base": 0.0,
                          "test/env/all/correct": 0.0, "test_final/env/all/correct": 0.125,
                          "test_final/env/all/answers/baseline_correct": 0.125,
                          "test_final/env/all/answers/baseline_name": "constant '28'"}), file=fh)
    row = SummaryRow(name="kl0p02-t1p0-g4", params={}, status="ok",
                     settings={"kl_penalty_coef": 0.02}, log_path="runs/sweep/kl0p02-t1p0-g4",
                     metrics=read_run_metrics("runs/sweep/kl0p02-t1p0-g4"))
    print(trained_words(row))
    # kl0p02-t1p0-g4: 1 step, 16 datums trained (4 with every advantage 0: no backward
    #   pass), 70 reply tokens, 50% of the groups with differing rewards; KL penalty 0.02
    #   against the reference model (KL to it 0.0000 at the last step: a first step samples
    #   with the base model's weights); held-out correct 0.000 -> 0.125, best trivial
    #   baseline 0.125 (constant '28'); no checkpoint recorded
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mint_envkit.runs.files import read_jsonl
from mint_envkit.sweep._answers import _number
from mint_envkit.sweep._format import fmt_fixed
from mint_envkit.sweep._rows import SummaryRow

TRAINED_TITLE = "What each config trained"
"""The heading of the section :func:`trained_section` writes.

Example::

    assert trained_section([row]).startswith(TRAINED_TITLE)  # row: the module example's
"""


MIXED_KEY = "env/all/by_group/frac_mixed"
POST_KL_KEY = "kl_post_reference_v2"
"""The KL of the updated policy to the reference after the step (``Config.compute_post_kl``):
half the mean squared logprob difference over the trained tokens, which is >= 0 whatever
distribution drew the replies (the k1 estimate, ``..._v1``, is not at a temperature != 1)."""


def _total(row: SummaryRow, key: str) -> int | None:
    """A metric summed over the steps; None when no step logged it."""
    values = [_number(m.get(key)) for m in row.metrics.history if key in m]
    values = [v for v in values if v is not None]
    return int(sum(values)) if values else None


def _config(row: SummaryRow) -> dict[str, Any]:
    """The run's ``config.json`` ({} when it cannot be read)."""
    try:
        config = json.loads((Path(row.log_path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return config if isinstance(config, dict) else {}


def _reference(row: SummaryRow) -> str:
    """The KL reference named in the run's ``config.json``, or a generic name."""
    config = _config(row)
    reference = config.get("kl_reference_config")
    base = reference.get("base_model") if isinstance(reference, dict) else None
    if not isinstance(base, str):
        return "the reference model"
    checkpoint = reference.get("load_checkpoint_path")
    if isinstance(checkpoint, str):
        return f"the checkpoint {checkpoint} of {base}"
    return f"{base} (the base model)" if base == config.get("model_name") else base


def _checkpoint(row: SummaryRow) -> str:
    """The run's last checkpoint record, in words."""
    records = read_jsonl(Path(row.log_path) / "checkpoints.jsonl")
    if not records:
        return "no checkpoint recorded"
    last = records[-1]
    path = last.get("sampler_path") or last.get("state_path") or "?"
    # our loop records the steps done as "step"; tinker-cookbook's loop as "batch"
    step = last.get("step", last.get("batch", "?"))
    return f"checkpoint {last.get('name', '?')} at step {step}: {path}"


def _trained(row: SummaryRow) -> str:
    steps = row.metrics.steps
    datums = row.datums
    zero = _total(row, "train/zero_advantage_datums")
    tokens = _total(row, "train/tokens")
    words = f"{steps} step{'s' if steps != 1 else ''}, {datums} datums trained"
    if datums and zero:
        words += f" ({zero} with every advantage 0: no backward pass)"
    if tokens is not None:
        words += f", {tokens} reply tokens"
    mixed = [_number(m.get(MIXED_KEY)) for m in row.metrics.history]
    mixed = [v for v in mixed if v is not None]
    if mixed:
        words += f", {sum(mixed) / len(mixed):.0%} of the groups with differing rewards"
    return words


def _kl(row: SummaryRow) -> str:
    coef = _number(row.settings.get("kl_penalty_coef"))
    if not coef:
        return "no KL penalty"
    words = f"KL penalty {coef:g} against {_reference(row)}"
    if row.kl is not None:
        words += f" (KL to it {fmt_fixed(row.kl, 4)} at the last step"
        if row.metrics.steps == 1 and abs(row.kl) < 5e-5:
            # step 0 samples with the initial weights: a fresh LoRA adapter is the base model
            words += ": a first step samples with the base model's weights"
        words += ")"
    after = _number(row.metrics.final.get(POST_KL_KEY))
    if after is not None:
        words += f"; after the step, the updated policy's KL to it {after:.2g} (k2 estimate)"
    return words


def _held_out(row: SummaryRow) -> str | None:
    answers = row.answers
    if answers.correct_after is None and answers.correct_before is None:
        return None
    words = (
        f"held-out correct {fmt_fixed(answers.correct_before, 3)} -> "
        f"{fmt_fixed(answers.correct_after, 3)}"
    )
    if answers.baseline is not None:
        words += f", best trivial baseline {answers.baseline:.3f}"
        if answers.baseline_name:
            words += f" ({answers.baseline_name})"
    return words


def trained_words(row: SummaryRow, width: int = 96) -> str:
    """One config's paragraph: what it trained, the KL penalty, the held-out figures
    beside the best trivial baseline (where it evaluates), its last checkpoint.

    Wrapped at ``width`` columns, continuation lines indented by two spaces.

    Example::

        text = trained_words(row)  # row: the module example's
        assert text.startswith("kl0p02-t1p0-g4: 1 step, 16 datums trained")
    """
    if not row.metrics.exists:
        parts = [f"nothing ({row.status})"]
    else:
        parts = [_trained(row), _kl(row), _held_out(row), _checkpoint(row)]
    text = f"{row.name}: " + "; ".join(p for p in parts if p)
    lines = textwrap.wrap(
        text, width=width, subsequent_indent="  ", break_long_words=False, break_on_hyphens=False
    )
    return "\n".join(lines)


def one_step_note(rows: Sequence[SummaryRow], width: int = 96) -> str | None:
    """What a table of one step from a fresh adapter per config shows, and what it cannot.

    None unless every config ran exactly one step and none started from a checkpoint.

    Example::

        print(one_step_note([row]))  # row: the module example's
        # Every config took one step from a fresh adapter: ... a smoke test of the path
        #   (sampling, training, the KL reference, the checkpoint), not a measure of quality.
    """
    if not rows or any(row.metrics.steps != 1 for row in rows):
        return None
    configs = [_config(row) for row in rows]
    if any(config.get("load_checkpoint_path") for config in configs):
        return None
    rates = sorted({r for c in configs if (r := _number(c.get("learning_rate"))) is not None})
    rate = f" at learning rate {', '.join(f'{r:g}' for r in rates)}" if rates else ""
    text = (
        "Every config took one step from a fresh adapter: its replies were sampled with the "
        "base model's weights (a fresh LoRA adapter adds nothing), so its KL to the base "
        "model before the step is 0 and a KL config differs from the KL-0 one only by the "
        f"penalty's share of the advantages; one update{rate} moves the policy little (the "
        "KL after the step, above). A table of such configs is a smoke test of the path "
        "(sampling, training, the KL reference, the checkpoint), not a measure of quality."
    )
    lines = textwrap.wrap(text, width=width, break_long_words=False, break_on_hyphens=False)
    return "\n".join(lines)


def trained_section(rows: Sequence[SummaryRow], width: int = 96) -> str:
    """:data:`TRAINED_TITLE`, then :func:`trained_words` of each row (and
    :func:`one_step_note` when every config took one step from a fresh adapter).

    Example::

        print(trained_section([row]))  # row: the module example's
    """
    body: list[Any] = [trained_words(row, width) for row in rows]
    note = one_step_note(rows, width)
    return "\n".join([TRAINED_TITLE, *body, *(["", note] if note else [])])
