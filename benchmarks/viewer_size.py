"""The viewer on a big run: file size, write time and open time in headless Chromium.

Generates a synthetic run of ``--steps`` steps x ``--episodes`` episodes
(default 1,000 x 64, in groups of ``--group-size``) with replies of about
``--reply-chars`` characters, in the format ``rl.train`` writes (add
``--messages`` to also give every record the full ``messages`` list), then
times ``write_report`` and opening the page: Chromium's whole
``--headless --dump-dom`` run (start, parse, first render) and, inside the
page, the time from navigation start until the first step is rendered, and
the time to filter all steps by a search.

Run::

    python benchmarks/viewer_size.py                 # 1,000 x 64
    python benchmarks/viewer_size.py --messages
    python benchmarks/viewer_size.py --steps 10 --runs 1   # a quick look
"""

from __future__ import annotations

import argparse
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _common import machine_info, median, table, write_result

from mint_envkit.runs.files import append_jsonl_lines, write_json_atomic
from mint_envkit.view import write_report

WORDS = (
    "the sum of and so we add carry one then answer is first second digit place tens units "
    "check again result total which gives number step compute left right"
).split()
SYSTEM = "You are a precise calculator. Reply with only the final number."
STATUSES = ["ok"] * 8 + ["no_match", "empty", "truncated"]


def _text(rng: random.Random, chars: int) -> str:
    words: list[str] = []
    size = 0
    target = max(1, int(rng.gauss(chars, chars / 4)))
    while size < target:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words)


def generate_run(
    root: Path, steps: int, episodes: int, group: int, chars: int, messages: bool
) -> None:
    """Write config.json, metrics.jsonl and rollouts.jsonl of a synthetic run into ``root``."""
    rng = random.Random(0)
    root.mkdir(parents=True, exist_ok=True)
    write_json_atomic(root / "config.json", {"model_name": "synthetic", "max_steps": steps})
    groups = episodes // group
    for step in range(steps):
        records = []
        rewards = []
        for g in range(groups):
            a, b = rng.randint(10, 99), rng.randint(10, 99)
            prompt = [
                {"role": "system", "content": SYSTEM},
                {"role": "user", "content": f"What is {a} + {b}?"},
            ]
            for member in range(group):
                status = rng.choice(STATUSES)
                answer = str(a + b if rng.random() < 0.5 else a + b + 1)
                reply = _text(rng, chars) + (
                    f" so the answer is {answer}" if status == "ok" else ""
                )
                correct = status == "ok" and answer == str(a + b)
                reward = 1.0 if correct else (-0.25 if status == "ok" else 0.0)
                rewards.append(reward)
                record = {
                    "step": step,
                    "split": "train",
                    "group": step * groups + g,
                    "member": member,
                    "prompt": prompt,
                    "replies": [reply],
                    "thinking": [None],
                    "stop_reasons": ["length" if status == "truncated" else "stop"],
                    "reward": reward,
                    "advantage": round(rng.uniform(-1, 1), 4),
                    "metrics": {"correct": float(correct), "parsed": float(status == "ok")},
                    "parse_status": status,
                    "logs": {
                        "parse_status": status,
                        "parsed": answer if status == "ok" else None,
                        "answer": str(a + b),
                    },
                }
                if messages:
                    record["messages"] = [*prompt, {"role": "assistant", "content": reply}]
                records.append(record)
        append_jsonl_lines(root / "rollouts.jsonl", records)
        append_jsonl_lines(
            root / "metrics.jsonl",
            [
                {
                    "step": step,
                    "env/all/reward/total": sum(rewards) / len(rewards),
                    "env/all/correct": rng.random(),
                    "env/all/parsed": rng.random(),
                    "kl_policy_base": rng.random() / 100,
                    "train/tokens": rng.randint(1000, 5000),
                    "time/step": rng.uniform(1, 3),
                }
            ],
        )


