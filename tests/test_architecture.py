"""The rules of the house, checked on the source (see docs/architecture.md).

Every check reads the files with :mod:`ast` and imports nothing of the package, so a
broken module fails here with its name, not with an import error. Imports inside
functions and under ``TYPE_CHECKING`` count like any other: a lazy import is still a
dependency. The package's ``__init__`` is the face: it names every layer (lazily) and is
not itself a layer.
"""

from __future__ import annotations

import ast
import builtins
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
PACKAGE = SRC / "mint_envkit"
TESTS = REPO / "tests"

LAYERS = (
    "errors",
    "checks",
    "lru",
    "progress",
    "parsers",
    "rewards",
    "tools",
    "envs",
    "sandbox",
    "judge",
    "rendering",
    "builders",
    "local",
    "runs",
    "rollouts",
    "evaluation",
    "replay",
    "interpolation",
    "rl",
    "adapters",
    "conformance",
    "auditing",
    "sweep",
    "view",
    "cli",
)
"""The layers, lowest first: a layer imports only itself and the layers before it."""

LIGHT = (
    "errors",
    "checks",
    "lru",
    "progress",
    "parsers",
    "rewards",
    "tools",
    "envs",
    "sandbox",
    "judge",
    "rendering",
    "builders",
)
"""The parts a user imports to write an env; they never load the backend or the loop."""

HEAVY = ("torch", "mint_envkit.local", "mint_envkit.rl", "mint_envkit.sweep")
"""What a light part never imports."""

LOCAL_NEVER = ("mint_envkit.rl", "mint_envkit.sweep", "mint_envkit.envs", "mint_envkit.builders")
"""What the local backend never imports: it serves tokens, it knows no env and no loop."""

