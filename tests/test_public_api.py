"""The public API: names, docstrings with examples, py.typed, and no heavy imports."""

from __future__ import annotations

import ast
import importlib
import inspect
import itertools
import os
import subprocess
import sys
import textwrap
import types
from importlib import resources
from pathlib import Path

import pytest

import mint_envkit
from mint_envkit import errors

ISSUE_NAMES = (
    "SingleTurnEnv MultiTurnEnv MessageEnv MessageStepResult ParseResult first_number "
    "last_number boxed xml_tag choice strip_thinking same_number GroupBuilder DatasetBuilder "
    "get_renderer ScriptedPolicy component correct weighted gated"
).split()

PLUMBING = {
    "mint_envkit.rendering": "TINY_MODEL_NAME default_renderer_for get_tokenizer "
    "ChatTemplateRenderer StepResult EnvFromMessageEnv",
    "mint_envkit.auditing": "audit_sync",
    "mint_envkit.evaluation": "evaluate_sync",
}
"""Names that are plumbing: in their subpackage's face, not on the top level (issue 30)."""

ERROR_NAMES = sorted(errors.__all__)


def run_python(code: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_the_issue_import_line_works():
    for name in ISSUE_NAMES:
        assert name in mint_envkit.__all__, name
        assert getattr(mint_envkit, name) is not None


def test_plumbing_lives_in_its_subpackage_not_on_the_top_level():
    import importlib

    for module, names in PLUMBING.items():
        face = importlib.import_module(module)
        for name in names.split():
            assert name not in mint_envkit.__all__, name
            assert name in face.__all__, (module, name)


def test_the_face_is_written_once():
    """One dict, module -> names; ``__all__`` is made from it (no second or third list)."""
    from pathlib import Path

    source = Path(mint_envkit.__file__).read_text()
    assert "TYPE_CHECKING" not in source
    (face,) = [
        node.value
        for node in ast.parse(source).body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", None) == "_FACE"
    ]
    names = {n for group in ast.literal_eval(face).values() for n in group}
    assert set(mint_envkit.__all__) == names | {"__version__"}
    for name in names:  # each name once, as a quoted string in the whole module
        assert source.count(f'"{name}"') == 1, name


def test_import_does_not_load_torch_tinker_or_mint():
    out = run_python(
        """
        import sys
        import mint_envkit
        heavy = [m for m in ("torch", "tinker", "mint", "transformers") if m in sys.modules]
        assert not heavy, heavy
        print("ok")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


@pytest.mark.parametrize(
    ("light", "allowed"),
    [
        ("parsers", {"errors", "parsers"}),
        ("rewards", {"errors", "checks", "parsers", "rewards"}),
        ("envs", {"errors", "checks", "parsers", "rewards", "tools", "envs"}),
    ],
)
def test_importing_a_light_part_loads_only_the_layers_below_it(light, allowed):
    out = run_python(
        f"""
        import sys
        import mint_envkit.{light}
        parts = {{m.split(".")[1] for m in sys.modules if m.startswith("mint_envkit.")}}
        print(" ".join(sorted(parts)))
        """
    )
    assert out.returncode == 0, out.stderr
    assert set(out.stdout.split()) == allowed


def test_lazy_names_are_listed_and_loaded_on_first_use():
    out = run_python(
        """
        import sys
        import mint_envkit
        assert set(mint_envkit.__all__) <= set(dir(mint_envkit))
        assert "mint_envkit.rl" not in sys.modules
        from mint_envkit import Config
        assert "mint_envkit.rl" in sys.modules and mint_envkit.Config is Config
        try:
            mint_envkit.no_such_name
        except AttributeError as err:
            assert "no_such_name" in str(err)
        else:
            raise SystemExit("no AttributeError")
        print("ok")
        """
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"


NO_TORCH = """
import importlib.machinery
import sys


class HideTorch:
    # Wraps the path finder so torch looks uninstalled: find_spec("torch") is None
    # (what transformers probes) and "import torch" raises ModuleNotFoundError.
    def __init__(self, inner):
        self.inner = inner

    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            return None
        return self.inner.find_spec(name, path, target)

    def __getattr__(self, name):  # find_distributions, invalidate_caches
        return getattr(self.inner, name)


sys.meta_path[:] = [
    HideTorch(f) if f is importlib.machinery.PathFinder else f for f in sys.meta_path
]
try:
    import torch  # noqa: F401
except ImportError:
    pass
else:
    raise SystemExit("torch is still importable")

from mint_envkit import DatasetBuilder, ScriptedPolicy, SingleTurnEnv, first_number


class ArithmeticEnv(SingleTurnEnv):
    parser = first_number
    reward_incorrect = -0.25


builder = DatasetBuilder(
    env=ArithmeticEnv,
    problems=[{"question": "What is 2 + 3?", "answer": "5"}],
    batch_size=1,
    group_size=3,
    model_name="mint-envkit/tiny-qwen3",
)
report = ScriptedPolicy(["5", "7", "five"]).run_sync(builder)
assert report.errors == [], report.errors
assert report.groups[0].rewards == [1.0, -0.25, -0.25], report.groups[0].rewards
assert "torch" not in sys.modules
print("ok")
"""


def test_env_kit_runs_end_to_end_without_torch():
    out = run_python(NO_TORCH)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "ok"


def _documented_objects() -> list[str]:
    """Public classes, functions and callable objects (parsers); not aliases or strings."""
    return [
        name
        for name in mint_envkit.__all__
        if callable(getattr(mint_envkit, name))
        and not isinstance(getattr(mint_envkit, name), types.GenericAlias)
    ]


def _attribute_docstring(module, name: str) -> str | None:
    """The string literal right after ``name = ...`` / ``name: T = ...`` in ``module``."""
    tree = ast.parse(inspect.getsource(module))
    body = tree.body
    for statement, following in itertools.pairwise(body):
        targets = []
        if isinstance(statement, ast.Assign):
            targets = [t.id for t in statement.targets if isinstance(t, ast.Name)]
        elif isinstance(statement, ast.AnnAssign) and isinstance(statement.target, ast.Name):
            targets = [statement.target.id]
        if name in targets and isinstance(following, ast.Expr):
            value = following.value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return value.value
    return None


def test_every_public_name_exists():
    for name in mint_envkit.__all__:
        assert hasattr(mint_envkit, name), name
    assert len(set(mint_envkit.__all__)) == len(mint_envkit.__all__)


@pytest.mark.parametrize("name", [n for n in _documented_objects() if n not in ERROR_NAMES])
def test_public_classes_and_functions_have_an_example(name):
    obj = getattr(mint_envkit, name)
    doc = inspect.getdoc(obj)
    assert doc, f"{name} has no docstring"
    assert "Example" in doc, f"{name}'s docstring has no Example"


@pytest.mark.parametrize("name", ERROR_NAMES)
def test_public_errors_have_an_example(name):
    doc = inspect.getdoc(getattr(mint_envkit, name))
    assert doc and "Example" in doc


def test_public_errors_have_a_docstring_and_share_a_base():
    for name in ERROR_NAMES:
        cls = getattr(mint_envkit, name)
        assert cls.__doc__ and cls.__doc__.strip()
        assert issubclass(cls, mint_envkit.MintEnvkitError)


@pytest.mark.parametrize(
    ("name", "module"),
    [
        ("TINY_MODEL_NAME", "mint_envkit.rendering.tokenizer"),
        ("Message", "mint_envkit.envs.base"),
        ("Metrics", "mint_envkit.envs.base"),
        ("JudgeComplete", "mint_envkit.judge.model"),
        ("Status", "mint_envkit.parsers.result"),
        ("Sampler", "mint_envkit.rollouts.sampler"),
        ("DEFAULT_GRID", "mint_envkit.sweep._env"),
    ],
)
def test_constants_and_aliases_have_an_attribute_docstring(name, module):
    """A str constant or a type alias cannot carry ``__doc__``; its source docstring counts."""
    importlib.import_module(module)
    doc = _attribute_docstring(sys.modules[module], name)
    assert doc, f"{module}.{name} has no docstring in its source"


def test_every_public_name_is_covered_by_one_of_the_docstring_checks():
    documented = set(_documented_objects()) | {"Message", "__version__"}
    assert documented == set(mint_envkit.__all__)
    assert isinstance(mint_envkit.__version__, str)


def test_py_typed_ships_in_the_package():
    marker = resources.files("mint_envkit") / "py.typed"
    assert marker.is_file()


def test_the_reward_parts_of_the_face_come_together():
    """``gated`` was on the top-level face while ``correct``, the part it gates, was not."""
    from mint_envkit import rewards

    for name in ("correct", "gated", "math_correct", "valid_format", "weighted"):
        assert name in mint_envkit.__all__ and getattr(mint_envkit, name) is getattr(rewards, name)


def test_no_deprecated_aliases_in_the_unreleased_package():
    """0.1.0 is unreleased: a renamed name is removed, not kept behind a DeprecationWarning."""
    from pathlib import Path

    import mint_envkit.builders
    import mint_envkit.sweep

    package = Path(mint_envkit.__file__).parent
    warning = [p for p in sorted(package.rglob("*.py")) if "DeprecationWarning" in p.read_text()]
    assert warning == []
    assert not hasattr(mint_envkit.builders, "renderer_for")
    assert not {"summarize", "summary_main"} & set(dir(mint_envkit.sweep))


SAME_NAME_ALLOWED = {"main"}
"""Names two face modules give to two things: ``main`` is the console script
(``mint_envkit.cli.main``) and the cookbook's loop (``mint_envkit.rl.train.main``), each
the name its users look for."""


def test_one_name_means_one_thing_across_the_face():
    from test_architecture import public_face

    seen: dict[str, tuple[str, object]] = {}
    clashes = []
    for module_name, names in public_face().items():
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name)
            first = seen.setdefault(name, (module_name, value))
            if first[1] is not value and name not in SAME_NAME_ALLOWED:
                clashes.append(f"{name}: {first[0]} and {module_name}")
    assert not clashes, "rename one of each: " + "; ".join(clashes)


def _face_objects() -> list[tuple[str, str]]:
    """(module, name) of every class and function of the whole face, each once."""
    from test_architecture import public_face

    seen: set[int] = set()
    found = []
    for module_name, names in public_face().items():
        module = importlib.import_module(module_name)
        for name in names:
            value = getattr(module, name)
            if callable(value) and not hasattr(value, "__origin__") and id(value) not in seen:
                seen.add(id(value))
                found.append((module_name, name))
    return found


@pytest.mark.parametrize(("module_name", "name"), _face_objects(), ids=lambda part: part)
def test_every_class_and_function_of_the_face_has_an_example(module_name, name):
    """The whole face, not only the top level: the values and aliases of the face are the
    constants above."""
    doc = inspect.getdoc(getattr(importlib.import_module(module_name), name))
    assert doc, f"{module_name}.{name} has no docstring"
    assert "Example" in doc, f"{module_name}.{name}'s docstring has no Example"


def test_every_value_of_the_face_is_a_checked_constant():
    from test_architecture import public_face

    checked = {"TINY_MODEL_NAME", "Message", "Metrics", "JudgeComplete", "Status", "Sampler"}
    checked |= {"DEFAULT_GRID", "__version__"}
    values = {
        name
        for module_name, names in public_face().items()
        for name in names
        if not callable(value := getattr(importlib.import_module(module_name), name))
        or hasattr(value, "__origin__")
    }
    assert values == checked, f"add to the attribute-docstring check: {sorted(values - checked)}"


def test_the_typed_face_names_every_public_name_from_its_module():
    """``__init__.pyi``: type checkers see each name of ``_FACE`` (the package loads them
    lazily, which a checker cannot follow), imported from the module that defines it."""
    stub = Path(mint_envkit.__file__).with_suffix(".pyi")
    tree = ast.parse(stub.read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            for alias in node.names:
                assert alias.asname == alias.name, f"{alias.name}: re-export it as itself"
                found[alias.name] = node.module
    names = set(mint_envkit.__all__) - {"__version__"}
    assert set(found) == names, "write src/mint_envkit/__init__.pyi again from _FACE"
    for name, module in found.items():  # from the subpackage that names it
        assert getattr(importlib.import_module(module), name) is getattr(mint_envkit, name), name
    assert "__version__" in stub.read_text()
