"""A whole conformance run: connect, run the rows, report (:func:`run_conformance`).

Example::

    from mint_envkit.conformance.rows import Row

    # what run_conformance(rows=["optim_step"]) returns, built by hand here
    report = ConformanceReport(model="m", backend="local", base_url=None, where="here",
                               dtype="float32", dtype_source="--dtype",
                               rows=(Row("optim_step", "failed", "no update", 0.1),))
    print(report.table())
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from mint_envkit.conformance.checks import CHECKS
from mint_envkit.conformance.http import ServerErrors, conformance_service
from mint_envkit.conformance.probe import AGREEMENT_BOUNDS, Probe
from mint_envkit.conformance.rows import Row, exit_code, run_checks, select, table
from mint_envkit.errors import ConfigError
from mint_envkit.rollouts.backend import Connection, connect, default_model
from mint_envkit.rollouts.settings import BackendSettings

HEALTH_TIMEOUT_S = 10.0
"""How long the server may take to answer its health check after a row timed out."""


@attrs.frozen
class ConformanceReport:
    """What a conformance run found: the rows, and where and how they were measured.

    Attributes:
        model: the base model the rows used.
        backend: ``"local"`` or ``"mint"``.
        where: the server, in words.
        dtype: the dtype whose logprob bounds applied, and ``dtype_source`` why.
        rows: one :class:`~mint_envkit.conformance.rows.Row` per call, in run order.

    Example::

        report.exit_code   # 1: a row failed (report: the module example's)
    """

    model: str
    backend: str
    base_url: str | None
    where: str
    dtype: str
    dtype_source: str
    rows: tuple[Row, ...]

    @property
    def exit_code(self) -> int:
        """1 when a row failed, else 0 (the command's exit code).

        Example::

            report.exit_code   # 1
        """
        return exit_code(self.rows)

    def heading(self) -> str:
        """The line above the table: the model, the server and the bounds.

        Example::

            report.heading().startswith("conformance of m on here")   # True
        """
        max_bound, v1_bound = AGREEMENT_BOUNDS[self.dtype]
        return (
            f"conformance of {self.model} on {self.where}; logprob bounds of {self.dtype} "
            f"({self.dtype_source}): max |diff| {max_bound:g}, |kl_sample_train_v1| {v1_bound:g}"
        )

    def table(self) -> str:
        """The rows as a text table, then their counts.

        Example::

            print(report.table())
        """
        return table(self.rows)

    def record(self) -> dict[str, Any]:
        """The report as JSON-ready data (``--json FILE``).

        Example::

            report.record()["rows"][0]["call"]   # 'optim_step'
        """
        max_bound, v1_bound = AGREEMENT_BOUNDS[self.dtype]
        return {
            "model": self.model,
            "backend": self.backend,
            "base_url": self.base_url,
            "dtype": self.dtype,
            "bounds": {"max_abs_diff": max_bound, "kl_sample_train_v1": v1_bound},
            "rows": [row.record() for row in self.rows],
            "exit_code": self.exit_code,
        }


def _dtype(dtype: str, connection: Connection) -> tuple[str, str]:
    """The dtype of the bounds and where it came from."""
    if dtype != "auto":
        return dtype, "--dtype"
    if connection.backend == "mint":
        return "bfloat16", "assumed for MinT; --dtype to say"
    from mint_envkit.local.models.common import default_device

    device, torch_dtype = default_device()
    name = "float32" if str(torch_dtype) == "torch.float32" else "bfloat16"
    return name, f"the embedded backend's on this machine ({device.type})"


async def run_conformance(
    *,
    backend: str = "auto",
    base_url: str | None = None,
    model: str | None = None,
    dtype: str = "auto",
    timeout_s: float = 120.0,
    rows: Sequence[str] = (),
    on_row: Callable[[Row], None] | None = None,
) -> ConformanceReport:
    """Run the conformance rows against a backend; the report.

    ``backend`` / ``base_url`` as training (``auto``: MinT with ``MINT_API_KEY``, else an
    embedded server started for the run); ``model`` the base model (default: the
    backend's); ``dtype`` picks the logprob bounds (``auto``, ``float32``,
    ``bfloat16``); ``timeout_s`` bounds each row; ``rows`` runs only the rows named (a
    name, or a part of one) and the rows they need; ``on_row`` is called with each row.

    Raises:
        ConfigError: a bad ``dtype``, ``timeout_s`` or row name.
        BackendError: no backend (a MinT run with no key, one that does not answer).

    Example::

        # not run: starts an embedded server
        report = await run_conformance(model="mint-envkit/tiny-qwen3-small")
    """
    if dtype != "auto" and dtype not in AGREEMENT_BOUNDS:
        raise ConfigError(f"dtype must be auto, {' or '.join(AGREEMENT_BOUNDS)}; got {dtype!r}")
    if not isinstance(timeout_s, (int, float)) or not timeout_s > 0:
        raise ConfigError(f"timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    try:
        checks = select(CHECKS, rows) if rows else list(CHECKS)
    except ValueError as err:
        raise ConfigError(str(err)) from None
    model = model or default_model(backend)
    settings = BackendSettings(backend=backend, base_url=base_url, models=(model,))
    errors = ServerErrors()
    async with connect(settings) as connection, conformance_service(connection, errors) as service:
        name, source = _dtype(dtype, connection)
        probe = Probe(service=service, model=model, dtype=name)

        async def health() -> str | None:
            try:
                await asyncio.wait_for(service.get_server_capabilities_async(), HEALTH_TIMEOUT_S)
            except TimeoutError:
                return f"after a row timed out, its health check got no answer in {HEALTH_TIMEOUT_S:g} s"
            except Exception as err:  # the reason the rest is skipped
                return (
                    f"after a row timed out, its health check failed: {type(err).__name__}: {err}"
                )
            return None

        found = await run_checks(
            checks, probe, timeout_s, on_row=on_row, errors=errors, health=health
        )
    where = (
        "an embedded backend started for this run"
        if connection.restart is not None
        else connection.describe()
    )
    return ConformanceReport(
        model=model,
        backend=connection.backend,
        base_url=connection.base_url,
        where=where,
        dtype=name,
        dtype_source=source,
        rows=tuple(found),
    )
