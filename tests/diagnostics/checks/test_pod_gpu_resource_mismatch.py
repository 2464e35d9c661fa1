"""pod-gpu-resource-mismatch: MIG profiles and time-sliced GPUs the nodes do (not) offer; GPU units counted apart.

Node labels and resources are the device plugin's and GFD's (k8s-device-plugin README: MIG strategies,
time-slicing with renameByDefault; GFD `nvidia.com/mig-<profile>.count`, `nvidia.com/gpu.replicas`).
"""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.facts.gpu_units import gpu_units, model_name
from gputui.output.rows import node_rows
from tests.builders import snapshot

H100_MIG = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-h100-mig
  labels:
    node.kubernetes.io/instance-type: a3-highgpu-1g
    node-type: mig
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.count: "1"
    nvidia.com/mig.strategy: mixed
    nvidia.com/mig.config: all-1g.10gb
spec: {taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]}
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {cpu: "26", nvidia.com/mig-1g.10gb: "7"}
  allocatable: {cpu: "26", nvidia.com/mig-1g.10gb: "7"}
"""

A100_40 = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-a100-mig
  labels:
    node.kubernetes.io/instance-type: p4d.24xlarge
    karpenter.k8s.aws/instance-gpu-count: "8"
    node-type: mig
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-40GB
    nvidia.com/mig.strategy: mixed
    nvidia.com/mig.config: all-balanced
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {nvidia.com/mig-1g.5gb: "16", nvidia.com/mig-2g.10gb: "8", nvidia.com/mig-3g.20gb: "8"}
  allocatable: {nvidia.com/mig-1g.5gb: "16", nvidia.com/mig-2g.10gb: "8", nvidia.com/mig-3g.20gb: "8"}
"""

SHARED = """
apiVersion: v1
kind: Node
metadata:
  name: gpu-shared
  labels:
    node.kubernetes.io/instance-type: g5.12xlarge
    node-type: shared
    nvidia.com/gpu.product: NVIDIA-A10G
    nvidia.com/gpu.replicas: "4"
    nvidia.com/gpu.sharing-strategy: time-sharing
status:
  conditions: [{type: Ready, status: "True"}]
  capacity: {nvidia.com/gpu.shared: "16"}
  allocatable: {nvidia.com/gpu.shared: "16"}
"""


def pending(resource: str, node_type: str, count: str = "1") -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: job-0-abcde
  namespace: ml
  ownerReferences: [{{apiVersion: apps/v1, kind: ReplicaSet, name: job-5d8c7b9f6, uid: u1, controller: true}}]
spec:
  nodeSelector: {{node-type: {node_type}}}
  tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
  containers:
  - name: main
    image: x
    resources: {{limits: {{{resource}: "{count}"}}, requests: {{{resource}: "{count}"}}}}
status:
  phase: Pending
  conditions: [{{type: PodScheduled, status: "False", reason: Unschedulable}}]
