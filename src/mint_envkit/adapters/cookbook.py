"""``to_cookbook``: a :class:`~mint_envkit.DatasetBuilder` for tinker-cookbook's own RL loop.

The MinT recipe trains with ``tinker_cookbook.rl.train.main(config)``, whose
``config.dataset_builder`` is a cookbook ``RLDatasetBuilder``. :func:`to_cookbook`
makes one of ours: the cookbook's loop then trains a mint_envkit env unmodified, with
the tokens, stop conditions and rewards our own loop produces (the classes are in
:mod:`mint_envkit.adapters.cookbook_loop`; what is kept and lost: docs/adapters.md).
Needs the ``cookbook`` extra (tinker-cookbook 0.3.0, the version ``mindlab-toolkit``
0.2.0 works with).

Example::

    # not run: needs the cookbook extra and a backend (MinT, or mint-envkit serve)
    from tinker_cookbook.rl import train
    from mint_envkit.adapters import to_cookbook

    config = to_cookbook(builder).train_config(log_path="runs/cookbook", learning_rate=3e-3,
                                               base_url="http://127.0.0.1:8765", max_steps=2)
    await train.main(config)
"""

from __future__ import annotations

from typing import Any

from mint_envkit.adapters.extras import require
from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.errors import ConfigError

COOKBOOK_VERSION = "0.3.0"
"""The tinker-cookbook version the adapter is written and tested against (the one
``mindlab-toolkit`` 0.2.0 works with; the ``cookbook`` extra pins it)."""


def to_cookbook(builder: DatasetBuilder) -> Any:
    """tinker-cookbook's ``RLDatasetBuilder`` for ``builder``: its groups are our envs
    behind the cookbook's ``Env`` protocol.

    The returned ``MintDatasetBuilder`` is what ``tinker_cookbook.rl.train.Config``
    takes as ``dataset_builder``; its ``train_config(**fields)`` makes that ``Config``
    with the builder's model, renderer and reply limit (``max_tokens``).

    Raises:
        ConfigError: ``builder`` is not a :class:`~mint_envkit.DatasetBuilder`.
        MissingExtraError: tinker-cookbook is not installed (``pip install
            'mint-envkit[cookbook]'``, then ``pip install --no-deps tinker-cookbook==0.3.0``:
            it declares transformers<=5.3.0 and runs with this project's newer one).

    Example::

        # not run: needs the cookbook extra
        from mint_envkit.adapters import to_cookbook

        dataset_builder = to_cookbook(builder)
        train, test = await dataset_builder()     # tinker_cookbook RLDatasets
        groups = train.get_batch(0)               # EnvGroupBuilders, one per problem
    """
    if not isinstance(builder, DatasetBuilder):
        raise ConfigError(
            f"to_cookbook takes a mint_envkit DatasetBuilder, got {type(builder).__name__}; "
            "build one with DatasetBuilder(env=..., problems=..., batch_size=..., group_size=...)"
        )
    require(
        "tinker_cookbook",
        extra="cookbook",
        purpose="to_cookbook",
        then=f", then pip install --no-deps tinker-cookbook=={COOKBOOK_VERSION}",
    )
    from mint_envkit.adapters.cookbook_loop import BuilderRef, MintDatasetBuilder

    return MintDatasetBuilder(source=BuilderRef(builder))
