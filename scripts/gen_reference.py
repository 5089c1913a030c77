"""Generate ``docs/reference.md``, the API reference, from the public names of mint_envkit.

For every name in ``mint_envkit.__all__`` and in the ``__all__`` of the
public submodules listed in :data:`SECTIONS`, the reference gives its kind,
its signature (``inspect.signature`` where there is one) and its docstring:
the first paragraph and the ``Example::`` block. Constants and type aliases
take their docstring from the string literal that follows their assignment in
the source. A name that a section re-exports from an earlier section links
there instead of repeating it.

The output is deterministic (``__all__`` order, memory addresses scrubbed,
sets sorted, no timestamps), so it can be checked in CI.

Example::

    python scripts/gen_reference.py            # write docs/reference.md
    python scripts/gen_reference.py --check    # exit 1 when docs/reference.md is stale
"""

from __future__ import annotations

import argparse
import ast
import difflib
import importlib
import importlib.util
import inspect
import re
import sys
import textwrap
import types
from collections.abc import Sequence
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
OUTPUT = REPO / "docs" / "reference.md"
COMMAND = "python scripts/gen_reference.py"

# (module, names): names None means the module's whole __all__, in __all__ order.
SECTIONS: tuple[tuple[str, tuple[str, ...] | None], ...] = (
    ("mint_envkit", None),
    ("mint_envkit.errors", None),
    ("mint_envkit.parsers", None),
    ("mint_envkit.rewards", None),
    ("mint_envkit.tools", None),
    ("mint_envkit.envs", None),
    ("mint_envkit.sandbox", None),
    ("mint_envkit.judge", None),
    ("mint_envkit.rendering", None),
    ("mint_envkit.builders", None),
    ("mint_envkit.runs", None),
    ("mint_envkit.rollouts", None),
    ("mint_envkit.rl", None),
    ("mint_envkit.rl.train", None),
    ("mint_envkit.conformance", None),
    ("mint_envkit.evaluation", None),
    ("mint_envkit.replay", None),
    ("mint_envkit.interpolation", None),
    ("mint_envkit.auditing", None),
    ("mint_envkit.adapters", None),
    ("mint_envkit.sweep", None),
    ("mint_envkit.view", None),
    ("mint_envkit.local", None),
    ("mint_envkit.cli", None),
)

MAX_LINE = 88
MAX_VALUE_REPR = 100
_ADDRESS = re.compile(r" at 0x[0-9A-Fa-f]+")


# ----------------------------------------------------------------- docstrings


def first_paragraph(doc: str) -> str:
    """The docstring's first paragraph, joined into one line."""
    lines: list[str] = []
    for line in doc.strip().splitlines():
        if not line.strip():
            break
        lines.append(line.strip())
    return " ".join(lines)


_ROLE = re.compile(r":(?:class|func|meth|data|mod|attr|exc|obj):`(~?)([^`]+)`")
_DOUBLE_BACKTICKS = re.compile(r"``([^`]+)``")


def markdown(text: str) -> str:
    """reST inline markup of a docstring as Markdown: roles and ``literals`` as `code`."""

    def role(match: re.Match[str]) -> str:
        target = match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    return _DOUBLE_BACKTICKS.sub(r"`\1`", _ROLE.sub(role, text))


def example_block(doc: str) -> str | None:
    """The indented block after the first ``Example::`` line, dedented; None without one."""
    lines = doc.splitlines()
    for index, line in enumerate(lines):
        if line.strip() in ("Example::", "Examples::"):
            indent = len(line) - len(line.lstrip())
            block: list[str] = []
            for following in lines[index + 1 :]:
                if following.strip() and len(following) - len(following.lstrip()) <= indent:
                    break
                block.append(following)
            text = textwrap.dedent("\n".join(block)).strip("\n")
            return text or None
    return None


def _own_doc(obj: Any) -> str:
    doc = getattr(obj, "__doc__", None)
    return inspect.cleandoc(doc) if isinstance(doc, str) else ""


