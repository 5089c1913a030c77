"""Exceptions raised by mint_envkit.

Every error the library raises for bad input is a :class:`MintEnvkitError`,
and its message names the bad value and says what to do instead. The tree
(``tests/test_architecture.py`` checks that every exception class in ``src/``
is in it)::

    Exception
    └── MintEnvkitError
        ├── ConfigError (also ValueError)     a configuration value is invalid
        ├── ProblemError (also ValueError)    a dataset row does not fit its env
        ├── EnvError                          an env was used wrongly
        ├── RendererError (also ValueError)   unknown renderer, or no chat template
        ├── TokenizerError                    a tokenizer cannot be found or built
        ├── ToolDefinitionError (also TypeError) a tool's signature cannot become a schema
        ├── MissingExtraError (also ImportError) an optional extra is not installed
        ├── BackendError                      a backend is unreachable or refused
        ├── SandboxError                      no sandbox for model-written code, or a
        │                                     remote sandbox service failed
        ├── RewardOrderWarning (also UserWarning) warned, not raised: an env's ordering
        │                                     rule cannot be checked (unknown bounds)
        ├── EngineError                       (mint_envkit.local.engine) a local engine
        │                                     operation failed; ``category`` user/server
        ├── ModelLoadError                    (mint_envkit.local.models) a base model
        │                                     cannot be found or loaded
        └── ProtocolError                     (mint_envkit.local.http) a request the
                                              embedded server refuses, with its 4xx status

The classes defined here are exported from ``mint_envkit``; the two backend
ones live with the backend (importing them loads torch).

Example::

    # not run: `MyEnv` comes from your own code
    from mint_envkit import DatasetBuilder, MintEnvkitError

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
    "MissingExtraError",
    "ProblemError",
    "RendererError",
    "RewardOrderWarning",
    "SandboxError",
    "TokenizerError",
    "ToolDefinitionError",
]


class MintEnvkitError(Exception):
    """Base class of every error mint_envkit raises on purpose.

    Example::

        # not run: `main` comes from your own code
        try:
            await main(config)
        except MintEnvkitError as err:
            print(f"cannot run: {err}")
    """


class ConfigError(MintEnvkitError, ValueError):
    """A configuration value is invalid; the message names the field and the fix.

    Example::

        from mint_envkit import Config

        try:
            Config(model_name="Qwen/Qwen3-0.6B", dataset_builder=None, log_path="runs/x",
                   temperature=0)
        except ConfigError as err:
            print(err)  # Config.temperature must be > 0, a finite number >= 0.001 ...
    """


class ProblemError(MintEnvkitError, ValueError):
    """A problem (one row of a dataset) does not fit the env that should hold it.

    Example::

        # not run: `ArithmeticEnv` is the env of examples/arithmetic_env.py
        from mint_envkit import DatasetBuilder

        await DatasetBuilder(env=ArithmeticEnv, problems=[{"question": "1+1?"}], batch_size=1)()
        # ProblemError: problem 0: ArithmeticEnv needs field(s) 'answer'; ...
    """


class EnvError(MintEnvkitError):
    """An environment was used wrongly (for example, stepped after its episode ended).

    Example::

        # not run: `env` is an env instance, built elsewhere
        await env.step(reply)
        await env.step(reply)  # EnvError: ArithmeticEnv was stepped twice; ...
    """


class RendererError(MintEnvkitError, ValueError):
    """A renderer name is unknown or a renderer cannot handle a message.

    Example::

        from mint_envkit import get_renderer

        try:
            get_renderer("llama9", tokenizer=None)
        except RendererError as err:
            print(err)  # unknown renderer 'llama9'; known renderers: qwen3, ...
    """


class TokenizerError(MintEnvkitError):
    """A tokenizer cannot be found or built.

    Example::

        from mint_envkit.rendering import get_tokenizer

        try:
            get_tokenizer("/no/such/dir")
        except TokenizerError as err:
            print(err)  # tokenizer directory '/no/such/dir' does not exist; ...
    """


class BackendError(MintEnvkitError):
    """A training backend (MinT or the embedded server) is unreachable or refused a request.

    Example::

        # not run: waits 15 s for a backend that is not there
        from mint_envkit.rollouts.backend import preflight

        await preflight("http://127.0.0.1:9")
        # BackendError: the backend at http://127.0.0.1:9 did not answer within 15 s ...
    """


class ToolDefinitionError(MintEnvkitError, TypeError):
    """A function cannot be a tool: a parameter has no type hint, is ``*args`` or
    ``**kwargs``, or has a type no JSON schema can say. The message names the parameter.

    Example::

        from mint_envkit import tool

        try:

            @tool
            def add(a, b: int) -> int: ...

        except ToolDefinitionError as err:
            print(err)  # tool 'add': parameter 'a' has no type hint; ...
    """


class MissingExtraError(MintEnvkitError, ImportError):
    """An optional dependency is not installed; the message gives the pip command.

    Example::

        from mint_envkit import math_answer

        math_answer(r"\\boxed{1}")
        # MissingExtraError: math answers need the math-verify package, which is not
        # installed; run pip install 'mint-envkit[math]' (or: pip install math-verify)
    """


class SandboxError(MintEnvkitError):
    """Model-written code cannot be run safely: no sandbox on this machine, or a remote
    sandbox service failed. The message names the fix (install bubblewrap, pass another
    executor).

    Example::

        from mint_envkit import run_tests

        await run_tests("def f(): ...", ["assert f() is None"])
        # SandboxError: no sandbox to run model-written code: bubblewrap (bwrap) is not
        # installed; install it (apt-get install bubblewrap) or pass executor=...
    """


class RewardOrderWarning(MintEnvkitError, UserWarning):
    """Warned (not raised) when an env class is defined whose ordering rule cannot be
    checked: its ``reward_fn`` has a part with unknown bounds, so nothing says that a
    reply without an answer earns at most a wrong answer's reward.

    Give the bounds (``component(fn, bounds=(0.0, 1.0))``) or probe the reward with
    ``mint-envkit audit``; ``MyEnv.scoring.ordering`` says why it was not checked.

    Example::

        import warnings

        with warnings.catch_warnings():
            warnings.simplefilter("error", RewardOrderWarning)   # make it fatal in a test
    """
