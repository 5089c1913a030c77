"""The adapters' tests: the small verifiers env packages of ``vf_envs/`` on ``sys.path``.

verifiers finds an installed env by its id's module (``vf-tiny-math`` -> ``vf_tiny_math``);
putting the folder on ``sys.path`` (and ``PYTHONPATH`` for the CLI's subprocesses) is what
``pip install`` of such a package does.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

VF_ENVS = Path(__file__).parent / "vf_envs"


@pytest.fixture
def vf_envs_on_path(monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tests/adapters/vf_envs`` importable here and in subprocesses."""
    monkeypatch.syspath_prepend(str(VF_ENVS))
    path = os.environ.get("PYTHONPATH")
    monkeypatch.setenv("PYTHONPATH", str(VF_ENVS) + (os.pathsep + path if path else ""))
    for name in ("vf_tiny_math", "vf_tiny_guess", "vf_tiny_tools"):
        sys.modules.pop(name, None)
    return VF_ENVS