# --------------------------------------------------- source of constants and aliases


class _Source:
    """Where a module-level name is assigned: its attribute docstring and value text."""

    def __init__(self, module: str, name: str, doc: str, value: str | None) -> None:
        self.module = module
        self.name = name
        self.doc = doc
        self.value = value


_TREES: dict[str, tuple[ast.Module, str] | None] = {}


def _tree(module_name: str) -> tuple[ast.Module, str] | None:
    if module_name not in _TREES:
        module = sys.modules.get(module_name) or importlib.import_module(module_name)
        path = getattr(module, "__file__", None)
        if path is None or not path.endswith(".py"):
            _TREES[module_name] = None
        else:
            text = Path(path).read_text(encoding="utf-8")
            _TREES[module_name] = (ast.parse(text), text)
    return _TREES[module_name]


def _assigned_names(node: ast.stmt) -> list[str]:
    if isinstance(node, ast.Assign):
        return [t.id for t in node.targets if isinstance(t, ast.Name)]
    if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
        return [node.target.id]
    return []


def find_source(module_name: str, name: str, depth: int = 0) -> _Source | None:
    """Follow ``from X import name`` to the assignment of ``name``; None when not found."""
    parsed = _tree(module_name) if depth < 10 else None
    if parsed is None:
        return None
    tree, text = parsed
    body = tree.body
    for index, node in enumerate(body):
        if name in _assigned_names(node):
            doc = ""
            following = body[index + 1] if index + 1 < len(body) else None
            if (
                isinstance(following, ast.Expr)
                and isinstance(following.value, ast.Constant)
                and isinstance(following.value.value, str)
            ):
                doc = inspect.cleandoc(following.value.value)
            value_node = node.value
            value = ast.get_source_segment(text, value_node) if value_node is not None else None
            return _Source(module_name, name, doc, value)
    package = sys.modules[module_name].__package__ or module_name
    # Top-level imports, and those under ``if TYPE_CHECKING:`` (a lazy package face).
    imports = [*body, *(n for s in body if isinstance(s, ast.If) for n in s.body)]
    for node in imports:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                if (alias.asname or alias.name) == name:
                    target = importlib.util.resolve_name(
                        "." * node.level + (node.module or ""), package
                    )
                    return find_source(target, alias.name, depth + 1)
    return None


# ------------------------------------------------------------------- rendering


