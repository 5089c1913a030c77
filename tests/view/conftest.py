"""Run and sweep directories for the viewer tests, in the formats rl.train and the sweep write.

``make_run`` writes a two-step run: step 0 has a train group of two episodes
in today's format (prompt + replies), one group whose env raised, and an eval
episode; step 1 has an episode with a full ``messages`` list (thinking, a tool
call, a tool reply). Texts hold ``</script>`` and ``<!--`` to prove escaping.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mint_envkit.rl.logs import append_jsonl, append_jsonl_lines, write_json_atomic

SYSTEM = {
    "role": "system",
    "content": "You are a precise calculator. Reply with only the final number.",
}
NASTY = "</script><script>document.title='pwned'</script><!-- x"


def episode(step: int, group: int, member: int, question: str, reply: str, **more) -> dict:
    parsed = more.pop("parsed", None)
    status = more.pop("parse_status", "ok" if parsed is not None else "no_match")
    record = {
        "step": step,
        "split": "train",
        "group": group,
        "member": member,
        "prompt": [SYSTEM, {"role": "user", "content": question}],
        "replies": [reply],
        "thinking": [None],
        "stop_reasons": ["stop"],
        "reward": 1.0 if parsed == "57" else 0.0,
        "advantage": 0.5 if parsed == "57" else -0.5,
        "metrics": {"correct": float(parsed == "57"), "parsed": float(parsed is not None)},
        "parse_status": status,
        "logs": {"parse_status": status, "parsed": parsed, "answer": "57"},
    }
    record.update(more)
    return record


def make_run(root: Path, *, steps: int = 2) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        root / "config.json", {"model_name": "mint-envkit/tiny-qwen3", "temperature": 0.7}
    )
    q = "What is 12 + 45?"
    for step in range(steps):
        append_jsonl(
            root / "metrics.jsonl",
            {
                "step": step,
                "env/all/reward/total": 0.25 * (step + 1),
                "env/all/correct": 0.5 * step,
                "env/all/parsed": 0.75,
                "kl_policy_base": 0.01 * step,
                "train/tokens": 80 + step,
                "time/step": 1.5,
            },
        )
    records = [
        episode(0, 3, 0, q, "The answer is 57.", parsed="57"),
        episode(0, 3, 1, q, f"I refuse {NASTY}", parse_status="no_match"),
        {
            "step": 0,
            "split": "train",
            "group": 4,
            "prompt": [SYSTEM],
            "error": "ValueError: env exploded",
            "traceback": "Traceback (most recent call last):\nValueError: env exploded",
        },
        episode(0, 9, 0, "What is 1 + 1?", "2", parsed="2", split="test"),
    ]
    append_jsonl_lines(root / "rollouts.jsonl", records)
    if steps > 1:
        tool_episode = episode(1, 5, 0, q, "57", parsed="57")
        tool_episode["messages"] = [
            SYSTEM,
            {"role": "user", "content": q},
            {
                "role": "assistant",
                "content": "",
                "thinking": "Let me use the calculator tool.",
                "tool_calls": [
                    {"id": "c1", "function": {"name": "add", "arguments": '{"a": 12, "b": 45}'}}
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "57"},
            {"role": "assistant", "content": "<think>it said 57</think>The sum is 57."},
        ]
        append_jsonl_lines(root / "rollouts.jsonl", [tool_episode])
    return root


def make_sweep(root: Path) -> Path:
    """Two runs written by make_run, one failed config with no steps, as the sweep writes them."""
    names = ["kl0p0-g2", "kl0p02-g2", "kl0p05-g2"]
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(
        root / "sweep.json",
        {
            "format": 1,
            "grid": {"kl_penalty_coef": [0.0, 0.02, 0.05]},
            "configs": [{"name": n, "params": {}} for n in names],
        },
    )
    make_run(root / names[0])
    make_run(root / names[1], steps=1)
    (root / names[2]).mkdir()
    for name, status in zip(names, ["ok", "ok", "failed"], strict=True):
        append_jsonl(
            root / "results.jsonl",
            {
                "name": name,
                "status": status,
                "error": "RuntimeError: boom" if status == "failed" else None,
                "log_path": str(root / name),
                "params": {"kl_penalty_coef": 0.0},
            },
        )
    return root


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    return make_run(tmp_path / "run")


@pytest.fixture
def sweep_dir(tmp_path: Path) -> Path:
    return make_sweep(tmp_path / "sweep")


def _embedded(page: str, element_id: str) -> object:
    start = page.index(f'id="{element_id}">') + len(f'id="{element_id}">')
    return json.loads(page[start : page.index("</script>", start)])


@pytest.fixture
def embedded():
    """``embedded(page, id)``: the JSON of the page's ``<script type="application/json" id=...>``."""
    return _embedded


@pytest.fixture
def run_maker():
    """``run_maker(path, steps=2)``: write a run directory (see the module docstring)."""
    return make_run


