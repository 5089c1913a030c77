"""Every ``Example::`` block of a docstring under ``src/mint_envkit`` is checked.

Each block compiles, and every ``mint_envkit`` name it imports or reaches through a
module exists, so an example teaching a removed name fails. The blocks of the modules on
:data:`RUN` also run (one subprocess for all, each block in a copy of its module's
namespace, a fresh temporary directory and a time bound), unless the block's first line
is ``# not run: REASON``. A module docstring's example runs first and is the given of the
module's other examples: what it builds (a config, a builder, a run folder's path) is in
their namespace, so each example shows only its own point. A subpackage's docstring
example is likewise the given of its modules' examples (it runs before theirs when they read
a name it binds). The conventions are in ``tests/example_blocks.py`` and
docs/architecture.md ("The rules of the test suite").
"""

from __future__ import annotations

import collections
import fcntl
import json
import os
from collections.abc import Callable
from pathlib import Path

import pytest

from example_blocks import (
    SRC,
    Block,
    _binds_what_they_read,
    compile_block,
    docstring_blocks,
    missing_names,
    run_blocks,
    shell_problems,
)

RUN = (
    "mint_envkit",
    "mint_envkit.adapters",
    "mint_envkit.auditing",
    "mint_envkit.builders",
    "mint_envkit.checks",
    "mint_envkit.conformance",
    "mint_envkit.envs",
    "mint_envkit.errors",
    "mint_envkit.evaluation",
    "mint_envkit.interpolation",
    "mint_envkit.judge",
    "mint_envkit.local",
    "mint_envkit.lru",
    "mint_envkit.parsers",
    "mint_envkit.progress",
    "mint_envkit.replay",
    "mint_envkit.rendering",
    "mint_envkit.rewards",
    "mint_envkit.rl",
    "mint_envkit.rollouts",
    "mint_envkit.runs",
    "mint_envkit.sandbox",
    "mint_envkit.sweep",
    "mint_envkit.tools",
    "mint_envkit.view",
)
"""Modules (and packages, with their modules; ``mint_envkit`` is its front page alone)
whose examples run."""

NOT_RUN_YET = {
    "mint_envkit.cli": "commands; their examples are shell, checked by test_shell_examples",
    "mint_envkit.tools.mcp": "needs an MCP server",
    "mint_envkit.tools.mcp_connection": "needs an MCP server",
    "mint_envkit.tools.mcp_tool": "needs an MCP server",
}
"""Modules whose examples are only compiled and name-checked, each with the reason."""


def _under(module: str, prefix: str) -> bool:
    return module == prefix or (prefix != "mint_envkit" and module.startswith(prefix + "."))


def _runs(block: Block) -> bool:
    if any(_under(block.module, skip) for skip in NOT_RUN_YET):
        return False
    return any(_under(block.module, prefix) for prefix in RUN)


BLOCKS = docstring_blocks()
PYTHON = [block for block in BLOCKS if block.language == "python"]
SHELL = [block for block in BLOCKS if block.language == "shell"]
TO_RUN = [block for block in PYTHON if _runs(block) and not block.not_run]


def test_examples_are_found_in_every_kind_of_docstring():
    owners = {block.owner for block in BLOCKS}
    assert len(BLOCKS) > 800
    assert "mint_envkit.parsers.choice" in owners  # a module
    assert "mint_envkit.parsers.choice.choice" in owners  # a function
    assert "mint_envkit.parsers.math.DEFAULT_MATH_TIMEOUT" in owners  # a constant
    assert TO_RUN


def test_every_example_heading_is_a_known_one():
    bad = [f"{block.id}: {block.heading}" for block in BLOCKS if block.language == "bad heading"]
    assert not bad, "use `Example::`, `Example (shell)::` or `Example (see ...)::`"


def test_the_run_lists_name_existing_modules_and_every_module_is_on_one():
    modules = {block.module for block in BLOCKS}
    for prefix in (*RUN, *NOT_RUN_YET):
        assert any(_under(module, prefix) for module in modules), prefix
    for module in modules:
        listed = [p for p in (*RUN, *NOT_RUN_YET) if _under(module, p)]
        assert listed, f"{module}: add it to RUN or NOT_RUN_YET"