MAX_LINES = 600


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _source_files() -> list[Path]:
    return sorted(PACKAGE.rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """The absolute names of every module ``path`` imports (``from a import b`` gives ``a.b``
    too, since ``b`` may be a module)."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            found.add(base)
            found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def _layer(module: str) -> str | None:
    """``mint_envkit.rl.train`` -> ``rl``; ``None`` for the face and for other packages."""
    parts = module.split(".")
    if parts[0] != "mint_envkit" or len(parts) < 2:
        return None
    return parts[1]


def _reaches(imported: str, target: str) -> bool:
    return imported == target or imported.startswith(target + ".")


def layer_violations(module: str, imports: set[str]) -> list[str]:
    """Every rule ``module`` breaks by importing ``imports`` (empty when it keeps them all)."""
    own = _layer(module)
    broken: list[str] = []
    for name in sorted(imports):
        layer = _layer(name)
        if name == "mint_envkit":
            broken.append(f"imports the package face ({name}); import the defining module")
        elif layer in LAYERS and LAYERS.index(layer) > LAYERS.index(own):
            broken.append(f"imports upward: {own} is below {layer} ({name})")
        if own == "parsers" and layer is not None and layer not in ("errors", "parsers"):
            broken.append(f"parsers import only mint_envkit.errors of the package ({name})")
        if own in LIGHT and any(_reaches(name, heavy) for heavy in HEAVY):
            broken.append(f"{own} is light and never imports {name}")
        if own == "local" and any(_reaches(name, t) for t in LOCAL_NEVER):
            broken.append(f"the local backend never imports {name}")
    return broken


FILES = [p for p in _source_files() if _module_name(p) != "mint_envkit"]


def test_every_part_of_the_package_has_a_layer():
    layers = {_layer(_module_name(p)) for p in FILES}
    assert layers == set(LAYERS), f"add the new part to LAYERS: {sorted(layers - set(LAYERS))}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_imports_keep_to_the_layers(path):
    broken = layer_violations(_module_name(path), _imports(path))
    assert not broken, f"{path.relative_to(SRC)}: " + "; ".join(broken)


@pytest.mark.parametrize(
    ("module", "imported", "rule"),
    [
        ("mint_envkit.parsers.tags", "mint_envkit.rewards", "parsers import only"),
        ("mint_envkit.rewards", "mint_envkit.envs.base", "imports upward"),
        ("mint_envkit.envs.base", "torch", "never imports torch"),
        ("mint_envkit.rendering.renderer", "mint_envkit.local.models", "never imports"),
        ("mint_envkit.local.http.app", "mint_envkit.envs.base", "the local backend never"),
        ("mint_envkit.rl.train", "mint_envkit.sweep.grid", "imports upward"),
        ("mint_envkit.sweep.grid", "mint_envkit", "package face"),
    ],
)
def test_the_layer_rules_catch_a_bad_import(module, imported, rule):
    assert any(rule in broken for broken in layer_violations(module, {imported}))


def test_the_layer_rules_let_a_good_import_through():
    assert layer_violations("mint_envkit.rl.train", {"mint_envkit.local.server", "torch"}) == []
    assert layer_violations("mint_envkit.parsers.tags", {"mint_envkit.errors", "re"}) == []


def private_imports(module: str, imports: set[str]) -> list[str]:
    """The private names (``_x``, or anything in a ``_x`` module) ``module`` imports from
    another part of the package: a part's private names are its own business."""
    own = _layer(module)
    return sorted(
        name
        for name in imports
        if _layer(name) not in (None, own)
        and any(p.startswith("_") and not p.endswith("__") for p in name.split(".")[2:])
    )


PRIVATE_IMPORTS_ALLOWED: dict[str, set[str]] = {}
"""Module -> the private names of other parts it may still import. Empty (measured: 1
when the rule came, ``cli`` -> ``sweep._summary.print_summary``, fixed); only shrinks."""


@pytest.mark.parametrize("path", FILES, ids=lambda p: str(p.relative_to(SRC)))
def test_no_private_name_is_imported_across_parts(path):
    module = _module_name(path)
    found = set(private_imports(module, _imports(path))) - PRIVATE_IMPORTS_ALLOWED.get(
        module, set()
    )
    assert not found, f"{path.relative_to(SRC)} imports private names of another part: " + (
        ", ".join(sorted(found)) + "; make the name public there, or move the code"
    )


def test_the_private_import_rule_catches_one_and_lets_its_own_through():
    imports = {"mint_envkit.sweep._summary", "mint_envkit.sweep._summary.print_summary"}
    assert private_imports("mint_envkit.cli.summary", imports) == sorted(imports)
    assert private_imports("mint_envkit.cli", {"mint_envkit.rl.train._say"}) == [
        "mint_envkit.rl.train._say"
    ]
    assert private_imports("mint_envkit.sweep._runner", imports) == []  # its own part
    assert (
        private_imports("mint_envkit.cli", {"mint_envkit.sweep", "mint_envkit.__version__"}) == []
    )


@pytest.mark.parametrize("path", _source_files(), ids=lambda p: str(p.relative_to(SRC)))
def test_no_module_is_over_600_lines(path):
    lines = len(path.read_text().splitlines())
    assert lines <= MAX_LINES, f"{path.relative_to(SRC)} has {lines} lines; split it by job"


# ------------------------------------------------------------------ exceptions


def _exception_classes() -> dict[str, tuple[str, list[str]]]:
    """Every class in src/ that derives from an exception: name -> (module, base names)."""
    classes: dict[str, tuple[str, list[str]]] = {}
    for path in _source_files():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                bases = [
                    b.attr if isinstance(b, ast.Attribute) else getattr(b, "id", "")
                    for b in node.bases
                ]
                classes[node.name] = (_module_name(path), bases)

    def is_exception(name: str, seen: frozenset[str] = frozenset()) -> bool:
        builtin = getattr(builtins, name, None)
        if isinstance(builtin, type) and issubclass(builtin, BaseException):
            return True
        if name not in classes or name in seen:
            return False
        return any(is_exception(base, seen | {name}) for base in classes[name][1])

    return {name: info for name, info in classes.items() if any(is_exception(b) for b in info[1])}


EXCEPTIONS = _exception_classes()


def _under_base(name: str) -> bool:
    if name == "MintEnvkitError":
        return True
    return any(
        _under_base(base) for base in EXCEPTIONS.get(name, ("", []))[1] if base in EXCEPTIONS
    )


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_exception_is_a_mint_envkit_error_drawn_in_the_tree(name):
    module = EXCEPTIONS[name][0]
    assert _under_base(name), f"{module}.{name} must derive from errors.MintEnvkitError"
    tree = ast.get_docstring(ast.parse((PACKAGE / "errors.py").read_text())) or ""
    assert name in tree, f"draw {module}.{name} in the tree of errors.py's docstring"


def test_the_exception_scan_sees_the_known_errors():
    assert {"MintEnvkitError", "ConfigError", "EngineError"} <= set(EXCEPTIONS)


# ------------------------------------------------------------------ tests


def _private_uses(path: Path) -> list[str]:
    """``from mint_envkit.x import _y`` and ``alias._y`` where ``alias`` was imported from
    mint_envkit (dunders such as ``__version__`` are public). A test may import what it
    tests from an internal module (``mint_envkit.sweep._grid``, ``mint_envkit.rl.sampling``):
    the face stays small because tests need not go through it; a module's own ``_names``
    stay its business."""

    def private(part: str) -> bool:
        return part.startswith("_") and not (part.startswith("__") and part.endswith("__"))

    found: list[str] = []
    aliases: set[str] = set()
    tree = ast.parse(path.read_text(), str(path))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] != "mint_envkit":
                    continue
                aliases.add(alias.asname or alias.name.split(".")[0])
        elif (
            isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] == "mint_envkit"
        ):
            for alias in node.names:
                if private(alias.name):
                    found.append(f"line {node.lineno}: from {node.module} import {alias.name}")
                aliases.add(alias.asname or alias.name)
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            root = node.value
            while isinstance(root, ast.Attribute):
                root = root.value
            if isinstance(root, ast.Name) and root.id in aliases:
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
    return found


