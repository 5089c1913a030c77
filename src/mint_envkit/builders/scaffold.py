"""The files of a new env package (``mint-envkit init``): pip-installable, as templates.

:func:`scaffold_files` fills them in for one env name: ``pyproject.toml`` (setuptools;
the entry point in the ``mint_envkit.environments`` group), the env module (a
SingleTurnEnv with twelve unit-conversion problems and ``load_environment(**kwargs)``),
its tests and a README; :func:`check_names` refuses a name Python or an installed
package already has. The golden transcripts (``tests/golden.jsonl``) are recorded by
:func:`mint_envkit.replay.scaffold.scaffold`, by running the env. See docs/env-packages.md.

Example::

    files = scaffold_files(ScaffoldNames.of("units-demo"))
    sorted(files)[:2]   # ['README.md', 'pyproject.toml']
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
import keyword
import re
from string import Template

import attrs

from mint_envkit.builders.packages import installed_environments
from mint_envkit.errors import ConfigError

NAME_PATTERN = re.compile(r"[A-Za-z][A-Za-z0-9]*(?:[-_][A-Za-z0-9]+)*")
"""An env name ``init`` takes: letters and digits in words joined by ``-`` or ``_``."""

GOLDEN = "tests/golden.jsonl"
"""Where the package keeps its golden transcripts, from its root."""


@attrs.frozen
class ScaffoldNames:
    """The names of one scaffolded package, all made from the env's name.

    Attributes:
        name: the env's name: the entry point's and the distribution's.
        module: the Python package (``units_demo`` for ``units-demo``).
        env_class: the env class (``UnitsDemoEnv``).

    Example::

        ScaffoldNames.of("units-demo")
        # ScaffoldNames(name='units-demo', module='units_demo', env_class='UnitsDemoEnv')
    """

    name: str
    module: str
    env_class: str

    @classmethod
    def of(cls, name: str) -> ScaffoldNames:
        """The names made from ``name``.

        Raises:
            ConfigError: ``name`` is not letters and digits in words joined by ``-`` or
                ``_``, starting with a letter, or its module name is a Python keyword.

        Example::

            ScaffoldNames.of("my_env").env_class   # 'MyEnv'
        """
        if not NAME_PATTERN.fullmatch(name):
            raise ConfigError(
                f"env name {name!r}: use letters and digits in words joined by '-' or '_', "
                "starting with a letter (e.g. units-demo)"
            )
        module = name.lower().replace("-", "_")
        if keyword.iskeyword(module):
            raise ConfigError(f"env name {name!r}: its module {module!r} is a Python keyword")
        words = re.split(r"[-_]", name)
        env_class = "".join(word[:1].upper() + word[1:] for word in words)
        return cls(name, module, env_class if env_class.endswith("Env") else env_class + "Env")


PYPROJECT = """\
[build-system]
requires = ["setuptools>=64"]
build-backend = "setuptools.build_meta"

[project]
name = "$name"
version = "0.1.0"
description = "Unit conversions answered with a number alone: a mint-envkit env package."
readme = "README.md"
requires-python = ">=3.11"
dependencies = ["$requirement"]

[project.optional-dependencies]
test = ["pytest>=8"]

# How mint-envkit finds the env by name: mint_envkit.load_environment("$name"),
# mint-envkit check|eval|audit $name, mint-envkit list.
[project.entry-points."mint_envkit.environments"]
$name = "$module.env:load_environment"

[tool.setuptools.packages.find]
where = ["src"]

[tool.pytest.ini_options]
testpaths = ["tests"]
"""

INIT = '''\
"""$name: a mint-envkit env package; the env and load_environment are in $module.env."""
'''

ENV = '''\
"""$name: unit conversions answered with a number alone, as a mint-envkit env package.