"""


def test_mig_profile_no_node_offers_lists_the_offered_profiles() -> None:
    (result,) = run(snapshot(A100_40, pending("nvidia.com/mig-1g.10gb", "mig")), only=["pod-gpu-resource-mismatch"]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert (f.code, f.severity, f.subject) == ("GT405", Severity.ERROR, ObjectRef("Pod", "job-0-abcde", "ml"))
    assert "nvidia.com/mig-1g.5gb x16, nvidia.com/mig-2g.10gb x8, nvidia.com/mig-3g.20gb x8" in f.title
    # An A100-40GB has a 1g.10gb profile: re-partitioning is offered, and swapping the request for an offered one.
    assert "kubectl label node gpu-a100-mig nvidia.com/mig.config=all-1g.10gb --overwrite" in f.remediation.commands
    assert any("--requests=nvidia.com/mig-1g.10gb=0,nvidia.com/mig-1g.5gb=1" in c for c in f.remediation.commands)
    assert "request whole gpus" not in f.remediation.text.lower()


def test_a_profile_the_gpu_cannot_make_is_said_so() -> None:
    (f,) = run(snapshot(A100_40, pending("nvidia.com/mig-1g.20gb", "mig")), only=["pod-gpu-resource-mismatch"]).findings
    assert "No candidate node's GPU has a 1g.20gb profile (it exists on 80GB GPUs)" in f.remediation.text
    assert not any("mig.config=" in c for c in f.remediation.commands)


def test_renamed_time_slicing() -> None:
    (f,) = run(snapshot(SHARED, pending("nvidia.com/gpu", "shared")), only=["pod-gpu-resource-mismatch"]).findings
    assert "advertise time-sliced GPUs as nvidia.com/gpu.shared (renameByDefault: true)" in f.title
    assert "renameByDefault: false" in f.remediation.text
    assert any("--requests=nvidia.com/gpu=0,nvidia.com/gpu.shared=1" in c for c in f.remediation.commands)


def test_passes_when_the_offered_resource_is_asked() -> None:
    (result,) = run(snapshot(SHARED, pending("nvidia.com/gpu.shared", "shared")),
                    only=["pod-gpu-resource-mismatch"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 1
    # A pod its nodes cannot take for another reason (no node selected) is left to the other checks.
    (result,) = run(snapshot(SHARED, pending("nvidia.com/gpu", "elsewhere")), only=["pod-gpu-resource-mismatch"]).results
    assert result.status is CheckStatus.PASSED


def test_skipped_without_nodes() -> None:
    from diagnostics.snapshot import SourceState
    (result,) = run(snapshot(pending("nvidia.com/gpu", "shared"), sources={"nodes": SourceState.FORBIDDEN}),
                    only=["pod-gpu-resource-mismatch"]).results
    assert result.status is CheckStatus.SKIPPED


def test_physical_gpus_and_slices_are_counted_apart() -> None:
    snap = snapshot(H100_MIG, A100_40, SHARED)
    units = {n.name: gpu_units(n).text() for n in snap.nodes}
    assert units == {"gpu-h100-mig": "1 GPU · 7 MIG", "gpu-a100-mig": "8 GPU · 32 MIG", "gpu-shared": "4 GPU · 16 shared"}
    cells = {r.cells[0]: r.cells[2] for r in node_rows(snap)}
    assert cells["gpu-h100-mig"] == "H100 1 GPU · 7 MIG"
    assert cells["gpu-shared"] == "A10G 4 GPU · 16 shared"


def test_model_names_are_normalised() -> None:
    assert {model_name(s) for s in ("h100", "NVIDIA-H100-80GB-HBM3", "nvidia-h100-80gb")} == {"H100"}
    assert {model_name(s) for s in ("Tesla-T4", "nvidia-tesla-t4", "t4")} == {"T4"}
    assert model_name("nvidia-l4") == "L4" and model_name("NVIDIA-L40S") == "L40S"


def test_unhealthy_mig_slices_are_not_counted_as_gpus() -> None:
    """Seven slices of one H100 withheld: '7 MIG slice(s)' of '1 GPU', never '7 GPU(s) unhealthy'."""
    sick = H100_MIG.replace('allocatable: {cpu: "26", nvidia.com/mig-1g.10gb: "7"}',
                            'allocatable: {cpu: "26", nvidia.com/mig-1g.10gb: "0"}')
    (f,) = run(snapshot(sick), only=["gpu-allocatable-below-capacity"]).findings
    assert "offers 0 of 7 MIG slice(s) (1 GPU · 7 MIG)" in f.title
    assert "7 MIG slice(s) marked unhealthy" in f.title
    assert "GPU(s) marked unhealthy" not in f.title


def test_node_rows_name_the_node_group_where_karpenter_does_not_manage_the_node() -> None:
    gke = """
apiVersion: v1
kind: Node
metadata:
  name: gke-ml-prod-l4-pool-8c2f1e7a-x7k2
  labels: {cloud.google.com/gke-nodepool: l4-pool, cloud.google.com/gke-accelerator: nvidia-l4}
spec: {providerID: gce://ml-prod-4711/us-central1-a/gke-ml-prod-l4-pool-8c2f1e7a-x7k2}
status: {capacity: {nvidia.com/gpu: "1"}, allocatable: {nvidia.com/gpu: "1"}}
"""
    (row,) = node_rows(snapshot(gke))
    assert (row.cells[2], row.cells[7]) == ("L4", "l4-pool")
