"""pod-waiting-for-nodeclaim (GT404): stages and ages of the nominated NodeClaim, stale nominations, skips."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.pending_objects import GPU_POOL, NODECLASS, event, pod

CHECK = ["pod-waiting-for-nodeclaim"]
TOLERATES = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
POD = pod(tolerations=TOLERATES)

REGISTERING = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  creationTimestamp: "2026-08-21T09:57:00Z"
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: g5.2xlarge
    topology.kubernetes.io/zone: us-east-1b
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  resources: {requests: {cpu: "4", memory: 16Gi, nvidia.com/gpu: "1", pods: "6"}}
status:
  providerID: aws:///us-east-1b/i-0abc123def4567890
  conditions:
  - {type: Launched, status: "True", reason: Launched, lastTransitionTime: "2026-08-21T09:57:40Z"}
  - {type: Registered, status: Unknown, reason: NodeNotFound, message: Node not registered with cluster,
     lastTransitionTime: "2026-08-21T09:57:40Z"}
  - {type: Initialized, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation}
  - {type: Ready, status: Unknown, reason: ReconcilingDependents, message: "Registered=Unknown, Initialized=Unknown"}
"""

# Scenario A: registered, but the device plugin never registered the GPU (no initialization timeout).
INITIALIZING = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  creationTimestamp: "2026-08-21T09:38:00Z"
  labels: {karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.2xlarge}
spec:
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  nodeName: ip-10-0-12-34.ec2.internal
  providerID: aws:///us-east-1b/i-0abc123def4567890
  conditions:
  - {type: Launched, status: "True", reason: Launched, lastTransitionTime: "2026-08-21T09:38:40Z"}
  - {type: Registered, status: "True", reason: Registered, lastTransitionTime: "2026-08-21T09:41:00Z"}
  - {type: Initialized, status: Unknown, reason: ResourceNotRegistered,
     message: 'Resource "nvidia.com/gpu" was requested but not registered', lastTransitionTime: "2026-08-21T09:41:00Z"}
"""
NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  labels: {karpenter.sh/nodepool: gpu, karpenter.sh/registered: "true", node.kubernetes.io/instance-type: g5.2xlarge}
spec:
  providerID: aws:///us-east-1b/i-0abc123def4567890
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "8", memory: 32Gi, pods: "58"}
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58"}
"""


def _nominated(claim: str = "gpu-7xk2q", node: str = "", last: str = "2026-08-21T09:57:05Z") -> str:
    target = f"nodeclaim/{claim}" + (f", node/{node}" if node else "")
    return event("nom", "Nominated", f"Pod should schedule on: {target}", type_="Normal", last=last)


def _run(*docs: str, sources: dict[str, SourceState] | None = None):  # type: ignore[no-untyped-def]
    (result,) = run(snapshot(*docs, sources=sources), only=CHECK).results
    return result


def test_young_claim_registering_is_info() -> None:
    result = _run(GPU_POOL, NODECLASS, POD, REGISTERING, _nominated())
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert (f.code, f.severity) == ("GT404", Severity.INFO)
    assert f.subject == ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
    assert f.title == ("ml/trainer-7c9d8f6b5-x2x7k (nvidia.com/gpu: 1) waits for NodeClaim gpu-7xk2q "
                       "(g5.2xlarge, us-east-1b, on-demand), registering for 2m: Registered=Unknown NodeNotFound")
    ev = {e.path: e for e in f.evidence}
    assert ev["event Normal/Nominated"].value == "Pod should schedule on: nodeclaim/gpu-7xk2q"
    assert ev["status.conditions[Registered]"].value["message"] == "Node not registered with cluster"
    assert ev["metadata.creationTimestamp"].note == "age 3m"
    assert f.related == (ObjectRef("NodeClaim", "gpu-7xk2q"),)
    assert "nothing to do yet" in f.remediation.text


def test_old_claim_stuck_initializing_is_a_warning() -> None:
    result = _run(GPU_POOL, NODECLASS, POD, INITIALIZING, NODE,
                  _nominated(node="ip-10-0-12-34.ec2.internal", last="2026-08-21T09:45:00Z"))
    (f,) = result.findings
    assert f.severity is Severity.WARNING
    assert "initializing for 19m: Initialized=Unknown ResourceNotRegistered - claim is 22m old" in f.title
    cond = next(e for e in f.evidence if e.path == "status.conditions[Initialized]")
    assert cond.value["reason"] == "ResourceNotRegistered"
    assert "gputui debug node/ip-10-0-12-34.ec2.internal" in f.remediation.commands
    assert ObjectRef("Node", "ip-10-0-12-34.ec2.internal") in f.related


