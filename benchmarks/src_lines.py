"""Lines of ``src/`` at a git revision: all, and code (not docstrings, comments or blanks).

Example::

    python benchmarks/src_lines.py e52fcb1 HEAD
"""

from __future__ import annotations

import ast
import subprocess
import sys


def code_lines(source: str) -> int:
    """Lines that are neither blank, a comment, nor part of a string-literal statement."""
    docs: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        value = node.value if isinstance(node, ast.Expr) else None
        if isinstance(value, ast.Constant) and isinstance(value.value, str):
            docs.update(range(node.lineno, (node.end_lineno or node.lineno) + 1))
    return sum(
        1
        for number, line in enumerate(source.splitlines(), 1)
        if line.strip() and not line.strip().startswith("#") and number not in docs
    )


def count(rev: str) -> tuple[int, int]:
    """(all lines, code lines) of the ``.py`` files under ``src/`` at ``rev``."""
    names = subprocess.run(
        ["git", "ls-tree", "-r", "--name-only", rev, "src"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    total = code = 0
    for name in (n for n in names if n.endswith(".py")):
        text = subprocess.run(
            ["git", "show", f"{rev}:{name}"], capture_output=True, text=True, check=True
        ).stdout
        total += len(text.splitlines())
        code += code_lines(text)
    return total, code


if __name__ == "__main__":
    for rev in sys.argv[1:] or ["HEAD"]:
        total, code = count(rev)
        print(f"{rev}: {total} lines, {code} code, {total - code} docstrings/comments/blank")
