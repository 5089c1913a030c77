"""Recorded replies scored again: golden transcripts and rescoring a run.

A group of recorded replies (a golden transcript's, a run's ``rollouts.jsonl``'s) is
rebuilt from an env class or a DatasetBuilder as it is now, its replies fed back through
:class:`~mint_envkit.ScriptedPolicy` (the token-level path of training), and what they
score now compared with what they scored then. :func:`rescore` does it for a run (a
training run's ``log_path``, an evaluation's folder, a sweep's), before training on a
changed reward; ``mint-envkit check --record`` / ``--replay`` keep golden transcripts.

Example::

    # not run: reads your run folder and env
    from mint_envkit.replay import rescore

    report = await rescore("runs/math", "my_envs.py:MathEnv", split="train")
    print(report.text())
"""

from mint_envkit.replay.rescore import RescoreReport, rescore

__all__ = ["RescoreReport", "rescore"]
