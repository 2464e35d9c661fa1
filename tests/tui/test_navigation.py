"""Pilot tests against the simulator: what an on-call engineer sees and reaches, live."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest
from textual.command import CommandPalette
from textual.pilot import Pilot

from diagnostics.model import CheckStatus, ObjectRef
from gputui.dev.screenshots import settle
from gputui.tui.app import GputuiApp
from gputui.tui.messages import SnapshotReady
from gputui.tui.screens.confirm import ConfirmScreen
from gputui.tui.screens.debug import DebugScreen
from gputui.tui.screens.detail import DetailScreen, NodeClaimScreen, NodePoolScreen, NodeScreen, PodScreen
from gputui.tui.screens.finding import FindingScreen
from gputui.tui.screens.findings import FindingsScreen
from gputui.tui.screens.help import HelpScreen
from gputui.tui.screens.info import InfoScreen
from gputui.tui.screens.overview import OverviewScreen
from gputui.tui.screens.yaml_view import YamlScreen
from gputui.tui.widgets.filter_bar import FilterBar
from gputui.tui.widgets.keyed_table import KeyedTable
from gputui.tui.widgets.status_line import StatusLine
from tests.tui.conftest import SCENARIO, Live, screen_text, table_column

NEW_NODE = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"name": "ip-10-0-200-1.ec2.internal", "creationTimestamp": "2026-08-21T09:59:00Z",
                 "labels": {"node.kubernetes.io/instance-type": "g5.xlarge", "karpenter.sh/nodepool": "gpu",
                            "karpenter.k8s.aws/instance-gpu-count": "1"}},
    "status": {"capacity": {"nvidia.com/gpu": "1"}, "allocatable": {"nvidia.com/gpu": "1"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
}


async def wait_for(pilot: Pilot[object], pred: Callable[[], bool], timeout: float = 10.0) -> None:
    for _ in range(int(timeout / 0.05)):
        if pred():
            return
        await pilot.pause(0.05)
    assert pred(), "condition not met in time"


async def open_row(pilot: Pilot[object], table_id: str, ref: ObjectRef) -> None:
    """Move the cursor of a table on the current screen to `ref`'s row and press Enter."""
    table = pilot.app.screen.query_one(f"#{table_id}", KeyedTable)
    table.focus()
    keys = table.keys()
    table.move_cursor(row=next(i for i, k in enumerate(keys) if table.ref_for(k) == ref))
    await pilot.press("enter")
    await pilot.pause()


async def open_row_at(pilot: Pilot[object], table_id: str, index: int) -> None:
    table = pilot.app.screen.query_one(f"#{table_id}", KeyedTable)
    table.focus()
    table.move_cursor(row=index)
    await pilot.press("enter")
    await pilot.pause()


