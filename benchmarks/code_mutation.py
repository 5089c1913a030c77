"""How long the code audit takes: trivial programs and mutation testing in the sandbox.

Runs :func:`mint_envkit.auditing.code.audit_code` (no probes, no model) on the first
``--problems`` tasks of ``examples/code_tasks.py`` (each with its reference solution;
small functions, 0 to 10 mutants each), or with ``--synthetic`` on ``--problems``
generated tasks whose solution (a loop with three branches, 8 tests) has more than 20
places to change, so each gets the full ``--mutants`` at most per problem, through the default executor (bubblewrap, as
many runs at once as the machine has cores), ``--runs`` times in one process; prints
each run's figures (runs, seconds, runs per second) and their medians, and writes
``benchmarks/results/code_mutation.json``.

Example::

    python benchmarks/code_mutation.py --problems 32 --mutants 20 --runs 3
    python benchmarks/code_mutation.py --synthetic --problems 20 --mutants 20 --runs 3
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys

from _common import EXAMPLES, machine_info, write_result

from mint_envkit.auditing.code import audit_code
from mint_envkit.builders.group import GroupBuilder
from mint_envkit.sandbox.trivial import TRIVIAL_PROGRAMS

SYNTHETIC = """def score_{i}(xs):
    total = 0
    for x in xs:
        if x > {k}:
            total += x * 2
        elif x == 0:
            total -= 1
        else:
            total += 3 - x
    return total"""


def _inputs(k: int) -> list[list[int]]:
    return [[], [0], [1, 2, 3], [-4, 0, 9], [5, 5], [k], [k + 1, -1], [7, 0, -2, 3]]


def _synthetic(count: int) -> list[dict]:
    """``count`` tasks, each a small scoring loop; the expected values computed here."""
    problems = []
    for i in range(count):
        solution = SYNTHETIC.format(i=i, k=i % 4)
        namespace: dict = {}
        exec(solution, namespace)  # our own source, to compute the expected values
        function = namespace[f"score_{i}"]
        tests = [f"assert score_{i}({xs!r}) == {function(xs)!r}" for xs in _inputs(i % 4)]
        problems.append({"question": f"Write score_{i}(xs).", "tests": tests, "solution": solution})
    return problems


def _groups(count: int, synthetic: bool) -> list[GroupBuilder]:
    sys.path.insert(0, str(EXAMPLES))
    import code_tasks

    if synthetic:
        problems = _synthetic(count)
    else:
        problems = (code_tasks.code_problems() + code_tasks.code_problems(held_out=True))[:count]
    return [
        GroupBuilder(problem=p, env=code_tasks.CodeTaskEnv, group_size=1,
                     model_name="mint-envkit/tiny-qwen3", index=i)
        for i, p in enumerate(problems)
    ]  # fmt: skip


async def _once(groups: list[GroupBuilder], mutants: int) -> dict:
    code = await audit_code(groups, mutants=mutants, quiet=True)
    assert code is not None
    first = len(groups) * len(TRIVIAL_PROGRAMS) + sum(p.solution for p in code.problems)
    measured = [p for p in code.problems if p.mutants]
    mutated = sum(p.mutants for p in measured) + len(measured)  # each solution runs once more
    return {
        "first_runs": first,
        "first_s": code.seconds,
        "mutant_runs": mutated,
        "mutants": sum(p.mutants for p in measured),
        "survivors": sum(len(p.survivors) for p in measured),
        "mutation_s": code.mutation_seconds,
        "total_s": round(code.seconds + code.mutation_seconds, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--problems", type=int, default=32)
    parser.add_argument("--mutants", type=int, default=20)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument(
        "--synthetic", action="store_true", help="generated tasks, >20 mutants each"
    )
    args = parser.parse_args()
    groups = _groups(args.problems, args.synthetic)
    rows = []
    for number in range(args.runs):
        row = asyncio.run(_once(groups, args.mutants))
        rows.append(row)
        print(
            f"run {number + 1}: {len(groups)} problems; solutions + trivial programs "
            f"{row['first_runs']} runs in {row['first_s']:.1f} s "
            f"({row['first_runs'] / row['first_s']:.1f}/s); mutation {row['mutant_runs']} runs "
            f"({row['mutants']} mutants, {row['survivors']} survive) in {row['mutation_s']:.1f} s "
            f"({row['mutant_runs'] / max(row['mutation_s'], 1e-9):.1f}/s); total {row['total_s']:.1f} s",
            flush=True,
        )
    medians = {key: statistics.median(row[key] for row in rows) for key in rows[0]}
    print(f"median of {args.runs}: " + ", ".join(f"{k} {v}" for k, v in medians.items()))
    write_result(
        "code_mutation_synthetic" if args.synthetic else "code_mutation",
        {"args": vars(args), "runs": rows, "medians": medians, "machine": machine_info()},
    )


if __name__ == "__main__":
    main()
