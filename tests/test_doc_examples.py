"""The fenced ``python`` blocks of ``docs/*.md`` compile, name real things, and run.

Each block compiles (``await`` at top level allowed) and every ``mint_envkit`` name it
imports or reaches through a module exists. The blocks of the files on :data:`RUN` also
run, one file's blocks one after another in one namespace (as a reader types them), in
one subprocess with a time bound per block, unless a block's first line is
``# not run: REASON``. docs/reference.md is generated (``scripts/gen_reference.py``):
its fences are signatures, and its examples are the docstrings' own, checked by
``tests/test_docstring_examples.py``.
"""

from __future__ import annotations

import pytest

from example_blocks import DOCS, Block, compile_block, markdown_blocks, missing_names, run_blocks

GENERATED = ("reference.md",)
"""Markdown files whose code blocks are not checked here, each said why above."""

RUN = (
    "adapters.md",
    "audit.md",
    "code.md",
    "datasets.md",
    "distillation.md",
    "env-packages.md",
    "evaluation.md",
    "getting-started.md",
    "interpolation.md",
    "local-backend.md",
    "parsers.md",
    "reasoning-gym.md",
    "rewards-math-judge.md",
    "rollouts.md",
    "sweep.md",
    "tools.md",
    "tracking.md",
    "viewer.md",
    "writing-envs.md",
)
"""Doc files whose python blocks run (every one not marked ``# not run:``)."""

FILES = sorted(path for path in DOCS.glob("*.md") if path.name not in GENERATED)
BLOCKS = [block for path in FILES for block in markdown_blocks(path)]


def test_every_doc_with_python_blocks_runs_or_is_generated():
    with_code = {path.name for path in FILES if markdown_blocks(path)}
    assert with_code <= set(RUN), f"add to RUN: {sorted(with_code - set(RUN))}"
    assert set(RUN) <= {path.name for path in FILES}
    assert all((DOCS / name).is_file() for name in GENERATED)


@pytest.fixture(scope="module")
def run_results() -> dict[str, str]:
    jobs = []
    for name in RUN:
        blocks = [b for b in markdown_blocks(DOCS / name) if not b.not_run]
        if blocks:
            jobs.append({"module": "", "shared": True, "blocks": [[b.id, b.code] for b in blocks]})
    return run_blocks(jobs)


TO_RUN = {block.id for block in BLOCKS if block.file.split("/")[-1] in RUN and not block.not_run}


@pytest.mark.parametrize("block", BLOCKS, ids=lambda block: block.id)
def test_a_doc_block_compiles_names_real_things_and_runs(block: Block, run_results: dict[str, str]):
    """One item per block: it compiles, names what exists, and (on a RUN file, not
    marked ``# not run:``) runs."""
    try:
        compile_block(block)
    except SyntaxError as err:
        pytest.fail(f"{block.id} does not compile: {err.msg}, line {err.lineno} of the block")
    missing = missing_names(block.code)
    assert not missing, f"{block.id} uses names that do not exist: {missing}"
    if block.id in TO_RUN:
        error = run_results[block.id]
        assert not error, (
            f"{block.id} failed when run:\n{error}\nfix the example, or, when it needs a "
            "backend, a model or your own files, start it with `# not run: REASON`"
        )


def test_fences_are_found_and_a_marked_block_is_read(tmp_path):
    doc = tmp_path / "x.md"
    doc.write_text(
        "Text.\n\n```python\nx = 1\n```\n\n- item:\n\n  ```python\n  # not run: needs a "
        "backend\n  await go()\n  ```\n\n```bash\nls\n```\n"
    )
    found = markdown_blocks(doc)
    assert [b.code for b in found] == ["x = 1\n", "# not run: needs a backend\nawait go()\n"]
    assert [b.not_run for b in found] == ["", "needs a backend"]
