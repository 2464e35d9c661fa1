"""A filter keystroke re-filters the focused table only; the others catch up when shown, with the
right rows (issue #25: every key <= 100 ms at 1k nodes, where re-syncing all five tables did not)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.collect.live import LiveSession
from gputui.kube.api import Api, load
from gputui.sim.cluster import SimCluster
from gputui.tui.app import GputuiApp
from gputui.tui.screens.overview import CATCH_UP_S
from gputui.tui.widgets.keyed_table import KeyedTable
from tests.tui.test_navigation import wait_for

pytestmark = pytest.mark.slow  # a pilot test on a simulated cluster, timing the filter's catch-up

StartSim = Callable[..., tuple[SimCluster, Path]]


def shown(app: GputuiApp, tid: str) -> list[str]:
    return app.screen.query_one(f"#{tid}", KeyedTable).keys()


def matching(app: GputuiApp, tid: str, word: str) -> list[str]:
    """The rows of a table (unfiltered now) whose text contains `word`: what the filter must keep."""
    table = app.screen.query_one(f"#{tid}", KeyedTable)
    keep = [k for k in table.keys() if word in " ".join(str(c) for c in table.get_row(k)).lower()]
    return keep or ["placeholder|(none)"]


async def test_a_keystroke_filters_the_focused_table_and_the_others_catch_up(start_sim: StartSim) -> None:
    _sim, kubeconfig = start_sim()
    client, info = load(str(kubeconfig))
    session = LiveSession(Api(client), info)
    session.start()
    try:
        assert session.wait_synced(15)
        snap = session.snapshot()
    finally:
        session.stop()
    app = GputuiApp(snapshot=snap, title="bundle")  # no frames: only keys and the catch-up change the tables
    async with app.run_test(size=(160, 50)) as pilot:
        await wait_for(pilot, lambda: app.report is not None and bool(shown(app, "pods")), 20)
        await pilot.pause(0.2)
        nodes, pods, claims = shown(app, "nodes"), shown(app, "pods"), shown(app, "nodeclaims")
        word = "inference"  # in some GPU nodes' NodePool and in some pending pods' names
        want_nodes, want_pods, want_claims = (matching(app, t, word) for t in ("nodes", "pods", "nodeclaims"))
        assert 0 < len(want_nodes) < len(nodes) and 0 < len(want_pods) < len(pods) and want_claims != claims

        app.screen.query_one("#nodes", KeyedTable).focus()
        await pilot.press("slash", *word)
        assert shown(app, "nodes") == want_nodes  # the focused table, at once
        assert shown(app, "pods") == pods  # another table waits (its rows are not re-filtered per key)

        app.screen.query_one("#pods", KeyedTable).focus()  # shown to the user by focus: caught up
        await pilot.pause(0.05)
        assert shown(app, "pods") == want_pods
        assert shown(app, "nodeclaims") == claims
        await pilot.pause(CATCH_UP_S + 0.3)  # the keys paused: every table agrees with the filter
        assert shown(app, "nodeclaims") == want_claims
        assert shown(app, "nodes") == want_nodes and shown(app, "pods") == want_pods

        await pilot.press("escape")  # Esc clears the filter: the focused table at once, the rest after
        assert shown(app, "pods") == pods
        await pilot.pause(CATCH_UP_S + 0.3)
        assert shown(app, "nodes") == nodes
