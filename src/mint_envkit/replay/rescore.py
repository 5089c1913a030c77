"""Rescoring a run: its recorded replies, scored by the env as it is now.

Before training on a changed reward (a parser, a check, a reward value), rescore the
replies a run already sampled: each episode of ``RUN_DIR/rollouts.jsonl`` (or of each
``<label>/rollouts.jsonl`` of an evaluation's directory, each config's of a sweep's) is
rebuilt from its recorded problem, its replies go through the env's real scoring path
again (:class:`~mint_envkit.ScriptedPolicy`, every turn of a multi-turn env, the
group's rewards), and rescore reports which rewards, ``correct`` values, parse statuses
and turn counts changed: how many records, how many changed per field, the first
``--show`` changes with old -> new, and a summary line. The model and renderer are the
run's (``config.json``); each group's reply limit the one its records name (an
evaluation's, the loop's uncut evals'). ``mint-envkit rescore`` prints the report
(:meth:`RescoreReport.text`); see "Rescoring a run" in docs/getting-started.md.

Example::

    # not run: reads your run folder and env
    from mint_envkit.replay import rescore

    report = await rescore("runs/math", "my_envs.py:MathEnv")
    print(report.text())
    report.changed_records   # 0: the env scores the recorded replies as the run did
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.progress import text_table, track
from mint_envkit.replay.groups import COMPARED, problem_label, replay_group, show
from mint_envkit.replay.runs import RecordedRun, read_run, run_folders

FIELDS = ("error", *COMPARED)
"""The fields a rescore counts: ``error`` (the group no longer runs), then the compared ones."""


@attrs.frozen
class Rescored:
    """One changed field of one record.

    Attributes:
        run: the run folder, relative to RUN_DIR (``.`` for RUN_DIR itself).
        record: the record's number in its ``rollouts.jsonl`` (its Nth JSON line).
        step, split, group, member: where the record sits.
        problem: the problem's fields.
        field: ``reward``, ``correct``, ``parse_status``, ``turns`` or ``error``.
        recorded: the value the run recorded.
        now: the value the env gives now.

    Example::

        # not run: `report` comes from rescore()
        [(c.field, c.recorded, c.now) for c in report.changes][:1]   # [('reward', 0.0, -0.5)]
    """

    run: str
    record: int
    step: int
    split: str
    group: int
    member: int
    problem: dict[str, Any]
    field: str
    recorded: Any
    now: Any


@attrs.frozen
class RescoreReport:
    """What a rescore found: the runs it read, how many records, every change.

    Example::

        # not run: `report` comes from rescore()
        report.records, report.changed_records, report.counts()["reward"]   # (12, 8, 8)
    """

    run_dir: str
    env_spec: str
    runs: list[RecordedRun]
    changes: list[Rescored]

    @property
    def records(self) -> int:
        """How many episode records were rescored."""
        return sum(run.records for run in self.runs)

    @property
    def changed_records(self) -> int:
        """How many records changed in any field."""
        return len({(c.run, c.record) for c in self.changes})

    def counts(self) -> dict[str, int]:
        """How many records changed, per field (``error`` included)."""
        return {f: sum(1 for c in self.changes if c.field == f) for f in FIELDS}

    def text(self, *, show_first: int = 10) -> str:
        """The report in words (what ``mint-envkit rescore`` prints): each run read, the
        changes per field, the first ``show_first`` changes, the errors, a summary line.

        Example::

            # not run: `report` comes from rescore()
            print(report.text(show_first=5))
        """
        return report_text(self, show_first=show_first)

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (what ``mint-envkit rescore --json`` prints)."""
        return {
            "run_dir": self.run_dir,
            "env_spec": self.env_spec,
            "runs": [
                {
                    "folder": str(run.folder),
                    "model": run.model_name,
                    "renderer": run.renderer_name,
                    "records": run.records,
                    "groups": len(run.groups),
                    "failed_groups": run.failed_groups,
                    "unreadable_lines": run.unreadable,
                }
                for run in self.runs
            ],
            "records": self.records,
            "changed_records": self.changed_records,
            "changed": self.counts(),
            "changes": [attrs.asdict(change) for change in self.changes],
        }


def _relative(folder: Path, root: Path) -> str:
    try:
        return str(folder.relative_to(root))
    except ValueError:  # pragma: no cover - run_folders returns folders under root
        return str(folder)


