"""What the screen claims when gputui cannot see: no green dot, no "no problems found", no "✓ ok"
for an object whose own state is bad (issue #22)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from gputui.dev.screenshots import build_app, settle
from gputui.sim.cluster import SimCluster
from gputui.tui.widgets.status_line import StatusLine
from tests.tui.conftest import Live, screen_text, table_column
from tests.tui.test_navigation import wait_for

StartSim = Callable[..., tuple[SimCluster, Path]]


async def test_an_unreachable_api_server_turns_the_header_red_and_claims_nothing(start_sim: StartSim) -> None:
    sim, kubeconfig = start_sim("healthy")
    sim.stop()  # the port now refuses connections: what a dead VPN or API server looks like
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(120, 30)) as pilot:
        await wait_for(pilot, lambda: app.report is not None and "unreachable" in screen_text(app), 15)
        await pilot.pause(0.2)
        text = screen_text(app)
        assert "API server unreachable" in text
        assert "no problems found" not in text and "✓" not in text
        assert "nothing checked" in text
        assert "GPU nodes (not seen: nodes unreachable)" in text and "GPU nodes (0)" not in text
        status = str(app.screen.query_one(StatusLine).render())
        assert status.startswith("● unreachable")
        assert "● live" not in text
        assert app.screen.has_class("-sight-bad")


@pytest.mark.slow
@pytest.mark.live_app(size=(160, 45))
async def test_badges_come_from_the_objects_own_state(live_app: Live) -> None:
    """The crash-looping device plugin pod (the root cause), a stuck NodeClaim and a NodePool whose
    Ready is False are never "✓ ok", on their own page or in a Related table."""
    from diagnostics.model import ObjectRef

    app, pilot = live_app.app, live_app.pilot
    node = ObjectRef("Node", "ip-10-0-31-203.ec2.internal")
    app.open_ref(node)
    await settle(pilot)
    plugin = next(r for r in app.screen.query_one("#related").keys() if "nvidia-device-plugin" in r)
    related = dict(zip(app.screen.query_one("#related").keys(), table_column(app, "related", "HEALTH")))
    assert related[plugin].startswith("✗ CrashLoopBackOff ("), related[plugin]
    app.open_ref(ObjectRef("Pod", plugin.split("/", 2)[2], plugin.split("/", 2)[1]))
    await settle(pilot)
    head = screen_text(app).splitlines()[1]
    assert "✗ CrashLoopBackOff (" in head and "✓ ok" not in head
    app.open_ref(ObjectRef("NodeClaim", "gpu-training-w9n3f"))
    await settle(pilot)
    head = screen_text(app).splitlines()[1]
    assert "✓ ok" not in head and "✗" in head, head
    app.open_ref(ObjectRef("NodePool", "gpu-training-efa"))
    await settle(pilot)
    head = screen_text(app).splitlines()[1]
    assert "✓ ok" not in head and "✗" in head, head


@pytest.mark.slow
@pytest.mark.live_app(size=(160, 45))
async def test_a_node_that_does_not_exist_says_so_and_offers_no_debug_pod(live_app: Live) -> None:
    app, pilot = live_app.app, live_app.pilot
    await pilot.press("colon", *"node 31-203", "enter")
    await settle(pilot)
    text = screen_text(app)
    assert "? not found" in text and "✓ ok" not in text
    assert "No Node named 31-203 in the cache" in text
    assert "Did you mean: ip-10-0-31-203.ec2.internal?" in text
    await pilot.press("ctrl+d")
    await pilot.pause(0.1)
    from gputui.tui.screens.confirm import ConfirmScreen

    assert not isinstance(app.screen, ConfirmScreen)


HOSTILE = "[bold]boom[/bold] [red] In [a, b] \x1b]0;pwned\x07\x1b[2J end"
"""Rich markup, a `[...]` list and terminal escapes (retitle, clear screen): shown, never interpreted."""


def hostile_event(name: str, kind: str, obj: str, namespace: str | None = None) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": namespace or "default"},
            "involvedObject": {"kind": kind, "name": obj, **({"namespace": namespace} if namespace else {})},
            "reason": "[Evil]", "message": HOSTILE, "type": "Warning", "count": 3,
            "firstTimestamp": "2026-08-21T09:58:00Z", "lastTimestamp": "2026-08-21T09:59:00Z",
            "source": {"component": "[kubelet]"}}


def assert_shown_not_interpreted(text: str) -> None:
    assert "\x1b" not in text and "\x07" not in text
    assert "[bold]boom[/bold] [red] In [a, b] \\x1b]0;pwned\\x07\\x1b[2J end" in text, text


@pytest.mark.slow
async def test_cluster_text_is_shown_literally_in_every_view(start_sim: StartSim) -> None:
    from diagnostics.model import ObjectRef

    sim, kubeconfig = start_sim()
    node = "ip-10-0-31-203.ec2.internal"
    sim.create(hostile_event("evil-node", "Node", node))
    sim.create(hostile_event("evil-pool", "NodePool", "gpu-training-efa"))
    pod = next(o["metadata"]["name"] for o in sim.objects("Pod", "ml") if "pretrain-llama" in o["metadata"]["name"])
    sim.create(hostile_event("evil-pod", "Pod", pod, "ml"))
    # A node condition's message reaches a finding's title: the findings table, list and page.
    unknown = "ip-10-0-45-177.ec2.internal"
    obj = sim.get("Node", unknown)
    assert obj is not None
    for c in obj["status"]["conditions"]:
        if c["type"] == "Ready":
            c["message"] = HOSTILE
    sim.apply(obj)
    app = build_app(kubeconfig, title="test")
    async with app.run_test(size=(200, 60)) as pilot:
        await settle(pilot)
        await pilot.press("ctrl+w")  # every column whole
        await pilot.pause(0.2)
        assert_shown_not_interpreted(screen_text(app))
        await pilot.press("f")
        await settle(pilot)
        assert_shown_not_interpreted(screen_text(app))
        assert app.report is not None
        finding = next(f for f in app.report.findings if f.check == "gpu-node-not-ready")
        app.open_finding(finding)
        await settle(pilot)
        assert_shown_not_interpreted(screen_text(app))
        while len(app.screen_stack) > 1:
            app.pop_screen()
        await settle(pilot)
        for ref in (ObjectRef("Node", node), ObjectRef("NodePool", "gpu-training-efa"), ObjectRef("Pod", pod, "ml")):
            app.open_ref(ref)
            await settle(pilot)
            text = screen_text(app)
            assert_shown_not_interpreted(text)
            assert "[Evil]" in text and "[kubelet]" in text
            if ref.kind == "NodePool":  # requirement values in brackets were eaten as markup
                assert "In [" in text
        app.describe_ref(ObjectRef("Pod", pod, "ml"))  # `d`: the events table of kubectl describe
        await settle(pilot)
        describe = app.screen.text  # type: ignore[attr-defined]
        assert "\x1b" not in describe and "[bold]boom[/bold] [red] In [a, b] \\x1b]0;pwned" in describe
        assert "\x1b" not in screen_text(app)
        await pilot.press("escape")
        await settle(pilot)
        app.notify(HOSTILE)  # a toast (Textual's screenshots leave toasts out: read the notification itself)
        await pilot.pause(0.2)
        toast = app.toasts[-1]
        assert toast.markup is False and "\x1b" not in toast.message
        assert "[bold]boom[/bold]" in toast.message and "\\x1b]0;pwned" in toast.message
        await pilot.press("y")
        await settle(pilot)
        assert "\x1b" not in screen_text(app)


async def test_a_namespace_limited_user_sees_its_namespace_and_is_told_what_it_cannot_see(start_sim: StartSim) -> None:
    """RBAC grants pods and events in `ml` only: the informers fall back to that namespace (as kubectl -n
    does) instead of showing nothing under a green dot, and the banner says what is out of sight."""
    sim, kubeconfig = start_sim()
    sim.access.limit_to_namespace("ml")
    app = build_app(kubeconfig, title="test", namespace="ml")
    async with app.run_test(size=(160, 45)) as pilot:
        await settle(pilot)
        text = screen_text(app)
        pending = table_column(app, "pods", "NAMESPACE/NAME")
        assert pending and all(p.startswith("ml/") for p in pending), pending
        assert "Seen in namespace ml only (cluster-wide list forbidden)" in text
        assert "pods" in text.split("Seen in namespace ml only", 1)[1].split("\n", 1)[0]
        assert str(app.screen.query_one(StatusLine).render()).startswith("● limited")
        assert "● live" not in text and "no problems found" not in text
        assert app.screen.has_class("-sight-warn")
        # Events are read in the namespace too: a pending pod's page shows its scheduling events.
        from diagnostics.model import ObjectRef

        ns, name = pending[0].split("/", 1)
        app.open_ref(ObjectRef("Pod", name, ns))
        await settle(pilot)
        assert "Recent events (0)" not in screen_text(app)


@pytest.mark.slow
async def test_a_prometheus_that_stops_answering_turns_stale_in_yellow(start_sim: StartSim, tmp_path: Path) -> None:
    """The metric checks read old facts (or none): the dot, the header and a banner say so."""
    from gputui.kube.api import Api, load
    from gputui.collect.live import LiveSession
    from gputui.sources.prometheus import PrometheusSettings
    from gputui.sim.prometheus import start_demo_prometheus
    from gputui.tui.app import GputuiApp
    from tests.prometheus.conftest import require_prometheus

    require_prometheus()
    sim, kubeconfig = start_sim()
    assert sim.scenario is not None
    started = start_demo_prometheus([o for objs in sim.scenario.objects.values() for o in objs], workdir=tmp_path)
    assert started is not None
    url, stop = started
    try:
        client, info = load(str(kubeconfig))
        session = LiveSession(Api(client), info, prometheus=PrometheusSettings(url=url, interval=600, timeout=2))
        app = GputuiApp(session=session, title="test")
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            await wait_for(pilot, lambda: "prometheus" not in screen_text(app).splitlines()[-2], 15)
            assert str(app.screen.query_one(StatusLine).render()).startswith("● live")
            stop()
            await pilot.press("r")  # a round now: Prometheus is gone
            await wait_for(pilot, lambda: "prometheus stale since" in screen_text(app), 20)
            text = screen_text(app)
            assert text.splitlines()[1].startswith(" ! prometheus stale since")  # under the header
            assert str(app.screen.query_one(StatusLine).render()).startswith("● stale")
            assert app.screen.has_class("-sight-warn") and "● live" not in text
    finally:
        stop()
