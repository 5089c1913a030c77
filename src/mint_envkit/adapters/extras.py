"""The one check of an adapter's extra: import its target library or say how to install it.

Example::

    chz = require("chz", extra="cookbook", purpose="to_cookbook")   # the module, when installed
    # require("no_such_lib", extra="x", purpose="y") raises MissingExtraError:
    # y needs no_such_lib, which is not installed; run pip install 'mint-envkit[x]'
"""

from __future__ import annotations

import importlib
from types import ModuleType

from mint_envkit.errors import MissingExtraError


def require(module: str, *, extra: str, purpose: str, then: str = "") -> ModuleType:
    """Import ``module`` or raise :class:`MissingExtraError` naming the extra to install
    (and ``then``, a command to run after it).

    Example::

        require("json", extra="none", purpose="reading JSON")   # <module 'json' ...>
    """
    try:
        return importlib.import_module(module)
    except ImportError as err:
        raise MissingExtraError(
            f"{purpose} needs {module.split('.')[0]}, which is not installed ({err}); "
            f"run pip install 'mint-envkit[{extra}]'{then}"
        ) from None
