"""nodeclaim-not-registered: a launched GPU instance whose Node never appears, by age; plus pass/skip cases."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CHECK = "nodeclaim-not-registered"

NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  role: KarpenterNodeRole-ml-prod
  amiSelectorTerms: [{alias: al2023@latest}]
status:
  amis:
  - {id: ami-0a1b2c3d4e5f60718, name: amazon-eks-node-al2023-x86_64-nvidia-1.33-v20250801}
  conditions: [{type: Ready, status: "True", reason: Ready}]
"""


def claim(launched_at: str, registered: str | None = None) -> str:
    reg = registered or ('{type: Registered, status: Unknown, reason: NodeNotFound, '
                         'message: Node not registered with cluster, lastTransitionTime: "2026-08-21T09:48:00Z"}')
    return f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-8fj2k
  creationTimestamp: "2026-08-21T09:48:00Z"
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: g5.12xlarge
    topology.kubernetes.io/zone: eu-west-1a
    karpenter.k8s.aws/instance-gpu-count: "4"
spec:
  nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
  resources: {{requests: {{nvidia.com/gpu: "4"}}}}
status:
  providerID: aws:///eu-west-1a/i-09f8e7d6c5b4a3921
  imageID: ami-0a1b2c3d4e5f60718
  conditions:
  - {{type: Launched, status: "True", reason: Launched, lastTransitionTime: "{launched_at}"}}
  - {reg}
  - {{type: Initialized, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation}}
"""


def test_gpu_instance_that_never_joins_is_an_error_after_five_minutes() -> None:
    (result,) = run(snapshot(NODECLASS, claim("2026-08-21T09:49:00Z")), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT302"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodeClaim", "gpu-8fj2k")
    assert f.title == ("NodeClaim gpu-8fj2k (g5.12xlarge) launched 11m ago but no Node joined the cluster "
                       "(NodeNotFound): AL2023 GPU AMI bootstrap, node role or security groups?")
    ev = {(str(e.subject) if e.subject else None, e.path): e for e in f.evidence}
    cond = ev[("nodeclaim/gpu-8fj2k", "status.conditions[Registered]")]
    assert cond.value == {"status": "Unknown", "reason": "NodeNotFound", "message": "Node not registered with cluster"}
    timeout = ev[("nodeclaim/gpu-8fj2k", "registration timeout")]
    # Karpenter's clock starts at the Registered condition (set when the claim was created).
    assert timeout.value == "12m of 15m"
    assert "deletes it in 3m (registration_timeout)" in timeout.note
    assert ev[(None, "Node with spec.providerID aws:///eu-west-1a/i-09f8e7d6c5b4a3921")].value is None
    assert ev[("ec2nodeclass/gpu", "spec")].value == {"role": "KarpenterNodeRole-ml-prod", "ami": "al2023@latest"}
    cmds = f.remediation.commands
    assert cmds[0] == "aws ec2 get-console-output --instance-id i-09f8e7d6c5b4a3921 --latest --output text | tail -60"
    assert "aws eks list-access-entries --cluster-name <cluster> --output text | grep KarpenterNodeRole-ml-prod" in cmds
    assert "nodeadm" in f.remediation.text and "EC2_LINUX" in f.remediation.text


def test_warning_while_still_within_normal_boot_time() -> None:
    (result,) = run(snapshot(NODECLASS, claim("2026-08-21T09:57:00Z")), only=[CHECK]).results
    (f,) = result.findings
    assert f.severity is Severity.WARNING
    assert "launched 3m ago" in f.title


def test_just_launched_and_registered_claims_pass() -> None:
    young = claim("2026-08-21T09:59:00Z")  # 60s: still booting, not reported
    done = claim("2026-08-21T09:49:00Z", '{type: Registered, status: "True", reason: Registered}').replace(
        "gpu-8fj2k", "gpu-2mx7p")
    (result,) = run(snapshot(NODECLASS, young, done), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


def test_node_present_but_not_registered_points_at_karpenter_registration() -> None:
    node = """
apiVersion: v1
kind: Node
metadata: {name: ip-10-1-4-77.eu-west-1.compute.internal}
spec: {providerID: aws:///eu-west-1a/i-09f8e7d6c5b4a3921}
status: {conditions: [{type: Ready, status: "True", reason: KubeletReady}]}
---
apiVersion: v1
kind: Event
metadata: {name: ip-10-1-4-77.unregistered, namespace: default}
involvedObject: {kind: Node, name: ip-10-1-4-77.eu-west-1.compute.internal}
reason: UnregisteredTaintMissing
message: Missing karpenter.sh/unregistered taint which prevents registration related race conditions on Karpenter-managed nodes
type: Warning
source: {component: karpenter}
count: 1
lastTimestamp: "2026-08-21T09:52:00Z"
"""
    (result,) = run(snapshot(NODECLASS, claim("2026-08-21T09:49:00Z"), node), only=[CHECK]).results
    (f,) = result.findings
    assert "its Node exists but is not registered by Karpenter" in f.title
    assert any(e.path == "event Warning/UnregisteredTaintMissing" for e in f.evidence)
    assert ObjectRef("Node", "ip-10-1-4-77.eu-west-1.compute.internal") in f.related


def test_skipped_when_nodeclaims_are_forbidden() -> None:
    (result,) = run(snapshot(claim("2026-08-21T09:49:00Z"), sources={"nodeclaims": SourceState.FORBIDDEN}),
                    only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
    assert "nodeclaims: forbidden (list nodeclaims)" == result.reason
