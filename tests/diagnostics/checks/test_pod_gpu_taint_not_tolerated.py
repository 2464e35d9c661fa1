"""pod-gpu-taint-not-tolerated (GT401): scenario E1 in both message generations, nodes, owners, skips."""

from __future__ import annotations

import json

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.pending_objects import CPU_POOL, GPU_POOL, NODECLASS, SCHED_INSUFFICIENT, event, pod

CHECK = ["pod-gpu-taint-not-tolerated"]
KARPENTER_V15 = ('Failed to schedule pod, did not tolerate taint (taint=nvidia.com/gpu=true:NoSchedule); no instance '
                 'type met all requirements, requirements=karpenter.k8s.aws/instance-category In [c m r], '
                 'karpenter.sh/nodepool In [default], resources={"cpu":"4","memory":"16Gi","nvidia.com/gpu":"1",'
                 '"pods":"1"}')
KARPENTER_PRE_V15 = ('Failed to schedule pod, incompatible with nodepool "gpu", daemonset overhead={"cpu":"180m",'
                     '"memory":"240Mi","pods":"5"}, did not tolerate nvidia.com/gpu=true:NoSchedule; incompatible with '
                     'nodepool "default", daemonset overhead={"cpu":"180m","memory":"240Mi","pods":"5"}, no instance '
                     'type satisfied resources {"cpu":"4","nvidia.com/gpu":"1"} and requirements '
                     'karpenter.k8s.aws/instance-category In [c m r]')
POD = pod()
POOLS = (GPU_POOL, CPU_POOL, NODECLASS)


def _run(*docs: str, sources: dict[str, SourceState] | None = None):  # type: ignore[no-untyped-def]
    (result,) = run(snapshot(*docs, sources=sources), only=CHECK).results
    return result


def test_fails_with_toleration_yaml_and_deployment_patch() -> None:
    result = _run(*POOLS, POD, event("e1", "FailedScheduling", KARPENTER_V15),
                  event("e2", "FailedScheduling", SCHED_INSUFFICIENT, source="default-scheduler"))
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.code == "GT401"
    assert f.severity is Severity.ERROR
    assert f.subject == ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
    assert "does not tolerate taint nvidia.com/gpu=true:NoSchedule of NodePool gpu" in f.title
    assert "nvidia.com/gpu: 1" in f.title
    paths = {(e.path, str(e.subject)): e for e in f.evidence}
    assert paths[("spec.template.spec.taints", "nodepool/gpu")].value == ["nvidia.com/gpu=true:NoSchedule"]
    assert paths[("spec.tolerations", "pod/ml/trainer-7c9d8f6b5-x2x7k")].value == "none"
    karp, sched = [e for e in f.evidence if e.path == "event Warning/FailedScheduling"]
    assert karp.value == KARPENTER_V15
    assert karp.note == "Karpenter reports the same taint"
    assert sched.value == SCHED_INSUFFICIENT and sched.note == "from default-scheduler"
    # The fix: exact toleration YAML, and a patch of the Deployment (ReplicaSet hash stripped).
    assert 'key: nvidia.com/gpu\n  operator: Equal\n  value: "true"\n  effect: NoSchedule' in f.remediation.text
    patch = next(c for c in f.remediation.commands if c.startswith("kubectl -n ml patch deployment trainer "))
    body = json.loads(patch.split("-p '", 1)[1].rstrip("'"))
    assert body == {"spec": {"template": {"spec": {"tolerations": [
        {"key": "nvidia.com/gpu", "operator": "Equal", "value": "true", "effect": "NoSchedule"}]}}}}
    assert ObjectRef("NodePool", "gpu") in f.related and ObjectRef("Deployment", "trainer", "ml") in f.related


def test_pre_v15_wording_is_read_too() -> None:
    (f,) = _run(*POOLS, POD, event("e1", "FailedScheduling", KARPENTER_PRE_V15)).findings
    karp = next(e for e in f.evidence if e.path == "event Warning/FailedScheduling")
    assert karp.note == "Karpenter reports the same taint"


