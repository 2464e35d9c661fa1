"""pod_fit and pool_accelerators: Karpenter's compatibility rules, one NodePool at a time."""

from __future__ import annotations

import pytest

from diagnostics.facts.pod_fit import (
    ACCELERATOR,
    LIMIT,
    NOT_READY,
    REQUIREMENTS,
    TAINT,
    fit_pool,
    requirement_conflict,
)
from diagnostics.facts.pool_accelerators import admits, max_devices
from diagnostics.records import Requirement
from tests.builders import snapshot
from tests.diagnostics.pending_objects import CPU_POOL, GPU_POOL, NODECLASS, pod

R = Requirement
TOLERATES = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"


def _fit(pool_yaml: str, pod_yaml: str, *more: str):  # type: ignore[no-untyped-def]
    snap = snapshot(pool_yaml, NODECLASS, pod_yaml, *more)
    return fit_pool(snap, snap.pods[0], snap.nodepools[0])


@pytest.mark.parametrize(("req", "pool", "labels", "conflict"), [
    (R("zone", "In", ("a",)), [R("zone", "In", ("a", "b"))], {}, False),
    (R("zone", "In", ("c",)), [R("zone", "In", ("a", "b"))], {}, True),
    (R("zone", "In", ("a",)), [R("zone", "NotIn", ("a",))], {}, True),
    (R("zone", "NotIn", ("a", "b")), [R("zone", "In", ("a", "b"))], {}, True),
    (R("zone", "NotIn", ("a",)), [R("zone", "In", ("a", "b"))], {}, False),
    (R("gpu", "Exists"), [R("gpu", "DoesNotExist")], {}, True),
    (R("gpu", "DoesNotExist"), [R("gpu", "Exists")], {}, True),
    (R("karpenter.k8s.aws/instance-gpu-count", "Gt", ("3",)),
     [R("karpenter.k8s.aws/instance-gpu-count", "In", ("1", "2"))], {}, True),
    (R("karpenter.k8s.aws/instance-gpu-count", "Gt", ("3",)),
     [R("karpenter.k8s.aws/instance-gpu-count", "Lt", ("5",))], {}, False),
    (R("karpenter.k8s.aws/instance-gpu-count", "Gt", ("3",)),
     [R("karpenter.k8s.aws/instance-gpu-count", "Lt", ("4",))], {}, True),
    # Unconstrained well-known label: instance types supply it.
    (R("karpenter.k8s.aws/instance-gpu-name", "In", ("h100",)), [], {}, False),
    (R("topology.kubernetes.io/zone", "In", ("us-east-1a",)), [], {}, False),
    # Unconstrained custom label: Karpenter cannot invent a value ...
    (R("team", "In", ("vision",)), [], {}, True),
    # ... unless the template labels it, or the pod only excludes it.
    (R("team", "In", ("vision",)), [], {"team": "vision"}, False),
    (R("team", "In", ("nlp",)), [], {"team": "vision"}, True),
    (R("team", "NotIn", ("vision",)), [], {}, False),
    (R("karpenter.sh/nodepool", "In", ("other",)), [], {"karpenter.sh/nodepool": "gpu"}, True),
])
def test_requirement_conflict(req: Requirement, pool: list[Requirement], labels: dict[str, str],
                              conflict: bool) -> None:
    assert bool(requirement_conflict(req, pool, labels)) is conflict


def test_unknown_label_says_what_karpenter_says() -> None:
    assert requirement_conflict(R("NodeGroupType", "In", ("gpu",)), [], {}) == \
        'label "NodeGroupType" does not have known values'


def test_gpu_pool_fits_tolerating_pod_and_ignores_startup_taints() -> None:
    assert _fit(GPU_POOL, pod(tolerations=TOLERATES)).fits


def test_reasons_are_all_reported_not_just_the_first() -> None:
    full = GPU_POOL.replace('nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "16"}')
    f = _fit(full, pod(node_selector="  nodeSelector: {team: vision}\n"))
    assert f.kinds == {TAINT, REQUIREMENTS, LIMIT}
    limit = next(r for r in f.reasons if r.kind == LIMIT)
    assert limit.resource == "nvidia.com/gpu" and limit.text == "limit nvidia.com/gpu 16/16 used, pod needs 1 more"


@pytest.mark.parametrize("first, second", [("h100", "a10g"), ("a10g", "h100")])
def test_ored_affinity_terms_fit_when_any_term_does(first: str, second: str) -> None:
    # Karpenter tries the required terms in turn: an A10G term fits the g5/g6 pool whatever its position.
    affinity = f"""  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{{key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [{first}]}}]
        - matchExpressions: [{{key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [{second}]}}]
"""
    assert _fit(GPU_POOL, pod(tolerations=TOLERATES, affinity=affinity)).fits


