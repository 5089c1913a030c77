"""Env packages: envs installed with pip and found by name, through an entry point.

An env package says in its ``pyproject.toml`` which function builds its env::

    [project.entry-points."mint_envkit.environments"]
    units-demo = "units_demo.env:load_environment"

``load_environment(**kwargs)`` returns a :class:`~mint_envkit.DatasetBuilder` (the
convention of verifiers' env packages: the installed package's ``load_environment``).
Once the package is installed, :func:`load_environment` ``("units-demo")`` calls it, and
``mint-envkit check``, ``eval`` and ``audit`` take the name where they take an ENV_SPEC;
``mint-envkit list`` shows what is installed and ``mint-envkit init NAME`` makes a new
package (docs/env-packages.md). Finding envs reads only the installed packages' metadata
(:mod:`importlib.metadata`): an env's module is imported when it is loaded, not before.

Example::

    from mint_envkit.builders.packages import installed_environments

    [(env.name, env.package) for env in installed_environments()]   # [] until one is installed
"""

from __future__ import annotations

import difflib
import importlib.metadata
import inspect
import sys
import threading
from collections.abc import Callable
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.errors import ConfigError

ENTRY_POINT_GROUP = "mint_envkit.environments"
"""The entry-point group an env package declares its ``load_environment`` in.

Example::

    ENTRY_POINT_GROUP   # 'mint_envkit.environments'
"""


@attrs.frozen
class EnvPackage:
    """One installed env: its name, the package that declares it, and its entry point.

    Attributes:
        name: the entry point's name: what ``load_environment`` and the commands take.
        package: the distribution's name (what ``pip install`` / ``pip uninstall`` take).
        version: the distribution's version.
        entry_point: ``module:attribute``, the function that builds the env.

    Example::

        env = EnvPackage("units-demo", "units-demo", "0.1.0", "units_demo.env:load_environment")
        env.module   # 'units_demo.env'
    """

    name: str
    package: str
    version: str
    entry_point: str

    @property
    def module(self) -> str:
        """The module the entry point lives in.

        Example::

            EnvPackage("a", "a", "1", "a_pkg.env:load_environment").module   # 'a_pkg.env'
        """
        return self.entry_point.split(":", 1)[0].strip()

    def load(self) -> Any:
        """Import the entry point's module and return what the entry point names.

        Raises:
            ConfigError: the module cannot be imported (any error raised while importing
                it: the message names the env, the package and the cause, which is
                chained) or has no such attribute.

        Example::

            # not run: needs an installed env package
            load_environment_function = find_environment("units-demo").load()
        """
        point = importlib.metadata.EntryPoint(self.name, self.entry_point, ENTRY_POINT_GROUP)
        try:
            return point.load()
        except (Exception, SystemExit) as err:  # the package's code runs here: name it
            why = f"sys.exit({err.code!r})" if isinstance(err, SystemExit) else f"{err}"
            raise ConfigError(
                f"env {self.name!r}: cannot load its entry point {self.entry_point!r} (package "
                f"{self.package} {self.version}): {type(err).__name__}: {why}; fix or "
                f"reinstall the package (pip install --force-reinstall {self.package})"
            ) from err

    def summary(self) -> str:
        """The first line of the entry point's docstring (else its module's), or ``""``.

        Imports the env's module (:meth:`load`, and its errors).

        Example::

            # not run: needs an installed env package
            find_environment("units-demo").summary()   # 'Unit conversions, ...'
        """
        target = self.load()
        doc = inspect.getdoc(target) or inspect.getdoc(sys.modules.get(self.module)) or ""
        return next((line.strip() for line in doc.splitlines() if line.strip()), "")


def installed_environments() -> list[EnvPackage]:
    """Every env the installed packages declare, sorted by name, then package.

    A name two packages claim is listed twice (:func:`find_environment` refuses it).
    Reads the packages' metadata only; no env's module is imported.

    Example::

        [env.name for env in installed_environments()]   # e.g. ['units-demo']
    """
    found = []
    for point in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP):
        dist = point.dist
        package = dist.metadata["Name"] if dist is not None else "?"
        version = dist.version if dist is not None else "?"
        found.append(EnvPackage(point.name, str(package), str(version), point.value))
    return sorted(found, key=lambda env: (env.name, env.package))


def not_installed(name: str) -> str:
    """Why ``name`` names no env, the installed names, and how to install one (the one
    wording of it, for :func:`find_environment` and ENV_SPEC loading).

    Example::

        not_installed("no-such-env")
        # "no installed env is named 'no-such-env' (installed: none); install an env ..."
    """
    names = sorted({env.name for env in installed_environments()})
    squashed = {n.replace("_", "-").lower(): n for n in names}
    close = difflib.get_close_matches(name.replace("_", "-").lower(), list(squashed), n=1)
    guess = f"; did you mean {squashed[close[0]]!r}?" if close else ""
    return (
        f"no installed env is named {name!r} (installed: {', '.join(names) or 'none'}){guess}; "
        f"install an env package into this Python ({sys.executable}) with pip install "
        "PACKAGE, or pip install -e DIR for one made by mint-envkit init NAME DIR; "
        "mint-envkit list shows the installed envs"
    )


