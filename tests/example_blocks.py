"""Find, check and run the code examples of the docs (the helpers of two test files).

``tests/test_docstring_examples.py`` checks the ``Example::`` blocks of the docstrings
under ``src/mint_envkit``; ``tests/test_doc_examples.py`` the fenced ``python`` blocks of
``docs/*.md``. Each block must compile (:func:`compile_block`: ``await`` at top level is
allowed, the block then runs as the body of an ``async def``) and every ``mint_envkit``
name it imports or reaches through a module must exist (:func:`missing_names`); the
blocks of the files on a test file's RUN list are also run (:func:`run_blocks`, in one
subprocess, each block in its own namespace, fresh temporary directory and time bound).

The conventions (documented in docs/architecture.md, "The rules of the test suite"):

- A docstring example is the indented block after a line ``Example::`` (or
  ``Example (see ``somewhere``)::``); ``Example (shell)::`` holds shell commands, each
  ``mint-envkit COMMAND ...`` or ``python -m mint_envkit.cli COMMAND ...`` with a known
  COMMAND (:func:`shell_problems`). Any other heading of that shape fails the test.
- A block whose first line is ``# not run: REASON`` is still compiled and its names
  checked, but not run: for a block that needs a live backend, a model, the network,
  your own files, or objects built elsewhere (a fragment such as ``env.step(reply)``).
- A docstring block runs in a copy of its module's namespace (as :mod:`doctest` does),
  so a method's example may use the names of its module without importing them.
- The ``python`` fences of one markdown file run one after another in one namespace, as
  a reader would type them; ``# not run: REASON`` on a fence's first line works alike.

Run as a script (by :func:`run_blocks`) it reads the jobs as JSON on stdin and prints
the results as JSON on stdout.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import importlib
import inspect
import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import textwrap
import time
import traceback
import types
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "mint_envkit"
DOCS = ROOT / "docs"
BLOCK_SECONDS = 30
"""The time bound of one block when it runs: against a hang, not a speed check (a block
must be fast and offline; the whole run must stay well inside pytest's 120 s)."""

_HEADING = re.compile(r"^(?P<indent>\s*)Example(?P<rest>[^:]*)::\s*$")
_SEE = re.compile(r"^ \(see [^)]+\)$")
_SHELL = " (shell)"
_NOT_RUN = re.compile(r"^# not run: (?P<reason>\S.*)$")
_FENCE = re.compile(r"^(?P<indent>\s*)```(?P<info>\S*)\s*$")


@dataclass(frozen=True)
class Block:
    """One code example: where it is, its code, whether it may run."""

    file: str  # relative to the repo root
    line: int  # 1-based line of the first code line
    owner: str  # dotted name of what the docstring documents ("" for a markdown file)
    module: str  # module whose namespace a docstring block runs in ("" for markdown)
    code: str
    heading: str = "Example::"
    language: str = "python"  # or "shell", or "bad heading"

    @property
    def not_run(self) -> str:
        """The reason given on the block's first line ``# not run: REASON``, or ""."""
        match = _NOT_RUN.match(self.code.split("\n", 1)[0].strip())
        return match["reason"].strip() if match else ""

    @property
    def id(self) -> str:
        return f"{self.file}:{self.line}"


def module_name(path: Path, root: Path = SRC) -> str:
    parts = list(path.relative_to(root.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _docstrings(tree: ast.Module) -> list[tuple[str, ast.Constant]]:
    """(owner, docstring node) for the module, its classes, functions and attributes."""
    found: list[tuple[str, ast.Constant]] = []

    def doc_of(body: list[ast.stmt]) -> ast.Constant | None:
        first = body[0] if body else None
        if (
            isinstance(first, ast.Expr)
            and isinstance(first.value, ast.Constant)
            and isinstance(first.value.value, str)
        ):
            return first.value
        return None

    def visit(body: list[ast.stmt], prefix: str) -> None:
        for index, node in enumerate(body):
            if isinstance(node, (ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
                name = f"{prefix}{node.name}"
                doc = doc_of(node.body)
                if doc is not None:
                    found.append((name, doc))
                if isinstance(node, ast.ClassDef):
                    visit(node.body, f"{name}.")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)) and index + 1 < len(body):
                doc = doc_of(body[index + 1 : index + 2])
                target = node.targets[0] if isinstance(node, ast.Assign) else node.target
                if doc is not None and isinstance(target, ast.Name):
                    found.append((f"{prefix}{target.id}", doc))

    module_doc = doc_of(tree.body)
    if module_doc is not None:
        found.append(("", module_doc))
    visit(tree.body, "")
    return found


def _blocks_in_text(lines: list[str]) -> list[tuple[int, str, str, str]]:
    """(index of first code line, heading, not-run reason, code) of each example block."""
    out = []
    i = 0
    while i < len(lines):
        match = _HEADING.match(lines[i])
        if match is None:
            i += 1
            continue
        indent = len(match["indent"])
        heading = lines[i].strip()
        rest = match["rest"]
        if rest == _SHELL:
            language = "shell"
        elif not rest or _SEE.match(rest):
            language = "python"
        else:
            language = "bad heading"
        j = i + 1
        while j < len(lines) and not lines[j].strip():
            j += 1
        start = j
        while j < len(lines) and (
            not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > indent
        ):
            j += 1
        code = textwrap.dedent("\n".join(lines[start:j])).strip("\n") + "\n"
        out.append((start, heading, language, code))
        i = max(j, i + 1)
    return out


def docstring_blocks(root: Path = SRC) -> list[Block]:
    """Every ``Example::`` block of every docstring under ``root``, found with :mod:`ast`."""
    blocks: list[Block] = []
    for path in sorted(root.rglob("*.py")):
        source = path.read_text(encoding="utf-8")
        tree = ast.parse(source)
        mod = module_name(path, root)
        for owner, node in _docstrings(tree):
            lines = node.value.splitlines()
            for index, heading, language, code in _blocks_in_text(lines):
                line = node.lineno + index  # the docstring's lines map one to one
                blocks.append(
                    Block(
                        file=os.path.relpath(path, ROOT),
                        line=line,
                        owner=f"{mod}.{owner}".rstrip("."),
                        module=mod,
                        code=code,
                        heading=heading,
                        language=language,
                    )
                )
    return blocks


def markdown_blocks(path: Path) -> list[Block]:
    """The fenced ``python`` blocks of one markdown file."""
    lines = path.read_text(encoding="utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _FENCE.match(lines[i])
        if match is None:
            i += 1
            continue
        start = i + 1
        end = start
        while end < len(lines) and not _FENCE.match(lines[end]):
            end += 1
        if match["info"] in ("python", "py"):
            code = textwrap.dedent("\n".join(lines[start:end])) + "\n"
            blocks.append(
                Block(
                    file=os.path.relpath(path, ROOT),
                    line=start + 1,
                    owner="",
                    module="",
                    code=code,
                    heading=match["info"],
                )
            )
        i = end + 1
    return blocks


def shell_problems(block: Block) -> list[str]:
    """What is wrong with a shell block: a line that is not a known ``mint-envkit`` command."""
    from mint_envkit.cli import COMMANDS

    problems = []
    for line in block.code.replace("\\\n", " ").splitlines():
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if words[:3] == ["python", "-m", "mint_envkit.cli"]:
            words = ["mint-envkit", *words[3:]]
        if words[0] != "mint-envkit" or len(words) < 2 or words[1] not in COMMANDS:
            problems.append(line.strip())
    return problems


def compile_block(block: Block) -> types.CodeType:
    """Compile a block; ``await`` at top level makes it the body of an ``async def``."""
    return compile(
        block.code,
        block.id,
        "exec",
        flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT,
        dont_inherit=True,
    )


def _resolve(obj: Any, attr: str) -> tuple[bool, Any]:
    """Whether ``obj.attr`` exists (a dataclass field or annotated attribute counts)."""
    if isinstance(obj, types.ModuleType):
        if hasattr(obj, attr):
            return True, getattr(obj, attr)
        try:
            return True, importlib.import_module(f"{obj.__name__}.{attr}")
        except ModuleNotFoundError:
            return False, None
    if inspect.isclass(obj):
        if hasattr(obj, attr):
            return True, inspect.getattr_static(obj, attr, None)
        for klass in obj.__mro__:
            if attr in getattr(klass, "__annotations__", {}) or attr in getattr(
                klass, "__dataclass_fields__", {}
            ):
                return True, None
        return False, None
    return True, None  # an instance: its attributes are not checked


def _chain(node: ast.expr) -> list[str] | None:
    names: list[str] = []
    while isinstance(node, ast.Attribute):
        names.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        names.append(node.id)
        return names[::-1]
    return None


def missing_names(code: str, module: str = "") -> list[str]:
    """The ``mint_envkit`` names a block imports or reaches that do not exist.

    With ``module`` (a docstring block runs in its namespace), its module-level classes
    and modules that the block does not rebind count as imported: ``Foo.gone`` fails.
    """
    tree = ast.parse(code)
    bound: dict[str, Any] = {}
    if module:
        stored = {
            node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load)
        }
        for name, value in vars(importlib.import_module(module)).items():
            if name in stored or not (inspect.isclass(value) or inspect.ismodule(value)):
                continue
            if getattr(value, "__module__", value.__name__).startswith("mint_envkit"):
                bound[name] = value
    missing: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "mint_envkit":
                    continue
                try:
                    importlib.import_module(alias.name)
                except ImportError as exc:
                    missing.append(f"import {alias.name} ({exc})")
                    continue
                if alias.asname:
                    bound[alias.asname] = importlib.import_module(alias.name)
                else:
                    bound["mint_envkit"] = importlib.import_module("mint_envkit")
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            if node.module.split(".")[0] != "mint_envkit":
                continue
            try:
                module = importlib.import_module(node.module)
            except ImportError as exc:
                missing.append(f"from {node.module} ({exc})")
                continue
            for alias in node.names:
                if alias.name == "*":
                    continue
                ok, value = _resolve(module, alias.name)
                if not ok:
                    missing.append(f"{node.module}.{alias.name}")
                elif value is not None:
                    bound[alias.asname or alias.name] = value
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or isinstance(node.ctx, ast.Store):
            continue
        chain = _chain(node)
        if not chain or chain[0] not in bound:
            continue
        obj = bound[chain[0]]
        for index, attr in enumerate(chain[1:], start=1):
            ok, obj = _resolve(obj, attr)
            if not ok:
                missing.append(".".join(chain[: index + 1]))
                break
            if obj is None:
                break
    return sorted(set(missing))


# ---------------------------------------------------------------- running blocks


def run_blocks(jobs: list[dict[str, Any]], timeout: float = 100) -> dict[str, str]:
    """Run the jobs in one subprocess; ``{block id: error text}`` ("" when it passed).

    A job is ``{"module": dotted name or "", "blocks": [[id, code], ...], "shared": bool,
    "given": id, "prelude": [[id, code], ...]}``: a docstring job runs each block in a
    copy of the module's namespace, after the ``prelude`` (the package docstring's
    example, whose own result its package's job reports) and the ``given`` block (the
    module docstring's example) have run in it, so what they build is there for the
    module's other examples; a markdown job (``shared``) runs its blocks one after another
    in one namespace.
    """
    done = subprocess.run(
        [sys.executable, __file__],
        input=json.dumps(jobs),
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=ROOT,
        env={**os.environ, "PYTHONHASHSEED": "0"},
    )
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        raise RuntimeError(f"the example runner failed:\n{done.stderr[-4000:]}")
    return json.loads(done.stdout.splitlines()[-1])


def _binds_what_they_read(prelude: str, codes: list[str]) -> bool:
    """Whether ``prelude`` binds a name (anywhere in it) that one of ``codes`` reads: a
    package's example is the given of its modules' examples only when they use what it
    builds, and running it before each of its 16 modules' blocks was half of a part's
    time. A name a block binds itself (``import tempfile``) is its own, not read from the
    prelude. When a block does not parse, the answer is yes."""
    try:
        bound = _names_bound(prelude)
        read = set()
        for code in codes:  # a name the block binds itself (its own import) is not read
            read |= {
                node.id
                for node in ast.walk(ast.parse(code))
                if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
            } - _names_bound(code)
    except SyntaxError:
        return True
    return bool(bound & read)


def _names_bound(code: str) -> set[str]:
    return {name for node in ast.walk(ast.parse(code)) for name in _bound_by(node)}


def _bound_by(node: ast.AST) -> list[str]:
    if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
        return [node.id]
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return [node.name]
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return [(alias.asname or alias.name).split(".")[0] for alias in node.names]
    return []


class _Timeout(Exception):
    pass


def _on_alarm(signum: int, frame: Any) -> None:
    raise _Timeout(f"the block ran past {BLOCK_SECONDS} s (a hang? examples must be fast)")


def _run_one(code: str, name: str, namespace: dict[str, Any]) -> str:
    here = os.getcwd()
    with tempfile.TemporaryDirectory() as scratch:
        os.chdir(scratch)
        os.symlink(ROOT / "examples", "examples")  # blocks may read the repo's examples
        signal.alarm(BLOCK_SECONDS)
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                compiled = compile(
                    code, name, "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True
                )
                result = eval(compiled, namespace)
                if inspect.iscoroutine(result):
                    asyncio.run(result)
        except BaseException:
            return traceback.format_exc(limit=-6)[-3000:]
        finally:
            signal.alarm(0)
            os.chdir(here)
    return ""


def _main() -> None:
    jobs = json.loads(sys.stdin.read())
    signal.signal(signal.SIGALRM, _on_alarm)
    results: dict[str, str] = {}
    for job in jobs:
        base: dict[str, Any] = {"__name__": "__example__"}
        if job["module"]:
            try:
                base = dict(vars(importlib.import_module(job["module"])))
            except BaseException:
                error = traceback.format_exc(limit=-4)
                results.update({block_id: error for block_id, _ in job["blocks"]})
                continue
        codes = [code for _, code in job["blocks"]]
        for block_id, code in job.get("prelude", []):
            if _binds_what_they_read(code, codes):
                _run_one(code, block_id, base)
        given = job.get("given")
        for block_id, code in job["blocks"]:
            if block_id == given:
                results[block_id] = _run_one(code, block_id, base)
        shared = dict(base)
        for block_id, code in job["blocks"]:
            if block_id == given:
                continue
            namespace = shared if job.get("shared") else dict(base)
            started = time.monotonic()
            results[block_id] = _run_one(code, block_id, namespace)
            if time.monotonic() - started > 1:
                print(f"slow block {block_id}: {time.monotonic() - started:.1f} s", file=sys.stderr)
    sys.stdout.flush()
    print(json.dumps(results))


if __name__ == "__main__":
    _main()