def test_deprecated_label_keys_are_matched_as_karpenter_normalizes_them() -> None:
    # beta.kubernetes.io/arch is kubernetes.io/arch to Karpenter: arm64 conflicts with an amd64 pool.
    amd64 = GPU_POOL.replace("      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}\n",
                             "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}\n"
                             "      - {key: kubernetes.io/arch, operator: In, values: [amd64]}\n")
    assert amd64 != GPU_POOL
    beta = _fit(amd64, pod(tolerations=TOLERATES, node_selector="  nodeSelector: {beta.kubernetes.io/arch: arm64}\n"))
    assert beta.kinds == {REQUIREMENTS} and "kubernetes.io/arch" in beta.reasons[0].text
    assert _fit(amd64, pod(tolerations=TOLERATES,
                           node_selector="  nodeSelector: {beta.kubernetes.io/arch: amd64}\n")).fits


@pytest.mark.parametrize("op, value", [("Gte", "1"), ("Gt", "0")])
def test_gte_requirements_of_newer_karpenter_admit_gpu_types(op: str, value: str) -> None:
    # Karpenter v1.9+ accepts Gte/Lte: "instance-gpu-count Gte 1" is a GPU pool, not one with no GPU type.
    pool = GPU_POOL.replace(
        "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}\n",
        f"      - {{key: karpenter.k8s.aws/instance-gpu-count, operator: {op}, values: ['{value}']}}\n")
    assert pool != GPU_POOL
    assert _fit(pool, pod(tolerations=TOLERATES)).fits


def test_cpu_pool_has_no_gpu_instance_types() -> None:
    f = _fit(CPU_POOL, pod())
    (r,) = f.reasons
    assert r.kind == ACCELERATOR
    assert r.evidence[0].value == ["karpenter.k8s.aws/instance-category In [c m r]"]


def test_not_ready_names_the_nodeclass_cause() -> None:
    broken = GPU_POOL.replace(
        '  - {type: NodeClassReady, status: "True", reason: NodeClassReady}\n  - {type: Ready, status: "True", '
        'reason: Ready}',
        '  - {type: NodeClassReady, status: "False", reason: UnhealthyDependents, message: "SubnetsReady=False"}\n'
        '  - {type: Ready, status: "False", reason: UnhealthyDependents, message: NodeClassReady=False}')
    (r,) = _fit(broken, pod(tolerations=TOLERATES)).reasons
    assert (r.kind, r.cause) == (NOT_READY, "nodeclass")
    assert "SubnetsReady=False" in r.text


def test_v1beta1_pool_without_conditions_counts_as_ready() -> None:
    bare = GPU_POOL.split("  conditions:\n")[0]
    assert _fit(bare, pod(tolerations=TOLERATES)).fits


def test_pool_without_ec2nodeclass_kind_skips_the_aws_table() -> None:
    # An AKS/other provider pool: gputui knows nothing about its instance types, so it does not guess.
    aks = CPU_POOL.replace("kind: EC2NodeClass", "kind: AKSNodeClass")
    assert _fit(aks, pod()).fits


# --- pool_accelerators ---------------------------------------------------------------------------------

def test_admits_by_category_and_family() -> None:
    assert not admits([R("karpenter.k8s.aws/instance-category", "In", ("c", "m", "r"))], "nvidia.com/gpu", 1).possible
    assert admits([R("karpenter.k8s.aws/instance-category", "In", ("g", "p"))], "nvidia.com/gpu", 8).possible
    assert admits([], "nvidia.com/gpu", 1).possible


def test_admits_counts_per_instance() -> None:
    only_small = [R("node.kubernetes.io/instance-type", "In", ("g5.xlarge", "g5.2xlarge"))]
    verdict = admits(only_small, "nvidia.com/gpu", 4)
    assert not verdict.possible and verdict.best == ("g5.xlarge", 1)
    assert admits([R("karpenter.k8s.aws/instance-gpu-count", "Gt", ("3",))], "nvidia.com/gpu", 4).possible


def test_unknown_gpu_family_gets_the_benefit_of_the_doubt() -> None:
    # A family newer than the table must not be declared GPU-less.
    assert admits([R("karpenter.k8s.aws/instance-family", "In", ("g7",))], "nvidia.com/gpu", 1).possible


