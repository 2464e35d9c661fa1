"""Disruption findings reach the TUI: the node's health badge and its detail page (pilot, against the simulator)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from diagnostics.model import ObjectRef
from gputui.dev.screenshots import build_app, settle
from gputui.sim.cluster import SimCluster
from gputui.tui.screens.detail import NodeScreen
from gputui.tui.widgets.keyed_table import KeyedTable
from tests.tui.conftest import screen_text, table_column

StartSim = Callable[..., tuple[SimCluster, Path]]
NODE = "ip-10-0-60-33.ec2.internal"


@pytest.mark.parametrize(("scenario", "badge", "says"), [
    ("drift-disrupts-training", "✗ gpu-workload-disruption",
     "GPU job ml/pretrain-llama-70b-0-x7k2m (8 GPU, running 1d7h) will be killed"),
    ("underutilized-blocked", "! consolidation-blocked", "(p4d.24xlarge, 8 GPUs) with 1 of 8 GPUs requested"),
])
async def test_node_badge_and_detail_page(start_sim: StartSim, scenario: str, badge: str, says: str) -> None:
    _sim, kubeconfig = start_sim(scenario)
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(160, 50)) as pilot:
        await settle(pilot)
        names = table_column(app, "nodes", "NAME")
        assert table_column(app, "nodes", "HEALTH")[names.index(NODE)].startswith(badge)
        table = app.screen.query_one("#nodes", KeyedTable)
        table.focus()
        table.move_cursor(row=next(i for i, k in enumerate(table.keys())
                                   if table.ref_for(k) == ObjectRef("Node", NODE)))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, NodeScreen)
        assert says in " ".join(screen_text(app).split())