def test_patch_keeps_existing_tolerations_and_drops_admission_defaults() -> None:
    # Tolerations have no merge key: the patch must carry the pod's own ones, not the 300s defaults.
    tolerations = """  tolerations:
  - {key: dedicated, operator: Equal, value: ml, effect: NoSchedule}
  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}
"""
    (f,) = _run(*POOLS, pod(tolerations=tolerations)).findings
    patch = next(c for c in f.remediation.commands if "patch deployment trainer" in c)
    tols = json.loads(patch.split("-p '", 1)[1].rstrip("'"))["spec"]["template"]["spec"]["tolerations"]
    assert [t["key"] for t in tols] == ["dedicated", "nvidia.com/gpu"]
    shown = next(e for e in f.evidence if e.path == "spec.tolerations")
    assert shown.value == ["dedicated=ml:NoSchedule"]
    assert shown.note == "besides the default not-ready/unreachable ones"


def test_passes_when_tolerated_even_without_startup_taint_toleration() -> None:
    # startupTaints (node.example.com/gpu-warmup) are removed before pods land: pods need not tolerate them.
    tolerations = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
    result = _run(*POOLS, pod(tolerations=tolerations))
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_wildcard_toleration_passes() -> None:
    assert _run(*POOLS, pod(tolerations="  tolerations: [{operator: Exists}]\n")).status is CheckStatus.PASSED


def test_taint_plus_another_obstacle_is_not_this_checks_finding() -> None:
    # The GPU pool also lacks the label the pod selects: a toleration alone would not help (GT402 reports it).
    result = _run(*POOLS, pod(node_selector="  nodeSelector: {team: vision}\n"))
    assert result.status is CheckStatus.PASSED


def test_replicas_of_one_deployment_are_one_finding() -> None:
    result = _run(*POOLS, POD, pod("trainer-7c9d8f6b5-b9z4q"))
    (f,) = result.findings
    assert "(+1 more pods of deployment/trainer)" in f.title
    assert ObjectRef("Pod", "trainer-7c9d8f6b5-b9z4q", "ml") in f.related
    assert result.examined == 2


MIG_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-40-7.ec2.internal
  labels:
    eks.amazonaws.com/nodegroup: a100-mig
    node.kubernetes.io/instance-type: p4d.24xlarge
    nvidia.com/mig.strategy: mixed
spec:
  providerID: aws:///us-east-1a/i-0fedcba9876543210
  taints: [{key: nvidia.com/gpu, value: present, effect: NoSchedule}]
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "96", memory: 1152Gi, pods: "250", nvidia.com/mig-1g.5gb: "14"}
  allocatable: {cpu: 95690m, memory: 1100Gi, pods: "250", nvidia.com/mig-1g.5gb: "14"}
