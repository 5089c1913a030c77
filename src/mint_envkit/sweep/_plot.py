"""The sweep's bar chart of mean reward per config (``summary.png``).

Example::

    plot_rewards(load_summary("runs/sweep"), Path("runs/sweep/summary.png"))
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mint_envkit.sweep._summary import SweepSummary

__all__ = ["plot_rewards"]


def plot_rewards(summary: SweepSummary, path: Path) -> Path | None:
    """Draw mean reward per config into ``path``; None when matplotlib is missing.

    Example::

        plot_rewards(summary, Path("runs/sweep/summary.png"))
    """
    from mint_envkit.sweep._summary import REWARD_KEY

    try:
        import matplotlib  # noqa: F401  (the package itself: its submodules may be cached)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    names = [row.name for row in summary.rows]
    values = [row.mean_reward for row in summary.rows]
    colors = {"ok": "#4C72B0", "failed": "#C44E52"}
    figure = Figure(figsize=(max(6.0, 0.7 * len(names) + 2.0), 4.5))
    FigureCanvasAgg(figure)
    axes = figure.add_subplot()
    positions = list(range(len(names)))
    bars = axes.bar(
        positions,
        [0.0 if v is None else v for v in values],
        color=[colors.get(row.status, "#999999") for row in summary.rows],
    )
    axes.bar_label(
        bars, labels=["" if v is None else f"{v:.3f}" for v in values], fontsize=7, padding=2
    )
    for x, row in zip(positions, summary.rows, strict=True):
        if row.mean_reward is None:
            axes.text(
                x,
                0.5,
                f"no reward ({row.status})",
                transform=axes.get_xaxis_transform(),
                ha="center",
                va="center",
                rotation=90,
                fontsize=8,
                color=colors.get(row.status, "#555555"),
            )
    axes.axhline(0.0, color="black", linewidth=0.8)
    axes.margins(y=0.15)
    axes.set_xticks(positions)
    axes.set_xticklabels(names, rotation=45, ha="right", fontsize=8)
    axes.set_ylabel(f"mean reward ({REWARD_KEY}, final step)")
    axes.set_title(f"{Path(summary.root).name}: mean reward per config")
    figure.tight_layout()
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp.png")
    figure.savefig(tmp, dpi=100)
    os.replace(tmp, path)
    return path
