"""pod-gpu-request-invalid (GT403): what the API rejects, what can never schedule, and what is fine."""

from __future__ import annotations

import pytest

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.pending_objects import GPU_POOL, NODECLASS, event, pod

CHECK = ["pod-gpu-request-invalid"]
NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  labels: {node.kubernetes.io/instance-type: g5.2xlarge, karpenter.sh/nodepool: gpu}
spec: {providerID: "aws:///us-east-1b/i-0abc123def4567890"}
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "8", memory: 32Gi, pods: "58", nvidia.com/gpu: "1"}
  allocatable: {cpu: 7910m, memory: 30Gi, pods: "58", nvidia.com/gpu: "1"}
"""


def _run(*docs: str, sources: dict[str, SourceState] | None = None):  # type: ignore[no-untyped-def]
    (result,) = run(snapshot(*docs, sources=sources), only=CHECK).results
    return result


def _with_resources(resources: str, name: str = "trainer-7c9d8f6b5-x2x7k") -> str:
    base = pod(name)
    return base.replace('      requests: {cpu: "4", memory: 16Gi}\n      limits: {nvidia.com/gpu: "1"}\n', resources)


def test_fractional_gpu_is_rejected() -> None:
    p = _with_resources('      requests: {nvidia.com/gpu: 500m}\n      limits: {nvidia.com/gpu: 500m}\n')
    result = _run(NODE, p)
    (f,) = result.findings
    assert (f.code, f.severity) == ("GT403", Severity.ERROR)
    assert f.subject == ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
    assert f.title.startswith("ml/trainer-7c9d8f6b5-x2x7k container trainer: nvidia.com/gpu 500m is fractional")
    paths = {e.path: e.value for e in f.evidence}
    assert paths["spec.containers[trainer].resources.requests[nvidia.com/gpu]"] == "500m"
    assert paths["spec.containers[trainer].resources.limits[nvidia.com/gpu]"] == "500m"
    assert ("kubectl -n ml set resources deployment trainer -c trainer --limits=nvidia.com/gpu=1 "
            "--requests=nvidia.com/gpu=1") in f.remediation.commands


def test_request_differs_from_limit() -> None:
    p = _with_resources('      requests: {nvidia.com/gpu: "1"}\n      limits: {nvidia.com/gpu: "2"}\n')
    (f,) = _run(NODE, p).findings
    assert "request 1 != limit 2" in f.title
    assert any(c.endswith("--limits=nvidia.com/gpu=2 --requests=nvidia.com/gpu=2") for c in f.remediation.commands)
    ev = f.evidence[0]
    assert ev.path == "spec.containers[trainer].resources.requests[nvidia.com/gpu]"
    assert ev.value == {"requests": "1", "limits": "2"}


def test_request_without_limit() -> None:
    p = _with_resources('      requests: {nvidia.com/gpu: "1"}\n')
    (f,) = _run(NODE, p).findings
    assert "without a limit" in f.title
    assert f.evidence[0].path == "spec.containers[trainer].resources.limits[nvidia.com/gpu]"


def test_init_container_is_checked_too() -> None:
    p = pod().replace("  containers:\n", "  initContainers:\n  - name: warmup\n    image: busybox\n    resources:\n"
                                          "      limits: {nvidia.com/gpu: \"0.5\"}\n  containers:\n")
    (f,) = _run(NODE, p).findings
    assert f.evidence[0].path == "spec.initContainers[warmup].resources.limits[nvidia.com/gpu]"


@pytest.mark.parametrize("resources", [
    '      limits: {nvidia.com/gpu: "1"}\n',                                   # limits only: request defaults to it
    '      requests: {nvidia.com/gpu: "0"}\n      limits: {nvidia.com/gpu: "0"}\n',   # zero is fine
    '      requests: {nvidia.com/gpu: "0"}\n',                                 # zero request without limit is fine
    '      requests: {nvidia.com/gpu: "2"}\n      limits: {nvidia.com/gpu: 2}\n',     # string vs int, same value
])
def test_valid_requests_pass(resources: str) -> None:
    result = _run(NODE, _with_resources(resources))
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_more_gpus_than_any_instance_type() -> None:
    p = _with_resources('      limits: {nvidia.com/gpu: "16"}\n')
    (f,) = _run(NODE, GPU_POOL, NODECLASS, p).findings
    assert "no EC2 instance type has more than 8" in f.title


def test_typo_in_resource_name() -> None:
    p = _with_resources('      limits: {nvidia.com/gpus: "1"}\n')
    (f,) = _run(NODE, p).findings
    assert "no node advertises nvidia.com/gpus" in f.title and "did you mean nvidia.com/gpu?" in f.title


def test_mig_and_neuron_requests_are_valid() -> None:
    mig_node = NODE.replace('nvidia.com/gpu: "1"}', 'nvidia.com/mig-1g.5gb: "7"}')
    mig = _with_resources('      limits: {nvidia.com/mig-1g.5gb: "1"}\n', name="infer-0")
    neuron = _with_resources('      limits: {aws.amazon.com/neuron: "1"}\n', name="inf2-0")
    result = _run(mig_node, mig, neuron)
    assert result.status is CheckStatus.PASSED
    assert result.examined == 2


@pytest.mark.parametrize("profile", ["mig-1c.3g.40gb", "mig-1g.10gb+me", "mig-1g.24gb+me.all", "mig-4g.48gb-me",
                                     "mig-7g.80gb", "mig-2g.20gb+gfx"])
def test_every_mig_profile_shape_is_a_known_resource(profile: str) -> None:
    # No node advertises it yet (the pool scales from zero): still a real resource, not a typo.
    p = _with_resources(f'      limits: {{nvidia.com/{profile}: "1"}}\n', name="infer-0")
    assert _run(NODE, p).status is CheckStatus.PASSED


def test_a_mig_lookalike_typo_is_still_caught() -> None:
    p = _with_resources('      limits: {nvidia.com/mig-1g5gb: "1"}\n', name="infer-0")
    (f,) = _run(NODE, p).findings
    assert "no node advertises nvidia.com/mig-1g5gb" in f.title


def test_fractional_mig_is_rejected_like_any_extended_resource() -> None:
    p = _with_resources('      limits: {nvidia.com/mig-1g.5gb: 100m}\n', name="infer-0")
    (f,) = _run(NODE, p).findings
    assert "nvidia.com/mig-1g.5gb 100m is fractional" in f.title


def test_rejected_pod_creation_seen_on_the_replicaset() -> None:
    # The API refuses the pods, so they never exist: only the controller's FailedCreate event tells.
    msg = ('Error creating: Pod "trainer-7c9d8f6b5-" is invalid: spec.containers[0].resources.limits[nvidia.com/gpu]: '
           'Invalid value: "500m": must be an integer')
    ev = event("rs1", "FailedCreate", msg, source="replicaset-controller", involved="ReplicaSet/trainer-7c9d8f6b5",
               count=14)
    (f,) = _run(NODE, ev).findings
    assert f.subject == ObjectRef("ReplicaSet", "trainer-7c9d8f6b5", "ml")
    assert "cannot create pods" in f.title and "must be an integer" in f.title
    assert f.related == (ObjectRef("Deployment", "trainer", "ml"),)
    assert f.evidence[0].count == 14


def test_unrelated_failed_create_is_ignored() -> None:
    msg = 'Error creating: pods "web-5d4f" is forbidden: exceeded quota: compute, requested: cpu=2, limited: cpu=1'
    assert _run(event("rs1", "FailedCreate", msg, involved="ReplicaSet/web-5d4f")).status is CheckStatus.PASSED


def test_skipped_when_pods_forbidden() -> None:
    result = _run(NODE, sources={"pods": SourceState.FORBIDDEN})
    assert result.status is CheckStatus.SKIPPED
    assert "pods: forbidden" in result.reason