"""


def test_mig_pod_and_tainted_managed_node_group_without_karpenter() -> None:
    # No Karpenter installed: the only MIG capacity is a managed node group node with free slices.
    mig_pod = pod("infer-0", resource="nvidia.com/mig-1g.5gb", owner="StatefulSet/infer")
    result = _run(MIG_NODE, mig_pod, sources={"nodepools": SourceState.ABSENT})
    (f,) = result.findings
    assert f.subject == ObjectRef("Pod", "infer-0", "ml")
    assert "nvidia.com/mig-1g.5gb: 1" in f.title
    assert "taint nvidia.com/gpu=present:NoSchedule of GPU node ip-10-0-40-7.ec2.internal" in f.title
    node_ev = next(e for e in f.evidence if e.path == "spec.taints")
    assert node_ev.subject == ObjectRef("Node", "ip-10-0-40-7.ec2.internal")
    assert any(c.startswith("kubectl -n ml patch statefulset infer --type=merge") for c in f.remediation.commands)


def test_node_being_deleted_or_full_is_not_offered() -> None:
    deleting = MIG_NODE.replace("  name: ip-10-0-40-7.ec2.internal\n",
                                '  name: ip-10-0-40-7.ec2.internal\n  deletionTimestamp: "2026-08-21T09:59:00Z"\n')
    mig_pod = pod("infer-0", resource="nvidia.com/mig-1g.5gb", owner="StatefulSet/infer")
    assert _run(deleting, mig_pod, sources={"nodepools": SourceState.ABSENT}).status is CheckStatus.PASSED
    # Being disrupted by Karpenter: tolerating the GPU taint would not help either.
    disrupted = MIG_NODE.replace("taints: [", "taints: [{key: karpenter.sh/disrupted, effect: NoSchedule}, ")
    assert _run(disrupted, mig_pod, sources={"nodepools": SourceState.ABSENT}).status is CheckStatus.PASSED


def test_job_owned_pod_is_told_to_recreate_and_cronjob_to_patch_its_template() -> None:
    (f,) = _run(*POOLS, pod("finetune-x7k2p", owner="Job/finetune")).findings
    assert any("kubectl replace --force -f finetune.yaml" in c for c in f.remediation.commands)
    assert "immutable" in f.remediation.text
    (g,) = _run(*POOLS, pod("nightly-29170560-abcde", owner="Job/nightly-29170560")).findings
    assert any(c.startswith("kubectl -n ml patch cronjob nightly --type=merge -p '{\"spec\":{\"jobTemplate\"")
               for c in g.remediation.commands)


def test_bare_pod_gets_a_pod_patch() -> None:
    (f,) = _run(*POOLS, pod("scratch", owner="")).findings
    assert any(c.startswith("kubectl -n ml patch pod scratch --type=json") for c in f.remediation.commands)
    # A real pod carries the not-ready/unreachable tolerations the API server added: the patch must
    # append (replacing the list is refused: "existing toleration can not be modified").
    defaults = ("  tolerations:\n"
                "  - {key: node.kubernetes.io/not-ready, operator: Exists, effect: NoExecute, tolerationSeconds: 300}\n"
                "  - {key: node.kubernetes.io/unreachable, operator: Exists, effect: NoExecute, "
                "tolerationSeconds: 300}\n")
    (g,) = _run(*POOLS, pod("scratch", owner="", tolerations=defaults)).findings
    patch = next(c for c in g.remediation.commands if "patch pod scratch" in c)
    assert '"path":"/spec/tolerations/-"' in patch and '"path":"/spec/tolerations",' not in patch


def test_custom_scheduler_pod_not_yet_marked_is_left_alone() -> None:
    # Volcano has not marked the pod Unschedulable, so Karpenter does not act on it yet.
    vc = pod(extra_spec="", status="status: {phase: Pending}\n").replace("schedulerName: default-scheduler",
                                                                          "schedulerName: volcano")
    result = _run(*POOLS, vc)
    assert result.status is CheckStatus.PASSED and result.examined == 0


def test_events_forbidden_still_finds_and_says_what_is_missing() -> None:
    (f,) = _run(*POOLS, POD, sources={"events": SourceState.FORBIDDEN}).findings
    missing = next(e for e in f.evidence if e.path == "pod events")
    assert "events: forbidden" in missing.note


def test_skipped_when_pods_are_forbidden() -> None:
    result = _run(*POOLS, POD, sources={"pods": SourceState.FORBIDDEN})
    assert result.status is CheckStatus.SKIPPED
    assert "pods: forbidden" in result.reason


def _gpu_node(taints: str, allocatable: str = 'nvidia.com/gpu: "1"') -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  labels: {{karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.xlarge}}
spec:
  taints: [{taints}]
status:
  conditions: [{{type: Ready, status: "True", reason: KubeletReady}}]
  capacity: {{cpu: "4", memory: 16Gi, pods: "58", {allocatable}}}
  allocatable: {{cpu: "4", memory: 16Gi, pods: "58", {allocatable}}}
"""