async def test_first_screen_shows_why_the_pod_is_pending_and_which_node_has_no_gpus(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    expect = sim.scenario.expect if sim.scenario else {}
    assert isinstance(app.screen, OverviewScreen)
    assert app.report is not None
    top = app.report.findings[0]
    assert (top.check, str(top.subject)) == (expect["topFinding"], expect["subject"])
    # The findings table leads with the scenario's root cause ...
    assert table_column(app, "findings", "FINDING")[0] == top.title
    # ... the node without GPUs is marked in the nodes table's HEALTH column ...
    dead = next(f.subject.name for f in app.report.findings if f.check == "gpu-not-advertised")
    names = table_column(app, "nodes", "NAME")
    health = table_column(app, "nodes", "HEALTH")
    assert health[names.index(dead)].startswith("✗ gpu-not-advertised")
    # ... every pending GPU pod has a one-line reason, and the pod waiting on that node says so.
    whys = table_column(app, "pods", "WHY")
    assert all(whys) and any(w.startswith(dead) for w in whys)
    text = screen_text(app)
    assert f"{dead}  ✗ gpu-not-advertised" in text
    assert "● live · 10 sources ok · updated 10:00:00" in text

    # At 80x24 every table still shows, and broken nodes sort first so the badge is on screen.
    await pilot.resize_terminal(80, 24)
    await settle(pilot)
    text = screen_text(app)
    for title in ("Findings", "GPU nodes", "Pending GPU pods", "NodeClaims", "NodePools", "● live"):
        assert title in text
    assert "✗ gpu-not-advertised" in text


@pytest.mark.slow
async def test_every_screen_is_reachable_and_esc_goes_back(live_app: Live) -> None:
    app, pilot = live_app.app, live_app.pilot
    assert app.report is not None
    top = app.report.findings[0]

    await pilot.press("f")
    assert isinstance(app.screen, FindingsScreen)
    results = table_column(app, "checklist", "RESULT")
    assert len(results) == len(app.report.results)
    assert any(r.endswith("failed") for r in results) and any(r.endswith("passed") for r in results)
    # Enter on a passed check explains it (its docstring), Esc comes back.
    await open_row_at(pilot, "checklist", results.index(next(r for r in results if r.endswith("passed"))))
    assert isinstance(app.screen, InfoScreen) and "Why it matters" in screen_text(app)
    await pilot.press("escape")
    assert isinstance(app.screen, FindingsScreen)
    app.screen.query_one("#findings-list", KeyedTable).focus()

    await pilot.press("enter")
    assert isinstance(app.screen, FindingScreen) and app.screen.finding.title == top.title
    assert "Evidence" in screen_text(app) and "Fix" in screen_text(app)
    await pilot.press("c")
    assert top.remediation is not None
    assert app.clipboard == "\n".join(top.remediation.commands)

    await pilot.press("o")
    assert isinstance(app.screen, DetailScreen) and app.screen.ref == top.subject
    assert top.title in table_column(app, "detail-findings", "FINDING")

    await pilot.press("y")
    yaml_screen = app.screen
    assert isinstance(yaml_screen, YamlScreen)
    # The full object is fetched from the API in a worker; managedFields never shown.
    await wait_for(pilot, lambda: yaml_screen.text.startswith("kind:") or "\napiVersion" in yaml_screen.text)
    await wait_for(pilot, lambda: "cached copy" not in screen_text(app))
    assert f"name: {top.subject.name}" in yaml_screen.text and "managedFields" not in yaml_screen.text

    for expected in (DetailScreen, FindingScreen, FindingsScreen, OverviewScreen):
        await pilot.press("escape")
        assert isinstance(app.screen, expected)

    await pilot.press("question_mark")
    assert isinstance(app.screen, HelpScreen)
    assert "Where to start" in screen_text(app)
    await pilot.press("escape")
    assert isinstance(app.screen, OverviewScreen)

    for alias, view in (("no", "nodes"), ("nc", "nodeclaims")):  # the other names: test_model
        await pilot.press("colon", *alias, "enter")  # k9s-style short names
        await pilot.pause()
        assert app.screen.maximized is app.screen.query_one(f"#{view}")
        assert app.focused is app.screen.maximized
    await pilot.press("escape")
    assert app.screen.maximized is None
    await pilot.press("colon", *"findings", "enter")
    assert isinstance(app.screen, FindingsScreen)
    await pilot.press("colon", *"overview", "enter")
    assert isinstance(app.screen, OverviewScreen)

    await pilot.press("ctrl+p")
    assert isinstance(app.screen, CommandPalette)
    await pilot.press(*"rerun", "enter")
    await wait_for(pilot, lambda: any("Diagnostics re-run" in str(n.message) for n in app.toasts))


@pytest.mark.slow
async def test_filter_by_text_and_by_label(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    sim.apply(NEW_NODE)  # at least two GPU nodes, whatever the scenario
    await wait_for(pilot, lambda: NEW_NODE["metadata"]["name"] in table_column(app, "nodes", "NAME"))
    await settle(pilot)
    assert app.snapshot is not None
    nodes = table_column(app, "nodes", "NAME")
    assert len(nodes) >= 2
    one = NEW_NODE["metadata"]["name"]
    app.screen.query_one("#nodes", KeyedTable).focus()  # a keystroke filters the focused table at once
    await pilot.press("slash", *"200-1")
    assert table_column(app, "nodes", "NAME") == [one]
    assert f"GPU nodes (1 of {len(nodes)})" in screen_text(app)
    await pilot.press("escape")  # clears the filter
    assert table_column(app, "nodes", "NAME") == nodes
    pool = "gpu"
    await pilot.press("slash")
    app.screen.query_one(FilterBar).value = f"karpenter.sh/nodepool={pool}"  # as if typed
    await pilot.press("enter")
    kept = table_column(app, "nodes", "NAME")
    assert one in kept and all(
        n.nodepool == pool for n in app.snapshot.nodes if n.name in kept)
    await pilot.press("slash", *" zz")
    assert table_column(app, "nodes", "NAME") == ["(none)"]


@pytest.mark.slow
async def test_drill_down_pod_to_nodeclaim_to_node_to_nodepool_by_keys_and_mouse(live_app: Live) -> None:
    app, pilot = live_app.app, live_app.pilot
    assert app.snapshot is not None
    from diagnostics.relations import chain

    # A pending GPU pod whose chain reaches a NodeClaim (it waits for one).
    pod = next(p for p in app.snapshot.index.pending_gpu_pods
               if any(r.kind == "NodeClaim" for r in chain(app.snapshot, p.ref)))
    refs = {r.kind: r for r in chain(app.snapshot, pod.ref)}
    await open_row(pilot, "pods", pod.ref)
    assert isinstance(app.screen, PodScreen) and app.screen.ref == pod.ref
    await open_row(pilot, "related", refs["NodeClaim"])
    assert isinstance(app.screen, NodeClaimScreen)
    await open_row(pilot, "related", refs["Node"])
    assert isinstance(app.screen, NodeScreen)
    await open_row(pilot, "related", refs["NodePool"])
    assert isinstance(app.screen, NodePoolScreen)
    assert "EC2NodeClass" in [r.kind for r in
                              (app.screen.query_one("#related", KeyedTable).ref_for(k)
                               for k in app.screen.query_one("#related", KeyedTable).keys()) if r]
    assert "›" in (app.screen.sub_title or "")

    # The mouse works too: back on the overview, a first click on a row selects it, a second opens it.
    for _ in range(4):
        await pilot.press("escape")
    assert isinstance(app.screen, OverviewScreen)
    table = app.screen.query_one("#nodes", KeyedTable)
    second = table.ref_for(table.keys()[1])
    await pilot.click("#nodes", offset=(2, 3))  # row 1: under the top border, the header and row 0
    assert isinstance(app.screen, OverviewScreen) and table.selected_ref == second
    await pilot.click("#nodes", offset=(2, 3))
    await pilot.pause()
    assert isinstance(app.screen, NodeScreen) and app.screen.ref == second


@pytest.mark.slow
async def test_live_changes_in_the_cluster_appear_on_screen(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    assert app.snapshot is not None
    nodes_table = app.screen.query_one("#nodes", KeyedTable)
    before = nodes_table.keys()
    sim.apply(NEW_NODE)
    name = NEW_NODE["metadata"]["name"]
    await wait_for(pilot, lambda: name in nodes_table.keys())
    assert set(before) < set(nodes_table.keys())  # added by key, nothing rebuilt or lost
    assert str(nodes_table.get_cell(name, "GPUS C/A/R")) == "1/1/0"
    assert f"GPU nodes ({len(before) + 1})" in screen_text(app)

    pod = app.snapshot.index.pending_gpu_pods[0]
    key = f"{pod.namespace}/{pod.name}"
    assert key in app.screen.query_one("#pods", KeyedTable).keys()
    sim.patch("Pod", pod.name, {"spec": {"nodeName": NEW_NODE["metadata"]["name"]},
                                "status": {"phase": "Running"}}, namespace=pod.namespace)
    await wait_for(pilot, lambda: key not in app.screen.query_one("#pods", KeyedTable).keys())


@pytest.mark.slow
async def test_changes_a_slow_frame_made_a_poll_skip_go_out_when_it_is_painted(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    assert app.session is not None
    store = app.session.store
    app._poll_timer.pause()  # the polls are this test's to make
    app._diag_rest_until = time.monotonic() + 600  # no diagnostics run (its end would frame too)
    sim.apply(NEW_NODE)
    name = NEW_NODE["metadata"]["name"]
    await wait_for(pilot, lambda: store.get("nodes", name) is not None)
    app._unpainted_since = time.monotonic()  # the last frame is not painted yet...
    app._poll()  # ...so this poll leaves the new node for later
    await pilot.pause(0.3)
    nodes_table = app.screen.query_one("#nodes", KeyedTable)
    assert name not in nodes_table.keys()
    app._painted()  # the slow frame is on screen: the node follows without another poll
    await wait_for(pilot, lambda: name in nodes_table.keys(), timeout=5)


@pytest.mark.slow
async def test_refresh_pauses_while_a_modal_is_open(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    shown = app.data_version
    await pilot.press("question_mark")
    assert isinstance(app.screen, HelpScreen)
    sim.apply(NEW_NODE)
    assert app.session is not None
    store = app.session.store
    await wait_for(pilot, lambda: store.get("nodes", NEW_NODE["metadata"]["name"]) is not None)
    await pilot.pause(0.5)
    assert app.data_version == shown  # nothing re-rendered under the modal
    await pilot.press("escape")
    await wait_for(pilot, lambda: NEW_NODE["metadata"]["name"] in
                   app.screen.query_one("#nodes", KeyedTable).keys())


@pytest.mark.slow
@pytest.mark.live_app(size=(160, 40), forbid=("nodeclaims.karpenter.sh",))
async def test_forbidden_source_shows_its_status_instead_of_crashing(live_app: Live) -> None:
    app, pilot = live_app.app, live_app.pilot
    status = str(app.screen.query_one(StatusLine).render())
    assert "nodeclaims forbidden (list nodeclaims.karpenter.sh)" in status
    assert table_column(app, "nodeclaims", "NAME") == ["(none)"]
    assert "NodeClaims (not seen: nodeclaims forbidden)" in screen_text(app)  # not "(0)": it could not look
    assert table_column(app, "nodes", "NAME") != ["(none)"]  # the other sources still show
    assert app.report is not None
    skipped = [r for r in app.report.results if r.status is CheckStatus.SKIPPED]
    assert any("nodeclaims: forbidden" in r.reason for r in skipped)
    await pilot.press("f")
    reasons = table_column(app, "checklist", "DETAIL")
    assert any("nodeclaims: forbidden" in r for r in reasons)


@pytest.mark.slow
@pytest.mark.live_app(read_only=True)
async def test_read_only_refuses_the_debug_pod(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    app.screen.query_one("#nodes", KeyedTable).focus()
    await pilot.press("ctrl+d")
    await pilot.pause()
    assert isinstance(app.screen, OverviewScreen)  # hidden, not offered: nothing happens
    text = screen_text(app)
    assert "Debug pod" not in text.splitlines()[-1]  # the footer does not offer it
    assert "read-only" in text.splitlines()[-2]  # the status line says why
    assert "READ-ONLY" in text.splitlines()[0]  # and the header
    assert not [p for p in sim.objects("Pod")
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]


@pytest.mark.slow
async def test_debug_pod_asks_first_then_runs_and_cleans_up(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    table = app.screen.query_one("#nodes", KeyedTable)
    table.focus()
    node = table.selected_ref
    assert node is not None
    await pilot.press("d", "y")  # k9s reflexes (describe, then YAML) create nothing
    assert not isinstance(app.screen, ConfirmScreen)
    assert not [p for p in sim.objects("Pod")
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]
    while len(app.screen_stack) > 1:
        await pilot.press("escape")
    app.screen.query_one("#nodes", KeyedTable).focus()
    await pilot.press("ctrl+d")
    assert isinstance(app.screen, ConfirmScreen)
    assert f"gputui.dev/debug-node: {node.name}" in screen_text(app)
    await pilot.press("enter")  # the default is Cancel
    assert isinstance(app.screen, OverviewScreen)
    await pilot.press("ctrl+d", "y")  # `y` is no longer yes
    assert isinstance(app.screen, ConfirmScreen)
    await pilot.press("enter")
    assert not [p for p in sim.objects("Pod")
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]
    await pilot.press("ctrl+d")
    await pilot.click("#confirm-input")
    await pilot.press(*node.name, "enter")
    debug = app.screen
    assert isinstance(debug, DebugScreen)
    await wait_for(pilot, lambda: debug.done, timeout=30)
    assert debug.result is not None and debug.result.deleted
    assert not [p for p in sim.objects("Pod")
                if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]
    await pilot.press("escape")
    assert isinstance(app.screen, OverviewScreen)


async def test_a_bundle_opens_offline_with_its_time_in_the_status_line() -> None:
    from tests.builders import NOW, snapshot
    from tests.tui.test_model import CHAIN

    app = GputuiApp(snapshot=snapshot(CHAIN), title="bundle")
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert "bundle from 2026-08-21 10:00:00Z" in screen_text(app)
        assert app.snapshot is not None and app.snapshot.taken_at == NOW
        await pilot.press("y")  # the stored (projected) object, no API to ask
        assert isinstance(app.screen, YamlScreen) and "as stored in the bundle" in screen_text(app)
        await pilot.press("escape")
        app.screen.query_one("#nodes", KeyedTable).focus()
        await pilot.press("d")  # describe, from the stored object (k9s's `d`)
        assert "as stored in the bundle" in screen_text(app) and "Name:" in screen_text(app)
        await pilot.press("escape", "ctrl+d")  # no debug pod from a bundle: not offered
        assert isinstance(app.screen, OverviewScreen)
        assert "Debug pod" not in screen_text(app).splitlines()[-1]


@pytest.mark.slow
async def test_export_writes_a_bundle_that_reopens_offline(live_app: Live, tmp_path: Path,
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    from gputui.bundle.read import open_bundle

    app, pilot = live_app.app, live_app.pilot
    monkeypatch.chdir(tmp_path)
    await pilot.press("e")
    await wait_for(pilot, lambda: any("Bundle exported" in str(n.title) for n in app.toasts), 30)
    (path,) = tmp_path.glob("gputui-bundle-*.tar.gz")
    offline = GputuiApp(snapshot=open_bundle(path).snapshot(), title="bundle")
    async with offline.run_test(size=(120, 40)) as offline_pilot:
        await settle(offline_pilot)
        text = screen_text(offline)
        assert "bundle from 2026-08-21 10:00:00Z" in text
        assert "✗ gpu-not-advertised" in text  # the same diagnosis, replayed from the file


@pytest.mark.slow
@pytest.mark.live_app(size=(160, 40))
async def test_a_failing_source_goes_stale_and_keeps_its_rows(live_app: Live) -> None:
    app, pilot, sim = live_app.app, live_app.pilot, live_app.sim
    claims = app.screen.query_one("#nodeclaims", KeyedTable).keys()
    sim.fail_requests(1000, 500, path_contains="/nodeclaims")
    sim.drop_watches(kind="NodeClaim")
    await wait_for(pilot, lambda: "nodeclaims stale since 10:00:00" in screen_text(app), 15)
    assert app.screen.query_one("#nodeclaims", KeyedTable).keys() == claims


def test_scenario_constant_names_a_shipped_demo() -> None:
    from gputui.sim.scenario import list_scenarios

    assert SCENARIO in [s.name for s in list_scenarios()]


def deliver_frame_again(app: GputuiApp) -> None:
    """Hand the app its newest frame again, as the frame worker does (forced, so it is announced)."""
    frame = app.frame
    assert frame is not None
    app.on_snapshot_ready(SnapshotReady(frame.snapshot, frame.report, frame.version, True, "", frame))


@pytest.mark.slow
async def test_a_frame_that_lands_before_a_new_screen_is_composed_waits_for_its_mount(live_app: Live) -> None:
    """Frames come from a worker thread at any moment, also between a screen's push and the end of
    its compose (on a loaded machine, the very first frame did): the screen catches up on mount."""
    app, pilot = live_app.app, live_app.pilot
    mounted = app.push_screen(FindingsScreen())
    deliver_frame_again(app)
    await mounted
    await pilot.pause()
    assert isinstance(app.screen, FindingsScreen)
    assert app.screen.data_version == app.data_version
    assert "Diagnostics re-run" in "".join(str(n.message) for n in app.toasts)


@pytest.mark.slow
async def test_a_frame_that_lands_while_a_screen_is_torn_down_is_dropped(live_app: Live) -> None:
    """A frame can also land while a screen's widgets are being removed (leaving it, quitting)."""
    app, pilot = live_app.app, live_app.pilot
    screen = app.screen
    await screen.query_one(StatusLine).remove()
    await screen.query_one("#nodes", KeyedTable).remove()
    deliver_frame_again(app)
    await pilot.pause()
    assert app.screen is screen and app.is_running
