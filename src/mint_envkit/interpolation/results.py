"""The records of an interpolation sweep: one point, the whole sweep, its table and CSV.

Example::

    import json

    from mint_envkit.interpolation.results import InterpolationPoint, InterpolationSweep

    def point(name, a, reward):  # what interpolation_sweep records for each grid point
        return InterpolationPoint(name=name, coefficients=(1 - a, a), path=f"ckpt/{name}",
                                  status="ok", figures={"mean_reward": reward, "correct": reward,
                                                        "pass@1": reward, "pass@4": 2 * reward})

    result = InterpolationSweep(root=".", checkpoints=("ckpt/a", "ckpt/b"),
                                points=(point("c1p0-0p0", 0.0, 0.2), point("c0p5-0p5", 0.5, 0.4)))
    assert [p.coefficients for p in result.points] == [(1.0, 0.0), (0.5, 0.5)]

    line = '{"name": "c0p5-0p5", "coefficients": [0.5, 0.5], "path": "ckpt/c0p5-0p5", ' \\
           '"status": "ok", "figures": {"mean_reward": 0.4}}'  # a line of results.jsonl
    assert InterpolationPoint.from_record(json.loads(line)).figures["mean_reward"] == 0.4
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import attrs

from mint_envkit.progress import text_table
from mint_envkit.runs.files import write_text_atomic
from mint_envkit.runs.store import utc_now

INTERPOLATION_MANIFEST = "interpolation.json"
"""The manifest of an interpolation sweep root.

Example::

    # not run: needs the root of an interpolation_sweep, which needs checkpoints and a backend
    json.loads((Path(root) / INTERPOLATION_MANIFEST).read_text())["checkpoints"]
"""
INTERPOLATION_CSV = "interpolation.csv"
"""The table of an interpolation sweep root.

Example::

    assert result.write_csv() == Path(result.root) / INTERPOLATION_CSV
"""
INTERPOLATION_PNG = "interpolation.png"
"""The figure of an interpolation sweep root (written when matplotlib is installed).

Example::

    from mint_envkit.interpolation.plot import plot_interpolation

    plot_interpolation(result, Path(result.root) / INTERPOLATION_PNG)
    assert (Path(result.root) / INTERPOLATION_PNG).is_file()  # with matplotlib installed
