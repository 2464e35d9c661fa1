"""nodepool-gpu-limit-reached (GT105): scenario E3 (GPU and node limits), both message generations, skips."""

from __future__ import annotations

import json

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.pending_objects import CPU_POOL, GPU_POOL, NODECLASS, event, pod

CHECK = ["nodepool-gpu-limit-reached"]
TOLERATES = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
FULL = GPU_POOL.replace('nodes: "1", nvidia.com/gpu: "1"}', 'nodes: "2", nvidia.com/gpu: "16"}')
V15 = "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu)"


def _run(*docs: str, sources: dict[str, SourceState] | None = None):  # type: ignore[no-untyped-def]
    (result,) = run(snapshot(*docs, sources=sources), only=CHECK).results
    return result


def test_at_gpu_limit_with_pending_pods() -> None:
    pods = (pod(gpus='"4"', tolerations=TOLERATES), pod("trainer-7c9d8f6b5-b9z4q", gpus='"4"', tolerations=TOLERATES))
    result = _run(FULL, CPU_POOL, NODECLASS, *pods, event("e1", "FailedScheduling", V15))
    assert result.status is CheckStatus.FAILED
    assert result.examined == 2  # both NodePools looked at
    (f,) = result.findings
    assert (f.code, f.severity, f.subject) == ("GT105", Severity.ERROR, ObjectRef("NodePool", "gpu"))
    assert f.title == "NodePool gpu is at its nvidia.com/gpu limit (16/16): 2 pending GPU pods blocked"
    ev = {e.path: e for e in f.evidence}
    assert ev["spec.limits"].value == {"cpu": "1000", "nvidia.com/gpu": "16"}
    assert ev["status.resources"].value == {"cpu": "8", "nvidia.com/gpu": "16"}
    assert ev["pending pods' requests"].value == {"cpu": "8", "nvidia.com/gpu": "8"}
    karp = ev["event Warning/FailedScheduling"]
    assert karp.value == V15 and "v1.5+" in karp.note
    patch = next(c for c in f.remediation.commands if c.startswith("kubectl patch nodepool gpu --type=merge"))
    assert json.loads(patch.split("-p '", 1)[1].rstrip("'")) == {"spec": {"limits": {"nvidia.com/gpu": "24"}}}
    assert set(f.related) == {ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml"),
                              ObjectRef("Pod", "trainer-7c9d8f6b5-b9z4q", "ml")}


def test_nodes_limit() -> None:
    nodes = GPU_POOL.replace('limits: {cpu: "1000", nvidia.com/gpu: "16"}', 'limits: {nodes: "1"}')
    msg = "Failed to schedule pod, node limits have been exhausted for nodepool (NodePool=gpu)"
    (f,) = _run(nodes, CPU_POOL, NODECLASS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", msg)).findings
    assert f.title.startswith("NodePool gpu is at its nodes limit (1/1)")
    assert any('"limits":{"nodes":"2"}' in c for c in f.remediation.commands)


def test_pre_v15_event_alone_is_enough() -> None:
    # status.resources lags in-flight NodeClaims: Karpenter's own (pre-v1.5) verdict names the pool.
    msg = 'Failed to schedule pod, all available instance types exceed limits for nodepool "gpu"'
    (f,) = _run(GPU_POOL, NODECLASS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", msg)).findings
    assert f.title == ("NodePool gpu: Karpenter says its limits leave no room for any instance type; "
                       "1 pending GPU pod blocked")
    assert any(e.value == msg for e in f.evidence)


def test_limit_of_another_pool_in_the_event_does_not_count() -> None:
    msg = "Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=other)"
    assert _run(GPU_POOL, NODECLASS, pod(tolerations=TOLERATES),
                event("e1", "FailedScheduling", msg)).status is CheckStatus.PASSED


def test_at_limit_but_nothing_waits_passes() -> None:
    result = _run(FULL, NODECLASS)
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_fallback_pool_serves_the_pod() -> None:
    # A second GPU pool without limits takes the pod: the full pool is working as intended.
    spare = GPU_POOL.replace("name: gpu, uid: np-gpu", "name: gpu-fallback, uid: np-fb").replace(
        'limits: {cpu: "1000", nvidia.com/gpu: "16"}', "limits: {}")
    assert _run(FULL, spare, NODECLASS, pod(tolerations=TOLERATES)).status is CheckStatus.PASSED


def test_pod_also_missing_the_toleration_is_not_blocked_by_the_limit_alone() -> None:
    assert _run(FULL, NODECLASS, pod()).status is CheckStatus.PASSED


def test_neuron_limit() -> None:
    inf = GPU_POOL.replace('limits: {cpu: "1000", nvidia.com/gpu: "16"}', 'limits: {aws.amazon.com/neuron: "12"}') \
        .replace('nvidia.com/gpu: "1"}', 'aws.amazon.com/neuron: "12"}') \
        .replace("values: [g5, g6, g6e]", "values: [inf2]")
    p = pod("infer-0", resource="aws.amazon.com/neuron", owner="StatefulSet/infer", tolerations=TOLERATES)
    (f,) = _run(inf, NODECLASS, p).findings
    assert f.title.startswith("NodePool gpu is at its aws.amazon.com/neuron limit (12/12)")


def test_skipped_when_nodepools_forbidden() -> None:
    result = _run(FULL, pod(tolerations=TOLERATES), sources={"nodepools": SourceState.FORBIDDEN})
    assert result.status is CheckStatus.SKIPPED
    assert "nodepools: forbidden" in result.reason
