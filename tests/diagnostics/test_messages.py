"""Parsers for kube-scheduler and Karpenter scheduling messages, on the exact texts of both generations."""

from __future__ import annotations

import pytest

from diagnostics.facts.messages import (
    GEN_PRE_V15,
    GEN_V03,
    GEN_V15,
    LIMITS,
    MIN_VALUES,
    NO_INSTANCE_TYPE,
    NODE_LIMITS,
    REQUIREMENTS,
    TAINT,
    parse_karpenter_message,
    parse_nominated,
    parse_scheduler_message,
    parse_taint,
)
from diagnostics.records import Taint

# --- kube-scheduler (karpenter-facts.md 4.3, scenario A) --------------------------------------------


def test_scheduler_insufficient_and_preemption() -> None:
    m = parse_scheduler_message("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
                                "available: 3 No preemption victims found for incoming pod.")
    assert m is not None
    assert m.total == 3
    assert [(r.count, r.reason) for r in m.reasons] == [(3, "Insufficient nvidia.com/gpu")]
    assert m.insufficient == {"nvidia.com/gpu": 3}
    assert m.preemption.startswith("0/3 nodes are available: 3 No preemption victims")


def test_scheduler_taint_items_keep_their_braces() -> None:
    m = parse_scheduler_message("0/4 nodes are available: 1 Insufficient nvidia.com/gpu, 3 node(s) had untolerated "
                                "taint {dedicated: system}. preemption: 0/4 nodes are available: 4 No preemption "
                                "victims found for incoming pod.")
    assert m is not None
    assert [(r.count, r.reason) for r in m.reasons] == [
        (1, "Insufficient nvidia.com/gpu"), (3, "node(s) had untolerated taint {dedicated: system}")]
    assert m.untolerated_taints == [(3, Taint("dedicated", "system"))]
    assert m.count("untolerated taint") == 3


def test_scheduler_pre_125_taint_wording_contains_a_comma() -> None:
    # Before 1.25 the item itself contained ", that the pod didn't tolerate": it must not be split there.
    m = parse_scheduler_message("0/3 nodes are available: 1 node(s) had taint {nvidia.com/gpu: true}, that the pod "
                                "didn't tolerate, 2 Insufficient cpu.")
    assert m is not None
    assert len(m.reasons) == 2
    assert m.untolerated_taints == [(1, Taint("nvidia.com/gpu", "true"))]
    assert m.insufficient == {"cpu": 2}


def test_scheduler_newer_summary_taints_and_no_nodes() -> None:
    m = parse_scheduler_message("0/7 nodes are available: 2 Too many pods, 5 node(s) had untolerated taint(s).")
    assert m is not None and m.untolerated_taints == [(5, None)]
    empty = parse_scheduler_message("no nodes available to schedule pods")
    assert empty is not None and empty.total == 0 and empty.reasons == ()
    assert parse_scheduler_message("Failed to schedule pod, did not tolerate taint (taint=a=b:NoSchedule)") is None


# --- Karpenter v1.5+ (karpenter-facts.md 4.2, scenarios C and E) -------------------------------------------


def test_v15_taint_and_cpu_pool_clause() -> None:
    m = parse_karpenter_message(
        'Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule); no instance type met '
        'all requirements, requirements=karpenter.k8s.aws/instance-category In [c m r], karpenter.sh/nodepool In '
        '[default], resources={"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1","pods":"1"}')
    assert m is not None and m.generation == GEN_V15
    taint, noit = m.fragments
    assert taint.kind == TAINT and taint.taint == Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert taint.nodepool == ""  # v1.5+ does not name NodePools outside limits
    assert noit.kind == NO_INSTANCE_TYPE
    assert noit.variant == "no instance type met all requirements"
    assert noit.requirements.startswith("karpenter.k8s.aws/instance-category In [c m r]")
    assert noit.resources == {"cpu": "4", "memory": "16Gi", "nvidia.com/gpu": "1", "pods": "1"}
    assert not m.offering_only


def test_v15_taint_without_value() -> None:
    m = parse_karpenter_message("Failed to schedule pod, did not tolerate taint (taint=CriticalAddonsOnly:NoSchedule);"
                                ' incompatible requirements, label "NodeGroupType" does not have known values')
    assert m is not None
    assert m.fragments[0].taint == Taint("CriticalAddonsOnly", "", "NoSchedule")
    assert m.fragments[1].kind == REQUIREMENTS and m.fragments[1].key == "NodeGroupType"


def test_v15_incompatible_requirements_key() -> None:
    m = parse_karpenter_message(
        "Failed to schedule pod, incompatible requirements, key karpenter.k8s.aws/instance-gpu-name, "
        "karpenter.k8s.aws/instance-gpu-name In [h100] not in karpenter.k8s.aws/instance-gpu-name In [a10g l4]")
    assert m is not None
    (f,) = m.fragments
    assert f.kind == REQUIREMENTS and f.key == "karpenter.k8s.aws/instance-gpu-name"


