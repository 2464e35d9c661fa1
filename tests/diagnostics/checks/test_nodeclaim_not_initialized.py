"""nodeclaim-not-initialized: startup taints, NotReady, non-GPU resources; GPU ResourceNotRegistered left to GT201."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

CHECK = "nodeclaim-not-initialized"
NODE_NAME = "ip-10-0-140-9.ec2.internal"


def claim(init: str, registered_at: str = "2026-08-21T09:45:00Z", requests: str = 'nvidia.com/gpu: "1"') -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-w4t9n
  creationTimestamp: "2026-08-21T09:43:00Z"
  labels: {{karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g6.xlarge}}
spec:
  resources: {{requests: {{{requests}}}}}
  startupTaints: [{{key: node.cilium.io/agent-not-ready, value: "true", effect: NoExecute}}]
status:
  nodeName: {NODE_NAME}
  conditions:
  - {{type: Launched, status: "True", reason: Launched, lastTransitionTime: "2026-08-21T09:43:40Z"}}
  - {{type: Registered, status: "True", reason: Registered, lastTransitionTime: "{registered_at}"}}
  - {init}
"""


def node(allocatable: str = 'nvidia.com/gpu: "1", cpu: 3920m', ready: str = '"True"',
         taints: str = "[{key: node.cilium.io/agent-not-ready, value: \"true\", effect: NoExecute}]") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {NODE_NAME}
  labels: {{karpenter.sh/nodepool: gpu, karpenter.sh/registered: "true", karpenter.k8s.aws/instance-gpu-count: "1"}}
spec:
  taints: {taints}
status:
  conditions:
  - {{type: Ready, status: {ready}, reason: KubeletReady, message: kubelet is posting ready status}}
  allocatable: {{{allocatable}}}
"""


STARTUP = ('{type: Initialized, status: Unknown, reason: StartupTaintsExist, '
           'message: "StartupTaint \\"node.cilium.io/agent-not-ready=true:NoExecute\\" still exists", '
           'lastTransitionTime: "2026-08-21T09:43:00Z"}')


def test_startup_taint_never_removed_is_an_error_after_ten_minutes() -> None:
    (result,) = run(snapshot(claim(STARTUP), node()), only=[CHECK]).results
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT303"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("NodeClaim", "gpu-w4t9n")
    assert f.title == (f"NodeClaim gpu-w4t9n (node {NODE_NAME}) not initialized 15m after registering: "
                       "StartupTaintsExist - startup taint node.cilium.io/agent-not-ready=true:NoExecute was never "
                       "removed by the agent that owns it")
    ev = {e.path: e for e in f.evidence}
    cond = ev["status.conditions[Initialized]"]
    assert cond.value["reason"] == "StartupTaintsExist"
    assert cond.age_seconds == 900  # measured from registration, not from claim creation
    assert "no initialization timeout" in cond.note
    assert ev["spec.startupTaints"].value == ["node.cilium.io/agent-not-ready=true:NoExecute"]
    assert ev["spec.taints"].value == ["node.cilium.io/agent-not-ready=true:NoExecute"]
    assert f"kubectl taint node {NODE_NAME} node.cilium.io/agent-not-ready=true:NoExecute-" in f.remediation.commands
    assert "Karpenter has no initialization timeout" in f.remediation.text
    assert ObjectRef("Node", NODE_NAME) in f.related


def test_not_ready_node_is_a_warning_while_young() -> None:
    init = ('{type: Initialized, status: Unknown, reason: NodeNotReady, message: Node status is NotReady, '
            'lastTransitionTime: "2026-08-21T09:43:00Z"}')
    not_ready = node(ready='"False"', taints="[]").replace(
        "reason: KubeletReady, message: kubelet is posting ready status",
        "reason: KubeletNotReady, message: 'container runtime network not ready: NetworkReady=false "
        "reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized'")
    (result,) = run(snapshot(claim(init, registered_at="2026-08-21T09:55:00Z"), not_ready), only=[CHECK]).results
    (f,) = result.findings
    assert f.severity is Severity.WARNING
    assert "NodeNotReady - the node never became Ready (container runtime network not ready" in f.title
    assert any(e.path == "status.conditions[Ready]" and e.value["reason"] == "KubeletNotReady" for e in f.evidence)
    # The CNI log of this node's aws-node pod, not a tail of every node's.
    logs = next(c for c in f.remediation.commands if "logs" in c and "aws-node" in c)
    assert "--field-selector spec.nodeName=" in logs and "-c aws-node" in logs


def test_gpu_resource_not_registered_is_left_to_gpu_not_advertised() -> None:
    # gpu-not-advertised explains this node (device plugin, taints); reporting it here too would be noise.
    init = ('{type: Initialized, status: Unknown, reason: ResourceNotRegistered, '
            'message: "Resource \\"nvidia.com/gpu\\" was requested but not registered", '
            'lastTransitionTime: "2026-08-21T09:43:00Z"}')
    report = run(snapshot(claim(init), node(allocatable="cpu: 3920m", taints="[]")),
                 only=[CHECK, "gpu-not-advertised"])
    by_slug = {r.check: r for r in report.results}
    assert by_slug[CHECK].status is CheckStatus.PASSED
    assert by_slug[CHECK].examined == 1
    assert by_slug["gpu-not-advertised"].status is CheckStatus.FAILED


def test_non_gpu_resource_not_registered_is_reported_here() -> None:
    init = ('{type: Initialized, status: Unknown, reason: ResourceNotRegistered, '
            'message: "Resource \\"vpc.amazonaws.com/efa\\" was requested but not registered", '
            'lastTransitionTime: "2026-08-21T09:43:00Z"}')
    (result,) = run(snapshot(claim(init, requests='nvidia.com/gpu: "1", vpc.amazonaws.com/efa: "1"'),
                             node(taints="[]")), only=[CHECK]).results
    (f,) = result.findings
    assert f.title.endswith("ResourceNotRegistered - vpc.amazonaws.com/efa was requested but the node does not "
                            "advertise it")
    assert any(e.path == "status.allocatable[vpc.amazonaws.com/efa]" and e.value == "absent" for e in f.evidence)


def test_initialized_and_just_registered_claims_pass() -> None:
    done = claim('{type: Initialized, status: "True", reason: Initialized}')
    young = claim(STARTUP, registered_at="2026-08-21T09:59:00Z").replace("gpu-w4t9n", "gpu-a1b2c")
    (result,) = run(snapshot(done, young, node()), only=[CHECK]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


def test_skipped_when_nodeclaims_are_forbidden() -> None:
    (result,) = run(snapshot(claim(STARTUP), sources={"nodeclaims": SourceState.FORBIDDEN}), only=[CHECK]).results
    assert result.status is CheckStatus.SKIPPED