``load_environment()`` builds the env's DatasetBuilder. Once the package is installed
(``pip install -e .``), ``mint_envkit.load_environment("$name")`` and
``mint-envkit check|eval|audit $name`` find it by name, through the entry point in
pyproject.toml. Made by ``mint-envkit init``: change the problems, the prompt and the
rewards to your task, then record the golden transcripts again (README.md).
"""

from __future__ import annotations

from typing import Any

from mint_envkit import DatasetBuilder, Parser, SingleTurnEnv
from mint_envkit.parsers import as_number

PROBLEMS: list[dict[str, str]] = [
    {"question": "How many minutes are in 3 hours?", "answer": "180"},
    {"question": "How many days are in 4 weeks?", "answer": "28"},
    {"question": "How many centimetres are in 2.5 metres?", "answer": "250"},
    {"question": "How many hours are in 2 days?", "answer": "48"},
    {"question": "How many seconds are in 5 minutes?", "answer": "300"},
    {"question": "How many grams are in 1.5 kilograms?", "answer": "1500"},
    {"question": "How many months are in 6 years?", "answer": "72"},
    {"question": "How many millimetres are in 9 centimetres?", "answer": "90"},
    {"question": "How many metres are in 4 kilometres?", "answer": "4000"},
    {"question": "How many days are in 3 weeks?", "answer": "21"},
    {"question": "How many seconds are in 2 hours?", "answer": "7200"},
    {"question": "How many centimetres are in 8 metres?", "answer": "800"},
]
"""The problems. No two share an answer and no question holds its own answer, so neither
a constant answer nor a number copied from the question scores well."""

only_a_number = Parser.from_function(as_number, name="only_a_number")
"""The reply is the answer when it is one number and nothing else ("180", "180.", "1,500").

A reply that restates the question ("How many minutes are in 3 hours?") reads as no
answer, not as the answer 3: ``mint-envkit audit`` checks that such replies earn no more
than a wrong answer."""


class $env_class(SingleTurnEnv):
    """A unit conversion; the reply must be the number alone."""

    system_prompt = "Convert the units. Reply with only the final number."
    parser = only_a_number
    reward_correct = 1.0
    reward_incorrect = -0.25
    reward_unparsed = -0.25  # never above reward_incorrect, or RL learns to stop answering


def load_environment(
    *,
    model_name: str = "mint-envkit/tiny-qwen3",
    batch_size: int = 4,
    group_size: int = 4,
    test_fraction: float = 0.25,
    seed: int = 0,
    **builder_options: Any,
) -> DatasetBuilder:
    """Unit conversions answered with a number alone (the $name env).

    Args:
        model_name: the model whose tokenizer renders the prompts and that trains
            (default: mint-envkit's built-in tiny model, offline; e.g.
            "Qwen/Qwen3-0.6B" on MinT).
        batch_size: problems (GRPO groups) per batch.
        group_size: replies sampled per problem.
        test_fraction: the share of the problems held out as the test split (0: none).
        seed: the data order: the split and the shuffle.
        **builder_options: any other DatasetBuilder field, e.g.
            max_generation_tokens=32 or renderer_name="qwen3".
    """
    return DatasetBuilder(
        env=$env_class,
        problems=PROBLEMS,
        batch_size=batch_size,
        group_size=group_size,
        model_name=model_name,
        test_fraction=test_fraction,
        seed=seed,
        **builder_options,
    )
'''

TEST = '''\
"""Tests of the $name env, offline (no model, no backend): python -m pytest.

They load the env by its name, through the entry point, as mint-envkit does: install
the package first (pip install -e .).
"""

from __future__ import annotations

from pathlib import Path

from mint_envkit import ScriptedPolicy, load_environment
from mint_envkit.cli import main

from $module.env import PROBLEMS, $env_class

GOLDEN = Path(__file__).with_name("golden.jsonl")
ANSWERS = {problem["question"]: problem["answer"] for problem in PROBLEMS}


def _answer(messages):
    return ANSWERS[messages[-1]["content"]]


def test_the_name_loads_this_package():
    builder = load_environment("$name", group_size=2)
    assert builder.env is $env_class and builder.group_size == 2


def test_a_right_answer_beats_a_wrong_one_and_no_answer():
    builder = load_environment("$name", batch_size=len(PROBLEMS), test_fraction=0.0)

    def rewards(replies):
        report = ScriptedPolicy(replies).run_sync(builder)
        return [reward for group in report.groups for reward in group.rewards]

    right = rewards(_answer)
    wrong = rewards(lambda messages: str(int(_answer(messages)) + 1))
    unparsed = rewards(["I am not sure."])
    assert len(right) == len(PROBLEMS) * builder.group_size
    assert min(right) > max(wrong) >= max(unparsed)


def test_the_golden_transcripts_still_score_as_recorded():
    # After an intended change to the env, record them again and review the diff:
    #   mint-envkit check $name --record tests/golden.jsonl
    assert main(["check", "--replay", str(GOLDEN)]) == 0
'''

README = """\
# $name

