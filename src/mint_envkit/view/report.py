"""Writing the viewer: one self-contained HTML file per run or sweep.

The page needs no server and no network: its CSS and JavaScript are inlined
(from ``assets/`` next to this module: ``viewer.js``, ``answers.js`` for the
held-out answers beside the baseline and the final evaluation, ``charts.js`` for the
curves: bounded ticks, long curves downsampled, a slot per run when every run has one
step, and an error note in place of whatever fails to draw, and ``samples.js`` for a
reward audit's sampled replies), and the data is embedded as JSON in
``<script type="application/json">`` tags: one for the index (runs, curves,
steps) and one per run and step for the rollouts, parsed only when that step
is shown. A Content-Security-Policy forbids every network request.

Example::

    # not run: reads files of your own run or data set
    from mint_envkit.view import write_report

    path = write_report("runs/rl_hyperparameters-local")   # .../view.html
"""

from __future__ import annotations

import html
import json
import os
import re
import warnings
from collections.abc import Sequence
from datetime import UTC, datetime
from importlib import resources
from pathlib import Path
from typing import Any

from mint_envkit.runs.files import json_ready, write_text_atomic
from mint_envkit.view.audit import audit_section, find_audit
from mint_envkit.view.load import ReportData, load_report_data

REPORT_NAME = "view.html"
"""The file name a report gets inside the run (or sweep) directory by default.

Example::

    Path("runs/demo") / REPORT_NAME   # runs/demo/view.html
"""

_MARKER = re.compile(r"\{\{([A-Z]+)\}\}")
_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_ESCAPE = re.compile("[<>&\u2028\u2029]")


def script_json(data: Any) -> str:
    """``data`` as JSON that is safe inside a ``<script>`` element.

    ``<``, ``>`` and ``&`` (and U+2028/U+2029) are written as ``\\uXXXX``
    escapes, which JSON reads back as the same characters, so no text in the
    data (``</script>``, ``<!--``) can end the element early. NaN and
    infinities (not JSON) become ``null``.

    Example::

        script_json({"reply": "</script><b>"})   # '{"reply":"\\u003c/script\\u003e\\u003cb\\u003e"}'
    """
    try:
        text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a NaN or an infinity somewhere: rare, so only then walk the data
        text = json.dumps(json_ready(data), ensure_ascii=False, separators=(",", ":"))
    return _ESCAPE.sub(lambda m: _ESCAPES[m.group()], text)


def _asset(name: str) -> str:
    return resources.files("mint_envkit.view").joinpath("assets", name).read_text("utf-8")


_BANNERS_EACH = 3  # more collapsed runs than this share one banner


def _truncation_banners(runs: list[dict[str, Any]]) -> list[str]:
    """One banner per run whose base model was cut off: the cut-off pair compares reply
    lengths, and the page's headline is the pair measured where nothing is cut off."""
    out = []
    for run in runs:
        answers = run.get("answers")
        cut = answers.get("cut_off") if isinstance(answers, dict) else None
        if isinstance(cut, dict) and isinstance(cut.get("line"), str):
            name = html.escape(str(run.get("name")))
            out.append(
                f'<div class="banner truncated" role="alert"><b>Base truncated</b> {name}: '
                f"{html.escape(cut['line'])}</div>"
            )
    return out


def _banners(runs: Any) -> str:
    """The collapse banner: one per run whose evaluation flags a collapse (or one for all),
    and the truncation banner of each run whose base model was cut off.

    Written as markup here, its text escaped, so it shows even where the script does not run.
    """
    runs = [run for run in runs if isinstance(run, dict)] if isinstance(runs, list) else []
    named = []
    for run in runs:
        answers = run.get("answers")
        note = answers.get("note") if isinstance(answers, dict) else None
        if isinstance(note, str) and note:
            named.append((html.escape(str(run.get("name"))), html.escape(note)))
    notes = [f"{name}, {note}." for name, note in named]
    if len(named) > _BANNERS_EACH:
        names = ", ".join(name for name, _ in named)
        notes = [
            f"in {len(named)} of {len(runs)} runs: {names} (see the flag column below). "
            f"The first: {notes[0]}"
        ]
    collapse = [
        f'<div class="banner collapse" role="alert"><b>Answer collapse</b> {note}</div>'
        for note in notes
    ]
    return "\n".join([*_truncation_banners(runs), *collapse])


