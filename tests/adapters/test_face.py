"""The adapters' face: lazy names, and no target library (nor torch) on import."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import mint_envkit.adapters as adapters


def test_every_public_adapter_name_is_lazy_and_resolves():
    lazy = vars(adapters)["_LAZY"]
    assert sorted(lazy) == sorted(adapters.__all__)
    for name in adapters.__all__:
        assert callable(getattr(adapters, name)), name


def test_importing_the_face_loads_no_target_library_nor_torch():
    code = textwrap.dedent(
        """
        import sys
        import mint_envkit.adapters
        heavy = ("torch", "tinker_cookbook", "trl", "verifiers", "textarena", "openai")
        print(" ".join(m for m in heavy if m in sys.modules))
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert out.stdout.strip() == ""
