"""The README's promises: its two commands are the ones CI and users run, its example runs."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def _code_blocks(language: str = "") -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.S)


def test_readme_begins_with_exactly_two_commands():
    head = README.split("## ", 1)[0]
    commands = [block.strip() for block in re.findall(r"```\n(.*?)```", head, flags=re.S)]
    assert commands == ["bash scripts/sweep.sh", "bash scripts/test.sh"]
    # the main job runs the arithmetic sweep; the test command is what CI runs
    assert "examples/rl_hyperparameters.py" in (ROOT / "scripts" / "sweep.sh").read_text()
    assert "bash scripts/test.sh" in (ROOT / ".ci" / "run").read_text()


def test_setup_installs_pinned_torch_before_the_project():
    setup = (ROOT / "scripts" / "setup.sh").read_text()
    assert setup.index("torch==2.13.0") < setup.index("-e ")


def test_readme_example_runs_and_prints_what_it_says(tmp_path):
    [example] = _code_blocks("python")
    expected = re.search(r"# (\[.*\])\s*$", example.strip()).group(1)
    done = subprocess.run(
        [sys.executable, "-c", example], capture_output=True, text=True, cwd=tmp_path, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == expected


def test_the_readme_counts_the_public_names_as_they_are():
    sys.path.insert(0, str(ROOT / "tests"))
    from test_architecture import public_face

    names = {name for listed in public_face().values() for name in listed}
    found = re.search(r"every public name \((\d+):", (ROOT / "README.md").read_text())
    assert found and int(found.group(1)) == len(names), f"the README says {found and found[1]}"