def test_v15_offering_only_is_capacity() -> None:
    m = parse_karpenter_message(
        'Failed to schedule pod, no instance type has the required offering, requirements=karpenter.sh/capacity-type '
        'In [spot], karpenter.sh/nodepool In [gpu-spot], resources={"cpu":"1","nvidia.com/gpu":"8","pods":"1"}')
    assert m is not None and m.offering_only and m.mentions_offering
    assert m.fragments[0].resources["nvidia.com/gpu"] == "8"
    mixed = parse_karpenter_message(
        "Failed to schedule pod, no instance type met the scheduling requirements or had a required offering, "
        'requirements=kubernetes.io/arch In [amd64], resources={"nvidia.com/gpu":"1"}')
    assert mixed is not None and not mixed.offering_only and mixed.mentions_offering


@pytest.mark.parametrize(("text", "kind"), [
    ("Failed to schedule pod, all available instance types exceed limits for nodepool (NodePool=gpu)", LIMITS),
    ("Failed to schedule pod, node limits have been exhausted for nodepool (NodePool=gpu)", NODE_LIMITS),
    # pre-v1.5 and an intermediate `nodepool: "x"` spelling
    ('Failed to schedule pod, all available instance types exceed limits for nodepool "gpu"', LIMITS),
    ('Failed to schedule pod, all available instance types exceed limits for nodepool: "gpu"', LIMITS),
])
def test_limits_name_the_nodepool(text: str, kind: str) -> None:
    m = parse_karpenter_message(text)
    assert m is not None
    (f,) = m.fragments
    assert (f.kind, f.nodepool) == (kind, "gpu")


def test_min_values_with_curly_apostrophes() -> None:
    m = parse_karpenter_message(
        "Failed to schedule pod, pod didn’t schedule because NodePool couldn’t meet minValues requirements, "
        "minValues requirement is not met for label(s) (label=karpenter.k8s.aws/instance-family) (NodePool=gpu)")
    assert m is not None
    (f,) = m.fragments
    assert f.kind == MIN_VALUES and f.nodepool == "gpu"


# --- Karpenter before v1.5 ------------------------------------------------------------------------


def test_pre_v15_taint_names_pool_and_overhead() -> None:
    m = parse_karpenter_message('Failed to schedule pod, incompatible with nodepool "gpu", daemonset '
                                'overhead={"cpu":"180m","memory":"240Mi","pods":"5"}, did not tolerate '
                                'nvidia.com/gpu=true:NoSchedule')
    assert m is not None and m.generation == GEN_PRE_V15
    (f,) = m.fragments
    assert f.kind == TAINT and f.nodepool == "gpu"
    assert f.taint == Taint("nvidia.com/gpu", "true", "NoSchedule")
    assert f.daemonset_overhead == {"cpu": "180m", "memory": "240Mi", "pods": "5"}


def test_pre_v15_several_pools_and_continuations() -> None:
    # A second taint of the same NodePool follows `; ` without the prefix; limits name their own pool.
    m = parse_karpenter_message(
        'Failed to schedule pod, incompatible with nodepool "system", daemonset overhead={"cpu":"821m","pods":"10"}, '
        'incompatible requirements, label "nvidia.com/device-plugin.config" does not have known values; '
        'incompatible with nodepool "runner-arm", daemonset overhead={}, did not tolerate '
        'workload-type=ci-runner:NoSchedule; did not tolerate dedicated=:NoExecute; '
        'all available instance types exceed limits for nodepool "graviton"; incompatible with nodepool "gpu-ner", '
        'daemonset overhead={}, incompatible requirements, key node.kubernetes.io/instance-type, '
        'node.kubernetes.io/instance-type In [g6e.4xlarge] not in node.kubernetes.io/instance-type In [g6.2xlarge]')
    assert m is not None and m.generation == GEN_PRE_V15
    got = [(f.kind, f.nodepool, str(f.taint) if f.taint else f.key) for f in m.fragments]
    assert got == [
        (REQUIREMENTS, "system", "nvidia.com/device-plugin.config"),
        (TAINT, "runner-arm", "workload-type=ci-runner:NoSchedule"),
        (TAINT, "runner-arm", "dedicated:NoExecute"),
        (LIMITS, "graviton", ""),
        (REQUIREMENTS, "gpu-ner", "node.kubernetes.io/instance-type"),
    ]
    assert m.for_pool("runner-arm")[1].taint == Taint("dedicated", "", "NoExecute")


