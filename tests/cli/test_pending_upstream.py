"""`gputui diagnose pod/X` for pods kube-scheduler or Karpenter hold back on their own terms, over the simulator.

A gated pod (spec.schedulingGates), a pod pinned by kubernetes.io/hostname (Karpenter's restricted label) and
a pod rejected in PreFilter for its volume are added to the incident scenario; each is diagnosed as a user
would (text and JSON), and the scoped read of each finds what the whole lists find. The unit cases and their
upstream sources are in tests/diagnostics/test_relations_upstream.py.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnostics import run as run_checks
from diagnostics.model import ObjectRef
from diagnostics.relations import focus
from gputui import clock
from gputui.cli.program import main
from gputui.collect.one_shot import collect
from gputui.errors import ExitCode
from gputui.kube.api import Api, load
from gputui.output.json import report_json
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario

SCENARIO = load_scenario("incident")
NOW = SCENARIO.reference_time.isoformat()
PREFILTER = ("0/6 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/6 nodes are "
             "available: 6 Preemption is not helpful for scheduling.")
KARPENTER_PVC = ("Failed to schedule pod, unbound pvc must define a storage class "
                 "(PersistentVolumeClaim={ns}/data-{name}, StorageClass=)")


def _pending(sim: SimCluster) -> dict[str, Any]:
    return next(p for p in sim.objects("Pod") if p["status"].get("phase") == "Pending"
                and not p["spec"].get("nodeName") and not p["status"].get("nominatedNodeName")
                and any("nvidia.com/gpu" in (c.get("resources") or {}).get("limits", {})
                        for c in p["spec"]["containers"]))


def _copy(base: dict[str, Any], name: str) -> dict[str, Any]:
    pod = copy.deepcopy(base)
    pod["metadata"] = {"name": name, "namespace": base["metadata"]["namespace"], "uid": f"uid-{name}",
                       "creationTimestamp": "2026-08-21T09:00:00Z"}
    return pod


def _event(pod: dict[str, Any], suffix: str, message: str, source: str) -> dict[str, Any]:
    md = pod["metadata"]
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": f"{md['name']}.{suffix}", "namespace": md["namespace"]},
            "involvedObject": {"kind": "Pod", "name": md["name"], "namespace": md["namespace"], "uid": md["uid"]},
            "reason": "FailedScheduling", "message": message, "type": "Warning", "count": 4,
            "source": {"component": source},
            "firstTimestamp": "2026-08-21T09:01:00Z", "lastTimestamp": "2026-08-21T09:58:00Z"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, str]]:
    with SimCluster(SCENARIO) as sim:
        base = _pending(sim)
        ns = base["metadata"]["namespace"]
        gated = _copy(base, "gated-0")
        gated["spec"]["schedulingGates"] = [{"name": "kueue.x-k8s.io/admission"}]
        gated["status"] = {"phase": "Pending", "conditions": [
            {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
             "message": "Scheduling is blocked due to non-empty scheduling gates",
             "lastTransitionTime": "2026-08-21T09:00:00Z"}]}
        sim.apply(gated)
        hostname = _copy(base, "hostname-0")
        hostname["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "ip-10-0-200-1.ec2.internal"}
        hostname["spec"].pop("affinity", None)
        sim.apply(hostname)
        volume = _copy(base, "volume-0")
        sim.apply(volume)
        sim.apply(_event(volume, "sched", PREFILTER, "default-scheduler"))
        sim.apply(_event(volume, "karp", KARPENTER_PVC.format(ns=ns, name="volume-0"), "karpenter"))
        cfg = tmp_path_factory.mktemp("pending-upstream") / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield cfg, ns


def _diagnose(cfg: Path, target: str, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              *extra: str) -> tuple[int, str]:
    monkeypatch.setenv("GPUTUI_NOW", NOW)
    code = main(["diagnose", *([target] if target else []), "--kubeconfig", str(cfg), *extra])
    return code, capsys.readouterr().out


def test_a_gated_pod_is_reported_held_by_its_gates(cluster: tuple[Path, str], capsys: pytest.CaptureFixture[str],
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, ns = cluster
    code, out = _diagnose(cfg, f"pod/{ns}/gated-0", capsys, monkeypatch)
    first = out.splitlines()[0]
    assert "held by scheduling gates (kueue.x-k8s.io/admission)" in first and "no problems" not in out.lower()
    assert code == ExitCode.FINDINGS_WARNING
    code, out = _diagnose(cfg, f"pod/{ns}/gated-0", capsys, monkeypatch, "-o", "json")
    data = json.loads(out)
    assert data["verdict"] == "pending, scheduling gated" and "root_cause" not in data["summary"]
    assert not any(f"pod/{ns}/gated-0" in f["explains"] for f in data["findings"])


@pytest.mark.parametrize("name", ["hostname-0", "volume-0"])
def test_no_nodepool_limit_or_broken_node_is_blamed(name: str, cluster: tuple[Path, str],
                                                    capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, ns = cluster
    ref = f"pod/{ns}/{name}"
    _code, out = _diagnose(cfg, "", capsys, monkeypatch, "-o", "json")
    whole = json.loads(out)
    blamed = [f for f in whole["findings"] if ref in f["explains"]]
    assert all(f["subject"] == ref for f in blamed), blamed
    code, out = _diagnose(cfg, ref, capsys, monkeypatch, "-o", "json")
    data = json.loads(out)
    assert code in (ExitCode.FINDINGS_ERROR, ExitCode.FINDINGS_WARNING) and data["verdict"] != "no problems found"
    rc = data["summary"].get("root_cause")
    assert rc is None or rc["subject"] == ref


@pytest.mark.parametrize("name", ["gated-0", "hostname-0", "volume-0"])
def test_the_scoped_read_finds_what_the_whole_lists_find(name: str, cluster: tuple[Path, str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    cfg, ns = cluster
    monkeypatch.setenv("GPUTUI_NOW", NOW)
    client, info = load(str(cfg))
    ref = ObjectRef("Pod", name, ns)
    out = []
    for scoped in (False, True):
        snap = collect(Api(client), info, ref, now=clock.now, scoped=scoped)
        data = report_json(focus(run_checks(snap), snap, ref))
        out.append((data["verdict"], data["summary"].get("root_cause"),
                    sorted((f["check"], f["subject"]) for f in data["findings"])))
    assert out[0] == out[1]


@pytest.mark.parametrize(("name", "says"), [
    ("hostname-0", "kubectl describe node ip-10-0-200-1.ec2.internal"),
    ("volume-0", "get pvc"),
])
def test_a_pod_karpenter_ignores_is_not_told_to_change_a_nodepool(name: str, says: str, cluster: tuple[Path, str],
                                                                  capsys: pytest.CaptureFixture[str],
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    # Provisioner.Validate ignores both pods: the fix is the pinned node or the volume, never a NodePool.
    cfg, ns = cluster
    _code, out = _diagnose(cfg, f"pod/{ns}/{name}", capsys, monkeypatch, "-o", "json")
    own = [f for f in json.loads(out)["findings"] if f["check"] == "pod-no-nodepool-fits"
           and f["subject"] == f"pod/{ns}/{name}"]
    assert len(own) == 1, own
    rem = own[0]["remediation"]
    assert rem["text"].startswith("Karpenter will not launch a node for this pod")
    assert "spec.limits" not in rem["text"] and "widen" not in rem["text"]
    assert any(says in c for c in rem["commands"]) and not any("nodepool" in c.split()[:3] for c in rem["commands"])
    _code, text = _diagnose(cfg, f"pod/{ns}/{name}", capsys, monkeypatch)
    assert "Karpenter will not launch a node for this pod" in " ".join(text.split())
