"""The TUI's debug run on the demo's Xid 79 node shows the verdict the checklist (GT801) then reports.

Drives the debug screen directly (how it is opened is the key map's business, tested elsewhere).
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from rich.console import Console
from textual.pilot import Pilot

from gputui.tui.app import GputuiApp
from gputui.tui.screens.debug import DebugScreen
from tests.tui.conftest import Live
from tests.tui.test_navigation import wait_for

pytestmark = pytest.mark.slow  # debug pods run from the TUI on the incident scenario

XID_NODE = "ip-10-0-30-117.ec2.internal"


async def _wait(pilot: Pilot[object], pred: Callable[[], bool]) -> None:
    await wait_for(pilot, pred, timeout=30.0)


async def _debug(pilot: Pilot[object], app: GputuiApp, node: str) -> tuple[int, str]:
    """Runs the debug screen on `node`: its exit code and what it shows (200 columns, plain text)."""
    screen = DebugScreen(node, None, None)
    app.push_screen(screen)
    await _wait(pilot, lambda: screen.done)
    result = screen.result
    assert result is not None
    console = Console(width=200, record=True)
    console.print(result.render())
    return result.exit_code, console.export_text()


@pytest.mark.live_app(size=(160, 50))
async def test_debug_screen_and_gt801_agree_on_the_lost_gpu(live_app: Live) -> None:
    app, pilot = live_app.app, live_app.pilot
    exit_code, shown = await _debug(pilot, app, XID_NODE)
    assert exit_code == 3
    assert "no GPU health problems found" not in shown
    assert "GPU 7 [gpu-lost]" in shown and "lists 7 of the 8 GPUs this node has" in shown

    def gt801() -> set[str]:
        report = app.report
        return {f.title for f in (report.findings if report is not None else ()) if f.code == "GT801"}

    await _wait(pilot, lambda: len(gt801()) == 2)
    assert gt801() == {
        f"{XID_NODE}: GPU 7 fell off the bus (GPU is lost): unusable until the node reboots",
        f"{XID_NODE}: nvidia-smi sees 7 of 8 GPUs (missing: GPU 7 (lost)): 1 missing from the PCIe bus or "
        "unbound from the driver",
    }


@pytest.mark.parametrize("live_app", ["healthy"], indirect=True)
@pytest.mark.live_app(size=(160, 50))
async def test_debug_screen_and_gt801_agree_when_only_the_table_was_read(live_app: Live) -> None:
    # The debug pod's --query-gpu section is refused (exit 2): only its table was read, which shows no
    # remapped rows, retired pages or reset state. Not "no GPU health problems found", and not a GT801 pass.
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    node = "ip-10-0-88-21.ec2.internal"
    sim.set_nvidia_smi(node, {"capture": "h100",
                              "queryGpuError": 'Field "reset_status.reset_required" is not a valid field to query.'})
    exit_code, shown = await _debug(pilot, app, node)
    assert exit_code == 4
    assert "no GPU health problems found" not in shown
    assert "✓ no problem in what nvidia-smi's output shows (1 of 1 GPU(s)); not shown: remapped rows, " \
           "retired pages, reset required" in shown

    def gt801() -> list[tuple[str, str]]:
        report = app.report
        return [(f.severity.label if f.severity else "", f.title)
                for f in (report.findings if report is not None else ()) if f.code == "GT801"]

    await _wait(pilot, lambda: bool(gt801()))
    assert gt801() == [("warning", f"{node}: the last nvidia-smi reading does not show remapped rows, retired "
                                   "pages, reset required: no verdict on them")]


@pytest.mark.parametrize("live_app", ["healthy"], indirect=True)
@pytest.mark.live_app(size=(160, 50))
async def test_debug_screen_and_gt801_agree_on_a_gpu_whose_health_cannot_be_read(live_app: Live) -> None:
    # Every health value of the GPU reads N/A / [Insufficient Permissions]: unknown, not healthy.
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    node = "ip-10-0-88-21.ec2.internal"
    sim.set_nvidia_smi(node, {"capture": "h100", "unreadableGpus": [0]})
    exit_code, shown = await _debug(pilot, app, node)
    assert exit_code == 4
    assert "no GPU health problems found" not in shown and "✓" not in shown
    assert "GPU 0 [health-unreadable]" in shown and "could not read its health" in shown

    def gt801() -> list[tuple[str, str]]:
        report = app.report
        return [(f.severity.label if f.severity else "", f.title)
                for f in (report.findings if report is not None else ()) if f.code == "GT801"]

    await _wait(pilot, lambda: bool(gt801()))
    assert gt801() == [("warning", f"{node}: nvidia-smi could not read the health of GPU 0 ([N/A] / "
                                   "[Insufficient Permissions]): unknown, not healthy")]
