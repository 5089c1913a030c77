"""Conformance measured by the faults it catches: a correct server behind a faulty proxy.

One embedded server on the small tiny model for the module, behind
:class:`~faults.FaultyProxy`. Through the proxy with no fault every row is ``ok`` but the
optional calls the embedded backend refuses (the proxy is transparent, and the server
passes); with each fault of :data:`~faults.FAULTS` planted, the rows named with it fail
(exit 1, the right row, the right reason) and the rows run beside them stay ``ok``. Each
fault runs only its rows and what they need (``rows=``), to keep the module cheap.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from faults import FAULTS, Fault, FaultyProxy

from mint_envkit.conformance import run_conformance
from mint_envkit.conformance.checks import CHECKS, OPTIONAL

pytestmark = pytest.mark.integration

SMALL = "mint-envkit/tiny-qwen3-small"

UNSUPPORTED = {
    "sample: topk_prompt_logprobs",
    "forward: cispo",
    "forward: dro",
    "forward_backward: cispo",
    "forward_backward: dro",
    "get_checkpoint_archive_url",
}
"""What the embedded backend refuses as not served (docs/local-backend.md)."""


@pytest.fixture(scope="module")
def proxy(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FaultyProxy]:
    from mint_envkit.local.server import LocalServer

    state = tmp_path_factory.mktemp("conformance-state")
    with LocalServer(models=[SMALL], state_dir=str(state)) as server:
        assert server.preload_errors(timeout=300) == {}
        with FaultyProxy(server.base_url) as running:
            yield running


async def _run(proxy: FaultyProxy, fault: Fault | None, rows: tuple[str, ...] = ()) -> Any:
    proxy.fault = fault
    try:
        return await run_conformance(
            backend="local", base_url=proxy.base_url, model=SMALL, rows=rows, timeout_s=60
        )
    finally:
        proxy.fault = None


async def test_the_clean_server_passes_through_the_proxy(proxy):
    report = await _run(proxy, None)
    statuses = {row.name: row.status for row in report.rows}
    want = {c.name: "unsupported" if c.name in UNSUPPORTED else "ok" for c in CHECKS}
    failing = {row.name: row.detail for row in report.rows if row.status != want[row.name]}
    assert failing == {}
    assert statuses == want and report.exit_code == 0
    assert UNSUPPORTED <= OPTIONAL  # the embedded backend refuses only optional calls


def test_every_fault_names_rows_that_exist_and_is_documented():
    names = {check.name for check in CHECKS}
    text = (Path(__file__).resolve().parents[2] / "docs" / "local-backend.md").read_text()
    for fault in FAULTS:
        assert set(fault.rows) | set(fault.also) <= names, fault.name
        assert f"| {fault.name} |" in text, f"docs/local-backend.md does not list {fault.name!r}"


@pytest.mark.parametrize("fault", FAULTS, ids=[f.name for f in FAULTS])
async def test_conformance_fails_on_the_fault_with_the_right_row(proxy, fault):
    report = await _run(proxy, fault, fault.rows + fault.also)
    rows = {row.name: row for row in report.rows}
    assert report.exit_code == 1
    for name in fault.rows:
        assert rows[name].status == "failed", (name, rows[name].detail)
    assert fault.detail in rows[fault.rows[0]].detail
    for name in fault.also:  # a failing row never skips or fails an unrelated one
        assert rows[name].status == "ok", (name, rows[name].detail)
