"""The rollout viewer: one self-contained HTML page per run or sweep.

``mint-envkit view RUN_DIR`` (or :func:`write_report`) reads a run's
``metrics.jsonl``, ``rollouts.jsonl``, ``config.json`` and
``checkpoints.jsonl`` (every run of a sweep) and writes ``view.html``: the
metric curves per step and every episode's transcript, with filters and
search. The page works offline, with no server; see ``docs/viewer.md``.

Example::

    # not run: reads files of your own run or data set
    from mint_envkit.view import write_report

    path = write_report("runs/rl_hyperparameters-local")   # open it in a browser
"""

from mint_envkit.view.report import write_report

__all__ = ["write_report"]