def test_fractional_g6f_has_no_nvidia_gpu_for_karpenter() -> None:
    assert not admits([R("karpenter.k8s.aws/instance-family", "In", ("g6f",))], "nvidia.com/gpu", 1).possible


def test_neuron_and_neuroncore() -> None:
    inf2 = [R("karpenter.k8s.aws/instance-family", "In", ("inf2",))]
    assert admits(inf2, "aws.amazon.com/neuron", 12).possible
    assert admits(inf2, "aws.amazon.com/neuroncore", 24).possible
    assert not admits(inf2, "aws.amazon.com/neuron", 13).possible
    assert not admits([R("karpenter.k8s.aws/instance-family", "In", ("g5",))], "aws.amazon.com/neuron", 1).possible
    assert max_devices("aws.amazon.com/neuron") == 16


def test_mig_is_not_modeled() -> None:
    verdict = admits([], "nvidia.com/mig-1g.5gb", 1)
    assert not verdict.possible and "does not model" in verdict.reason


def test_match_fields_pods_are_ignored_by_karpenter() -> None:
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [ip-10-0-99-1.ec2.internal]}]
"""
    f = _fit(GPU_POOL, pod(tolerations=TOLERATES, affinity=affinity))
    assert f.kinds == {REQUIREMENTS}
    assert ("matchFields (metadata.name) pins the pod to existing nodes: Karpenter ignores such pods"
            in f.reasons[0].text)


def test_an_empty_node_selector_term_matches_no_node() -> None:
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: []
"""
    f = _fit(GPU_POOL, pod(tolerations=TOLERATES, affinity=affinity))
    assert f.kinds == {REQUIREMENTS} and "an empty nodeSelectorTerm matches no node" in f.reasons[0].text


def test_limit_counts_the_smallest_instance_type_not_the_pod_request() -> None:
    # 4 GPUs left, p4d.24xlarge (8) the only type: Karpenter's filterByRemainingResources drops it.
    p4d = (GPU_POOL.replace("values: [g5, g6, g6e]", "values: [p4d]")
           .replace('nvidia.com/gpu: "16"}', 'nvidia.com/gpu: "20"}').replace('nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "16"}'))
    (r,) = _fit(p4d, pod(tolerations=TOLERATES)).reasons
    assert (r.kind, r.resource, r.launch, r.adds) == (LIMIT, "nvidia.com/gpu", "p4d.24xlarge", 8.0)
    assert r.text == ("limit nvidia.com/gpu 16/20 used, 4 left: the smallest instance type it can launch for the pod "
                      "(p4d.24xlarge) has 8")
    # The pod's own selector narrows the sizes too: g5 in the pool, but the pod wants 48xlarge only.
    g5 = p4d.replace("values: [p4d]", "values: [g5]")
    assert _fit(g5, pod(tolerations=TOLERATES)).fits
    big = "  nodeSelector: {karpenter.k8s.aws/instance-size: 48xlarge}\n"
    (r,) = _fit(g5, pod(tolerations=TOLERATES, node_selector=big)).reasons
    assert (r.kind, r.launch, r.adds) == (LIMIT, "g5.48xlarge", 8.0)


def test_limit_on_a_pool_gputui_has_no_instance_table_for_uses_the_request() -> None:
    aks = GPU_POOL.replace("kind: EC2NodeClass", "kind: AKSNodeClass").replace(
        'nvidia.com/gpu: "16"}', 'nvidia.com/gpu: "2"}')
    assert _fit(aks, pod(tolerations=TOLERATES)).fits  # 1 used, 1 left, the pod asks 1: no table, no guess


def test_a_replica_like_pod_opting_out_by_preference_gets_its_own_fit() -> None:
    # Karpenter reads the heaviest preferred term as required (NewPodRequirements), so a pod preferring
    # karpenter.sh/nodepool DoesNotExist is ignored. Its shape (tolerations, selectors, required terms,
    # resources) equals a plain pod's: the plain pod's NodePool fits must not be handed to it.
    from diagnostics.facts.pod_fit import AVOIDS_KARPENTER, fit

    prefers = """  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 100
        preference:
          matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
"""
    snap = snapshot(GPU_POOL, NODECLASS, pod("plain-0", tolerations=TOLERATES),
                    pod("opted-out-0", tolerations=TOLERATES, affinity=prefers))
    plain, opted = (next(p for p in snap.pods if p.name == n) for n in ("plain-0", "opted-out-0"))
    assert any(pf.fits for pf in fit(snap, plain).pools)
    pools = fit(snap, opted).pools
    assert pools and all(any(r.kind == AVOIDS_KARPENTER for r in pf.reasons) for pf in pools)
