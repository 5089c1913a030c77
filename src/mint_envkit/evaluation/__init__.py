"""The one evaluation: sample K completions per problem, score, and the figures of it.

:func:`evaluate` runs a sampling client you give, a base model or a ``tinker://``
checkpoint on an env's problems (the backend chosen as for training), and reports the
mean reward, pass@k with the unbiased estimator, the parse-failure and truncation rates,
and correctness beside the best trivial baseline (a constant answer, the candidate the
prompt offers at a position); with an ``out_dir`` it writes ``results.jsonl``,
``summary.json`` and the files the viewer reads. :func:`evaluate_many` runs several
checkpoints on the same problems and seeds, :func:`comparison_table` sets them side by
side, and :func:`learning_claim` says a before/after gain where nothing is cut off.
The training loop's held-out evals, the audit and ``mint-envkit eval`` all call it.

Example::

    # not run: `builder` is your DatasetBuilder, built elsewhere
    from mint_envkit.evaluation import evaluate

    result = await evaluate(builder, samples=8)
    result.pass_at(1), result.pass_at(8), print(result.headline())
"""

from mint_envkit.evaluation.claims import LearningClaim, learning_claim
from mint_envkit.evaluation.compare import comparison_table
from mint_envkit.evaluation.metrics import ProblemResult, pass_at_k
from mint_envkit.evaluation.run import EvalResult, evaluate, evaluate_many, evaluate_sync

__all__ = [
    "EvalResult",
    "LearningClaim",
    "ProblemResult",
    "comparison_table",
    "evaluate",
    "evaluate_many",
    "evaluate_sync",
    "learning_claim",
    "pass_at_k",
]