def test_a_node_still_carrying_its_pools_startup_taint_is_no_candidate() -> None:
    # Pods need not tolerate startupTaints: an agent removes them when the node is ready. A GPU node that
    # still has one is initializing; telling the pod to tolerate it would be wrong.
    at_limit = GPU_POOL.replace('nodes: "1", nvidia.com/gpu: "1"}', 'nodes: "1", nvidia.com/gpu: "16"}')
    assert at_limit != GPU_POOL  # the pool cannot launch more: only the existing node could take the pod
    node = _gpu_node("{key: nvidia.com/gpu, value: 'true', effect: NoSchedule}, "
                     "{key: node.example.com/gpu-warmup, value: 'true', effect: NoSchedule}")
    tolerates = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
    result = _run(at_limit, NODECLASS, node, pod("infer-0", tolerations=tolerates))
    assert not any("gpu-warmup" in f.title for f in result.findings), [f.title for f in result.findings]


def test_a_node_without_an_extended_resource_the_pod_asks_for_is_no_candidate() -> None:
    # The pod also wants EFA; a GPU node without it cannot take the pod whatever it tolerates.
    efa = pod("infer-0").replace('limits: {nvidia.com/gpu: "1"}',
                                 'limits: {nvidia.com/gpu: "1", vpc.amazonaws.com/efa: "1"}')
    assert "efa" in efa
    node = _gpu_node("{key: dedicated, value: ml, effect: NoSchedule}")
    result = _run(node, efa, sources={"nodepools": SourceState.ABSENT})
    assert not any("dedicated=ml" in f.title for f in result.findings), [f.title for f in result.findings]


def test_a_pod_pinned_to_another_node_by_match_fields_is_not_told_to_tolerate_this_one() -> None:
    # matchFields metadata.name pins the pod to ip-10-0-99-1; the tainted GPU node here is not it.
    pinned = pod("infer-0", affinity="""  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [ip-10-0-99-1.ec2.internal]}]
""")
    node = _gpu_node("{key: dedicated, value: ml, effect: NoSchedule}")
    result = _run(node, pinned, sources={"nodepools": SourceState.ABSENT})
    assert not any("dedicated=ml" in f.title for f in result.findings), [f.title for f in result.findings]


def test_a_node_whose_pods_were_not_read_is_not_said_to_be_free() -> None:
    # `diagnose pod/X` reads the pods of few nodes: a node whose pods were not read may be full, so the evidence
    # says what it advertises, never "has free" (it said so for full nodes).
    from dataclasses import replace

    from diagnostics.snapshot import SourceStatus

    mig_pod = pod("infer-0", resource="nvidia.com/mig-1g.5gb", owner="StatefulSet/infer")
    snap = snapshot(MIG_NODE, mig_pod, sources={"nodepools": SourceState.ABSENT})
    whole = next(e for e in run(snap, only=CHECK).findings[0].evidence if e.path == "spec.taints")
    assert "has free nvidia.com/mig-1g.5gb: 1" in whole.note
    scoped = replace(snap, sources={**snap.sources, "pods": SourceStatus("pods", SourceState.OK, partial=True)},
                     pods_read_on=frozenset())
    node_ev = next(e for e in run(scoped, only=CHECK).findings[0].evidence if e.path == "spec.taints")
    assert "has free" not in node_ev.note and "its pods were not read" in node_ev.note


def test_a_pod_karpenter_ignores_is_not_told_to_tolerate_a_nodepool_taint() -> None:
    # Provisioner.Validate rejected the pod for its PVC (its FailedScheduling event says so): a toleration for the
    # GPU pool's taint launches nothing for it. GT402 names the volume instead.
    msg = ("Failed to schedule pod, unbound pvc must define a storage class "
           "(PersistentVolumeClaim=ml/data-trainer-0, StorageClass=)")
    snap = snapshot(*POOLS, POD, event("e1", "FailedScheduling", msg))
    (gt401,) = run(snap, only=CHECK).results
    assert gt401.status is CheckStatus.PASSED
    (gt402,) = run(snap, only=["pod-no-nodepool-fits"]).results
    (f,) = gt402.findings
    assert "unbound pvc must define a storage class" in f.title