def _problems(block: Block, run_results: Callable[[Block], str] | None) -> list[str]:
    """What is wrong with one block: it does not compile, it names what does not exist,
    or (on a RUN module, not marked ``# not run:``) it fails when run."""
    try:
        compile_block(block)
    except SyntaxError as err:
        return [
            f"{block.id} ({block.owner}) does not compile: {err.msg}, line {err.lineno} of "
            "the block; write valid Python (`...` is a fine placeholder)"
        ]
    missing = missing_names(block.code, block.module)
    if missing:
        return [f"{block.id} ({block.owner}) uses names that do not exist: {missing}"]
    if run_results is not None and block in TO_RUN_SET:
        error = run_results(block)
        if error:
            return [
                f"{block.id} ({block.owner}) failed when run:\n{error}\nfix the example, or, "
                "when it needs a backend, a model or objects built elsewhere, start it with "
                "`# not run: REASON`"
            ]
    return []


def _public_owners() -> tuple[set[str], set[str]]:
    """The dotted owners of the public face's objects, and the public classes (whose
    methods' examples are the face's too)."""
    import importlib

    owners: set[str] = set()
    classes: set[str] = set()
    modules = {block.module for block in BLOCKS}
    faces = [m for m in modules if m == "mint_envkit" or m.count(".") == 1]
    faces += ["mint_envkit.errors", "mint_envkit.rl.train"]
    for face in faces:
        module = importlib.import_module(face)
        owners.add(face)
        for name in getattr(module, "__all__", ()):
            value = getattr(module, name, None)
            home = getattr(value, "__module__", None)
            qualname = getattr(value, "__qualname__", None)
            if isinstance(home, str) and isinstance(qualname, str):
                owners.add(f"{home}.{qualname}")
                if isinstance(value, type):
                    classes.add(f"{home}.{qualname}")
            else:  # a constant: documented where it is assigned
                owners.update(b.owner for b in BLOCKS if b.owner.rsplit(".", 1)[-1] == name)
    return owners, classes


PUBLIC, PUBLIC_CLASSES = _public_owners()


def _is_public(block: Block) -> bool:
    return block.owner in PUBLIC or any(block.owner.startswith(c + ".") for c in PUBLIC_CLASSES)


FACE_BLOCKS = [block for block in PYTHON if _is_public(block)]
INTERNAL_MODULES = sorted({block.module for block in PYTHON if not _is_public(block)})
TO_RUN_SET = set(TO_RUN)


@pytest.mark.parametrize("block", SHELL, ids=lambda block: block.id)
def test_shell_examples_name_real_commands(block: Block):
    assert not shell_problems(block), f"{block.id}: not a mint-envkit command"


HEAVY_PARTS = (
    "mint_envkit.parsers",
    "mint_envkit.sandbox",
    "mint_envkit.rl",
    "mint_envkit.rollouts",
    "mint_envkit.sweep",
    "mint_envkit.local.engine",
    "mint_envkit.local.http",
    "mint_envkit.local",
)
"""Parts whose blocks run in a subprocess of their own (the rest share one), so that no
one run nears the runner's time bound; the first prefix that fits wins."""


def _part(module: str) -> str:
    """The runner subprocess a module's blocks go to (see :data:`HEAVY_PARTS`)."""
    return next((p for p in HEAVY_PARTS if _under(module, p)), "light")


def _jobs(part: str) -> list[dict]:
    jobs: dict[str, list[list[str]]] = collections.defaultdict(list)
    given: dict[str, Block] = {}
    for block in TO_RUN:
        if block.owner == block.module:
            given.setdefault(block.module, block)
        if _part(block.module) == part:
            jobs[block.module].append([block.id, block.code])
    return [
        {
            "module": module,
            "blocks": blocks,
            "given": given[module].id if module in given else None,
            "prelude": [[g.id, g.code] for g in _package_given(module, given)],
        }
        for module, blocks in jobs.items()
    ]


