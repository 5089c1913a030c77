"""Trivial programs: code that defines what a problem's tests call and solves nothing.

They are the code baseline of the audit (:mod:`mint_envkit.auditing.code`): a problem
whose tests one of them passes has tests that cannot tell a solution from a constant.
:data:`TRIVIAL_PROGRAMS` are the functions the tests call (:func:`called_names`)
returning a constant (``True``, ``False``, ``0``, ``None``, ``''``, ``[]``), their first
argument, or doing nothing; raising an exception; defining nothing at all (every test
then raises ``NameError``); returning (printing) the example output the prompt itself
shows (:func:`example_output`: "for the input `3 4` print `7`"); for a stdin / stdout
task, the program printing the constant, echoing its input, or printing nothing. Pure
source text: nothing runs here.

Example::

    from mint_envkit.sandbox.cases import split_tests
    from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS, called_names

    names = called_names(split_tests(["assert is_even(4) is True"]))
    print(TRIVIAL_PROGRAMS[0].source(names, functions=True, main=False))
    # def is_even(*args, **kwargs):
    #     return True
"""

from __future__ import annotations

import ast
import builtins
import re
import sys
from collections.abc import Sequence

import attrs

from mint_envkit.sandbox.cases import Case


@attrs.frozen
class TrivialProgram:
    """A program that does not solve anything: one policy of the code baseline.

    Attributes:
        name: how the baseline names it (``returning True``).
        returns: the body of each function the tests call.
        prints: the program's body for a stdin / stdout task.

    Example::

        program = TrivialProgram("returning 0", "return 0", "print(0)")
        print(program.source(["count"], functions=True, main=False))
        # def count(*args, **kwargs):
        #     return 0
    """

    name: str
    returns: str
    prints: str
    defines: bool = True
    from_prompt: bool = False

    def source(
        self, names: Sequence[str], *, functions: bool, main: bool, example: str | None = None
    ) -> str | None:
        """The program for a problem whose tests call ``names`` (``functions``) and / or
        run it on a stdin (``main``). A name of a standard module is imported instead.
        A program made from the prompt's example output (``from_prompt``) writes
        ``example`` in (None: the prompt shows none, no such program).

        Example::

            TRIVIAL_PROGRAMS[0].source([], functions=False, main=True)   # 'print(True)'
        """
        if self.from_prompt:
            if example is None:
                return None
            literal = _literal(example)
            program = TrivialProgram(self.name, f"return {literal}", f"print({example!r})")
            return program.source(names, functions=functions, main=main)
        modules = [n for n in names if n in sys.stdlib_module_names]
        lines = [f"import {name}" for name in modules]
        if functions and self.defines:
            for name in (n for n in names if n not in modules):
                lines += [f"def {name}(*args, **kwargs):", f"    {self.returns}"]
        if main:
            body = self.prints.split("\n")
            if functions:
                lines += ['if __name__ == "__main__":', *("    " + line for line in body)]
            else:
                lines += body
        return "\n".join(lines) or "pass"


TRIVIAL_PROGRAMS = (
    TrivialProgram("returning True", "return True", "print(True)"),
    TrivialProgram("returning False", "return False", "print(False)"),
    TrivialProgram("returning 0", "return 0", "print(0)"),
    TrivialProgram("returning None", "return None", "print(None)"),
    TrivialProgram("returning ''", "return ''", "print('')"),
    TrivialProgram("returning []", "return []", "print([])"),
    TrivialProgram(
        "returning its first argument",
        "return args[0] if args else None",
        "import sys\nsys.stdout.write(sys.stdin.read())",
    ),
    TrivialProgram("doing nothing (pass)", "pass", "pass"),
    TrivialProgram(
        "raising an exception",
        "raise NotImplementedError('trivial program')",
        "raise SystemExit('trivial program')",
    ),
    TrivialProgram("defining nothing", "", "pass", defines=False),
    TrivialProgram("the prompt's example output", "", "", from_prompt=True),
)
"""The code baseline: programs that define what the tests call and solve nothing.

Example::

    [p.name for p in TRIVIAL_PROGRAMS][-2:]   # ['defining nothing', "the prompt's example output"]
"""

_SHOWN = re.compile(
    r"(?:\bprints?|\boutputs?|\breturns?|\bgives|\bshould be|->|→|=>)\s*:?\s*"
    r"(?:`([^`\n]{1,80})`|'([^'\n]{1,80})'|\"([^\"\n]{1,80})\")",
    re.IGNORECASE,
)
_OUTPUT_LINE = re.compile(r"^[ \t]*(?:sample |example |expected )?output:[ \t]*(\S[^\n]{0,80})$",
                          re.IGNORECASE | re.MULTILINE)  # fmt: skip


def example_output(question: str) -> str | None:
    """The first example output ``question`` shows: a value quoted after "print",
    "output", "returns", "->" (``print `7` ``, ``returns 'abc'``), or an ``Output:`` line;
    None when it shows none.

    Example::

        example_output("Read two integers and print their sum. For `3 4` print `7`.")   # '7'
        example_output("Write f(x).")   # None
    """
    found = _SHOWN.search(question)
    if found:
        return next(g for g in found.groups() if g is not None)
    line = _OUTPUT_LINE.search(question)
    return line.group(1).strip().strip("`") if line else None


def _literal(text: str) -> str:
    """``text`` as the Python literal a function returns: itself when it reads as one
    (``7``, ``[1, 2]``, ``'ab'``), else the string."""
    try:
        return repr(ast.literal_eval(text))
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return repr(text)


def called_names(cases: Sequence[Case]) -> list[str]:
    """The names the tests' computed sides read that are not Python's builtins: what a
    program must define (in order of first use).

    Example::

        from mint_envkit.sandbox.cases import split_tests

        cases = split_tests(["assert add(len('ab'), 1) == 3", "assert [x for x in pair()]"])
        assert called_names(cases) == ["add", "pair"]
    """
    found: list[str] = []
    for case in cases:
        if case.stdin is not None:
            continue
        tree = ast.parse(case.expression, mode="eval")
        bound = {
            node.id
            for node in ast.walk(tree)
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store)
        } | {node.arg for node in ast.walk(tree) if isinstance(node, ast.arg)}
        for node in ast.walk(tree):
            name = node.id if isinstance(node, ast.Name) else None
            if name and name not in bound and name not in found and not hasattr(builtins, name):
                found.append(name)
    return found
