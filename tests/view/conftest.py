"""Run and sweep directories for the viewer tests, in the formats rl.train and the sweep write.

``make_run`` writes a two-step run: step 0 has a train group of two episodes
in today's format (prompt + replies), one group whose env raised, and an eval
episode; step 1 has an episode with a full ``messages`` list (thinking, a tool
call, a tool reply). Texts hold ``</script>`` and ``<!--`` to prove escaping.
"""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from mint_envkit.runs.files import append_jsonl, append_jsonl_lines, write_json_atomic

SYSTEM = {
    "role": "system",
    "content": "You are a precise calculator. Reply with only the final number.",
}
NASTY = "</script><script>document.title='pwned'</script><!-- x"


CHROMIUM = next(
    (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None
)
"""The browser the page tests drive (Debian's ``chromium``; ``.ci/run`` installs it)."""


class Browser:
    """Headless Chromium on a page: the DOM after its scripts ran, its console errors, a PNG.

    ``--dump-dom`` prints the DOM once the page's scripts are done (within a virtual
    time budget), so a test sees what the page drew, not only the data it embeds.
    """

    def __init__(self, home: Path) -> None:
        self.home = home

    def run(self, *args: str, timeout: float = 60) -> subprocess.CompletedProcess:
        try:
            out = subprocess.run(
                [
                    str(CHROMIUM),
                    "--headless",
                    "--no-sandbox",  # needed as root, e.g. in CI containers
                    "--disable-gpu",
                    "--disable-dev-shm-usage",
                    "--no-first-run",
                    f"--user-data-dir={self.home / 'profile'}",
                    "--virtual-time-budget=5000",
                    *args,
                ],
                capture_output=True,
                text=True,
                timeout=timeout,
            )
        except subprocess.TimeoutExpired:
            pytest.fail(f"the page did not finish loading within {timeout} s")
        assert out.returncode == 0, out.stderr[-2000:]
        return out

    def dom(self, page: Path, fragment: str = "") -> str:
        """The DOM of ``page`` after its scripts ran (they must finish: ``data-ready``)."""
        text = self.run("--dump-dom", page.resolve().as_uri() + fragment).stdout
        assert 'data-ready="1"' in text, "the page's script did not finish"
        return text

    def open(self, page: Path, fragment: str = "") -> tuple[str, list[str]]:
        """The DOM after the page's scripts ran, and the JavaScript errors it logged."""
        out = self.run(
            "--enable-logging=stderr", "--v=0", "--dump-dom", page.resolve().as_uri() + fragment
        )
        errors = [
            line
            for line in out.stderr.splitlines()
            if ":CONSOLE" in line and re.search(r"Uncaught|Error", line)
        ]
        return out.stdout, errors

    def screenshot(
        self, page: Path, png: Path, fragment: str = "", size: tuple[int, int] = (1200, 1400)
    ) -> Path:
        """A PNG of the page's first ``size`` pixels; checked to be a real, non-blank image."""
        self.run(
            "--hide-scrollbars",
            f"--window-size={size[0]},{size[1]}",
            f"--screenshot={png}",
            page.resolve().as_uri() + fragment,
        )
        data = png.read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 20_000
        return png


@pytest.fixture
def browser(tmp_path: Path) -> Browser:
    """Headless Chromium with a profile in the test's tmp dir (see :class:`Browser`)."""
    return Browser(tmp_path)


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
        # Held-out evals every 4 steps, before that step's update, and the final one after the
        # last step's (logged in the last step's line), as the loop logs them.
        for step, split in [(s, "test") for s in range(0, steps, 4)] + [(steps - 1, "test_final")]:
            skill = min(0.95, 0.1 + (step + (split == "test_final")) * (0.05 + 0.012 * k))
            figures = {
                "correct": round(skill, 3),
                "answers/baseline_correct": 0.05,
                "answers/baseline_name": "constant '110'",
                "answers/top_share": round(0.08 + 0.01 * step + 0.02 * k, 3),
            }
            append_jsonl(
                run / "metrics.jsonl",
                {"step": step, **{f"{split}/env/all/{key}": v for key, v in figures.items()}},
            )  # fmt: skip
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


# ------------------------------------------- the headline: final evals, baselines, evaluations

FIGURES_NAMED = {**HEALTHY, "baseline_name": "constant 'no'"}
ONE_STEP = {  # per config: train correct, held-out correct before and after, the final top share
    "lr1e-4": (0.25, 0.40, 0.45, 0.55),
    "lr3e-4": (0.50, 0.40, 0.60, 0.60),
    "lr9e-4": (0.75, 0.40, 0.575, 1.0),
}


def make_one_step_sweep(root: Path) -> Path:
    """A sweep of three one-step configs, each line as the loop logs it (rl/train.py ``_step``).

    Step 0's line holds the training figures, the periodic eval before the update
    (``test/...``) and the final one after it (``test_final/...``), each with the
    ``answers/*`` figures and the baseline's name; rollouts of the three splits.
    """
    root.mkdir(parents=True)
    names = list(ONE_STEP)
    write_json_atomic(
        root / "sweep.json",
        {"format": 1, "grid": {"learning_rate": [1e-4, 3e-4, 1e-3]},
         "configs": [{"name": n, "params": {}} for n in names]},
    )  # fmt: skip
    for k, (name, (train, before, after, top)) in enumerate(ONE_STEP.items()):
        run = root / name
        run.mkdir()
        write_json_atomic(run / "config.json", {"model_name": "mint-envkit/tiny-qwen3"})

        def held_out(split: str, correct: float, top_share: float) -> dict:
            figures = {**FIGURES_NAMED, "top_share": top_share, "baseline_correct": 0.575}
            return {
                f"{split}/env/all/reward/total": correct - 0.25,
                f"{split}/env/all/correct": correct,
                **{f"{split}/env/all/answers/{key}": v for key, v in figures.items()},
            }

        append_jsonl(
            run / "metrics.jsonl",
            {
                "step": 0,
                "env/all/reward/total": train - 0.1,
                "env/all/correct": train,
                "env/all/parsed": 0.9,
                "train/tokens": 500 + k,
                "time/step": 2.0,
                **held_out("test", before, 0.55),
                **held_out("test_final", after, top),
            },
        )
        q = "Is 12 greater than 62? Answer yes or no."
        records = [
            episode(0, 0, m, q, "no", parsed="no", split=split)
            for split in ("test", "train", "test_final")
            for m in range(2)
        ]
        append_jsonl_lines(run / "rollouts.jsonl", records)
        append_jsonl(
            root / "results.jsonl",
            {"name": name, "status": "ok", "error": None, "params": {"learning_rate": 1e-4 * 3**k}},
        )
    return root


@pytest.fixture
def one_step_sweep(tmp_path: Path) -> Path:
    return make_one_step_sweep(tmp_path / "one-step")


SECRETS = [37, 64, 7]
EVAL_FIGURES = {  # label -> correct, pass@2, mean reward
    "base": (1 / 3, 2 / 3, 0.1),
    "final": (2 / 3, 1.0, 0.55),
}


def guessing_episode(label: str, index: int, member: int) -> dict:
    """One episode of a guessing game as rollout_records writes it: the secret in no message."""
    secret = SECRETS[index]
    solved = (index + member + (label == "final")) % 3 != 0
    system = {"role": "system", "content": "We play guess the number. Reply with one number."}
    messages = [system, {"role": "user", "content": "I am thinking of a number between 1 and 100."}]
    for guess in (50, secret if solved else secret + 1):
        messages.append({"role": "assistant", "content": str(guess)})
        if guess != secret:
            messages.append({"role": "user", "content": "Higher." if guess < secret else "Lower."})
    return {
        "step": 0,
        "split": "eval",
        "group": index,
        "member": member,
        "prompt": messages[:2],
        "messages": messages,
        "replies": [m["content"] for m in messages if m["role"] == "assistant"],
        "thinking": [None, None],
        "stop_reasons": ["stop", "stop"],
        "reward": 1.0 if solved else -0.5,
        "advantage": None,
        "metrics": {"correct": float(solved), "solved": float(solved), "turns": 2.0},
        "parse_status": None,
        "logs": {"guesses": [50, secret if solved else secret + 1]},
    }


def make_eval_dir(root: Path) -> Path:
    """An evaluation of two checkpoints as ``mint-envkit eval --out DIR`` writes it.

    ``results.jsonl`` (a line per label and problem, with the problem dict), ``summary.json``,
    and a run folder per label (see mint_envkit/evaluation/files.py): the eval/ line at
    step 0, the episodes of split ``eval`` with the problem's index as group, config.json
    (the summary without pass@, with ``answers/baseline_name``).
    """
    root.mkdir(parents=True)
    results = []
    for label, (correct, pass2, reward) in EVAL_FIGURES.items():
        folder = root / label
        folder.mkdir()
        episodes = [guessing_episode(label, i, m) for i in range(len(SECRETS)) for m in range(2)]
        append_jsonl_lines(folder / "rollouts.jsonl", episodes)
        summary = {
            "label": label,
            "checkpoint": None if label == "base" else "tinker://run/sampler_weights/final",
            "split": "test",
            "samples": 2,
            "problems": 3,
            "mean_reward": reward,
            "correct": correct,
            "parse_failure_rate": 0.0,
            "answers/baseline_correct": 0.0,
            "answers/collapse": 0.0,
            "answers/baseline_name": "constant '50'",
        }
        line = {"step": 0, "eval/mean_reward": reward, "eval/correct": correct}
        line.update({"eval/parse_failure_rate": 0.0, "eval/answers/baseline_correct": 0.0})
        line.update({"eval/answers/collapse": 0.0, "eval/pass@1": correct, "eval/pass@2": pass2})
        append_jsonl(folder / "metrics.jsonl", line)
        write_json_atomic(folder / "config.json", summary)
        for i, secret in enumerate(SECRETS):
            results.append(
                {"label": label, "checkpoint": summary["checkpoint"], "split": "test", "index": i,
                 "problem": {"secret": secret, **({"high": 10} if secret < 10 else {})},
                 "replies": [e["replies"][-1] for e in episodes if e["group"] == i]}
            )  # fmt: skip
    append_jsonl_lines(root / "results.jsonl", results)
    write_json_atomic(root / "summary.json", {"runs": list(EVAL_FIGURES)})
    return root


@pytest.fixture
def eval_dir(tmp_path: Path) -> Path:
    return make_eval_dir(tmp_path / "eval-guess")


AUDIT_RECORD = {  # an AuditReport.record() of the yes/no env: the shape audit.json has
    "target": "examples/yes_no.py:builder",
    "ok": False,
    "problems": 3,
    "baseline_correct": 0.65,
    "probes": [
        {"name": "correct", "kind": "reference", "mean_reward": 1.0, "correct_rate": 1.0},
        {"name": "most_common", "kind": "answer_shaped", "mean_reward": 0.65,
         "correct_rate": 0.65},
        {"name": "empty", "kind": "non_answer", "mean_reward": 0.0, "correct_rate": 0.0},
    ],
    "findings": [{"kind": "collapse", "probe": "learn", "message": "the gain is a constant answer"}],
    "samples": {"model": "mint-envkit/tiny-qwen3", "samples": 2, "correct": 0.5},
}  # fmt: skip


def make_audit_dir(root: Path, *, samples: bool = True) -> Path:
    """An audit's out_dir: ``audit.json``, its learning run ``learn/`` and ``samples.jsonl``.

    The samples: two replies to each of three yes/no problems, one line per reply
    (``{problem, reply, reward, correct, parse_status}``), one of them with injected markup.
    """
    root.mkdir(parents=True)
    write_json_atomic(root / "audit.json", AUDIT_RECORD)
    add_evals(make_run(root / "learn"), "collapsed")
    if samples:
        questions = [("Is 12 greater than 62?", "no"), ("Is 70 greater than 20?", "yes"),
                     ("Is 5 greater than 9?", "no")]  # fmt: skip
        lines = []
        for question, answer in questions:
            for reply, status in (("no", "ok"), (f"maybe {NASTY}", "no_match")):
                parsed = reply if status == "ok" else None
                lines.append({
                    "problem": {"question": f"{question} Answer yes or no.", "answer": answer},
                    "reply": reply,
                    "reward": 1.0 if parsed == answer else 0.0,
                    "correct": parsed == answer,
                    "parse_status": status,
                })  # fmt: skip
        append_jsonl_lines(root / "samples.jsonl", lines)
    return root


@pytest.fixture
def audit_dir(tmp_path: Path) -> Path:
    return make_audit_dir(tmp_path / "audit-yes-no")


@pytest.fixture
def audit_maker():
    """``audit_maker(path, samples=True)``: write an audit's out_dir (see make_audit_dir)."""
    return make_audit_dir
