"""Backend conformance: does a server do what a training loop relies on? One row per call.

``mint-envkit conformance`` (and :func:`run_conformance`) makes every Tinker / MinT call
a training loop relies on, through the unmodified SDK, and measures the answers, not
only that they came: the sampled logprobs are the temperature-scaled distribution's and
the learner's; ``top_k`` and ``top_p`` truncate; the reported loss is the loss of the
returned logprobs; importance sampling weights by the ratio and PPO clips it; a step
lowers the loss it was taken on (and raises it with the weights negated); saves and
loads restore weights and optimizer. Each row is ``ok``, ``unsupported``, ``failed`` or
``skipped`` (the rule: :mod:`mint_envkit.conformance.rows`); a server that refuses a
call a loop needs (``forward_backward``, sampling, saving) fails. The rows are tested
against an embedded server with one fault injected at a time
(``tests/conformance/``; the list is in docs/local-backend.md, "What the embedded
backend serves").

Example::

    # not run: starts an embedded server (or talks to MinT with MINT_API_KEY)
    report = await run_conformance(model="mint-envkit/tiny-qwen3")
    print(report.table())
    report.exit_code   # 0: no row failed
"""

from mint_envkit.conformance.report import ConformanceReport, run_conformance

__all__ = ["ConformanceReport", "run_conformance"]
