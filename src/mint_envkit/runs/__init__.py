"""The run layer: what a run writes and how it is read back, in one place.

A training run, an evaluation, an audit and a sweep write the same kinds of files: a
run folder (``config.json``, ``metrics.jsonl``, ``checkpoints.jsonl``,
``rollouts.jsonl``), JSON written whole (:mod:`mint_envkit.runs.files`), and the
experiment trackers that mirror the metrics rows (:mod:`mint_envkit.runs.trackers`).
Everything above reads them back through this layer, so a file format has one owner.

Example::

    from mint_envkit.runs.files import RunFiles

    files = RunFiles("runs/demo")
    files.ensure()
    files.append_metrics({"step": 0, "env/all/reward/total": 0.5})
    assert files.metrics() == [{"step": 0, "env/all/reward/total": 0.5}]
"""

from mint_envkit.runs.files import RunFiles, read_jsonl

__all__ = ["RunFiles", "read_jsonl"]
