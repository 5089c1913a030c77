"""An evaluation's folder in the viewer: its problems, and its figures as a held-out evaluation.

``mint-envkit eval --out DIR`` (or ``evaluate(..., out_dir=DIR)``) writes, see
:mod:`mint_envkit.evaluation.files`: ``DIR/results.jsonl`` (one line per checkpoint
``label``, ``split`` and problem ``index``, with the ``problem`` dict),
``DIR/summary.json``, and one run folder ``DIR/<label>`` per checkpoint whose
``metrics.jsonl`` is one line of ``eval/`` figures at step 0 and whose
``rollouts.jsonl`` records have split ``eval`` (``eval:<split>`` when both splits
ran) and the problem's index as ``group``. The viewer reads ``DIR`` as a sweep of those
runs; this module gives it what the run format leaves out: each episode's problem
(the secret of a guessing game is in no message). Its figures are read as a held-out
evaluation's (:class:`~mint_envkit.runs.record.Figures` of split ``eval``), so the runs
table, the collapse banner and the baseline show them as they do for a training run.

Example::

    from mint_envkit.view.evals import is_eval_line, problems_by_label

    is_eval_line({"step": 0, "eval/correct": 0.5})   # True
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from mint_envkit.runs.record import EVAL, FINAL, TEST, is_eval_row


def is_eval_line(line: Mapping[str, Any]) -> bool:
    """Whether a metrics line is an evaluation's: its figures and no training eval's.

    Example::

        is_eval_line({"step": 0, "eval/correct": 0.5})           # True
        is_eval_line({"step": 0, "test/env/all/correct": 0.5})   # False
    """
    return is_eval_row(line, EVAL) and not any(is_eval_row(line, s) for s in (TEST, FINAL))


def problems_by_label(lines: Iterable[Mapping[str, Any]]) -> dict[str, dict[Any, Any]]:
    """``results.jsonl`` lines as ``label -> {(split, index): problem}``.

    An index that only one split has is also under ``(None, index)`` (what a record of
    split ``eval`` looks up). A line without a text ``label``, a ``problem`` or an
    integer ``index`` is left out.

    Example::

        problems_by_label([{"label": "base", "split": "test", "index": 3,
                            "problem": {"secret": 37}}])
        # {'base': {('test', 3): {'secret': 37}, (None, 3): {'secret': 37}}}
    """
    out: dict[str, dict[Any, Any]] = {}
    for line in lines:
        label, index, problem = line.get("label"), line.get("index"), line.get("problem")
        if isinstance(label, str) and type(index) is int and problem is not None:
            out.setdefault(label, {})[(str(line.get("split")), index)] = problem
    for found in out.values():
        splits: dict[int, list[Any]] = {}
        for (_, index), problem in found.items():
            splits.setdefault(index, []).append(problem)
        found.update({(None, i): ps[0] for i, ps in splits.items() if len(ps) == 1})
    return out


def problem_of(record: Mapping[str, Any], problems: Mapping[Any, Any]) -> Any:
    """The problem of an evaluation's rollout record (see :func:`problems_by_label`), or None.

    The record's ``group`` is the problem's index; its split ``eval:<split>`` names the
    split, and a plain ``eval`` means the one split that has that index.

    Example::

        problem_of({"split": "eval", "group": 3}, {(None, 3): {"secret": 37}})
        # {'secret': 37}
    """
    split, group = record.get("split"), record.get("group")
    if type(group) is not int:
        return None
    if isinstance(split, str) and split.startswith("eval:"):
        return problems.get((split[len("eval:") :], group))
    return problems.get((None, group))
