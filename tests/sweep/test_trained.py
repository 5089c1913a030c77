"""What each config trained, in words: the KL reference and its figures, the one-step note."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from mint_envkit.sweep._rows import SummaryRow, read_run_metrics
from mint_envkit.sweep._trained import one_step_note, trained_section, trained_words


def _row(
    tmp_path: Path, name: str, steps: list[dict[str, Any]], config: dict[str, Any]
) -> SummaryRow:
    run = tmp_path / name
    run.mkdir()
    (run / "metrics.jsonl").write_text("".join(json.dumps(s) + "\n" for s in steps))
    (run / "config.json").write_text(json.dumps(config))
    return SummaryRow(
        name=name,
        params={},
        status="ok",
        settings={"kl_penalty_coef": config.get("kl_penalty_coef", 0.0)},
        log_path=str(run),
        metrics=read_run_metrics(str(run)),
    )


STEP = {
    "step": 0,
    "train/datums": 8,
    "train/tokens": 40,
    "kl_policy_base": 2e-7,
    "kl_post_reference_v2": 3.4e-6,
}
BASE = {"model_name": "m", "learning_rate": 1e-5, "load_checkpoint_path": None}


def test_a_kl_config_names_its_reference_and_the_kl_after_the_step(tmp_path):
    reference = {"base_model": "m", "load_checkpoint_path": None}
    row = _row(
        tmp_path, "kl", [STEP], {**BASE, "kl_penalty_coef": 0.02, "kl_reference_config": reference}
    )
    words = " ".join(trained_words(row).split())
    assert "KL penalty 0.02 against m (the base model) (KL to it 0.0000 at the last step" in words
    assert "after the step, the updated policy's KL to it 3.4e-06 (k2 estimate)" in words


def test_a_checkpoint_reference_is_named_as_such(tmp_path):
    reference = {"base_model": "m", "load_checkpoint_path": "tinker://r/sampler_weights/a"}
    row = _row(
        tmp_path,
        "ckpt",
        [STEP],
        {**BASE, "kl_penalty_coef": 0.02, "kl_reference_config": reference},
    )
    assert "against the checkpoint tinker://r/sampler_weights/a of m" in " ".join(
        trained_words(row).split()
    )


def test_one_step_from_a_fresh_adapter_is_called_a_smoke_test(tmp_path):
    rows = [_row(tmp_path, f"c{i}", [STEP], BASE) for i in range(2)]
    note = " ".join(one_step_note(rows).split())
    assert note.startswith("Every config took one step from a fresh adapter")
    assert "at learning rate 1e-05" in note
    assert note.endswith(
        "a smoke test of the path (sampling, training, the KL reference, the checkpoint), "
        "not a measure of quality."
    )
    assert trained_section(rows).endswith(one_step_note(rows))


def test_no_note_for_longer_runs_or_a_warm_start(tmp_path):
    longer = _row(tmp_path, "two", [STEP, {**STEP, "step": 1}], BASE)
    fresh = _row(tmp_path, "one", [STEP], BASE)
    assert one_step_note([fresh, longer]) is None
    warm = _row(tmp_path, "warm", [STEP], {**BASE, "load_checkpoint_path": "tinker://r/w/x"})
    assert one_step_note([fresh, warm]) is None
    assert "Every config" not in trained_section([fresh, longer])


def test_a_cookbook_runs_checkpoint_names_its_step(tmp_path):
    """tinker-cookbook's loop records the steps done as "batch" (ours as "step")."""
    row = _row(tmp_path, "cb", [{**STEP, "progress/batch": 0}], BASE)
    record = {"name": "final", "batch": 1, "sampler_path": "tinker://r/sampler_weights/final"}
    (tmp_path / "cb" / "checkpoints.jsonl").write_text(json.dumps(record) + "\n")
    words = " ".join(trained_words(row).split())
    assert "checkpoint final at step 1: tinker://r/sampler_weights/final" in words
    assert "8 datums trained" in words
