"""The node and NodeClaim health checks (GT202-GT204, GT301-GT303) survive odd real-world objects."""

from __future__ import annotations

import pytest

from diagnostics import CheckStatus, run
from tests.builders import snapshot

CHECKS = ["gpu-allocatable-below-capacity", "node-remediation-loop", "gpu-node-not-ready",
          "nodeclaim-launch-failed", "nodeclaim-not-registered", "nodeclaim-not-initialized"]

BARE = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-0-0-1.ec2.internal}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-0-2.ec2.internal
  labels: {karpenter.k8s.aws/instance-gpu-count: "0", nvidia.com/gpu.count: "many"}
status:
  capacity: {nvidia.com/gpu: "0", cpu: not-a-quantity}
  allocatable: {nvidia.com/gpu: "0"}
  conditions:
  - {type: Ready}
  - {type: SomeVendorGPUCheck, status: Maybe}
  - {status: "False"}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: gpu-nostatus}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: gpu-emptystatus, labels: {karpenter.sh/nodepool: gpu}}
spec: {}
status: {}
---
apiVersion: v1
kind: Event
metadata: {name: odd.1, namespace: default}
reason: Rebooted
message: rebooted without a boot id
count: 0
---
apiVersion: v1
kind: Event
metadata: {name: odd.2, namespace: default}
involvedObject: {kind: NodeClaim, name: x}
reason: DisruptionTerminating
message: "Disrupting NodeClaim: Unhealthy"
"""

# Karpenter v0.3x (karpenter.sh/v1beta1): knative-style conditions with severity, Empty/Expired types,
# no DisruptionReason, nodeClassRef without group.
V1BETA1 = """
apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
metadata:
  name: default-abcde
  creationTimestamp: "2026-08-21T08:00:00Z"
  labels: {karpenter.sh/nodepool: default, node.kubernetes.io/instance-type: g4dn.xlarge}
  annotations: {karpenter.sh/managed-by: prod-cluster}
spec:
  nodeClassRef: {name: default}
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  nodeName: ip-10-0-5-5.ec2.internal
  providerID: aws:///us-east-1a/i-0b1e7a000000beta1
  capacity: {nvidia.com/gpu: "1"}
  conditions:
  - {type: Launched, status: "True", severity: Warning, lastTransitionTime: "2026-08-21T08:01:00Z"}
  - {type: Registered, status: "True", severity: Warning, lastTransitionTime: "2026-08-21T08:03:00Z"}
  - {type: Initialized, status: "False", severity: Warning, reason: ResourceNotRegistered,
     message: 'expected resource "nvidia.com/gpu" didn''t register on the node', lastTransitionTime: "2026-08-21T08:03:00Z"}
  - {type: Empty, status: "False", severity: Info}
  - {type: Expired, status: "False", severity: Info}
  - {type: Ready, status: "False", reason: ResourceNotRegistered}
---
apiVersion: karpenter.sh/v1beta1
kind: NodeClaim
metadata:
  name: default-fghij
  creationTimestamp: "2026-08-21T09:00:00Z"
  labels: {karpenter.sh/nodepool: default}
spec: {nodeClassRef: {name: default}}
status:
  conditions:
  - {type: Launched, status: "False", severity: Warning, reason: LaunchFailed,
     message: "creating instance, getting launch template configs, getting launch templates, no amis exist given constraints", lastTransitionTime: "2026-08-21T09:00:00Z"}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-5-5.ec2.internal
  labels: {karpenter.sh/nodepool: default, karpenter.sh/provisioner-name: default,
           karpenter.k8s.aws/instance-gpu-count: "1"}
spec:
  providerID: aws:///us-east-1a/i-0b1e7a000000beta1
  taints: [{key: karpenter.sh/disruption, value: disrupting, effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", lastHeartbeatTime: "2026-08-21T09:59:00Z"}]
  capacity: {cpu: "4"}
  allocatable: {cpu: 3920m}
"""


@pytest.mark.parametrize("doc", [BARE, V1BETA1], ids=["bare", "v1beta1"])
def test_checks_do_not_crash(doc: str) -> None:
    report = run(snapshot(doc), only=CHECKS)
    assert {r.check for r in report.results} == set(CHECKS)
    for r in report.results:
        assert r.status is not CheckStatus.ERRORED, (r.check, r.reason)


def test_bare_objects_produce_no_findings() -> None:
    # Nothing here says a GPU is missing, a claim failed or a node looped.
    report = run(snapshot(BARE), only=CHECKS)
    assert [f.title for f in report.findings] == []


def test_v1beta1_claims_are_still_diagnosed() -> None:
    report = run(snapshot(V1BETA1), only=CHECKS)
    by_check = {r.check: r for r in report.results}
    # The v1beta1 LaunchFailed claim is reported with its raw error mapped to a cause.
    (launch,) = by_check["nodeclaim-launch-failed"].findings
    assert "default-fghij" in launch.title and "LaunchFailed (AMINotFound)" in launch.title
    # The GPU node without nvidia.com/gpu is gpu-not-advertised's; not double-reported as uninitialized.
    assert by_check["nodeclaim-not-initialized"].status is CheckStatus.PASSED


def test_huge_messages_are_clipped_in_evidence() -> None:
    huge = "x" * 100_000
    doc = f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {{name: gpu-huge1, creationTimestamp: "2026-08-21T09:50:00Z"}}
status:
  conditions:
  - {{type: Launched, status: Unknown, reason: LaunchFailed, message: "{huge}",
     lastTransitionTime: "2026-08-21T09:50:00Z"}}
"""
    (result,) = run(snapshot(doc), only=["nodeclaim-launch-failed"]).results
    (f,) = result.findings
    assert len(f.title) < 400
    assert all(len(str(e.value)) <= 400 for e in f.evidence)
