"""The sweep's figure (``summary.png``): reward before and after each config's updates, per-step curves.

Example::

    plot_rewards(load_summary("runs/sweep"), Path("runs/sweep/summary.png"))
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mint_envkit.sweep._rows import SummaryRow
    from mint_envkit.sweep._summary import SweepSummary

__all__ = ["plot_rewards"]


def plot_rewards(summary: SweepSummary, path: Path) -> Path | None:
    """Draw each config's held-out reward before and after its updates into ``path``.

    Left: per config, the test reward before the first update and after the
    last (``Eval before`` / ``Eval after``), or the final step's training reward
    when the runs logged no eval. Right, when a run has more than one step: the
    training reward per step, one line per config. None when matplotlib is
    missing.

    Example::

        plot_rewards(summary, Path("runs/sweep/summary.png"))
    """
    try:
        import matplotlib  # noqa: F401  (the package itself: its submodules may be cached)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    rows = summary.rows
    curves = any(row.metrics.steps > 1 for row in rows)
    width = max(6.0, 0.8 * len(rows) + 2.5)
    figure = Figure(figsize=(width * (1.8 if curves else 1.0), 5.0))
    FigureCanvasAgg(figure)
    _before_after(figure.add_subplot(1, 2 if curves else 1, 1), summary)
    if curves:
        _step_curves(figure.add_subplot(1, 2, 2), rows)
    figure.tight_layout()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    figure.savefig(tmp, dpi=100)
    os.replace(tmp, path)
    return path


def _before_after(axes: Any, summary: SweepSummary) -> None:
    from mint_envkit.sweep._rows import REWARD_KEY

    rows = summary.rows
    evals = any(row.eval_before is not None or row.eval_after is not None for row in rows)
    if evals:
        series = [
            ("before update", [r.eval_before for r in rows], -0.2, "#999999"),
            ("after update", [r.eval_after for r in rows], 0.2, "#4C72B0"),
        ]
        ylabel = "held-out reward (same problems)"
    else:
        series = [("final step", [r.mean_reward for r in rows], 0.0, "#4C72B0")]
        ylabel = f"mean reward ({REWARD_KEY}, final step)"
    positions = list(range(len(rows)))
    bar_width = 0.4 if evals else 0.7
    for label, values, shift, color in series:
        bars = axes.bar(
            [x + shift for x in positions],
            [0.0 if v is None else v for v in values],
            width=bar_width,
            color=color,
            label=label,
        )
        axes.bar_label(
            bars, labels=["-" if v is None else f"{v:.2f}" for v in values], fontsize=7, padding=2
        )
    for x, row in zip(positions, rows, strict=True):
        if row.status != "ok":
            axes.text(
                x,
                0.02,
                row.status,
                transform=axes.get_xaxis_transform(),
                ha="center",
                fontsize=8,
                color="#C44E52",
            )
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.margins(y=0.2)
    axes.set_xticks(positions)
    axes.set_xticklabels([r.name for r in rows], rotation=45, ha="right", fontsize=8)
    axes.set_ylabel(ylabel)
    axes.set_title(f"{Path(summary.root).name}: reward per config", pad=24)
    axes.legend(fontsize=8, loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=2, frameon=False)


def _step_curves(axes: Any, rows: Sequence[SummaryRow]) -> None:
    from mint_envkit.sweep._rows import REWARD_KEY

    for row in rows:
        points = [
            (m.get("step"), m.get(REWARD_KEY))
            for m in row.metrics.history
            if isinstance(m.get("step"), int) and isinstance(m.get(REWARD_KEY), (int, float))
        ]
        if points:
            axes.plot(
                [p[0] + 1 for p in points],
                [p[1] for p in points],
                marker="o",
                markersize=3,
                label=row.name,
            )
    from matplotlib.ticker import MaxNLocator

    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_xlabel("step")
    axes.set_ylabel("training reward (before the step's update)")
    axes.set_title("training reward per step")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
