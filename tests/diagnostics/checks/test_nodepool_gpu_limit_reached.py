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
    # gputui sees room for the pod's 1 GPU: it cannot say how far to raise, and never patches the limit to 16 again.
    assert not any(c.startswith("kubectl patch") for c in f.remediation.commands)


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


# --- instance size against what is left of the limit (Karpenter's filterByRemainingResources) ----------
#
# kubernetes-sigs/karpenter pkg/controllers/provisioning/scheduling/scheduler.go: an instance type whose
# capacity of a limited resource is above what is left of spec.limits is dropped before the pod is
# tried; none left -> "all available instance types exceed limits for nodepool" (every version since
# v0.33; "(NodePool=x)" since v1.5.0, `"x"` in v1.3-v1.4, `: "x"` before). The pod's own request is not
# what counts: a 1-GPU pod needs a whole p4d.24xlarge (8 GPUs) of room in a p4d-only pool.

P4D = (GPU_POOL.replace("values: [g5, g6, g6e]", "values: [p4d]")
       .replace('limits: {cpu: "1000", nvidia.com/gpu: "16"}', 'limits: {cpu: "1000", nvidia.com/gpu: "20"}')
       .replace('nodes: "1", nvidia.com/gpu: "1"}', 'nodes: "2", nvidia.com/gpu: "16"}'))


def test_room_left_is_less_than_the_smallest_instance_type_the_pool_launches() -> None:
    (f,) = _run(P4D, NODECLASS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", V15)).findings
    assert f.title == ("NodePool gpu has 4 nvidia.com/gpu left under its limit (16/20), fewer than the smallest "
                       "instance type it can launch for the pod carries (p4d.24xlarge: 8): 1 pending GPU pod blocked")
    ev = {e.path: e for e in f.evidence}
    assert ev["smallest instance type for the pending pods"].value == "p4d.24xlarge"
    assert "8 nvidia.com/gpu" in ev["smallest instance type for the pending pods"].note
    patch = next(c for c in f.remediation.commands if c.startswith("kubectl patch nodepool gpu --type=merge"))
    # 16 used + the 8 GPUs of one p4d.24xlarge: the limit that lets that launch happen (not 16 + 1).
    assert json.loads(patch.split("-p '", 1)[1].rstrip("'")) == {"spec": {"limits": {"nvidia.com/gpu": "24"}}}
    assert "nvidia.com/gpu=24" in f.remediation.text and "p4d.24xlarge" in f.remediation.text


def test_pods_that_share_one_instance_need_its_gpus_once() -> None:
    # Three 1-GPU replicas fit on one p4d.24xlarge: the limit has to grow by 8, not 24 (nor 3).
    pods = [pod(f"trainer-7c9d8f6b5-{s}", tolerations=TOLERATES) for s in ("x2x7k", "b9z4q", "k2m8n")]
    (f,) = _run(P4D, NODECLASS, *pods).findings
    assert f.title.endswith("3 pending GPU pods blocked")
    assert any('"limits":{"nvidia.com/gpu":"24"}' in c for c in f.remediation.commands)


def test_room_left_for_the_smallest_instance_type_passes() -> None:
    room = P4D.replace('nvidia.com/gpu: "20"}', 'nvidia.com/gpu: "24"}')
    assert _run(room, NODECLASS, pod(tolerations=TOLERATES)).status is CheckStatus.PASSED


def test_a_smaller_instance_type_among_the_allowed_ones_fits_the_room_left() -> None:
    # g5.xlarge (1 GPU) fits in the 4 GPUs left: Karpenter launches it, whatever p4d needs.
    mixed = P4D.replace("values: [p4d]", "values: [p4d, g5]")
    assert _run(mixed, NODECLASS, pod(tolerations=TOLERATES)).status is CheckStatus.PASSED


def test_sizes_pinned_by_the_pool_requirements_count() -> None:
    # g5 only in 48xlarge (8 GPUs): the family has 1-GPU sizes, the pool does not allow them.
    big = (P4D.replace("values: [p4d]", "values: [g5]")
           .replace("      - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n",
                    "      - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n"
                    "      - {key: karpenter.k8s.aws/instance-size, operator: In, values: [48xlarge]}\n"))
    assert big != P4D.replace("values: [p4d]", "values: [g5]")
    (f,) = _run(big, NODECLASS, pod(tolerations=TOLERATES)).findings
    assert "(g5.48xlarge: 8)" in f.title


def test_a_pod_karpenter_ignores_is_not_blocked_by_the_limit() -> None:
    # Provisioner.Validate rejected the pod for its volume: Karpenter never gets to the pool's limit for it.
    msg = ("Failed to schedule pod, unbound pvc must define a storage class "
           "(PersistentVolumeClaim=ml/data-trainer-0, StorageClass=)")
    assert _run(FULL, NODECLASS, pod(tolerations=TOLERATES),
                event("e1", "FailedScheduling", msg)).status is CheckStatus.PASSED


def test_a_pool_at_its_limit_is_raised_by_a_whole_instance() -> None:
    # At 16/16 in a p4d-only pool, one more 1-GPU pod needs room for a p4d.24xlarge: 24, not 17.
    full = P4D.replace('nvidia.com/gpu: "20"}', 'nvidia.com/gpu: "16"}')
    (f,) = _run(full, NODECLASS, pod(tolerations=TOLERATES)).findings
    assert f.title.startswith("NodePool gpu is at its nvidia.com/gpu limit (16/16)")
    assert any('"limits":{"nvidia.com/gpu":"24"}' in c for c in f.remediation.commands)
    assert "16 in use + 8 for p4d.24xlarge" in f.remediation.text