TEST_FILES = sorted(TESTS.rglob("*.py"))


@pytest.mark.parametrize("path", TEST_FILES, ids=lambda p: str(p.relative_to(TESTS)))
def test_no_test_uses_a_private_name(path):
    uses = _private_uses(path)
    assert not uses, "test through the public API (or make the name public): " + "; ".join(uses)


def test_the_private_name_check_can_fail(tmp_path):
    sample = tmp_path / "test_sample.py"
    sample.write_text(
        "import mint_envkit.local.http.app as A\n"
        "from mint_envkit.parsers.parser import _function_name\n"
        "from mint_envkit import __version__\n"
        "from mint_envkit.sweep._grid import apply_fields\n"
        "A._build(1)\n"
        "A.__name__\n"
    )
    assert _private_uses(sample) == [
        "line 2: from mint_envkit.parsers.parser import _function_name",
        "line 5: A._build",
    ]


def test_test_files_have_unique_basenames():
    """Tests have no ``__init__.py``: pytest imports them by basename, so two test files
    with one name in different folders stop the whole collection."""
    seen: dict[str, Path] = {}
    clashes = []
    for path in sorted(TESTS.rglob("test_*.py")):
        if path.name in seen:
            clashes.append(f"{seen[path.name].relative_to(TESTS)} and {path.relative_to(TESTS)}")
        seen.setdefault(path.name, path)
    assert not clashes, "rename one of each pair: " + "; ".join(clashes)


# ------------------------------------------------------------------ the public face

MAX_PUBLIC_NAMES = 165
"""The face a user learns: ``mint_envkit.__all__``, each subpackage's ``__all__`` and the
cookbook's ``mint_envkit.rl.train``, counted once per name. Measured when the rule came:
602 names in the ``__all__`` lists of public modules (issue 23), 140 after."""

FACE_MODULES_OUTSIDE_PACKAGES = ("mint_envkit.errors", "mint_envkit.rl.train")
"""The plain modules that are part of the face: the exception tree and the cookbook's
``rl.train`` (``main``, the named phases); every other module is internal."""


def _declared_all(path: Path) -> list[str] | None:
    """A module's ``__all__``: a literal list, or (the package's face) the names of its
    ``_FACE`` dict (module -> names) and ``__version__``."""
    face: list[str] = []
    for node in ast.parse(path.read_text(), str(path)).body:
        targets = [node.target] if isinstance(node, ast.AnnAssign) else []
        targets += node.targets if isinstance(node, ast.Assign) else []
        names = {t.id for t in targets if isinstance(t, ast.Name)}
        if "_FACE" in names and node.value is not None:
            face = [n for group in ast.literal_eval(node.value).values() for n in group]
        if "__all__" in names:
            try:
                return list(ast.literal_eval(node.value))
            except ValueError:  # sorted([*_EXPORTS, "__version__"]): the face dict's names
                return sorted([*face, "__version__"])
    return None


def face_modules(package: Path = PACKAGE) -> list[str]:
    """The modules whose ``__all__`` is public: the package, its direct subpackages, and
    :data:`FACE_MODULES_OUTSIDE_PACKAGES`."""
    subpackages = sorted(p.parent for p in package.glob("*/__init__.py"))
    return [
        "mint_envkit",
        *(f"mint_envkit.{p.name}" for p in subpackages),
        *FACE_MODULES_OUTSIDE_PACKAGES,
    ]