def make_demo_sweep(root: Path, *, steps: int = 12) -> Path:
    """A sweep of three arithmetic runs whose reward climbs: the data of docs/img/viewer.png."""
    import random

    rng = random.Random(0)
    names = ["kl0p0-t0p7-g4", "kl0p02-t0p7-g4", "kl0p02-t1p0-g4"]
    root.mkdir(parents=True)
    write_json_atomic(
        root / "sweep.json",
        {"format": 1, "configs": [{"name": n} for n in names]},
    )
    for k, name in enumerate(names):
        run = root / name
        run.mkdir(parents=True)
        write_json_atomic(
            run / "config.json", {"model_name": "Qwen/Qwen3-0.6B", "temperature": 0.7}
        )
        for step in range(steps):
            skill = min(0.95, 0.15 + step * (0.06 + 0.015 * k))
            records, rewards = [], []
            for g in range(4):
                a, b = rng.randint(10, 99), rng.randint(10, 99)
                for member in range(4):
                    roll = rng.random()
                    if roll < skill:
                        reply, parsed = f"{a} + {b} = {a + b}. The answer is {a + b}.", str(a + b)
                    elif roll < skill + (1 - skill) / 2:
                        reply, parsed = f"Adding them gives {a + b + 10}.", str(a + b + 10)
                    else:
                        reply, parsed = "Let me think about the tens first and then", None
                    record = episode(
                        step,
                        step * 4 + g,
                        member,
                        f"What is {a} + {b}?",
                        reply,
                        parsed=parsed,
                        parse_status="ok" if parsed else "no_match",
                    )
                    correct = parsed == str(a + b)
                    record["reward"] = 1.0 if correct else (-0.25 if parsed else 0.0)
                    record["metrics"] = {
                        "correct": float(correct),
                        "parsed": float(parsed is not None),
                    }
                    record["logs"]["answer"] = str(a + b)
                    records.append(record)
                    rewards.append(record["reward"])
            mean = sum(rewards) / len(rewards)
            for g in range(0, 16, 4):
                group = records[g : g + 4]
                group_mean = sum(r["reward"] for r in group) / 4
                for record in group:
                    record["advantage"] = round(record["reward"] - group_mean, 3)
            append_jsonl_lines(run / "rollouts.jsonl", records)
            append_jsonl(
                run / "metrics.jsonl",
                {
                    "step": step,
                    "env/all/reward/total": mean,
                    "env/all/correct": sum(r["metrics"]["correct"] for r in records) / 16,
                    "env/all/parsed": sum(r["metrics"]["parsed"] for r in records) / 16,
                    "kl_policy_base": 0.002 * k * step,
                    "train/tokens": 700 + rng.randint(0, 90),
                    "time/step": 2.0 + rng.random(),
                },
            )
        append_jsonl(
            root / "results.jsonl",
            {
                "name": name,
                "status": "ok",
                "error": None,
                "params": {
                    "kl_penalty_coef": [0.0, 0.02, 0.02][k],
                    "temperature": [0.7, 0.7, 1.0][k],
                },
            },
        )
    return root


@pytest.fixture
def demo_sweep(tmp_path: Path) -> Path:
    return make_demo_sweep(tmp_path / "runs" / "arithmetic-sweep")


COLLAPSED = {
    "baseline_correct": 0.575,
    "distinct": 1,
    "entropy": 0.0,
    "top_share": 1.0,
    "truncated": 0.0,
    "concentrated": 1.0,
    "beats_baseline": 0.0,
    "collapse": 1.0,
}
HEALTHY = {
    "baseline_correct": 0.575,
    "distinct": 2,
    "entropy": 0.67,
    "top_share": 0.55,
    "truncated": 0.025,
    "concentrated": 0.0,
    "beats_baseline": 1.0,
    "collapse": 0.0,
}


FIGURES = {"collapsed": COLLAPSED, "healthy": HEALTHY}


def add_evals(
    run: Path, final: dict | str, *, before: object = 0.475, after: object = 0.575
) -> Path:
    """Add held-out evaluations to a run written by make_run (2 steps), as the loop logs them.

    ``final``: the final eval's ``answers/*`` figures, or ``"collapsed"`` / ``"healthy"``
    (the yes/no run of the issue: 57.5% is the always-"no" baseline). Step 0:
    ``test/env/all/correct`` = ``before`` with healthy figures and ``final``'s baseline;
    step 1: a periodic eval and the final one (``test_final/...``), ``after`` and ``final``.
    """
    final = FIGURES[final] if isinstance(final, str) else final

    def figures(split: str, values: dict) -> dict:
        return {f"{split}/env/all/answers/{k}": v for k, v in values.items()}

    start = {**HEALTHY, "baseline_correct": final.get("baseline_correct")}
    append_jsonl_lines(
        run / "metrics.jsonl",
        [
            {"step": 0, "test/env/all/correct": before, **figures("test", start)},
            {
                "step": 1,
                "test/env/all/correct": after,
                **figures("test", final),
                "test_final/env/all/correct": after,
                **figures("test_final", final),
            },
        ],
    )
    return run


@pytest.fixture
def evals():
    """``evals(run_dir, final_figures, before=, after=)``: add held-out evals (see add_evals)."""
    return add_evals
