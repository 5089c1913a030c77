"""Exceptions raised by mint_envkit.

Every error the library raises for bad input is a :class:`MintEnvkitError`,
and its message names the bad value and says what to do instead.

Example::

    from mint_envkit import MintEnvkitError

    try:
        builder = DatasetBuilder(env=MyEnv, problems=[{"q": 1}], batch_size=1, group_size=2)
        await builder()
    except MintEnvkitError as err:
        print(err)  # problem 0 is missing field 'question' ...
"""

from __future__ import annotations

__all__ = [
    "BackendError",
    "ConfigError",
    "EnvError",
    "MintEnvkitError",
    "ProblemError",
    "RendererError",
    "TokenizerError",
]


class MintEnvkitError(Exception):
    """Base class of every error mint_envkit raises on purpose."""


class ConfigError(MintEnvkitError, ValueError):
    """A configuration value is invalid; the message names the field and the fix."""


class ProblemError(MintEnvkitError, ValueError):
    """A problem (one row of a dataset) does not fit the env that should hold it."""


class EnvError(MintEnvkitError):
    """An environment was used wrongly (for example, stepped after its episode ended)."""


class RendererError(MintEnvkitError, ValueError):
    """A renderer name is unknown or a renderer cannot handle a message."""


class TokenizerError(MintEnvkitError):
    """A tokenizer cannot be found or built."""


class BackendError(MintEnvkitError):
    """A training backend (MinT or the embedded server) is unreachable or refused a request."""
