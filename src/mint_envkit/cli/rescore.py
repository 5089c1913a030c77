"""``mint-envkit rescore RUN_DIR ENV_SPEC``: a run's recorded replies, scored by the env as it is now.

Before training on a changed reward (a parser, a check, a reward value), rescore the
replies a run already sampled: each episode of ``RUN_DIR/rollouts.jsonl`` (or of each
``<label>/rollouts.jsonl`` of an evaluation's directory, each config's of a sweep's) is
rebuilt from its recorded problem, its replies go through the env's real scoring path
again (:class:`~mint_envkit.ScriptedPolicy`, every turn of a multi-turn env, the
group's rewards), and rescore reports which rewards, ``correct`` values, parse statuses
and turn counts changed: how many records, how many changed per field, the first
``--show`` changes with old -> new, and a summary line. The model and renderer are the
run's (``config.json``); see "Rescoring a run" in docs/getting-started.md.

Exit status: 0 when nothing changed, 1 when something did, 2 on bad input (no
rollouts, a record without the fields rescore needs, records from before the
``problem`` field, an ENV_SPEC that does not load).

Example (shell)::

    mint-envkit rescore runs/math my_envs.py:MathEnv
    mint-envkit rescore runs/eval-math my_envs.py:builder --split eval --limit 20 --json rescore.json
"""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.builders.dataset import DatasetBuilder
from mint_envkit.cli.replay import COMPARED, print_table, problem_label, replay_group, show
from mint_envkit.cli.rescore_records import RecordedRun, read_run, run_folders
from mint_envkit.errors import MintEnvkitError
from mint_envkit.evaluation.spec import load_target
from mint_envkit.progress import track
from mint_envkit.runs.files import write_json_atomic

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

    def as_json(self) -> dict[str, Any]:
        """The report as JSON-ready data (what ``--json FILE`` writes)."""
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
    run_dir: str | Path, env_spec: str, *, split: str | None = None, limit: int | None = None
) -> RescoreReport:
    """Rescore a run's (or an evaluation's, a sweep's) recorded episodes with ``env_spec``.

    ``split``: only the records of that split (``train``, ``test``, ``eval``, ...);
    ``limit``: only the first N groups of each run folder.

    Raises:
        MintEnvkitError: bad input: no rollouts, a record that lacks what rescore needs,
            records from before the ``problem`` field, an ENV_SPEC that does not load
            (each message names the file or record, and the fix).

    Example::

        # not run: reads your run folder
        report = await rescore("runs/math", "my_envs.py:MathEnv", split="train")
    """
    target = load_target(env_spec)
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


def print_report(report: RescoreReport, *, show_first: int = 10) -> None:
    """Print the report: each run read, the changes per field, the first changes, a summary.

    Example::

        # not run: `report` comes from rescore()
        print_report(report, show_first=5)
    """
    several = len(report.runs) > 1
    for run in report.runs:
        where = f"{run.folder / 'rollouts.jsonl'}"
        renderer = run.renderer_name or "the builder's"
        skipped = []
        if run.failed_groups:
            skipped.append(f"{run.failed_groups} failed group(s) without episodes")
        if run.unreadable:
            skipped.append(f"{run.unreadable} unreadable line(s)")
        print(
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
    print_table(("field", "changed"), rows)
    if report.changes and show_first > 0:
        shown = report.changes[:show_first]
        print(f"the first {len(shown)} of {len(report.changes)} change(s), recorded -> now:")
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
        print_table(("run", *head) if several else head, rows)
    errors = sorted({c.now for c in report.changes if c.field == "error"})
    for message in errors:
        print(f"error of {sum(c.now == message for c in report.changes)} record(s): {message}")
    print(summary_line(report))


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


def configure(parser: argparse.ArgumentParser) -> None:
    """Add the command's options to ``parser``.

    Example::

        configure(argparse.ArgumentParser(prog="mint-envkit rescore"))
    """
    parser.description = (
        "Score a run's recorded replies (RUN_DIR/rollouts.jsonl, or each <label>/rollouts.jsonl "
        "of an evaluation's directory) with the env as it is now and report which rewards, "
        "correct values, parse statuses and turn counts changed. Exit 0: nothing changed, "
        "1: something did, 2: bad input."
    )
    parser.add_argument("run_dir", metavar="RUN_DIR", help="a run's log_path or an eval's --out")
    parser.add_argument("target", metavar="ENV_SPEC", help="MODULE:NAME or path/to/file.py:NAME")
    parser.add_argument("--split", default=None, help="only this split's records (train, eval...)")
    parser.add_argument("--limit", type=int, default=None, help="only the first N groups of a run")
    parser.add_argument(
        "--show", type=int, default=10, metavar="N", help="list the first N changes (default 10)"
    )
    parser.add_argument("--json", default=None, metavar="FILE", help="also write the report here")


def run(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    """``mint-envkit rescore RUN_DIR ENV_SPEC``; 0 nothing changed, 1 a change, 2 bad input.

    Example::

        main(["rescore", "runs/math", "my_envs.py:MathEnv", "--json", "rescore.json"])
    """
    for name in ("limit", "show"):
        value = getattr(args, name)
        if value is not None and value < (1 if name == "limit" else 0):
            parser.error(f"--{name} must be {'>= 1' if name == 'limit' else '>= 0'}, got {value}")
    try:
        report = asyncio.run(rescore(args.run_dir, args.target, split=args.split, limit=args.limit))
        if args.json:
            write_json_atomic(args.json, report.as_json())
    except MintEnvkitError as err:
        print(f"mint-envkit rescore: {err}", file=sys.stderr)
        return 2
    print_report(report, show_first=args.show)
    if args.json:
        print(f"wrote {args.json}")
    return 1 if report.changes else 0
