"""The reward zoo: the audit's catch rate on envs with one real bug each, and its false
alarms on their clean twins.

    python benchmarks/reward_zoo/run.py                 # every case, 2 processes
    python benchmarks/reward_zoo/run.py --only nan_tolerance --only mc_position_bias
    python benchmarks/reward_zoo/run.py --family code --jobs 1
    python benchmarks/reward_zoo/run.py --set heldout    # only the held-out set
    python benchmarks/reward_zoo/run.py --record --label after   # rewrite recorded.json
    python benchmarks/reward_zoo/run.py --list          # the cases and their sources

For each case the audit runs with probes only (``sample_model=None``, as
``mint-envkit audit ENV --sample-model none``) on the buggy env and on its clean twin.
It prints a markdown table (per env: caught, warned, missed or error, and the finding
kinds; per twin: clean or false alarm), then the catch rate, the false alarms and the
wall time, and writes every row as JSON to ``benchmarks/results/reward_zoo.json``
(``--out``); ``--json`` prints that JSON instead of the table. ``--record`` also writes
``benchmarks/reward_zoo/recorded.json``, the table tests/auditing/test_zoo.py holds the
audit to.

Exit status: 0 when no clean twin raised an alarm, the audit raised on nothing, and no
bug the recorded table says is caught was missed; 1 otherwise; 2 for a usage error (an
unknown case or family); 3 when the zoo itself failed.
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import platform
import resource
import shlex
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
sys.path.insert(0, str(HERE.parent))

from reward_zoo.measure import measure_case  # noqa: E402
from reward_zoo.zoo import FAMILIES, load_all  # noqa: E402

RECORDED = HERE / "recorded.json"
BEFORE = HERE / "recorded_before.json"
DOCS = (ROOT / "docs" / "audit.md", ROOT / "docs" / "benchmarks.md")
START, END = "<!-- reward-zoo-table: start -->", "<!-- reward-zoo-table: end -->"
DEFAULT_OUT = ROOT / "benchmarks" / "results" / "reward_zoo.json"
COMMAND = "python benchmarks/reward_zoo/run.py"


def _git(*args: str) -> str:
    try:
        done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    except OSError:
        return ""
    return done.stdout.strip()


def _machine() -> dict[str, Any]:
    return {
        "nproc": os.cpu_count(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "loadavg_start": list(os.getloadavg()),
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }


OVERRIDES: dict[str, Any] = {}
"""Options given to every audit of this run (``--mutants``); set before the workers fork."""


def cpu_seconds() -> float:
    """User and system CPU seconds of this process and its waited-for children (the pool's
    workers and their sandboxes): what the run costs whatever the machine's load."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def _one(name: str) -> dict[str, Any]:
    return measure_case(load_all()[name], **OVERRIDES)


def run_cases(names: list[str], jobs: int) -> list[dict[str, Any]]:
    """Every case's row, measured in ``jobs`` processes (in the order of ``names``)."""
    if jobs <= 1:
        return [_one(name) for name in names]
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    context = multiprocessing.get_context("fork")
    with context.Pool(jobs, maxtasksperchild=None) as pool:
        rows = {row["name"]: row for row in pool.imap_unordered(_one, names, chunksize=1)}
    return [rows[name] for name in names]


def recorded() -> dict[str, Any]:
    """The recorded table (``recorded.json``), or an empty one."""
    if not RECORDED.is_file():
        return {"cases": []}
    return json.loads(RECORDED.read_text())