def _run_part_once(part: str, shared: Path | None) -> dict[str, str]:
    """The results of one part's runner subprocess, run once per test session.

    Under pytest-xdist a part's items can be spread over several workers, and each ran
    the part's subprocess itself (the same examples twice at once, one of them leasing
    a sandbox uid the other held). ``shared`` is the folder all workers of this session
    share: the first worker to need a part runs it under a lock and writes its results
    there; the others wait for the lock and read them."""
    if shared is None:
        return run_blocks(_jobs(part))
    path = shared / f"{part}.json"
    with open(shared / f"{part}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.is_file():
            return json.loads(path.read_text())
        results = run_blocks(_jobs(part))
        path.with_suffix(".tmp").write_text(json.dumps(results))
        path.with_suffix(".tmp").replace(path)
        return results


@pytest.fixture(scope="module")
def run_results(tmp_path_factory: pytest.TempPathFactory) -> Callable[[Block], str]:
    """``block -> error text`` (empty when it passed); each part runs when first asked."""
    done: dict[str, dict[str, str]] = {}
    # a worker's base temp is <session's>/popen-gwN: its parent is the whole session's
    shared = None
    if os.environ.get("PYTEST_XDIST_WORKER"):
        shared = tmp_path_factory.getbasetemp().parent / "docstring-examples"
        shared.mkdir(exist_ok=True)

    def result(block: Block) -> str:
        part = _part(block.module)
        if part not in done:
            done[part] = _run_part_once(part, shared)
        return done[part][block.id]

    return result


def _package_given(module: str, given: dict[str, Block]) -> list[Block]:
    """The example of the subpackage a plain module is in (``mint_envkit.sweep`` for
    ``mint_envkit.runs.store``): the given of the package's modules too. The top-level
    package's example is nobody's given."""
    package = module.rpartition(".")[0]
    is_package = SRC.joinpath(*module.split("."), "__init__.py").is_file()
    if package.count(".") < 1 or is_package or package not in given:
        return []
    return [given[package]]


@pytest.mark.parametrize("block", FACE_BLOCKS, ids=lambda block: block.id)
def test_a_face_example_compiles_names_real_things_and_runs(
    block: Block, run_results: Callable[[Block], str]
):
    """One item per example of the public face: what a user learns from."""
    problems = _problems(block, run_results)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("module", INTERNAL_MODULES)
def test_an_internal_modules_examples_compile_name_real_things_and_run(
    module: str, run_results: Callable[[Block], str]
):
    """One item per internal module: its examples, checked the same way, together."""
    blocks = [b for b in PYTHON if b.module == module and not _is_public(b)]
    problems = [p for block in blocks for p in _problems(block, run_results)]
    assert not problems, "\n".join(problems)


def test_the_face_and_the_internal_checks_cover_every_example():
    covered = {b.id for b in FACE_BLOCKS} | {
        b.id for b in PYTHON if b.module in INTERNAL_MODULES and not _is_public(b)
    }
    assert covered == {b.id for b in PYTHON}
    assert len(FACE_BLOCKS) > 100  # the face has examples (a wrong owner test finds none)


# ------------------------------------------------------ the checks themselves can fail


def _block(code: str, heading: str = "Example::") -> Block:
    return Block(file="x.py", line=1, owner="x", module="mint_envkit.parsers", code=code)


def test_a_fragment_does_not_compile_and_await_at_top_level_does():
    with pytest.raises(SyntaxError):
        compile_block(_block("f(a=1, ...)\n"))
    compile_block(_block("result = await f(...)\n"))


def test_a_removed_name_is_reported():
    code = (
        "from mint_envkit import GroupBuilder, no_such_name\n"
        "import mint_envkit.parsers as parsers\n"
        "parsers.boxed.after_thinking\n"
        "parsers.gone()\n"
        "GroupBuilder.nope\n"
        "from mint_envkit.no_such_module import x\n"
    )
    missing = missing_names(code)
    assert "mint_envkit.no_such_name" in missing
    assert "parsers.gone" in missing
    assert "GroupBuilder.nope" in missing
    assert any(name.startswith("from mint_envkit.no_such_module") for name in missing)
    assert not any("after_thinking" in name for name in missing)


def test_a_removed_attribute_of_a_module_level_class_is_reported():
    module = "mint_envkit.parsers.result"
    assert missing_names("ParseResult.ok('5')\nParseResult.gone\n", module) == ["ParseResult.gone"]
    assert missing_names("ParseResult = object\nParseResult.gone\n", module) == []


def test_a_failing_or_slow_block_is_reported_and_a_good_one_passes():
    results = run_blocks(
        [
            {
                "module": "mint_envkit.parsers.choice",
                "blocks": [
                    ["good", 'assert choice("AB")("(B)").value == "B"\n'],
                    ["stale", 'assert choice("AB")("(B)").value == "A"\n'],
                    ["async", "import asyncio\nawait asyncio.sleep(0)\n"],
                ],
            }
        ]
    )
    assert results["good"] == "" and results["async"] == ""
    assert "AssertionError" in results["stale"]


def test_not_run_and_shell_conventions_are_read(tmp_path):
    package = tmp_path / "pkg"
    package.mkdir()
    (package / "m.py").write_text(
        '"""Mod.\n\nExample::\n\n    # not run: needs a backend\n    await f()\n"""\n\n'
        'def g():\n    """G.\n\n    Example (shell)::\n\n        mint-envkit nope\n    """\n\n'
        'def h():\n    """H.\n\n    Example (whatever)::\n\n        h()\n    """\n'
    )
    found = docstring_blocks(package)
    assert [b.language for b in found] == ["python", "shell", "bad heading"]
    assert found[0].not_run == "needs a backend"
    assert shell_problems(found[1]) == ["mint-envkit nope"]
    assert found[0].line == 5


def test_src_is_the_package():
    assert (SRC / "__init__.py").is_file()


def test_a_package_example_is_the_given_of_its_modules():
    package = Block(
        file="src/p/__init__.py",
        line=1,
        owner="mint_envkit.p",
        module="mint_envkit.p",
        code="x = 1\n",
    )
    own = Block(
        file="src/p/m.py", line=1, owner="mint_envkit.p.m", module="mint_envkit.p.m", code=""
    )
    given = {"mint_envkit.p": package, "mint_envkit.p.m": own}
    assert _package_given("mint_envkit.p.m", given) == [package]
    assert _package_given("mint_envkit.p", given) == []  # the top level is no package given
    results = run_blocks(
        [
            {
                "module": "mint_envkit.parsers.choice",
                "prelude": [["pkg", "letters = 'AB'\n"]],
                "blocks": [["uses", "assert letters == 'AB'\n"]],
            }
        ]
    )
    assert results == {"uses": ""}


def test_the_module_example_is_the_given_of_the_others():
    results = run_blocks(
        [
            {
                "module": "mint_envkit.parsers.choice",
                "given": "module",
                "blocks": [
                    ["uses", "assert letters == 'AB'\nletters = 'changed'\n"],
                    ["module", "letters = 'AB'\n"],
                    ["again", "assert letters == 'AB'\n"],
                ],
            },
            {"module": "mint_envkit.parsers.choice", "blocks": [["alone", "letters\n"]]},
        ]
    )
    assert results["module"] == results["uses"] == results["again"] == ""
    assert "NameError" in results["alone"]


def test_a_package_example_runs_first_only_where_a_block_reads_what_it_builds():
    prelude = "import tempfile\nengine = make(tempfile.mkdtemp())\n"
    assert _binds_what_they_read(prelude, ["engine.run()"])
    own = "import tempfile\nother = make(tempfile.mkdtemp())\n"  # its own tempfile
    assert not _binds_what_they_read(prelude, [own])
    assert _binds_what_they_read(prelude, [own, "print(engine)"])
    assert _binds_what_they_read(prelude, ["f(a=1, ...)"])  # does not parse: run it
