"""Disruption findings reach the TUI: the node's health badge and its detail page (pilot, against the simulator)."""

from __future__ import annotations

import pytest

from diagnostics.model import ObjectRef
from gputui.tui.screens.detail import NodeScreen
from gputui.tui.widgets.keyed_table import KeyedTable
from tests.tui.conftest import Live, screen_text, table_column

NODE = "ip-10-0-60-33.ec2.internal"


@pytest.mark.parametrize(("live_app", "badge", "says"), [
    ("drift-disrupts-training", "✗ gpu-workload-disruption",
     "GPU job ml/pretrain-llama-70b-0-x7k2m (8 GPU, running 1d7h) will be killed"),
    ("underutilized-blocked", "! consolidation-blocked", "(p4d.24xlarge, 8 GPUs) with 1 of 8 GPUs requested"),
], indirect=["live_app"])
@pytest.mark.live_app(size=(160, 50))
async def test_node_badge_and_detail_page(live_app: Live, badge: str, says: str) -> None:
    app, pilot = live_app.app, live_app.pilot
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