def _path_of(module: str, src: Path = SRC) -> Path:
    path = src.joinpath(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def public_face(src: Path = SRC) -> dict[str, list[str]]:
    """Face module -> its ``__all__``."""
    package = src / "mint_envkit"
    return {m: _declared_all(_path_of(m, src)) or [] for m in face_modules(package)}


def stray_all(src: Path = SRC) -> list[str]:
    """Modules outside the face that declare ``__all__`` (internal modules must not: an
    ``__all__`` there reads as a promise the face does not make)."""
    package = src / "mint_envkit"
    face = set(face_modules(package))
    return sorted(
        _module_name_under(path, src)
        for path in package.rglob("*.py")
        if _module_name_under(path, src) not in face and _declared_all(path) is not None
    )


def _module_name_under(path: Path, src: Path) -> str:
    parts = path.relative_to(src).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def test_the_public_face_is_small():
    names = {name for listed in public_face().values() for name in listed}
    assert len(names) <= MAX_PUBLIC_NAMES, (
        f"{len(names)} public names (cap {MAX_PUBLIC_NAMES}); keep internals out of the "
        "subpackages' __all__ (tests may import them from their modules)"
    )


def test_only_the_face_declares_all():
    stray = stray_all()
    assert not stray, f"internal modules declare __all__: {stray}; remove it there"


def test_every_face_module_is_a_section_of_the_reference():
    text = (REPO / "scripts" / "gen_reference.py").read_text()
    tree = ast.parse(text)
    sections = next(
        ast.literal_eval(node.value)
        for node in tree.body
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "SECTIONS"
    )
    listed = {module for module, names in sections if names is None}
    assert listed == set(face_modules()), "SECTIONS in scripts/gen_reference.py must list " + (
        f"every face module with all its names: {sorted(set(face_modules()) ^ listed)}"
    )


def test_the_face_rules_can_fail(tmp_path):
    package = tmp_path / "mint_envkit"
    (package / "sub").mkdir(parents=True)
    (package / "rl").mkdir()
    (package / "__init__.py").write_text('__all__ = ["A", "B"]\n')
    (package / "sub" / "__init__.py").write_text('__all__ = ["B", "C"]\n')
    (package / "sub" / "inner.py").write_text('__all__ = ["D"]\n')
    (package / "rl" / "__init__.py").write_text("")
    (package / "rl" / "train.py").write_text('__all__ = ["main"]\n')
    (package / "errors.py").write_text('__all__ = ["E"]\n')
    face = public_face(tmp_path)
    assert face["mint_envkit.sub"] == ["B", "C"]
    assert {n for listed in face.values() for n in listed} == {"A", "B", "C", "E", "main"}
    assert stray_all(tmp_path) == ["mint_envkit.sub.inner"]


# ------------------------------------------------------------- one evaluation (issue 30)

EVALUATION_PARTS = ("mint_envkit.evaluation", "mint_envkit.rollouts")
"""Where held-out figures are computed: the one evaluation and the figures it reads."""

EVALUATION_INTERNALS = {
    "mint_envkit.rollouts.answers": {"answer_figures", "rollout_answers", "answer_pairs"},
    "mint_envkit.rollouts.judging": {"judged_answers"},
    "mint_envkit.rollouts.sampler": {"SeededSampler"},
    "mint_envkit.evaluation.figures": {"evaluation_figures"},
    "mint_envkit.evaluation.run": {"evaluate_groups"},
}
"""The pieces of an evaluation: a module that imports one of them outside
:data:`EVALUATION_PARTS` is writing a second evaluation; call ``mint_envkit.evaluate``."""


def _imported_names(path: Path) -> set[tuple[str, str]]:
    tree = ast.parse(path.read_text(), str(path))
    return {
        (node.module, alias.name)
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module
        for alias in node.names
    }


def _python_files(*roots: Path) -> list[Path]:
    """The project's own .py files under ``roots`` (not a venv's, not results)."""
    return [
        p
        for root in roots
        for p in sorted(root.rglob("*.py"))
        if not any(part.startswith(".") or part == "results" for part in p.relative_to(root).parts)
    ]


def second_evaluations(paths: list[Path], package: Path = PACKAGE) -> list[str]:
    """Modules outside the evaluation parts that import the pieces of an evaluation."""
    found = []
    for path in paths:
        inside = path.is_relative_to(package) and _module_name(path).startswith(EVALUATION_PARTS)
        if inside:
            continue
        for module, name in _imported_names(path):
            if name in EVALUATION_INTERNALS.get(module, ()):
                found.append(f"{path.name}: {module}.{name}")
    return found


def test_there_is_one_evaluation():
    paths = _python_files(PACKAGE, REPO / "examples", REPO / "benchmarks")
    found = second_evaluations(paths)
    assert found == [], f"a second evaluation; call mint_envkit.evaluate instead: {found}"


def test_a_second_evaluation_is_found(tmp_path):
    fake = tmp_path / "my_eval.py"
    fake.write_text("from mint_envkit.rollouts.answers import answer_figures\n")
    assert second_evaluations([fake]) == ["my_eval.py: mint_envkit.rollouts.answers.answer_figures"]


def _face_module(module: str) -> bool:
    parts = module.split(".")
    return parts[0] == "mint_envkit" and (
        len(parts) <= 2 or module in FACE_MODULES_OUTSIDE_PACKAGES
    )


def test_examples_import_only_the_public_face():
    found = [
        f"{path.relative_to(REPO)}: {module}"
        for path in _python_files(REPO / "examples")
        for module, _name in _imported_names(path)
        if module.startswith("mint_envkit") and not _face_module(module)
    ]
    assert found == [], f"examples import internals; import from a face: {found}"
