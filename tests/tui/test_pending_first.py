"""The first useful screen comes before the full pod list: pending GPU pods with their findings,
GPUs in use per node marked unknown (`?`), and no all-clear until every pod is read (issue #25)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from gputui.dev.screenshots import build_app, settle
from gputui.sim.cluster import SimCluster
from gputui.tui import early
from tests.tui.conftest import screen_text, table_column
from tests.tui.test_navigation import wait_for

StartSim = Callable[..., tuple[SimCluster, Path]]


def pending_gpu_pods(sim: SimCluster) -> list[str]:
    out = []
    for p in sim.objects("pods"):
        if (p.get("status") or {}).get("phase") != "Pending" or (p["spec"].get("nodeName")):
            continue
        limits = [c.get("resources", {}).get("limits", {}) for c in p["spec"]["containers"]]
        if any(k.startswith("nvidia.com/") for lim in limits for k in lim):
            out.append(f"{p['metadata']['namespace']}/{p['metadata']['name']}")
    return sorted(out)


async def test_pending_gpu_pods_and_findings_before_the_full_pod_list(start_sim: StartSim) -> None:
    sim, kubeconfig = start_sim()
    expected = pending_gpu_pods(sim)
    assert expected
    held = sim.hold("/api/v1/pods?", unless="fieldSelector")  # the full pod list is slow to come
    app = build_app(kubeconfig, title="test")
    try:
        async with app.run_test(size=(170, 50)) as pilot:
            await wait_for(pilot, lambda: app.report_snapshot is not None and early.pending_only(app.report_snapshot)
                           and app.frame is not None and app.frame.diagnosis is not None
                           and app.frame.diagnosis.report is app.report, 20)
            await pilot.pause(0.3)
            assert not app.session.wait_synced(0)  # the full list is still held
            text = screen_text(app)
            print(text)
            assert sorted(app.screen.query_one("#pods").keys()) == expected
            assert app.frame.findings, "findings computed from the pending pods"
            used = table_column(app, "nodes", "GPUS C/A/R")
            assert used and all(u.endswith("/?") for u in used), used
            assert "GPUs in use: ? until every pod is read" in text
            assert "Loading the full pod list" in text
            assert "wait for the full pod list" in text
            assert "✓" not in text and "no problems found" not in text.lower()

            held.set()
            await settle(pilot)
            text = screen_text(app)
            used = table_column(app, "nodes", "GPUS C/A/R")
            assert not any(u.endswith("/?") for u in used), used
            assert "until every pod is read" not in text and "wait for the full pod list" not in text
            assert sorted(app.screen.query_one("#pods").keys()) == expected
    finally:
        held.set()


def test_every_check_named_as_judging_pending_pods_exists_and_reads_pods() -> None:
    """The checks that declare `pending_pods_suffice` read pods, and every other check that reads pods
    waits while only pending pods are read."""
    from diagnostics.registry import all_checks
    from diagnostics.snapshot import SourceState, SourceStatus, Snapshot, utcnow
    from gputui.collect.store import PENDING_ONLY

    reads_pods = {s.slug for s in all_checks() if "pods" in s.requires or "pods" in s.optional}
    pending_pod_checks = {s.slug for s in all_checks() if s.pending_pods_suffice}
    assert pending_pod_checks <= reads_pods
    snap = Snapshot(utcnow(), sources={"pods": SourceStatus("pods", SourceState.OK, PENDING_ONLY, partial=True)})
    waiting = early.waiting_checks(snap)
    assert waiting == reads_pods - pending_pod_checks
    assert {"consolidation-blocked", "gpu-workload-disruption", "gpu-idle"} <= waiting
    full = Snapshot(utcnow(), sources={"pods": SourceStatus("pods", SourceState.OK)})
    assert early.waiting_checks(full) == frozenset()
