"""The sweep's figure (``summary.png``): reward before and after each config's updates, per-step curves.

When the runs logged held-out correctness, a second row draws it the same way, with
the best trivial baseline (``answers/baseline_correct``, named in the key) dashed on each
config's bars and curve, and collapsed configs hatched and labelled in red.

Example::

    from mint_envkit.sweep import SummaryRow, SweepSummary
    from mint_envkit.sweep._rows import RunMetrics

    # a sweep's summary (load_summary(root)), of one config built from its fields:
    step = {"step": 0, "env/all/reward/total": -0.1, "env/all/correct": 0.0, "train/datums": 8}
    row = SummaryRow(name="t0p7", params={"temperature": 0.7}, status="ok",
                     settings={"kl_penalty_coef": 0.0, "temperature": 0.7, "group_size": 2},
                     metrics=RunMetrics(exists=True, steps=1, final=step, history=(step,)),
                     log_path="runs/sweep/t0p7")
    summary = SweepSummary(root=".", rows=(row,))
    assert plot_rewards(summary, Path("rewards.png")) == Path("rewards.png")
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mint_envkit.checks import is_integer
from mint_envkit.runs.files import replacing
from mint_envkit.runs.record import Figures
from mint_envkit.sweep._format import baseline_names

if TYPE_CHECKING:
    from mint_envkit.sweep._answers import HeldOutAnswers
    from mint_envkit.sweep._rows import SummaryRow
    from mint_envkit.sweep._summary import SweepSummary


def plot_rewards(summary: SweepSummary, path: Path) -> Path | None:
    """Draw each config's held-out reward before and after its updates into ``path``.

    Left: per config, the test reward before the first update and after the
    last (``Eval before`` / ``Eval after``), or the final step's training reward
    when the runs logged no eval. Right, when a run has more than one step: the
    training reward per step, one line per config. A second row, when any run
    logged held-out correctness: the same for ``correct``, with each config's
    best trivial baseline dashed and a collapsed config (``answers/collapse``)
    hatched and labelled ``collapse``. None when matplotlib is missing.

    Example::

        # summary: the module example's; None without matplotlib
        assert plot_rewards(summary, Path("summary.png")) == Path("summary.png")
    """
    try:
        import matplotlib  # noqa: F401  (the package itself: its submodules may be cached)
        from matplotlib.backends.backend_agg import FigureCanvasAgg
        from matplotlib.figure import Figure
    except ImportError:
        return None
    rows = summary.rows
    curves = any(row.metrics.steps > 1 for row in rows)
    answers = [row.answers for row in rows]
    held_out = any(
        a.correct_before is not None or a.correct_after is not None or a.baseline is not None
        for a in answers
    )
    width = max(6.0, 0.8 * len(rows) + 2.5)
    cols, lines = (2 if curves else 1), (2 if held_out else 1)
    figure = Figure(figsize=(width * (1.8 if curves else 1.0), 5.0 * lines))
    FigureCanvasAgg(figure)
    _before_after(figure.add_subplot(lines, cols, 1), summary)
    if curves:
        _step_curves(figure.add_subplot(lines, cols, 2), rows)
    if held_out:
        _correct_bars(figure.add_subplot(lines, cols, cols + 1), summary, answers)
        if curves:
            _correct_curves(figure.add_subplot(lines, cols, cols + 2), rows, answers)
    figure.tight_layout()
    with replacing(path) as tmp:
        figure.savefig(tmp, dpi=100)
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


_COLLAPSE_RED = "#C44E52"


def _correct_bars(axes: Any, summary: SweepSummary, answers: Sequence[HeldOutAnswers]) -> None:
    """Held-out correct before and after per config; the baseline dashed; collapse hatched."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    rows = summary.rows
    positions = list(range(len(rows)))
    series = [
        ("before update", [a.correct_before for a in answers], -0.2, "#999999"),
        ("after update", [a.correct_after for a in answers], 0.2, "#4C72B0"),
    ]
    for label, values, shift, color in series:
        bars = axes.bar(
            [x + shift for x in positions],
            [0.0 if v is None else v for v in values],
            width=0.4,
            color=color,
            label=label,
        )
        axes.bar_label(
            bars, labels=["-" if v is None else f"{v:.2f}" for v in values], fontsize=7, padding=2
        )
        if shift > 0:
            for bar, a in zip(bars, answers, strict=True):
                if a.collapse:
                    bar.set_facecolor("#F2C4C5")
                    bar.set_edgecolor(_COLLAPSE_RED)
                    bar.set_hatch("//")
    for x, a in zip(positions, answers, strict=True):
        if a.baseline is not None:
            axes.hlines(a.baseline, x - 0.45, x + 0.45, colors="black", linestyles="--", lw=1.4)
        if a.flag:
            axes.text(
                x,
                0.93,
                "collapse" if a.collapse else a.flag,
                transform=axes.get_xaxis_transform(),
                ha="center",
                fontsize=8,
                fontweight="bold",
                color=_COLLAPSE_RED if a.collapse else "#B54708",
            )
    handles = [Patch(color=color, label=label) for label, _, _, color in series]
    if any(a.baseline is not None for a in answers):
        handles.append(
            Line2D([], [], color="black", linestyle="--", label=_baseline_label(answers))
        )
    if any(a.collapse for a in answers):
        handles.append(
            Patch(facecolor="#F2C4C5", edgecolor=_COLLAPSE_RED, hatch="//", label="collapse")
        )
    axes.set_ylim(0.0, 1.12)
    axes.set_xticks(positions)
    axes.set_xticklabels([r.name for r in rows], rotation=45, ha="right", fontsize=8)
    axes.set_ylabel("held-out correct (same problems)")
    axes.set_title(f"{Path(summary.root).name}: held-out correct per config", pad=36)
    axes.legend(
        handles=handles,
        fontsize=8,
        loc="lower center",
        bbox_to_anchor=(0.5, 1.0),
        ncol=2,
        frameon=False,
    )


