"""`diagnose pod/X` reads only what the pod's findings depend on, and finds exactly what the whole lists find.

Every pod of every demo scenario, and a scenario bent into the corners the narrowing must get
right (an unregistered claim whose node joined without labels, a node relabelled by hand, Gt and
unparsable selector terms, a repair event naming a pool, a `nodes` limit without usage), is
diagnosed twice: from whole lists and scoped. The focused reports must be identical except for the
checklist's "examined" counts, the count of findings elsewhere (a check that failed only elsewhere in
the whole lists passes on the narrowed ones) and the sources' partial marks.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from diagnostics import run as run_checks
from diagnostics.model import ObjectRef
from gputui import clock
from gputui.collect.one_shot import collect
from diagnostics.relations import focus
from gputui.kube.api import Api, load
from gputui.output.json import report_json
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import list_scenarios, load_scenario

pytestmark = pytest.mark.slow  # every scenario read scoped and whole

SCENARIOS = [s.name for s in list_scenarios()]


def _report(api: Api, info: Any, ref: ObjectRef, scoped: bool) -> tuple[dict[str, Any], Any]:
    snap = collect(api, info, ref, now=clock.now, scoped=scoped)
    data = report_json(focus(run_checks(snap), snap, ref))
    for r in data["results"]:
        r.pop("examined", None)
        # Findings about other objects are counted, not shown: how many depends on how much was read.
        if r.pop("elsewhere", 0) and not r["findings"]:
            r["status"] = "nothing about the target"
        if r["status"] == "passed":
            r["status"] = "nothing about the target"
        if r["status"] == "nothing about the target":
            r.pop("reason", None)  # "ok, N examined"
    for st in data.get("sources", {}).values():
        st.pop("partial", None)
    return data, snap


def _assert_same_for_every_pod(sim: SimCluster, cfg: Path) -> int:
    client, info = load(str(cfg))
    api = Api(client)
    narrowed = 0
    for p in sim.objects("Pod"):
        ref = ObjectRef("Pod", p["metadata"]["name"], p["metadata"]["namespace"])
        whole, all_snap = _report(api, info, ref, scoped=False)
        scoped, snap = _report(api, info, ref, scoped=True)
        assert scoped == whole, ref
        narrowed += len(snap.nodes) + len(snap.nodeclaims) < len(all_snap.nodes) + len(all_snap.nodeclaims)
    return narrowed


@pytest.mark.parametrize("name", SCENARIOS)
def test_scoped_pod_reads_find_what_whole_lists_find(name: str, tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    sc = load_scenario(name)
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    with SimCluster(sc) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        _assert_same_for_every_pod(sim, cfg)


def _pending_gpu_pods(sim: SimCluster) -> list[dict[str, Any]]:
    return [p for p in sim.objects("Pod") if p["status"].get("phase") == "Pending" and not p["spec"].get("nodeName")
            and any("nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {}) for c in p["spec"]["containers"])]


def _bend(sim: SimCluster) -> None:
    """Put the corners the narrowing must handle into the incident scenario."""
    claims = {c["metadata"]["name"]: c for c in sim.objects("NodeClaim")}
    nodes = {n["metadata"]["name"]: n for n in sim.objects("Node")}
    pools = {p["metadata"]["name"]: p for p in sim.objects("NodePool")}
    pending = _pending_gpu_pods(sim)
    assert len(pending) >= 2

    # 1. A launched claim that never registered, whose instance joined as a node without labels, and a
    #    pending pod nominated to it (its finding reads the node by providerID among all nodes).
    base = next(c for c in claims.values() if c["metadata"].get("labels", {}).get("karpenter.sh/nodepool"))
    pool = base["metadata"]["labels"]["karpenter.sh/nodepool"]
    claim = copy.deepcopy(base)
    claim["metadata"].update(name=f"{pool}-edge1", uid="edge-claim-1")
    claim["metadata"].pop("deletionTimestamp", None)
    claim["metadata"].pop("resourceVersion", None)
    claim["status"] = {"providerID": "aws:///us-east-1a/i-0edge00000000001", "conditions": [
        {"type": "Launched", "status": "True", "reason": "Launched", "message": "",
         "lastTransitionTime": "2026-08-21T09:30:00Z"},
        {"type": "Registered", "status": "Unknown", "reason": "AwaitingReconciliation", "message": "",
         "lastTransitionTime": "2026-08-21T09:30:00Z"}]}
    sim.apply(claim)
    node = copy.deepcopy(next(iter(nodes.values())))
    node["metadata"] = {"name": "ip-10-9-9-9.ec2.internal", "uid": "edge-node-1",
                        "creationTimestamp": "2026-08-21T09:35:00Z", "labels": {}}
    node["spec"] = {"providerID": "aws:///us-east-1a/i-0edge00000000001"}
    sim.apply(node)
    p1 = pending[0]
    sim.apply({"apiVersion": "v1", "kind": "Event",
               "metadata": {"name": f"{p1['metadata']['name']}.edge1", "namespace": p1["metadata"]["namespace"]},
               "involvedObject": {"kind": "Pod", "name": p1["metadata"]["name"],
                                  "namespace": p1["metadata"]["namespace"], "uid": p1["metadata"].get("uid", "")},
               "reason": "Nominated", "message": f"Pod should schedule on: nodeclaim/{pool}-edge1",
               "type": "Normal", "count": 1, "source": {"component": "karpenter"},
               "firstTimestamp": "2026-08-21T09:59:00Z", "lastTimestamp": "2026-08-21T09:59:00Z"})

    # 2. A node hosting running pods relabelled by hand: its NodeClaim is known by providerID only.
    bound = {p["spec"]["nodeName"] for p in sim.objects("Pod") if p["spec"].get("nodeName")}
    relabel = next(n for n in nodes.values() if n["metadata"]["name"] in bound
                   and n["metadata"].get("labels", {}).get("karpenter.sh/nodepool"))
    labels = {k: v for k, v in relabel["metadata"]["labels"].items() if k != "karpenter.sh/nodepool"}
    sim.patch("Node", relabel["metadata"]["name"], {"metadata": {"labels": None}})
    sim.patch("Node", relabel["metadata"]["name"], {"metadata": {"labels": labels}})

    # 3. A pending pod with Gt/Lt terms, values no label can have, and every other operator.
    p3 = copy.deepcopy(pending[1])
    p3["metadata"] = {"name": "edge-selectors-0", "namespace": p3["metadata"]["namespace"], "uid": "edge-pod-3",
                      "creationTimestamp": "2026-08-21T09:00:00Z"}
    p3["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [
            {"matchExpressions": [{"key": "karpenter.k8s.aws/instance-gpu-count", "operator": "Gt", "values": ["0"]},
                                  {"key": "karpenter.sh/nodepool", "operator": "In", "values": [pool, "not a value"]}]},
            {"matchExpressions": [{"key": "karpenter.sh/nodepool", "operator": "NotIn", "values": [pool]},
                                  {"key": "nvidia.com/gpu.present", "operator": "Exists"},
                                  {"key": "example.com/never", "operator": "DoesNotExist"}]}]}}}
    sim.apply(p3)

    # 4. A repair event on another pool's node that names this pool, and a `nodes` limit without usage.
    other = next(n for n in nodes.values()
                 if n["metadata"].get("labels", {}).get("karpenter.sh/nodepool") not in (None, pool))
    sim.apply({"apiVersion": "v1", "kind": "Event", "metadata": {"name": "edge-repair", "namespace": "default"},
               "involvedObject": {"kind": "Node", "name": other["metadata"]["name"]},
               "reason": "NodeRepairBlocked", "type": "Warning", "count": 3, "source": {"component": "karpenter"},
               "message": f'more than 20% nodes are unhealthy in the nodepool "{pool}"',
               "firstTimestamp": "2026-08-21T09:50:00Z", "lastTimestamp": "2026-08-21T09:58:00Z"})
    limited = next(n for n in pools if n != pool)
    sim.patch("NodePool", limited, {"spec": {"limits": {"nodes": "1"}}})


def test_scoped_pod_reads_handle_the_corners(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    sc = load_scenario("incident")
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    with SimCluster(sc) as sim:
        _bend(sim)
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        assert _assert_same_for_every_pod(sim, cfg) > 0


def test_pending_pod_reads_only_its_pools_nodes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod pinned to one NodePool: the other pools' nodes and claims are not read; the sources say partial."""
    sc = load_scenario("incident")
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    with SimCluster(sc) as sim:
        pod = copy.deepcopy(_pending_gpu_pods(sim)[0])
        pool = next(p["metadata"]["name"] for p in sim.objects("NodePool"))
        pod["metadata"] = {"name": "pinned-0", "namespace": pod["metadata"]["namespace"], "uid": "pinned-0",
                           "creationTimestamp": "2026-08-21T09:00:00Z"}
        pod["spec"]["nodeSelector"] = {"karpenter.sh/nodepool": pool}
        pod["spec"].pop("affinity", None)
        sim.apply(pod)
        client, info = load(str(sim.write_kubeconfig(tmp_path / "kubeconfig")))
        snap = collect(Api(client), info, ObjectRef("Pod", "pinned-0", pod["metadata"]["namespace"]),
                       now=clock.now, scoped=True)
    assert {n.nodepool for n in snap.nodes} <= {pool}
    assert {c.nodepool for c in snap.nodeclaims} <= {pool}
    assert snap.sources["nodes"].partial and snap.sources["nodeclaims"].partial
