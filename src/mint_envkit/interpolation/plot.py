"""The interpolation sweep's figure (``interpolation.png``): each figure along the grid.

With two checkpoints the x axis is the second checkpoint's coefficient ``a`` (the
point ``(1 - a, a)``); with more, the points in grid order, labelled by their
coefficients. One line per figure (mean reward, correct, pass@1, pass@K), the
best trivial baseline dashed.

Example::

    from mint_envkit.interpolation.results import InterpolationPoint, InterpolationSweep

    def point(name, a, reward):  # what interpolation_sweep records for each grid point
        return InterpolationPoint(name=name, coefficients=(1 - a, a), path=f"ckpt/{name}",
                                  status="ok", figures={"mean_reward": reward, "correct": reward,
                                                        "pass@1": reward, "pass@4": 2 * reward})

    result = InterpolationSweep(root=".", checkpoints=("ckpt/a", "ckpt/b"),
                                points=(point("c1p0-0p0", 0.0, 0.2), point("c0p5-0p5", 0.5, 0.4)))
    assert plot_interpolation(result, Path("interpolation.png")) == Path("interpolation.png")
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from mint_envkit.runs.files import replacing

if TYPE_CHECKING:
    from mint_envkit.interpolation.results import InterpolationSweep


def _series(result: InterpolationSweep) -> list[tuple[str, str, str]]:
    """``(figure key, label, line style)`` of each line, the passes at 1 and at the largest k."""
    ks = [c for c in result.columns() if c.startswith("pass@")]
    lines = [("mean_reward", "mean reward", "-"), ("correct", "correct", "-")]
    lines += [(k, k, ":") for k in dict.fromkeys(ks[:1] + ks[-1:])]
    lines.append(("baseline", "best trivial baseline", "--"))
    return lines


def plot_interpolation(result: InterpolationSweep, path: Path) -> Path | None:
    """Draw the sweep's figures against the coefficients into ``path`` (None without matplotlib).

    Example::

        path = plot_interpolation(result, Path(result.root) / "interpolation.png")
        assert path is None or path.is_file()  # None without matplotlib
    """
    try:
        import matplotlib  # noqa: F401  (the package itself: its submodules may be cached)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    points = [p for p in result.points if p.status == "ok"]
    if not points:
        return None
    two = len(result.checkpoints) == 2
    xs: list[Any] = [p.coefficients[1] for p in points] if two else list(range(len(points)))
    figure = Figure(figsize=(max(6.0, 0.7 * len(points) + 3.0), 4.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot(1, 1, 1)
    for key, label, style in _series(result):
        ys = [p.figures.get(key) for p in points]
        if not any(isinstance(y, (int, float)) for y in ys):
            continue
        pairs = [(x, y) for x, y in zip(xs, ys, strict=True) if isinstance(y, (int, float))]
        axes.plot([x for x, _ in pairs], [y for _, y in pairs], style, marker="o", label=label)
    title = "checkpoint interpolation"
    if two:
        names = [_short(c) for c in result.checkpoints]
        axes.set_xlabel("a: the mix (1 - a) A + a B")
        title += f"\nA = {names[0]}, B = {names[1]}"
    else:
        axes.set_xticks(xs)
        axes.set_xticklabels(
            ["\n".join(f"{c:g}" for c in p.coefficients) for p in points], fontsize=8
        )
        axes.set_xlabel("coefficients (" + ", ".join(_short(c) for c in result.checkpoints) + ")")
    axes.set_ylabel("held-out figure")
    axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    with replacing(path) as tmp:
        figure.savefig(tmp, dpi=100)
    return path


def _short(checkpoint: str) -> str:
    return checkpoint.rstrip("/").rsplit("/", 1)[-1]