def _baseline_label(answers: Sequence[HeldOutAnswers]) -> str:
    """The dashed line's key: the best trivial baseline, by name when the runs logged it."""
    names = baseline_names(answers)
    return f"best trivial baseline ({names})" if names else "best trivial baseline"


def _eval_points(
    history: Sequence[Any], figure: Callable[[Figures], float | None]
) -> list[tuple[int, float]]:
    """(updates before the eval, value) of a held-out figure: each eval, then the final one."""
    from mint_envkit.runs.record import FINAL, TEST

    points = []
    for m in history:
        step = m.get("step")
        if not is_integer(step):
            continue
        for split, after in ((TEST, 0), (FINAL, 1)):
            figures = Figures.from_metrics(m, split)
            value = None if figures is None else figure(figures)
            if value is not None:
                points.append((step + after, value))
    return points


def _correct_curves(
    axes: Any, rows: Sequence[SummaryRow], answers: Sequence[HeldOutAnswers]
) -> None:
    """Held-out correct per evaluation, one line per config, its baseline dashed alike."""
    from matplotlib.ticker import MaxNLocator

    for row, a in zip(rows, answers, strict=True):
        points = _eval_points(row.metrics.history, lambda f: f.correct)
        if not points:
            continue
        (line,) = axes.plot(
            [p[0] for p in points], [p[1] for p in points], marker="o", markersize=3, label=row.name
        )
        baseline = _eval_points(row.metrics.history, lambda f: f.answers.baseline_correct)
        if len(baseline) == 1:  # one evaluation logged it: across the config's curve
            span = (points[0][0], points[-1][0])
            baseline = [(span[0], baseline[0][1]), (span[1], baseline[0][1])]
        if baseline:
            axes.plot(
                [p[0] for p in baseline],
                [p[1] for p in baseline],
                linestyle="--",
                linewidth=1.2,
                color=line.get_color(),
            )
        if a.collapse:
            axes.annotate(
                "collapse",
                points[-1],
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=8,
                fontweight="bold",
                color=_COLLAPSE_RED,
            )
    axes.xaxis.set_major_locator(MaxNLocator(integer=True))
    axes.set_ylim(-0.02, 1.05)
    axes.set_xlabel("updates before the evaluation")
    axes.set_ylabel("held-out correct (dashed: best trivial baseline)")
    axes.set_title("held-out correct per evaluation")
    axes.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.0, 1.0))