Unit conversions answered with a number alone ("How many minutes are in 3 hours?" ->
`180`): an env package for mint-envkit, made by `mint-envkit init $name`. Change the problems, the prompt and the rewards in
`src/$module/env.py` to your task.

## Install and check

```
pip install -e .                                   # into the Python that has mint-envkit
mint-envkit list                                   # $name, with its package and version
mint-envkit check $name                            # scripted replies through the env
mint-envkit audit $name --sample-model none        # exploit probes, offline
python -m pytest                                   # the tests, the golden transcripts
```

`pip install -e .` builds with setuptools (pip fetches it for the build; with
`--no-build-isolation` it must already be installed). Once installed, mint-envkit finds the
env by its name through the entry point in `pyproject.toml`:

```python
from mint_envkit import load_environment

builder = load_environment("$name", group_size=8)   # a DatasetBuilder
```

## load_environment's arguments

| argument | default | meaning |
|---|---|---|
| `model_name` | `"mint-envkit/tiny-qwen3"` | the model whose tokenizer renders the prompts and that trains (the built-in tiny model works offline; e.g. `"Qwen/Qwen3-0.6B"` on MinT) |
| `batch_size` | `4` | problems (GRPO groups) per batch |
| `group_size` | `4` | replies sampled per problem |
| `test_fraction` | `0.25` | the share of the problems held out as the test split |
| `seed` | `0` | the data order: the split and the shuffle |
| any other keyword | | a DatasetBuilder field, e.g. `max_generation_tokens=32` |

The commands (`check`, `eval`, `audit`) call it with no arguments.

## Golden transcripts

`tests/golden.jsonl` holds the episodes `mint-envkit check $name` runs: for 3 problems,
the right answer, a wrong one and no answer, each with its reward and parse status. The
tests replay them (`mint-envkit check --replay tests/golden.jsonl`), so a change that moves
a score fails, naming the reply. After an intended change, record them again and review
the diff:

```
mint-envkit check $name --record tests/golden.jsonl
```
"""

_TEMPLATES = {
    "pyproject.toml": PYPROJECT,
    "README.md": README,
    "src/$module/__init__.py": INIT,
    "src/$module/env.py": ENV,
    "tests/test_env.py": TEST,
}


def scaffold_files(names: ScaffoldNames, requirement: str = "mint-envkit") -> dict[str, str]:
    """Each file of the package (its path from the package's root) and its text.

    ``requirement``: the package's dependency on mint-envkit (``mint-envkit>=0.1.0``).

    Example::

        files = scaffold_files(ScaffoldNames.of("units-demo"))
        'units-demo = "units_demo.env:load_environment"' in files["pyproject.toml"]   # True
    """
    values = {**attrs.asdict(names), "requirement": requirement}
    return {
        Template(path).substitute(values): Template(text).substitute(values)
        for path, text in _TEMPLATES.items()
    }


def requirement() -> str:
    """The package's dependency: on this mint-envkit's version or later.

    Example::

        requirement()   # 'mint-envkit>=0.1.0'
    """
    try:
        return f"mint-envkit>={importlib.metadata.version('mint-envkit')}"
    except importlib.metadata.PackageNotFoundError:  # a source tree that was not installed
        return "mint-envkit"


def check_names(names: ScaffoldNames) -> None:
    """Refuse a name whose module Python already finds, or that an installed env has.

    Raises:
        ConfigError: the module would shadow (or be shadowed by) an importable one
            (``json``, ``mint_envkit``), or an installed package declares the env name.

    Example::

        check_names(ScaffoldNames.of("units-demo"))   # None: free
    """
    if importlib.util.find_spec(names.module) is not None:
        raise ConfigError(
            f"env name {names.name!r}: a module named {names.module!r} already exists in this "
            "Python; the package's module would clash with it: pick another name"
        )
    taken = [env for env in installed_environments() if env.name == names.name]
    if taken:
        raise ConfigError(
            f"env name {names.name!r} is already installed (package {taken[0].package} "
            f"{taken[0].version}); pick another name, or pip uninstall {taken[0].package}"
        )