class _Raw:
    """Shows a fixed text as its repr (for annotations and defaults in signatures)."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def stable_repr(value: Any) -> str:
    """``repr`` without memory addresses, with sets sorted."""
    if isinstance(value, (set, frozenset)):
        items = sorted(stable_repr(v) for v in value)
        if not items:
            return f"{type(value).__name__}()"
        inner = ", ".join(items)
        return "{" + inner + "}" if isinstance(value, set) else f"frozenset({{{inner}}})"
    return _ADDRESS.sub("", repr(value))


def _annotation(annotation: Any) -> Any:
    if annotation is inspect.Parameter.empty:
        return annotation
    if isinstance(annotation, str):
        return _Raw(annotation)
    return _Raw(_ADDRESS.sub("", inspect.formatannotation(annotation)))


def _signature(obj: Any) -> inspect.Signature | None:
    try:
        signature = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    parameters = [
        p.replace(
            annotation=_annotation(p.annotation),
            default=p.default if p.default is p.empty else _Raw(stable_repr(p.default)),
        )
        for p in signature.parameters.values()
    ]
    return signature.replace(
        parameters=parameters, return_annotation=_annotation(signature.return_annotation)
    )


def format_signature(name: str, signature: inspect.Signature, prefix: str = "") -> str:
    """``name(params) -> ret``, one parameter per line when longer than MAX_LINE."""
    text = f"{prefix}{name}{signature}"
    if len(text) <= MAX_LINE:
        return text
    parts: list[str] = []
    kind = inspect.Parameter
    params = list(signature.parameters.values())
    for index, param in enumerate(params):
        if param.kind == kind.KEYWORD_ONLY and (
            index == 0 or params[index - 1].kind not in (kind.KEYWORD_ONLY, kind.VAR_POSITIONAL)
        ):
            parts.append("*")
        parts.append(str(param))
        is_last_positional = param.kind == kind.POSITIONAL_ONLY and (
            index + 1 == len(params) or params[index + 1].kind != kind.POSITIONAL_ONLY
        )
        if is_last_positional:
            parts.append("/")
    returns = ""
    if signature.return_annotation is not inspect.Signature.empty:
        returns = f" -> {inspect.formatannotation(signature.return_annotation)}"
    body = "".join(f"    {part},\n" for part in parts)
    return f"{prefix}{name}(\n{body}){returns}"


def _is_alias(obj: Any) -> bool:
    if isinstance(obj, (types.GenericAlias, types.UnionType)):
        return True
    return type(obj).__module__ in ("typing", "typing_extensions", "collections.abc")


def _bases(cls: type) -> str:
    names = [b.__name__ for b in cls.__bases__ if b is not object]
    return ", ".join(names)


def _members(cls: type) -> list[str]:
    """Public methods and properties defined in the class body, in definition order."""
    out = []
    for name, value in vars(cls).items():
        if name.startswith("_") and name != "__call__":
            continue
        if isinstance(value, property):
            out.append(f"`{name}`")
        elif isinstance(value, (classmethod, staticmethod)) or inspect.isfunction(value):
            out.append(f"`{name}()`")
    return out


def kind_of(obj: Any) -> str:
    """A short description of what ``obj`` is."""
    if inspect.isclass(obj):
        word = "exception" if issubclass(obj, BaseException) else "class"
        bases = _bases(obj)
        return f"{word} ({bases})" if bases else word
    unwrapped = inspect.unwrap(obj) if callable(obj) else obj
    if inspect.isfunction(unwrapped) or inspect.isbuiltin(unwrapped):
        if unwrapped is not obj and inspect.isasyncgenfunction(unwrapped):
            return "async context manager"
        if unwrapped is not obj and inspect.isgeneratorfunction(unwrapped):
            return "context manager"
        if inspect.iscoroutinefunction(unwrapped):
            return "async function"
        return "function"
    if _is_alias(obj):
        return "type alias"
    if callable(obj):
        return f"{type(obj).__name__} instance (callable)"
    return f"constant ({type(obj).__name__})"


class Reference:
    """Builds the Markdown text section by section."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.seen: dict[Any, str] = {}

    def add(self, *lines: str) -> None:
        self.lines.extend(lines)

    def code(self, text: str) -> None:
        self.add("```python", *text.splitlines(), "```", "")

    def entry(self, module_name: str, name: str, obj: Any) -> None:
        title = f"{module_name}.{name}"
        self.add(f"### `{title}`", "")
        kind = kind_of(obj)
        is_data = kind.startswith("constant") or kind == "type alias"
        source = find_source(module_name, name) if is_data or "instance" in kind else None
        key: Any = id(obj)
        if is_data:  # equal constants are not the same name: key them by where they are set
            key = ("data", source.module, source.name) if source else ("data", module_name, name)
        if key in self.seen:
            first = self.seen[key]
            self.add(f"*{kind}*: the same object as [`{first}`](#{slug(first)}).", "")
            return
        self.seen[key] = title
        self.add(f"*{kind}*", "")

        if kind == "type alias":
            value = source.value if source and source.value else stable_repr(obj)
            self.code(f"{name} = {value}")
        elif is_data:
            shown = stable_repr(obj)
            if len(shown) <= MAX_VALUE_REPR:
                self.code(f"{name} = {shown}")
            elif isinstance(obj, (tuple, list, dict, set, frozenset)):
                self.add(f"A {type(obj).__name__} of {len(obj)} items.", "")
        else:
            signature = _signature(obj)
            if signature is not None:
                prefix = "async def " if kind == "async function" else ""
                self.code(format_signature(name, signature, prefix))

        doc = source.doc if source and source.doc else ""
        if not doc and not is_data:
            doc = _own_doc(obj)
            if not inspect.isclass(obj) and doc and doc == _own_doc(type(obj)):
                doc = ""  # an instance showing its class's docstring says nothing about it
        if doc:
            self.add(markdown(first_paragraph(doc)), "")
            example = example_block(doc)
            if example:
                self.add("Example:", "")
                self.code(example)
        else:
            self.add("*(no docstring)*", "")
        if inspect.isclass(obj) and not issubclass(obj, BaseException):
            members = _members(obj)
            if members:
                self.add(f"Members: {', '.join(members)}.", "")


