"""pod-resourceclaim-unallocated: a pending pod's DRA ResourceClaim, by its status (resource.k8s.io/v1 shapes), and a
DRA GPU node that gpu-not-advertised leaves alone."""

from __future__ import annotations

from diagnostics import CheckStatus, run
from tests.builders import snapshot

POD = """
apiVersion: v1
kind: Pod
metadata: {name: asr-0, namespace: ml, uid: p1}
spec:
  resourceClaims: [{name: gpu, resourceClaimTemplateName: single-l4}]
  containers: [{name: c, image: x, resources: {claims: [{name: gpu}]}}]
status:
  phase: Pending
  resourceClaimStatuses: [{name: gpu, resourceClaimName: asr-0-gpu-q8w2n}]
"""

EVENT = """
apiVersion: v1
kind: Event
metadata: {name: asr-0.1, namespace: ml}
involvedObject: {kind: Pod, name: asr-0, namespace: ml}
reason: FailedScheduling
type: Warning
message: "0/2 nodes are available: 1 cannot allocate all claims, 1 node(s) didn't match Pod's node affinity/selector.
  still not schedulable, preemption: 0/2 nodes are available: 2 Preemption is not helpful for scheduling."
source: {component: default-scheduler}
lastTimestamp: "2026-08-21T09:58:00Z"
"""

CLAIM = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
         "metadata": {"name": "asr-0-gpu-q8w2n", "namespace": "ml"},
         "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com",
                                                                       "allocationMode": "ExactCount", "count": 1}}]}},
         "status": {}}


def test_unallocated_claim_is_named_with_its_request() -> None:
    snap = snapshot(POD, EVENT, resource_claims={"ml/asr-0-gpu-q8w2n": CLAIM})
    (f,) = run(snap, only=["pod-resourceclaim-unallocated"]).findings
    assert f.code == "GT407"
    assert "claim asr-0-gpu-q8w2n (gpu: gpu.nvidia.com x1) is not allocated" in f.title
    assert "no node has enough free devices" in f.title
    assert "kubectl -n ml get resourceclaim asr-0-gpu-q8w2n -o yaml" in f.remediation.commands


def test_a_claim_that_could_not_be_read_is_not_called_unallocated() -> None:
    snap = snapshot(POD, EVENT, resource_claims={"ml/asr-0-gpu-q8w2n": {"error": "forbidden (get resourceclaims)"}})
    (f,) = run(snap, only=["pod-resourceclaim-unallocated"]).findings
    assert "status unknown" in f.title and "not allocated" not in f.title
    assert any("forbidden" in (e.note or "") for e in f.evidence)


def test_allocated_claims_pass() -> None:
    allocated = {**CLAIM, "status": {"allocation": {"devices": {"results": [
        {"request": "gpu", "driver": "gpu.nvidia.com", "pool": "n1", "device": "gpu-0"}]}}}}
    (result,) = run(snapshot(POD, resource_claims={"ml/asr-0-gpu-q8w2n": allocated}),
                    only=["pod-resourceclaim-unallocated"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 1


def test_template_claim_not_created_yet() -> None:
    pod = POD.replace("  resourceClaimStatuses: [{name: gpu, resourceClaimName: asr-0-gpu-q8w2n}]\n", "")
    (f,) = run(snapshot(pod), only=["pod-resourceclaim-unallocated"]).findings
    assert "claim gpu (template single-l4) not created yet" in f.title


DRA_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: gke-l4-dra-b7n4
  labels: {cloud.google.com/gke-nodepool: l4-dra, cloud.google.com/gke-accelerator: nvidia-l4,
           cloud.google.com/gke-accelerator-count: "1", cloud.google.com/gke-gpu-dra-driver: "true"}
spec: {providerID: gce://p/us-central1-b/gke-l4-dra-b7n4}
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {cpu: "8"}
  allocatable: {cpu: "8"}
"""


def test_a_dra_gpu_node_is_not_reported_as_advertising_no_gpus() -> None:
    (result,) = run(snapshot(DRA_NODE), only=["gpu-not-advertised"]).results
    assert result.status is CheckStatus.PASSED


def test_the_summary_lists_a_pod_waiting_on_dra_as_a_pending_gpu_pod() -> None:
    from gputui.output.rows import pending_rows
    (row,) = pending_rows(snapshot(POD, EVENT))
    assert (row.cells[0], row.cells[1]) == ("ml/asr-0", "DRA")
