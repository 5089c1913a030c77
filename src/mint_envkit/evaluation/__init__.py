"""Evaluation without training: sample K completions per problem, score, report pass@k.

:func:`evaluate` runs a base model or a ``tinker://`` checkpoint on an env's
problems (the backend chosen as for training), and reports the mean reward,
pass@k with the unbiased estimator, and the parse-failure rate; with an
``out_dir`` it writes ``results.jsonl``, ``summary.json`` and the files the
viewer reads. :func:`evaluate_many` runs several checkpoints on the same
problems and seeds, and :func:`comparison_table` sets them side by side.
The command is ``mint-envkit eval`` (see ``docs/evaluation.md``).

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    from mint_envkit.evaluation import evaluate

    result = await evaluate(builder, model_name="mint-envkit/tiny-qwen3", samples=8)
    result.pass_at(1), result.pass_at(8), result.parse_failure_rate
"""

from mint_envkit.evaluation.compare import comparison_table
from mint_envkit.evaluation.metrics import ProblemResult, pass_at_k
from mint_envkit.evaluation.run import EvalResult, evaluate, evaluate_many, evaluate_sync

__all__ = [
    "EvalResult",
    "ProblemResult",
    "comparison_table",
    "evaluate",
    "evaluate_many",
    "evaluate_sync",
    "pass_at_k",
]
