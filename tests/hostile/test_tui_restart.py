"""The TUI after an API server restart shows no node that is gone (issue #24, item 6).

A GPU node that existed only on the first server stayed in the nodes table as live after the server
came back with a new history. Now the watch from the old resourceVersion gets 410, the informers
relist, and the row goes.
"""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from gputui.dev.screenshots import build_app, settle
from gputui.sim.cluster import SimCluster
from tests.tui.conftest import table_column
from tests.tui.test_navigation import wait_for


@pytest.mark.slow
async def test_a_node_gone_after_a_restart_leaves_the_nodes_table(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    from tests.tui.conftest import reference_now

    monkeypatch.setenv("GPUTUI_NOW", reference_now("spot-shortage"))
    first = SimCluster("spot-shortage", bookmark_interval=0.3).start()
    port = int(first.url.rsplit(":", 1)[1])
    kubeconfig = first.write_kubeconfig(tmp_path / "kubeconfig")
    second: SimCluster | None = None
    try:
        gpu_node = next(n for n in first.objects("Node")
                        if "nvidia.com/gpu" in ((n.get("status") or {}).get("capacity") or {}))
        ghost = copy.deepcopy(gpu_node)
        ghost["metadata"] = {**{k: v for k, v in gpu_node["metadata"].items()
                                if k in ("labels", "annotations", "creationTimestamp")},
                             "name": "ghost-gpu-node.ec2.internal"}
        app = build_app(kubeconfig, title="test")
        async with app.run_test(size=(160, 45)) as pilot:
            await settle(pilot)
            first.apply(ghost)
            await wait_for(pilot, lambda: "ghost-gpu-node.ec2.internal" in table_column(app, "nodes", "NAME"), 15)
            for i in range(3):  # churn on the first server: its resourceVersion passes the second's
                first.apply({"apiVersion": "v1", "kind": "Node", "metadata": {"name": f"churn-{i}"}})
            first.stop()
            second = SimCluster("spot-shortage", bookmark_interval=0.3, port=port).start()
            await wait_for(pilot, lambda: "ghost-gpu-node.ec2.internal" not in table_column(app, "nodes", "NAME"), 30)
            live = sorted(n["metadata"]["name"] for n in second.objects("Node")
                          if "nvidia.com/gpu" in ((n.get("status") or {}).get("capacity") or {}))
            await wait_for(pilot, lambda: sorted(table_column(app, "nodes", "NAME")) == live, 15)
    finally:
        if second is not None:
            second.stop()
        first.stop()