def find_environment(name: str) -> EnvPackage:
    """The installed env called ``name``.

    Raises:
        ConfigError: no installed package declares ``name`` (the message lists the
            installed names and says how to install one), or two packages do (the
            message names both).

    Example::

        try:
            find_environment("no-such-env")
        except ConfigError as err:
            print(err)   # no installed env is named 'no-such-env' (installed: ...); ...
    """
    claims = [env for env in installed_environments() if env.name == name]
    if not claims:
        raise ConfigError(not_installed(name))
    if len(claims) > 1:
        who = " and ".join(f"{env.package} {env.version} ({env.entry_point})" for env in claims)
        raise ConfigError(
            f"env name {name!r} is claimed by {len(claims)} installed packages: {who}; "
            f"uninstall one (pip uninstall {claims[-1].package}) or rename its entry point "
            f'in its [project.entry-points."{ENTRY_POINT_GROUP}"] table'
        )
    return claims[0]


def load_environment(
    name: str, *, load_timeout_s: float | None = None, **kwargs: Any
) -> DatasetBuilder:
    """The DatasetBuilder of the installed env ``name``: its ``load_environment(**kwargs)``.

    ``kwargs`` go to the package's function as they are (each package documents its
    own: ``mint-envkit list`` shows where it lives). The verifiers convention.
    ``load_timeout_s``: give up after this many seconds (the import and the call run
    in a thread of their own; one that hangs is left there, a daemon, and a
    ``ConfigError`` says so); None (default): no limit, in this thread.

    Raises:
        ConfigError: ``name`` is not installed or is claimed twice
            (:func:`find_environment`); its module cannot be imported (or exits the
            process: ``sys.exit`` at import); the entry point is not callable or does
            not take ``kwargs``; it returned something other than a DatasetBuilder; it
            did not finish within ``load_timeout_s``.

    Example::

        from mint_envkit import ConfigError, load_environment

        try:
            builder = load_environment("units-demo", batch_size=2)
        except ConfigError as err:   # not installed here: the message says how to install it
            print(err)
    """
    env = find_environment(name)
    if load_timeout_s is not None:
        if not (isinstance(load_timeout_s, int | float) and 0 < load_timeout_s < float("inf")):
            raise ConfigError(f"load_timeout_s must be a positive number, got {load_timeout_s!r}")
        return _within(env, load_timeout_s, kwargs)
    return _load(env, kwargs)


def _within(env: EnvPackage, seconds: float, kwargs: dict[str, Any]) -> DatasetBuilder:
    """:func:`_load` in a daemon thread, waited for at most ``seconds``."""
    done: list[Any] = []

    def work() -> None:
        try:
            done.append(("ok", _load(env, kwargs)))
        except BaseException as err:  # carried to the caller, whatever it is
            done.append(("error", err))

    thread = threading.Thread(target=work, name=f"mint-envkit-load-{env.name}", daemon=True)
    thread.start()
    thread.join(seconds)
    if not done:
        raise ConfigError(
            f"env {env.name!r} ({env.entry_point}, package {env.package} {env.version}) did "
            f"not load within {seconds:g} s (load_timeout_s): its import or its "
            "load_environment does not return; fix the package, or raise load_timeout_s"
        )
    kind, value = done[0]
    if kind == "error":
        raise value
    return value


def _load(env: EnvPackage, kwargs: dict[str, Any]) -> DatasetBuilder:
    name = env.name
    function: Callable[..., Any] = env.load()
    where = f"env {name!r} ({env.entry_point}, package {env.package} {env.version})"
    if not callable(function):
        raise ConfigError(
            f"{where} names a value of type {type(function).__name__}, not a function; the "
            "entry point "
            "must name load_environment(**kwargs), which returns a DatasetBuilder"
        )
    try:
        signature = inspect.signature(function)
    except (TypeError, ValueError):  # no signature to check: let the call say
        signature = None
    if signature is not None:
        try:
            signature.bind(**kwargs)
        except TypeError as err:
            raise ConfigError(
                f"{where} takes {signature}, not the arguments {kwargs!r}: {err}"
            ) from None
    try:
        builder = function(**kwargs)
    except SystemExit as err:
        raise ConfigError(f"{where} called sys.exit({err.code!r}) in load_environment") from None
    except Exception as err:  # the package's own error: the env, its data, these arguments
        raise ConfigError(
            f"{where}: load_environment(**{kwargs!r}) raised {type(err).__name__}: {err}"
        ) from err
    if not isinstance(builder, DatasetBuilder):
        raise ConfigError(
            f"{where} returned a value of type {type(builder).__name__}, not a DatasetBuilder; its "
            "load_environment must return mint_envkit.DatasetBuilder(env=..., problems=...)"
        )
    return builder