def counts(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and rates over ``rows``."""
    bugs = Counter(row["buggy"]["verdict"] for row in rows)
    twins = Counter(row["clean"]["verdict"] for row in rows)
    n = len(rows)
    return {
        "cases": n,
        "caught": bugs["caught"],
        "warned": bugs["warned"],
        "missed": bugs["missed"],
        "audit_errors": bugs["error"],
        "catch_rate": bugs["caught"] / n if n else None,
        "clean_twins": twins["clean"],
        "false_alarms": twins["false_alarm"],
        "twin_errors": twins["error"],
    }


def summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Counts and rates over the original cases of ``rows``, and under ``"heldout"`` the
    same over its held-out cases (the generalisation measure, reported apart)."""
    return {
        **counts([row for row in rows if not row.get("heldout")]),
        "heldout": counts([row for row in rows if row.get("heldout")]),
    }


def regressions(rows: list[dict[str, Any]], record: dict[str, Any]) -> list[str]:
    """Cases the recorded table says are caught and that were not caught now."""
    was = {row["name"]: row["buggy"]["verdict"] for row in record.get("cases", [])}
    return [
        r["name"]
        for r in rows
        if was.get(r["name"]) == "caught" and r["buggy"]["verdict"] != "caught"
    ]


def improvements(rows: list[dict[str, Any]], record: dict[str, Any]) -> list[str]:
    """Cases caught now that the recorded table does not say are caught."""
    was = {row["name"]: row["buggy"]["verdict"] for row in record.get("cases", [])}
    return [
        r["name"]
        for r in rows
        if r["buggy"]["verdict"] == "caught" and was.get(r["name"]) != "caught"
    ]


def _kinds(keys: list[str], limit: int = 4) -> str:
    by_kind: dict[str, list[str]] = {}
    for key in keys:
        kind, _, probe = key.partition(":")
        by_kind.setdefault(kind, []).append(probe)
    parts = []
    for kind, probes in by_kind.items():
        shown = ", ".join(probes[:limit]) + (
            f", +{len(probes) - limit}" if len(probes) > limit else ""
        )
        parts.append(f"{kind} ({shown})")
    return "; ".join(parts)


def _bug_cell(result: dict[str, Any]) -> tuple[str, str]:
    verdict = result["verdict"]
    if verdict == "caught":
        return "**caught**", _kinds(result["failing"])
    if verdict == "warned":
        return "warned", _kinds(result.get("new_warnings", []))
    if verdict == "error":
        return "error", f"audit raised {result['error'].split(':')[0]}"
    return "missed", ""


def _twin_cell(result: dict[str, Any]) -> str:
    if result["verdict"] == "false_alarm":
        return f"**FALSE ALARM**: {_kinds(result['failing'])}"
    if result["verdict"] == "error":
        return f"error: audit raised {result['error'].split(':')[0]}"
    return "clean"


def table(rows: list[dict[str, Any]], before: list[dict[str, Any]] | None = None) -> str:
    """The markdown table: one row per case, by family; with ``before`` (the rows of an
    earlier run), a column with that run's verdict on each bug."""
    was = {row["name"]: row["buggy"]["verdict"] for row in before or []}
    head = "| env | family | the bug |" + (" before |" if before else "") + " audit on the bug |"
    lines = [
        head + " finding kinds | audit on the twin |",
        "|---|---|---|" + ("---|" if before else "") + "---|---|---|",
    ]
    order = {family: i for i, family in enumerate(FAMILIES)}
    for row in sorted(rows, key=lambda r: order[r["family"]]):
        verdict, kinds = _bug_cell(row["buggy"])
        bug = row["bug"].replace("|", "\\|")
        earlier = f" {was.get(row['name'], '-')} |" if before else ""
        lines.append(
            f"| `{row['name']}` | {row['family']} | {bug} |{earlier} {verdict} | {kinds} | "
            f"{_twin_cell(row['clean'])} |"
        )
    return "\n".join(lines)


def _rate(s: dict[str, Any]) -> str:
    return "-" if s["catch_rate"] is None else f"{100 * s['catch_rate']:.1f}%"


def heldout_line(report: dict[str, Any]) -> str | None:
    """The held-out set's line, or None when the run had no held-out case."""
    h = report["summary"].get("heldout")
    if not h or not h["cases"]:
        return None
    return (
        f"held-out set (the generalisation measure: cases written after the rules, from bug "
        f"classes the audit's authors were not shown): {h['caught']} of {h['cases']} caught "
        f"({_rate(h)}); warned only {h['warned']}, missed {h['missed']}, audit errors "
        f"{h['audit_errors']}; clean twins {h['clean_twins']}/{h['cases']}, false alarms "
        f"{h['false_alarms']}, twin errors {h['twin_errors']}"
    )


def summary_lines(report: dict[str, Any]) -> list[str]:
    """The summary: the original cases' catch rate, their twins, the run; then the
    held-out set's line when it ran."""
    s = report["summary"]
    cpu = f" ({report['cpu_s']:.0f} CPU seconds)" if report.get("cpu_s") is not None else ""
    held = heldout_line(report)
    return [
        f"caught {s['caught']}/{s['cases']} ({_rate(s)}); warned only {s['warned']}, missed "
        f"{s['missed']}, audit errors {s['audit_errors']}",
        f"clean twins {s['clean_twins']}/{s['cases']}; false alarms {s['false_alarms']}, "
        f"twin errors {s['twin_errors']}",
        f"wall time {report['wall_s']:.1f} s{cpu} with "
        f"{report['jobs']} process(es) "
        f"(audits: probes only, no model), load average {report['machine']['loadavg_start'][0]:.1f} "
        f"at the start on {report['machine']['nproc']} cores, commit {report['commit'][:10] or '?'}"
        f"{' +changes' if report['dirty'] else ''}",
        *([held] if held else []),
    ]


def docs_block(report: dict[str, Any], before: dict[str, Any] | None) -> str:
    """What the docs carry between their markers: the command, the summary, the table."""
    lines = [START, "", f"Measured with `{report['command']}`:", ""]
    lines += [f"- {line}" for line in summary_lines(report)]
    if before:
        lines.append(f"- before ({before['label']}): {summary_lines(before)[0]}")
        lines.append(f"- before: {summary_lines(before)[2]}")
    original = [row for row in report["cases"] if not row.get("heldout")]
    heldout = [row for row in report["cases"] if row.get("heldout")]
    lines += ["", table(original, before["cases"] if before else None), ""]
    if heldout:
        lines += ["The held-out set:", "", table(heldout), ""]
    lines.append(END)
    return "\n".join(lines)


def write_docs(report: dict[str, Any], before: dict[str, Any] | None) -> list[Path]:
    """Replace the block between the markers in each of :data:`DOCS`."""
    block = docs_block(report, before)
    written = []
    for path in DOCS:
        text = path.read_text()
        if START not in text or END not in text:
            raise RuntimeError(f"{path} has no {START} ... {END} block to fill")
        head, rest = text.split(START, 1)
        tail = rest.split(END, 1)[1]
        path.write_text(head + block + tail)
        written.append(path)
    return written


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=COMMAND,
        description=__doc__.split("\n\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--only", action="append", default=[], metavar="NAME", help="run this case (repeat it)"
    )
    parser.add_argument(
        "--family", action="append", default=[], choices=FAMILIES, help="run this family"
    )
    parser.add_argument(
        "--jobs", type=int, default=min(2, os.cpu_count() or 1), help="processes (default 2)"
    )
    parser.add_argument(
        "--set",
        choices=("all", "original", "heldout"),
        default="all",
        help="run the original cases, the held-out set, or both (default all)",
    )
    parser.add_argument("--json", action="store_true", help="print the JSON report, not the table")
    parser.add_argument(
        "--out",
        default=str(DEFAULT_OUT),
        help=f"write the JSON here (default {DEFAULT_OUT.relative_to(ROOT)})",
    )
    parser.add_argument(
        "--record", action="store_true", help=f"also write {RECORDED.relative_to(ROOT)}"
    )
    parser.add_argument(
        "--label", default="", help="a label kept in the JSON (e.g. 'before', 'after')"
    )
    parser.add_argument(
        "--list", action="store_true", help="list the cases and their sources, run nothing"
    )
    parser.add_argument(
        "--mutants",
        type=int,
        default=None,
        metavar="N",
        help="mutants per code problem, for an audit with mutation testing (default: the audit's)",
    )
    parser.add_argument(
        "--docs",
        action="store_true",
        help="write the recorded table into docs/audit.md and docs/benchmarks.md, run nothing",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    cases = load_all()
    unknown = [name for name in args.only if name not in cases]
    if unknown or args.jobs < 1:
        what = f"unknown case(s) {unknown}; see --list" if unknown else "--jobs must be at least 1"
        print(f"{COMMAND}: {what}", file=sys.stderr)
        return 2
    names = [
        name
        for name, case in cases.items()
        if (not args.only or name in args.only)
        and (not args.family or case.family in args.family)
        and (args.set == "all" or case.heldout == (args.set == "heldout"))
    ]
    if args.docs:
        before = json.loads(BEFORE.read_text()) if BEFORE.is_file() else None
        for path in write_docs(recorded(), before):
            print(f"wrote {path.relative_to(ROOT)}")
        return 0
    if args.list:
        for name in names:
            case = cases[name]
            print(f"{name} [{case.family}]: {case.bug}\n    {case.source}")
        return 0
    if args.mutants is not None:
        OVERRIDES["mutants"] = args.mutants
    machine = _machine()  # the load average at the start, before the zoo adds its own
    started, cpu_started = time.perf_counter(), cpu_seconds()
    rows = run_cases(names, args.jobs)
    machine["loadavg_end"] = list(os.getloadavg())
    report = {
        "command": " ".join([COMMAND, shlex.join(argv if argv is not None else sys.argv[1:])]),
        "label": args.label,
        "commit": _git("rev-parse", "HEAD"),
        "dirty": bool(_git("status", "--short", "src")),  # the audit measured is not a commit
        "jobs": args.jobs,
        "audit_options": dict(OVERRIDES),
        "wall_s": round(time.perf_counter() - started, 2),
        "cpu_s": round(cpu_seconds() - cpu_started, 2),
        "machine": machine,
        "summary": summary(rows),
        "cases": rows,
    }
    record = recorded()
    report["regressions"] = regressions(rows, record)
    report["newly_caught"] = improvements(rows, record)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2) + "\n")
    if args.record:
        RECORDED.write_text(json.dumps(report, indent=2) + "\n")
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        original = [row for row in rows if not row["heldout"]]
        heldout = [row for row in rows if row["heldout"]]
        if original:
            print(table(original))
        if heldout:
            print(f"{chr(10) if original else ''}The held-out set:\n")
            print(table(heldout))
        print()
        print("\n".join(summary_lines(report)))
        if report["newly_caught"]:
            print(f"newly caught (not in the recorded table): {', '.join(report['newly_caught'])}")
        if report["regressions"]:
            print(
                f"REGRESSION: recorded as caught, not caught now: {', '.join(report['regressions'])}"
            )
        print(f"JSON: {out}")
    bad = report["regressions"] or any(
        s["false_alarms"] or s["twin_errors"] or s["audit_errors"]
        for s in (report["summary"], report["summary"]["heldout"])
    )
    return 1 if bad else 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as err:  # the zoo itself failed: say so, status 3
        print(f"{COMMAND}: internal error: {type(err).__name__}: {err}", file=sys.stderr)
        raise SystemExit(3) from err
