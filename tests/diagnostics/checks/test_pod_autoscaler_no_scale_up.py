"""pod-autoscaler-no-scale-up: cluster-autoscaler's pod events and status ConfigMap events, read on GKE.

Event texts are cluster-autoscaler's (processors/status/eventing_scale_up_processor.go: `pod didn't trigger
scale-up: ...`, `pod triggered scale-up: [...]`; clusterstate `ScaleUpFailed` with GCE codes from
cloudprovider/gce/autoscaling_gce_client.go).
"""

from __future__ import annotations

from diagnostics import CheckStatus, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

L4_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-prod-l4-pool-8c2f1e7a-x7k2
  labels:
    cloud.google.com/gke-nodepool: l4-pool
    cloud.google.com/gke-accelerator: nvidia-l4
    cloud.google.com/gke-accelerator-count: "1"
    node.kubernetes.io/instance-type: g2-standard-8
spec: {providerID: gce://ml-prod-4711/us-central1-a/gke-ml-prod-l4-pool-8c2f1e7a-x7k2}
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {nvidia.com/gpu: "1"}
  allocatable: {nvidia.com/gpu: "1"}
"""


def pod(accel: str, gpus: int = 1) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: llm-0, namespace: ml, uid: p1}}
spec:
  nodeSelector: {{cloud.google.com/gke-accelerator: {accel}}}
  containers: [{{name: c, image: x, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]
status: {{phase: Pending}}
"""


def ca_event(reason: str, message: str, last: str = "2026-08-21T09:58:00Z", kind: str = "Pod",
             name: str = "llm-0", ns: str = "ml") -> str:
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {name}.{abs(hash(reason + message)) % 10**8}, namespace: {ns}}}
involvedObject: {{kind: {kind}, name: {name}, namespace: {ns}}}
reason: {reason}
message: "{message}"
type: {"Warning" if kind == "ConfigMap" else "Normal"}
source: {{component: cluster-autoscaler}}
count: 12
firstTimestamp: "2026-08-21T09:30:00Z"
lastTimestamp: "{last}"
"""


def test_no_node_pool_offers_the_accelerator() -> None:
    snap = snapshot(L4_NODE, pod("nvidia-h100-80gb", 8), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    assert (f.code, f.severity) == ("GT406", Severity.ERROR)
    assert "no node pool offers accelerator nvidia-h100-80gb (pools seen: l4-pool=nvidia-l4)" in f.title
    assert any("--accelerator type=nvidia-h100-80gb,count=8" in c and "a3-highgpu-8g" in c
               for c in f.remediation.commands)
    assert not any("karpenter" in c.lower() or "nodepool" in c.lower() for c in f.remediation.commands)


CPU_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-prod-default-pool-1a2b3c4d-q9zx
  labels: {cloud.google.com/gke-nodepool: default-pool, node.kubernetes.io/instance-type: e2-standard-4}
spec: {providerID: gce://ml-prod-4711/us-central1-a/gke-ml-prod-default-pool-1a2b3c4d-q9zx}
status:
  conditions: [{type: Ready, status: "True"}]
"""


def test_a_cpu_pool_reads_no_gpu_not_an_empty_value() -> None:
    """A CPU pool has no gke-accelerator label: the title and the evidence say so, never `default-pool=`."""
    snap = snapshot(L4_NODE, CPU_NODE, pod("nvidia-h100-80gb", 8), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 2 node(s) didn't match Pod's node affinity/selector"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    assert "(pools seen: default-pool=no GPU, l4-pool=nvidia-l4)" in f.title
    (pools,) = [e for e in f.evidence if e.path.startswith("nodes: labels[cloud.google.com/gke-nodepool]")]
    assert pools.value == {"default-pool": "no GPU", "l4-pool": "nvidia-l4"}


def test_stockout_after_a_triggered_scale_up() -> None:
    snap = snapshot(L4_NODE, pod("nvidia-l4"),
                    ca_event("TriggeredScaleUp", "pod triggered scale-up: [{https://www.googleapis.com/compute/v1/"
                             "projects/p/zones/us-central1-a/instanceGroups/gke-ml-prod-l4-pool-8c2f1e7a-grp 1->2 "
                             "(max: 4)}]", last="2026-08-21T09:40:00Z"),
                    ca_event("ScaleUpFailed", "Failed adding 1 nodes to group https://www.googleapis.com/compute/v1/"
                             "projects/p/zones/us-central1-a/instanceGroups/gke-ml-prod-l4-pool-8c2f1e7a-grp due to "
                             "OutOfResource.RESOURCE_POOL_EXHAUSTED; source errors: Instance 'x' creation failed: The "
                             "zone 'projects/p/zones/us-central1-a' does not have enough resources available to fulfill "
                             "the request.", kind="ConfigMap", name="cluster-autoscaler-status", ns="kube-system"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    assert "the scale-up it triggered failed: the zone has no capacity" in f.title
    assert any("--node-locations" in c for c in f.remediation.commands)


def test_a_triggered_scale_up_in_progress_passes() -> None:
    snap = snapshot(L4_NODE, pod("nvidia-l4"), ca_event("TriggeredScaleUp", "pod triggered scale-up: [{grp 1->2 (max: 4)}]"))
    (result,) = run(snap, only=["pod-autoscaler-no-scale-up"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 1


def test_skipped_without_events() -> None:
    (result,) = run(snapshot(L4_NODE, pod("nvidia-l4"), sources={"events": SourceState.FORBIDDEN}),
                    only=["pod-autoscaler-no-scale-up"]).results
    assert result.status is CheckStatus.SKIPPED


def test_a_pool_at_its_maximum_with_a_node_advertising_no_gpus_points_at_that_node() -> None:
    silent = L4_NODE.replace("x7k2", "q8w2").replace('capacity: {nvidia.com/gpu: "1"}', "capacity: {}") \
        .replace('allocatable: {nvidia.com/gpu: "1"}', "allocatable: {}")
    snap = snapshot(L4_NODE, silent, pod("nvidia-l4"), ca_event(
        "NotTriggerScaleUp", "pod didn't trigger scale-up: 1 max node group size reached"))
    (f,) = run(snap, only=["pod-autoscaler-no-scale-up"]).findings
    assert "at their maximum size, and gke-ml-prod-l4-pool-8c2f1e7a-q8w2 in it advertises no GPUs" in f.title
    assert f.remediation.text.startswith("Fix the node that advertises no GPUs first")