def test_ancient_v03_no_instance_type_satisfied() -> None:
    m = parse_karpenter_message(
        'Could not schedule pod, incompatible with provisioner "default", no instance type satisfied resources '
        '{"aws.amazon.com/neuroncore":"1","cpu":"800m","memory":"1Gi","pods":"1"} and requirements '
        "karpenter.sh/capacity-type In [on-demand spot], karpenter.k8s.aws/instance-family In [inf1]")
    assert m is not None and m.generation == GEN_V03
    (f,) = m.fragments
    assert f.kind == NO_INSTANCE_TYPE and f.nodepool == "default"
    assert f.resources["aws.amazon.com/neuroncore"] == "1"
    assert f.requirements.endswith("karpenter.k8s.aws/instance-family In [inf1]")


def test_not_a_karpenter_message() -> None:
    assert parse_karpenter_message("0/3 nodes are available: 3 Insufficient nvidia.com/gpu.") is None
    assert parse_karpenter_message("") is None


# --- Nominated and taints ---------------------------------------------------------------------------------


def test_nominated_claim_and_node() -> None:
    n = parse_nominated("Pod should schedule on: nodeclaim/gpu-7xk2q, node/ip-10-0-12-34.ec2.internal")
    assert n is not None and (n.nodeclaim, n.node) == ("gpu-7xk2q", "ip-10-0-12-34.ec2.internal")
    only_claim = parse_nominated("Pod should schedule on: nodeclaim/gpu-spot-q8m2n")
    assert only_claim is not None and (only_claim.nodeclaim, only_claim.node) == ("gpu-spot-q8m2n", "")
    assert parse_nominated("Successfully assigned ml/x to node-1") is None


@pytest.mark.parametrize(("text", "taint"), [
    ("nvidia.com/gpu=true:NoSchedule", Taint("nvidia.com/gpu", "true", "NoSchedule")),
    ("nvidia.com/gpu:NoSchedule", Taint("nvidia.com/gpu", "", "NoSchedule")),
    ("dedicated=:NoExecute", Taint("dedicated", "", "NoExecute")),
    ("garbage", None),
])
def test_parse_taint(text: str, taint: Taint | None) -> None:
    assert parse_taint(text) == taint


# --- kube-scheduler with the DynamicResources plugin (1.32-1.34) ------------------------------------------
#
# FitError.Error (kubernetes pkg/scheduler/framework/types.go): "0/N nodes are available:" + " <prefilter>." or
# " <filter histogram>." + " <PostFilterMsg>". PostFilterMsg joins every PostFilter plugin's reason with ", ":
# DynamicResources.PostFilter says "no new claims to deallocate" for a pod without claims, DefaultPreemption
# "preemption: 0/N nodes are available: ...". Texts below are copied from clusters (kubectl get events /
# describe pod output quoted in public repos), not composed.

DRA_TAINT_CPU = ("0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu. no new claims to "
                 "deallocate, preemption: 0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No "
                 "preemption victims found for incoming pod.")


def test_dra_post_filter_reason_is_not_glued_onto_the_last_filter_reason() -> None:
    m = parse_scheduler_message(DRA_TAINT_CPU)
    assert m is not None and m.total == 3
    assert [(r.count, r.reason) for r in m.reasons] == [(1, "node(s) had untolerated taint(s)"), (2, "Insufficient cpu")]
    assert m.insufficient == {"cpu": 2}
    assert m.post_filter == ("no new claims to deallocate",)
    assert m.preemption == ("0/3 nodes are available: 1 Preemption is not helpful for scheduling, 2 No preemption "
                            "victims found for incoming pod.")


def test_dra_post_filter_after_a_gpu_shortage_and_after_taints() -> None:
    gpu = parse_scheduler_message(
        "0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 node(s) didn't match Pod's node affinity/selector. "
        "no new claims to deallocate, preemption: 0/5 nodes are available: 1 No preemption victims found for incoming "
        "pod, 4 Preemption is not helpful for scheduling.")
    assert gpu is not None and gpu.insufficient == {"nvidia.com/gpu": 1}
    assert gpu.reasons[-1].reason == "node(s) didn't match Pod's node affinity/selector"
    taints = parse_scheduler_message(
        "0/2 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/control-plane: }, 1 node(s) "
        "had untolerated taint {spray: mortein}. no new claims to deallocate, preemption: 0/2 nodes are available: 2 "
        "Preemption is not helpful for scheduling.")
    assert taints is not None
    assert taints.untolerated_taints == [(1, Taint("node-role.kubernetes.io/control-plane", "")),
                                         (1, Taint("spray", "mortein"))]


def test_dra_post_filter_without_preemption_and_after_a_prefilter_message() -> None:
    alone = parse_scheduler_message("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. no new claims to deallocate")
    assert alone is not None and alone.insufficient == {"nvidia.com/gpu": 3}
    assert (alone.post_filter, alone.preemption) == (("no new claims to deallocate",), "")
    pre = parse_scheduler_message("0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims. no new "
                                  "claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not "
                                  "helpful for scheduling.")
    assert pre is not None
    assert [(r.count, r.reason) for r in pre.reasons] == [(0, "pod has unbound immediate PersistentVolumeClaims")]
