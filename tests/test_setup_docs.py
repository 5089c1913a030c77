"""docs/getting-started.md lists exactly what the setup scripts install.

The extras come from the scripts themselves (``bash scripts/setup.sh EXTRAS`` in
``scripts/sweep.sh`` and ``scripts/test.sh``, setup.sh's own default), the extras'
packages from ``pyproject.toml``; the doc's table, its list of extras, the torch pin, the
model and the log file must say the same.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"
DOC = (ROOT / "docs" / "getting-started.md").read_text(encoding="utf-8")
SETUP = (SCRIPTS / "setup.sh").read_text(encoding="utf-8")
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
EXTRAS = PYPROJECT["project"]["optional-dependencies"]


def setup_section() -> str:
    start = DOC.index("## The two commands")
    return DOC[start : DOC.index("\n## ", start + 1)]


def script_extras() -> dict[str, str]:
    """What each script asks setup.sh for: ``{"sweep": "local,plot", ...}``."""
    out = {}
    for name in ("sweep", "test"):
        text = (SCRIPTS / f"{name}.sh").read_text(encoding="utf-8")
        [extras] = re.findall(r"^bash scripts/setup\.sh (\S+)$", text, flags=re.M)
        if extras == '"$extras"':  # a variable: its first value (sweep.sh adds to it)
            extras = re.findall(r"^extras=(\S+)$", text, flags=re.M)[0]
        out[name] = extras
    [default] = re.findall(r'^extras="\$\{1:-([^}]+)\}"$', SETUP, flags=re.M)
    out["setup"] = default
    return out


def doc_table() -> dict[str, str]:
    rows = re.findall(
        r"^\| `bash scripts/(\w+)\.sh`(?: \(no argument\))? \| `([^`]*)` \|$",
        setup_section(),
        flags=re.M,
    )
    return dict(rows)


def doc_extras() -> dict[str, str]:
    """Each extra's line of the doc's list: ``{"local": "the embedded backend (...)"}``."""
    return dict(re.findall(r"^- `([\w-]+)`: (.+)$", setup_section(), flags=re.M))


def requirement_name(requirement: str) -> str:
    return re.split(r"[<>=!~\[; ]", requirement, maxsplit=1)[0]


def test_the_table_names_the_extras_each_script_installs() -> None:
    assert doc_table() == script_extras()


def test_the_list_describes_exactly_the_extras_installed() -> None:
    installed = {e for extras in script_extras().values() for e in extras.split(",")}
    assert installed <= set(EXTRAS), installed - set(EXTRAS)  # each one exists
    described = doc_extras()
    assert set(described) == installed
    for extra, line in described.items():
        for requirement in EXTRAS[extra]:  # the line names the extra's packages
            assert requirement_name(requirement).lower() in line.lower(), (extra, requirement)


def test_the_doc_names_the_torch_pin_the_model_and_the_log() -> None:
    section = setup_section()
    pins = set(re.findall(r"torch==([\d.]+)", SETUP))
    assert len(pins) == 1 and set(re.findall(r"torch==([\d.]+)", section)) == pins
    assert "install-model smollm2" in SETUP and "SmolLM2-135M-Instruct" in section
    [log] = re.findall(r"^log=(\S+)$", SETUP, flags=re.M)
    assert f"`{log}`" in section
