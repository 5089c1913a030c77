"""Group and dataset builders: one problem to a GRPO group, problems to batches.

Example::

    # not run: `MyEnv` comes from your own code
    from mint_envkit.builders import DatasetBuilder

    train, test = await DatasetBuilder(env=MyEnv, problems=rows, batch_size=2,
                                       group_size=4, model_name="mint-envkit/tiny-qwen3")()
"""

from mint_envkit.builders.dataset import DatasetBuilder, ProblemDataset
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.builders.packages import load_environment
from mint_envkit.builders.sources import ProblemSource, problems_from

__all__ = [
    "DatasetBuilder",
    "GroupBuilder",
    "ProblemDataset",
    "ProblemSource",
    "load_environment",
    "problems_from",
]
