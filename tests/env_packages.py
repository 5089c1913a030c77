"""Fake installed env packages for the tests: a module and its ``.dist-info``, on sys.path.

``importlib.metadata`` reads a package's entry points from its ``.dist-info`` folder on
``sys.path``, so a test "installs" one without pip::

    from env_packages import fake_env_package

    module = fake_env_package(monkeypatch, tmp_path, "sums")   # env 'sums', package 'sums'
    load_environment("sums")   # calls <module>.load_environment()

The module gets a fresh name each time (``sys.modules`` keeps what a test imported).
"""

from __future__ import annotations

import uuid
from pathlib import Path

ENV_SOURCE = '''\
"""A fake env package's module: sums of small numbers."""

from mint_envkit import DatasetBuilder
from shared_envs import ArithmeticEnv

PROBLEMS = [{"question": f"What is {a} + {a + 3}?", "answer": str(2 * a + 3)} for a in range(6)]


def load_environment(*, batch_size=2, group_size=2, **options):
    """Sums of two small numbers, a fake env package of the tests.

    More lines that the listing leaves out.
    """
    return DatasetBuilder(
        env=ArithmeticEnv,
        problems=PROBLEMS,
        batch_size=batch_size,
        group_size=group_size,
        model_name="mint-envkit/tiny-qwen3",
        **options,
    )
'''


def fake_env_package(
    monkeypatch,
    root: Path,
    name: str,
    *,
    package: str | None = None,
    version: str = "1.2.3",
    source: str = ENV_SOURCE,
    attribute: str = "load_environment",
) -> str:
    """Install env ``name`` of package ``package`` (default: ``name``) under ``root``; its module.

    ``source`` is the module's text; the entry point is ``<module>:<attribute>``.
    """
    package = package or name
    module = f"fake_env_{uuid.uuid4().hex[:10]}"
    folder = root / f"site-{module}"
    folder.mkdir(parents=True)
    (folder / f"{module}.py").write_text(source)
    info = folder / f"{package.replace('-', '_')}-{version}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {package}\nVersion: {version}\n")
    (info / "entry_points.txt").write_text(
        f"[mint_envkit.environments]\n{name} = {module}:{attribute}\n"
    )
    monkeypatch.syspath_prepend(str(folder))  # also clears importlib's caches
    return module