"""

FIGURES = ("mean_reward", "correct", "baseline", "parse_failure_rate")
"""The figures of every point (``baseline``: the best trivial baseline's correctness),
besides ``pass@k`` for each k the evaluation reports.

Example::

    "baseline" in FIGURES   # True
"""


@attrs.frozen
class InterpolationPoint:
    """One grid point: its coefficients, its checkpoint and its evaluation figures.

    Attributes:
        name: the point's name (``c`` and the coefficients, e.g. ``c0p5-0p5``).
        coefficients: one per sweep checkpoint.
        path: the interpolated sampler checkpoint (None when interpolation failed).
        status: ``"ok"`` or ``"error"`` (then ``error`` says why).
        figures: ``mean_reward``, ``correct``, ``baseline`` (the best trivial
            baseline's correctness), ``parse_failure_rate`` and ``pass@k`` for each reported k (None when
            the env reports no such figure).

    Example::

        point = InterpolationPoint(name="c0p5-0p5", coefficients=(0.5, 0.5),
                                   path="ckpt/c0p5-0p5", status="ok",
                                   figures={"mean_reward": 0.4, "pass@1": 0.5})
        assert (point.figures["mean_reward"], point.figures["pass@1"]) == (0.4, 0.5)
    """

    name: str
    coefficients: tuple[float, ...]
    path: str | None
    status: str
    figures: dict[str, float | None] = attrs.field(factory=dict)
    error: str | None = None

    def record(self) -> dict[str, Any]:
        """The point as a ``results.jsonl`` line.

        Example::

            point = InterpolationPoint(name="c0p5-0p5", coefficients=(0.5, 0.5),
                                       path="ckpt/c0p5-0p5", status="ok")
            assert point.record()["coefficients"] == [0.5, 0.5]
        """
        return {
            "name": self.name,
            "coefficients": list(self.coefficients),
            "path": self.path,
            "status": self.status,
            "figures": self.figures,
            "error": self.error,
            "time": utc_now(),
        }

    @classmethod
    def from_record(cls, record: Mapping[str, Any]) -> InterpolationPoint:
        """Inverse of :meth:`record`.

        Example::

            import json

            point = InterpolationPoint(name="c0p5-0p5", coefficients=(0.5, 0.5),
                                       path="ckpt/c0p5-0p5", status="ok")
            line = json.dumps(point.record())  # a line of results.jsonl
            assert InterpolationPoint.from_record(json.loads(line)) == point
            assert InterpolationPoint.from_record(json.loads(line)).status == "ok"
        """
        return cls(
            name=str(record["name"]),
            coefficients=tuple(float(c) for c in record["coefficients"]),
            path=record.get("path"),
            status=str(record.get("status", "error")),
            figures=dict(record.get("figures") or {}),
            error=record.get("error"),
        )


@attrs.frozen
class InterpolationSweep:
    """A finished (or resumed) interpolation sweep: its checkpoints and its points in grid order.

    Example::

        # result = await interpolation_sweep(...) returns one; the module's example builds one
        print(result.table())
        assert result.best("correct").coefficients == (0.5, 0.5)
    """

    root: str
    checkpoints: tuple[str, ...]
    points: tuple[InterpolationPoint, ...]

    def columns(self) -> list[str]:
        """The figure columns of the table: the fixed ones, then every ``pass@k`` reported.

        Example::

            assert result.columns() == ["mean_reward", "correct", "baseline",
                                        "parse_failure_rate", "pass@1", "pass@4"]
        """
        ks = sorted(
            {k for p in self.points for k in p.figures if k.startswith("pass@")},
            key=lambda k: int(k.split("@")[1]),
        )
        return [*FIGURES, *ks]

    def table(self) -> str:
        """The points as an aligned text table, one row per point.

        Example::

            print(result.table())
            # point     coefficients  mean_reward  correct  ...  pass@1  pass@4  status
            # c1p0-0p0  1, 0          0.200        0.200    ...  0.200   0.400   ok
            # c0p5-0p5  0.5, 0.5      0.400        0.400    ...  0.400   0.800   ok
            assert result.table().splitlines()[2].startswith("c0p5-0p5  0.5, 0.5      0.400")
        """
        head = ["point", "coefficients", *self.columns(), "status"]
        rows = [head]
        for p in self.points:
            cells = [_cell(p.figures.get(c)) for c in self.columns()]
            coefs = ", ".join(f"{c:g}" for c in p.coefficients)
            rows.append([p.name, coefs, *cells, p.status if p.error is None else "error"])
        return text_table(rows)

    def best(self, figure: str = "mean_reward") -> InterpolationPoint | None:
        """The finished point with the highest ``figure`` (None when no point has it).

        Example::

            assert result.best("correct").path == "ckpt/c0p5-0p5"
            assert result.best("no such figure") is None
        """
        scored = [p for p in self.points if isinstance(p.figures.get(figure), (int, float))]
        return max(scored, key=lambda p: float(p.figures[figure] or 0.0), default=None)

    def write_csv(self) -> Path:
        """Write ``ROOT/interpolation.csv`` (one row per point) and return its path.

        Example::

            assert result.write_csv() == Path("interpolation.csv")  # under result.root
        """
        head = ["point", *[f"c{i}" for i in range(len(self.checkpoints))], *self.columns()]
        lines = [",".join([*head, "path", "status"])]
        for p in self.points:
            values = [_csv(p.figures.get(c)) for c in self.columns()]
            coefs = [repr(c) for c in p.coefficients]
            lines.append(",".join([p.name, *coefs, *values, p.path or "", p.status]))
        path = Path(self.root) / INTERPOLATION_CSV
        write_text_atomic(path, "\n".join(lines) + "\n")
        return path


def _cell(value: Any) -> str:
    return "-" if not isinstance(value, (int, float)) else f"{float(value):.3f}"


def _csv(value: Any) -> str:
    return "" if not isinstance(value, (int, float)) else repr(float(value))