def chromium() -> str | None:
    """The Chromium executable, or None."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if found := shutil.which(name):
            return found
    return None


def _chromium(browser: str, *args: str) -> tuple[float, str]:
    """(wall seconds, stdout) of one headless Chromium run with a fresh profile."""
    with tempfile.TemporaryDirectory() as profile:
        start = time.perf_counter()
        out = subprocess.run(
            [
                browser,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                f"--user-data-dir={profile}",
                *list(args),
            ],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=profile,
        ).stdout
        return time.perf_counter() - start, out


def screenshot_wall(browser: str, url: str) -> float:
    """Seconds for Chromium to start, load ``url``, run it, draw it and write a screenshot."""
    return _chromium(browser, "--screenshot", "--window-size=1200,1500", url)[0]


def open_page(browser: str, page: Path, hash_: str = "") -> tuple[float, dict[str, float]]:
    """(wall seconds of a --dump-dom run, the page's own timings in ms).

    The timings: ``script-start`` (navigation start to the page's script
    starting, i.e. the file read and parsed), ``ready`` (to the first step
    drawn) and ``render`` (drawing the step's episodes).
    """
    wall, dom = _chromium(browser, "--dump-dom", page.resolve().as_uri() + hash_)
    marks = dict(re.findall(r'data-([a-z-]+)-ms="([\d.]+)"', dom))
    return wall, {k: float(v) for k, v in marks.items()}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--episodes", type=int, default=64)
    parser.add_argument("--group-size", type=int, default=8)
    parser.add_argument("--reply-chars", type=int, default=300)
    parser.add_argument("--messages", action="store_true", help="also write a messages list")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--out")
    args = parser.parse_args()
    browser = chromium()
    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "run"
        generate_run(
            run, args.steps, args.episodes, args.group_size, args.reply_chars, args.messages
        )
        rollouts_mb = (run / "rollouts.jsonl").stat().st_size / 1e6
        writes, cpus, opens, parsed, readies, renders, searches, shots, blanks = (
            [] for _ in range(9)
        )
        for _ in range(args.runs):
            start, cpu = time.perf_counter(), time.process_time()
            page = write_report(run)
            writes.append(time.perf_counter() - start)
            cpus.append(time.process_time() - cpu)
            if browser:
                wall, marks = open_page(browser, page)
                opens.append(wall)
                parsed.append(marks.get("script-start"))
                readies.append(marks.get("ready"))
                renders.append(marks.get("render"))
                searches.append(
                    open_page(browser, page, "#run=0&step=all&q=carry+one")[1].get("render")
                )
                shots.append(screenshot_wall(browser, page.resolve().as_uri()))
                blanks.append(screenshot_wall(browser, "about:blank"))
        size_mb = page.stat().st_size / 1e6
    rows = [
        ["run", f"{args.steps} steps x {args.episodes} episodes (groups of {args.group_size})"],
        ["messages list", "yes" if args.messages else "no"],
        ["rollouts.jsonl (MB)", rollouts_mb],
        ["view.html (MB)", size_mb],
        ["write_report (s, median)", median(writes)],
        ["write_report CPU time (s, median)", median(cpus)],
        ["chromium: start, load, draw, screenshot (s)", median(shots) if shots else "no chromium"],
        ["chromium: the same for about:blank (s)", median(blanks) if blanks else "no chromium"],
        ["chromium: --dump-dom of the page (s)", median(opens) if opens else "no chromium"],
        ["in page: navigation to the file read and parsed (ms)", median(parsed)],
        ["in page: navigation to first step drawn (ms)", median(readies)],
        ["in page: first step's render (ms)", median(renders)],
        ["in page: search over all steps (ms)", median(searches)],
    ]
    print(table(["what", "value"], rows))
    result = {
        "args": vars(args),
        "machine": machine_info(),
        "rollouts_mb": rollouts_mb,
        "view_mb": size_mb,
        "write_s": writes,
        "write_cpu_s": cpus,
        "open_wall_s": opens,
        "script_start_ms": parsed,
        "ready_ms": readies,
        "render_ms": renders,
        "search_all_ms": searches,
        "screenshot_wall_s": shots,
        "blank_wall_s": blanks,
    }
    print(f"wrote {write_result('viewer_size', result, args.out)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