def test_old_claim_never_registered_points_at_console_output() -> None:
    old = REGISTERING.replace('creationTimestamp: "2026-08-21T09:57:00Z"', 'creationTimestamp: "2026-08-21T09:45:00Z"')
    (f,) = _run(POD, old, _nominated()).findings
    assert f.severity is Severity.WARNING
    assert any(c.startswith("aws ec2 get-console-output --instance-id i-0abc123def4567890")
               for c in f.remediation.commands)


def test_nomination_via_status_nominated_node_name() -> None:
    status = """status:
  phase: Pending
  nominatedNodeName: ip-10-0-12-34.ec2.internal
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable}
"""
    (f,) = _run(pod(tolerations=TOLERATES, status=status), INITIALIZING, NODE).findings
    assert any(e.path == "status.nominatedNodeName" for e in f.evidence)


def test_stale_nominations_are_not_waiting() -> None:
    # Claim gone (ICE deleted it), claim being deleted, or a newer Karpenter failure: the pod is not waiting.
    assert _run(POD, _nominated()).status is CheckStatus.PASSED
    deleting = REGISTERING.replace('  creationTimestamp: "2026-08-21T09:57:00Z"\n',
                                   '  creationTimestamp: "2026-08-21T09:57:00Z"\n'
                                   '  deletionTimestamp: "2026-08-21T09:59:30Z"\n')
    assert _run(POD, deleting, _nominated()).status is CheckStatus.PASSED
    limits = "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu)"
    newer_failure = event("f1", "FailedScheduling", limits, last="2026-08-21T09:59:00Z")
    assert _run(POD, REGISTERING, _nominated(), newer_failure).status is CheckStatus.PASSED


def test_event_of_an_earlier_pod_with_the_same_name_is_ignored() -> None:
    # StatefulSet replicas reuse names: a nomination older than this pod belongs to its predecessor.
    reborn = pod("infer-0", owner="StatefulSet/infer", tolerations=TOLERATES, created="2026-08-21T09:58:00Z")
    nom = event("nom", "Nominated", "Pod should schedule on: nodeclaim/gpu-7xk2q", type_="Normal",
                involved="Pod/infer-0", last="2026-08-21T09:57:05Z")
    assert _run(reborn, REGISTERING, nom).status is CheckStatus.PASSED


def test_passes_without_nomination() -> None:
    result = _run(POD, REGISTERING)
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_skipped_without_nodeclaims() -> None:
    result = _run(POD, sources={"nodeclaims": SourceState.ABSENT})
    assert result.status is CheckStatus.SKIPPED
    assert "nodeclaims: not installed" in result.reason


def test_events_forbidden_falls_back_to_nominated_node_name_only() -> None:
    assert _run(POD, REGISTERING, _nominated(), sources={"events": SourceState.FORBIDDEN}).status is \
        CheckStatus.PASSED


def test_claim_stuck_launching_points_at_the_controller_log_where_karpenter_runs() -> None:
    launching = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  creationTimestamp: "2026-08-21T09:45:00Z"
  labels: {karpenter.sh/nodepool: gpu}
spec:
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  conditions:
  - {type: Launched, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation,
     lastTransitionTime: "2026-08-21T09:45:00Z"}
"""
    controller = """
apiVersion: v1
kind: Pod
metadata:
  name: karpenter-6d9f7b8c5-abcde
  namespace: karpenter
  labels: {app.kubernetes.io/name: karpenter}
spec: {nodeName: ip-10-0-1-5.ec2.internal, containers: [{name: controller, image: karpenter}]}
status: {phase: Running}
"""
    logs = "kubectl logs -n {} -l app.kubernetes.io/name=karpenter --tail=500 | grep gpu-7xk2q"
    (f,) = _run(POD, launching, _nominated(), controller).findings
    assert f.severity is Severity.WARNING and "launching" in f.title
    assert logs.format("karpenter") in f.remediation.commands
    # Not visible (or in kube-system, where Karpenter's docs install it): kube-system.
    (f,) = _run(POD, launching, _nominated()).findings
    assert logs.format("kube-system") in f.remediation.commands