async def rescore(
    run_dir: str | Path,
    env_spec: str,
    *,
    split: str | None = None,
    limit: int | None = None,
    env_args: Mapping[str, Any] | None = None,
) -> RescoreReport:
    """Rescore a run's (or an evaluation's, a sweep's) recorded episodes with ``env_spec``.

    ``split``: only the records of that split (``train``, ``test``, ``eval``, ...);
    ``limit``: only the first N groups of each run folder; ``env_args``: keyword
    arguments of the env's ``load_environment`` (``mint-envkit rescore --env-args``).

    Raises:
        MintEnvkitError: bad input: no rollouts, a record that lacks what rescore needs,
            records from before the ``problem`` field, an ENV_SPEC that does not load
            (each message names the file or record, and the fix).

    Example::

        # not run: reads your run folder
        report = await rescore("runs/math", "my_envs.py:MathEnv", split="train")
    """
    target = load_target(env_spec, env_args=env_args)
    if not isinstance(target, DatasetBuilder) and not callable(target):
        raise MintEnvkitError(f"{env_spec} is neither an env class nor a DatasetBuilder")
    root = Path(run_dir)
    runs = [read_run(f, target=target, split=split, limit=limit) for f in run_folders(root)]
    changes: list[Rescored] = []
    total = sum(len(run.groups) for run in runs)
    with track("rescore", total, "groups") as task:
        for run in runs:
            name = _relative(run.folder, root) if run.folder != root else "."
            for part in run.groups:
                for position, field, old, new in await replay_group(target, part.group):
                    changes.append(
                        Rescored(
                            run=name,
                            record=part.records[position],
                            step=part.step,
                            split=part.split,
                            group=part.group.index,
                            member=position,
                            problem=part.group.problem,
                            field=field,
                            recorded=old,
                            now=new,
                        )
                    )
                task.advance()
    return RescoreReport(run_dir=str(run_dir), env_spec=env_spec, runs=runs, changes=changes)


def report_text(report: RescoreReport, *, show_first: int = 10) -> str:
    """:meth:`RescoreReport.text`.

    Example::

        # not run: `report` comes from rescore()
        print(report_text(report, show_first=5))
    """
    several = len(report.runs) > 1
    lines = []
    for run in report.runs:
        where = f"{run.folder / 'rollouts.jsonl'}"
        renderer = run.renderer_name or "the builder's"
        skipped = []
        if run.failed_groups:
            skipped.append(f"{run.failed_groups} failed group(s) without episodes")
        if run.unreadable:
            skipped.append(f"{run.unreadable} unreadable line(s)")
        lines.append(
            f"rescore {where} with {report.env_spec}: {run.records} record(s) in "
            f"{len(run.groups)} group(s) (model {run.model_name}, renderer {renderer})"
            + (f"; skipped {', '.join(skipped)}" if skipped else "")
        )
    counts = report.counts()
    rows = [
        (field, f"{counts[field]} of {report.records}")
        for field in FIELDS
        if field != "error" or counts[field]
    ]
    lines.append(text_table([("field", "changed"), *rows], indent="  "))
    if report.changes and show_first > 0:
        shown = report.changes[:show_first]
        lines.append(f"the first {len(shown)} of {len(report.changes)} change(s), recorded -> now:")
        head = ("record", "step", "split", "group", "member", "problem", "field", "recorded", "now")
        rows = [
            (
                *([c.run] if several else []),
                str(c.record),
                str(c.step),
                c.split,
                str(c.group),
                str(c.member),
                problem_label(c.problem),
                c.field,
                show(c.field, c.recorded),
                _cut(c.now) if c.field == "error" else show(c.field, c.now),
            )
            for c in shown
        ]
        lines.append(text_table([("run", *head) if several else head, *rows], indent="  "))
    errors = sorted({c.now for c in report.changes if c.field == "error"})
    for message in errors:
        count = sum(c.now == message for c in report.changes)
        lines.append(f"error of {count} record(s): {message}")
    lines.append(summary_line(report))
    return "\n".join(lines)


def _cut(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def summary_line(report: RescoreReport) -> str:
    """The last line: how many records changed, in which fields.

    Example::

        # not run: `report` comes from rescore()
        summary_line(report)
        # 'rescore: 8 of 12 record(s) changed (reward 8, parse_status 4); check the new ...'
    """
    if not report.changes:
        return (
            f"rescore: none of the {report.records} record(s) changed "
            f"({', '.join(COMPARED)}): the env scores the recorded replies as the run did"
        )
    fields = ", ".join(f"{f} {n}" for f, n in report.counts().items() if n)
    return (
        f"rescore: {report.changed_records} of {report.records} record(s) changed ({fields}); "
        "check the new scores before training with this env"
    )