def render_html(
    data: ReportData,
    *,
    generated_at: str | None = None,
    audit: Any = None,
    samples: Sequence[Any] = (),
) -> str:
    """The report page for ``data`` (see :func:`~mint_envkit.view.load.load_report_data`).

    ``audit``: a reward audit's record (``audit.json``), shown above the runs, with its
    sampled replies ``samples`` (``samples.jsonl``; see :mod:`mint_envkit.view.audit`).

    Example::

        # not run: reads files of your own run or data set
        page = render_html(load_report_data("runs/demo"))
    """
    from importlib.metadata import PackageNotFoundError, version

    try:
        __version__ = version("mint-envkit")
    except PackageNotFoundError:  # running from a source tree that was never installed
        __version__ = "unknown"

    index = dict(data.index)
    index["generated_at"] = generated_at or datetime.now(UTC).isoformat(timespec="seconds")
    index["version"] = __version__
    chunks = "".join(
        f'<script type="application/json" id="mev-{html.escape(key)}">{script_json(chunk)}'
        "</script>\n"
        for key, chunk in data.chunks.items()
    )
    if samples:
        chunks += (
            f'<script type="application/json" id="mev-audit-samples">{script_json(list(samples))}'
            "</script>\n"
        )
    parts = {
        "TITLE": html.escape(f"{index['title']} - mint-envkit view"),
        "CSS": _asset("viewer.css"),
        "BANNERS": audit_section(audit, samples) + _banners(index.get("runs")),
        "INDEX": script_json(index),
        "CHUNKS": chunks,
        "JS": _asset("answers.js")
        + _asset("charts.js")
        + _asset("samples.js")
        + _asset("viewer.js"),
    }
    return _MARKER.sub(lambda m: parts[m.group(1)], _asset("viewer.html"))


def write_report(
    run_dir: str | os.PathLike[str], out: str | os.PathLike[str] | None = None
) -> Path:
    """Write the viewer of a run or a sweep as one HTML file and return its path.

    ``run_dir`` is a run's ``log_path`` or a sweep's root. The page shows the
    metric curves per step (all runs of a sweep overlaid) and every episode's
    transcript with its reward, advantage, parse status and metrics, with
    filters and search; it opens in any browser, offline. A reward audit's
    ``audit.json`` in ``run_dir`` (or its parent) is shown above the runs, with the
    replies it sampled (``samples.jsonl`` beside it) when there are any. ``out`` is the
    file to write (a directory gets ``view.html`` inside); by default
    ``RUN_DIR/view.html``. Lines that cannot be read (a torn last line) are
    skipped with a ``UserWarning``. Raises
    :class:`~mint_envkit.errors.ConfigError` when ``run_dir`` is not a run
    or sweep directory, or holds no steps yet.

    Example::

        # not run: reads files of your own run or data set
        from mint_envkit import write_report

        path = write_report("runs/rl_hyperparameters-local")
        print(path)   # runs/rl_hyperparameters-local/view.html
        # mint-envkit view runs/rl_hyperparameters-local --open   (the same, then opens it)
    """
    data = load_report_data(run_dir)
    for note in data.notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    target = Path(run_dir) / REPORT_NAME if out is None else Path(out)
    if target.is_dir():
        target = target / REPORT_NAME
    target.parent.mkdir(parents=True, exist_ok=True)
    audit, samples, audit_notes = find_audit(Path(run_dir))
    for note in audit_notes:
        warnings.warn(note, UserWarning, stacklevel=2)
    page = render_html(data, audit=audit, samples=samples)
    write_text_atomic(target, page.encode("utf-8", errors="replace").decode("utf-8"))
    return target