def slug(heading: str) -> str:
    """The GitHub anchor of a heading ``### `heading` ``."""
    text = heading.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


def section_names(module: types.ModuleType, names: Sequence[str] | None) -> list[str]:
    public = list(getattr(module, "__all__", []))
    if names is None:
        return public
    missing = [n for n in names if n not in public]
    if missing:
        raise SystemExit(
            f"gen_reference: {module.__name__}.__all__ has no {', '.join(missing)}; "
            "update SECTIONS in scripts/gen_reference.py"
        )
    return [n for n in public if n in names]


def generate() -> str:
    """The whole reference, as Markdown text."""
    ref = Reference()
    modules = [(importlib.import_module(name), names) for name, names in SECTIONS]
    ref.add(
        "# API reference",
        "",
        f"<!-- Generated by `{COMMAND}`; do not edit by hand. -->",
        "",
        "The public names of mint_envkit, module by module: for each, its kind, its "
        "signature and the first paragraph and example of its docstring. The guides in "
        "[docs/](.) explain how the pieces fit together. A name a module re-exports from "
        "an earlier section links there.",
        "",
        f"This file is generated by `{COMMAND}`; `{COMMAND} --check` fails when it is stale.",
        "",
        "## Modules",
        "",
    )
    listed = []
    for module, names in modules:
        count = len(section_names(module, names))
        subset = "" if names is None else " (selected names)"
        listed.append(
            f"- [`{module.__name__}`](#{slug(module.__name__)}): {count} names{subset}. "
            f"{markdown(first_paragraph(_own_doc(module)))}"
        )
    ref.add(*listed, "")
    for module, names in modules:
        ref.add(f"## `{module.__name__}`", "")
        summary = markdown(first_paragraph(_own_doc(module)))
        if summary:
            ref.add(summary, "")
        for name in section_names(module, names):
            ref.entry(module.__name__, name, getattr(module, name))
    text = "\n".join(ref.lines).rstrip("\n") + "\n"
    return text


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--check",
        action="store_true",
        help="do not write; exit 1 when the file is missing or differs from what would be written",
    )
    parser.add_argument("--output", type=Path, default=OUTPUT, help=f"default: {OUTPUT}")
    args = parser.parse_args(argv)
    text = generate()
    output: Path = args.output
    if args.check:
        current = output.read_text(encoding="utf-8") if output.exists() else None
        if current == text:
            print(f"{output} is up to date")
            return 0
        if current is None:
            print(f"{output} does not exist; run `{COMMAND}` to create it", file=sys.stderr)
            return 1
        diff = list(
            difflib.unified_diff(
                current.splitlines(),
                text.splitlines(),
                f"{output} (on disk)",
                f"{output} (generated)",
                lineterm="",
            )
        )
        shown = diff[:60] + ([f"... ({len(diff) - 60} more diff lines)"] if len(diff) > 60 else [])
        print("\n".join(shown), file=sys.stderr)
        print(f"{output} is stale; run `{COMMAND}` and commit the result", file=sys.stderr)
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    if output.exists() and output.read_text(encoding="utf-8") == text:
        print(f"{output} is up to date")
        return 0
    output.write_text(text, encoding="utf-8")
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "src"))
    raise SystemExit(main())
