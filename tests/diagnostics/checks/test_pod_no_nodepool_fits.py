"""pod-no-nodepool-fits (GT402): scenario E2/E4 and the causes other checks own (which must stay silent here)."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.snapshot import SourceState
from tests.builders import snapshot
from tests.diagnostics.pending_objects import CPU_POOL, GPU_POOL, NODECLASS, SCHED_INSUFFICIENT, event, pod

CHECK = ["pod-no-nodepool-fits"]
TOLERATES = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
POOLS = (GPU_POOL, CPU_POOL, NODECLASS)
# E2: the GPU pool only offers A10G/L4 and the pod wants an H100.
A10G_POOL = GPU_POOL.replace(
    "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}\n",
    "      - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a10g, l4]}\n")
E2_EVENT = ("Failed to schedule pod, incompatible requirements, key karpenter.k8s.aws/instance-gpu-name, "
            "karpenter.k8s.aws/instance-gpu-name In [h100] not in karpenter.k8s.aws/instance-gpu-name In [a10g l4]")


def _run(*docs: str, sources: dict[str, SourceState] | None = None):  # type: ignore[no-untyped-def]
    (result,) = run(snapshot(*docs, sources=sources), only=CHECK).results
    return result


def test_gpu_name_conflict_and_cpu_only_pool_are_both_explained() -> None:
    p = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {karpenter.k8s.aws/instance-gpu-name: h100}\n")
    result = _run(A10G_POOL, CPU_POOL, NODECLASS, p, event("e1", "FailedScheduling", E2_EVENT),
                  event("e2", "FailedScheduling", SCHED_INSUFFICIENT, source="default-scheduler"))
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert (f.code, f.severity) == ("GT402", Severity.ERROR)
    assert f.subject == ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
    assert "fits no NodePool" in f.title
    assert ("gpu: requirements: karpenter.k8s.aws/instance-gpu-name In [h100] not in "
            "karpenter.k8s.aws/instance-gpu-name In [a10g l4]") in f.title
    assert "default: its requirements admit no instance type with nvidia.com/gpu" in f.title
    by_subject = {(str(e.subject), e.path): e for e in f.evidence}
    cpu = by_subject[("nodepool/default", "spec.template.spec.requirements")]
    assert cpu.value == ["karpenter.k8s.aws/instance-category In [c m r]"]
    karp = next(e for e in f.evidence if e.value == E2_EVENT)
    assert "v1.5+" in karp.note and "key karpenter.k8s.aws/instance-gpu-name" in karp.note
    assert "kubectl get nodepool gpu -o yaml" in f.remediation.commands


def test_gpu_feature_discovery_label_cannot_be_provisioned_for() -> None:
    # Selecting on a GFD label: Karpenter does not know it before the node boots.
    p = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB}\n")
    (f,) = _run(*POOLS, p).findings
    # Both pools fail the same way, so the title says it once.
    assert 'all 2 NodePools: requirements: label "nvidia.com/gpu.product" does not have known values' in f.title
    req = next(e for e in f.evidence if e.subject == ObjectRef("NodePool", "gpu"))
    assert "GPU/Node Feature Discovery labels appear only after a node boots" in req.note


def test_template_label_satisfies_custom_selector() -> None:
    p = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {workload-class: gpu}\n")
    assert _run(*POOLS, p).status is CheckStatus.PASSED


def test_too_many_gpus_for_the_allowed_sizes() -> None:
    small = GPU_POOL.replace(
        "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}\n",
        "      - {key: node.kubernetes.io/instance-type, operator: In, values: [g5.xlarge, g5.2xlarge]}\n")
    (f,) = _run(small, CPU_POOL, NODECLASS, pod(gpus='"4"', tolerations=TOLERATES)).findings
    assert ("gpu: the largest instance type its requirements admit, g5.xlarge, has 1 nvidia.com/gpu; "
            "the pod needs 4 on one node") in f.title


def test_neuron_pod_with_only_gpu_and_cpu_pools() -> None:
    p = pod("infer-0", resource="aws.amazon.com/neuron", owner="StatefulSet/infer",
            tolerations="  tolerations: [{operator: Exists}]\n")
    (f,) = _run(*POOLS, p).findings
    assert "aws.amazon.com/neuron: 1" in f.title
    assert "gpu: its requirements admit no instance type with aws.amazon.com/neuron" in f.title
    assert "inf2/trn1 for Neuron" in f.remediation.text


def test_neuron_pod_fits_an_inferentia_pool() -> None:
    inf = GPU_POOL.replace("name: gpu, uid: np-gpu", "name: neuron, uid: np-neuron").replace(
        "values: [g5, g6, g6e]", "values: [inf2]")
    p = pod("infer-0", resource="aws.amazon.com/neuron", owner="StatefulSet/infer",
            tolerations="  tolerations: [{operator: Exists}]\n")
    assert _run(inf, CPU_POOL, NODECLASS, p).status is CheckStatus.PASSED


def test_mig_resource_is_not_something_karpenter_can_launch_for() -> None:
    p = pod("infer-0", resource="nvidia.com/mig-1g.5gb", owner="StatefulSet/infer", tolerations=TOLERATES)
    (f,) = _run(*POOLS, p).findings
    assert "all 2 NodePools: Karpenter does not model nvidia.com/mig-1g.5gb" in f.title
    assert "request whole GPUs" in f.remediation.text


def test_neuron_device_resource_is_not_something_karpenter_can_launch_for() -> None:
    # The Neuron device plugin registers aws.amazon.com/neurondevice; Karpenter's instance types
    # carry only neuron and neuroncore, so even an inf2 pool never launches for it.
    inf = GPU_POOL.replace("name: gpu, uid: np-gpu", "name: neuron, uid: np-neuron").replace(
        "values: [g5, g6, g6e]", "values: [inf2]")
    p = pod("infer-0", resource="aws.amazon.com/neurondevice", owner="StatefulSet/infer",
            tolerations="  tolerations: [{operator: Exists}]\n")
    (f,) = _run(inf, CPU_POOL, NODECLASS, p).findings
    assert "Karpenter does not model aws.amazon.com/neurondevice" in f.title
    assert "request aws.amazon.com/neuron (devices) or aws.amazon.com/neuroncore" in f.remediation.text


def test_pod_opting_out_of_karpenter_is_a_warning() -> None:
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
"""
    (f,) = _run(*POOLS, pod(tolerations=TOLERATES, affinity=affinity)).findings
    assert f.severity is Severity.WARNING
    assert "requires karpenter.sh/nodepool DoesNotExist" in f.title
    assert any(e.path == "Karpenter FailedScheduling event" for e in f.evidence)


def test_no_nodepool_at_all() -> None:
    (f,) = _run(NODECLASS, pod(tolerations=TOLERATES)).findings
    assert "no NodePool exists" in f.title


def test_karpenter_disagrees_with_a_fitting_pool() -> None:
    # gputui sees the GPU pool fit, but Karpenter's newer verdict (resources incl. daemonset overhead) is a failure.
    msg = ('Failed to schedule pod, no instance type met the scheduling requirements or had enough resources, '
           'requirements=karpenter.sh/nodepool In [gpu], resources={"cpu":"190","memory":"2Ti","nvidia.com/gpu":"1"}')
    (f,) = _run(*POOLS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", msg)).findings
    assert "Karpenter cannot launch a node for it: no instance type met the scheduling requirements" in f.title
    # Karpenter re-emits failures every 5 minutes: one last seen 20 minutes ago no longer speaks for now.
    old = event("e1", "FailedScheduling", msg, last="2026-08-21T09:40:00Z")
    assert _run(*POOLS, pod(tolerations=TOLERATES), old).status is CheckStatus.PASSED


# --- owned by other checks: must stay silent here -------------------------------------------------------


def test_taint_only_is_left_to_gt401() -> None:
    assert _run(*POOLS, pod()).status is CheckStatus.PASSED


def test_limit_only_is_left_to_gt105() -> None:
    full = GPU_POOL.replace('nodes: "1", nvidia.com/gpu: "1"}', 'nodes: "4", nvidia.com/gpu: "16"}')
    assert _run(full, CPU_POOL, NODECLASS, pod(tolerations=TOLERATES)).status is CheckStatus.PASSED


def test_nodeclass_not_ready_is_left_to_gt10x() -> None:
    broken = GPU_POOL.replace(
        '  - {type: NodeClassReady, status: "True", reason: NodeClassReady}\n  - {type: Ready, status: "True", '
        'reason: Ready}',
        '  - {type: NodeClassReady, status: "False", reason: UnhealthyDependents, message: "SubnetsReady=False, '
        'ValidationSucceeded=False"}\n  - {type: Ready, status: "False", reason: UnhealthyDependents, '
        'message: NodeClassReady=False}')
    assert "UnhealthyDependents" in broken
    assert _run(broken, CPU_POOL, NODECLASS, pod(tolerations=TOLERATES)).status is CheckStatus.PASSED


ICE = ("NodeClaim gpu-q8m2n event: creating instance, insufficient capacity, with fleet error(s), "
       "InsufficientInstanceCapacity: We currently do not have sufficient g5.2xlarge capacity in the Availability "
       "Zone you requested (us-east-1a).")
OFFERING = ('Failed to schedule pod, no instance type has the required offering, '
            'requirements=karpenter.sh/capacity-type In [on-demand], karpenter.sh/nodepool In [gpu], '
            'resources={"cpu":"4","nvidia.com/gpu":"1","pods":"1"}')


def test_capacity_shortage_is_left_to_gt104_but_reported_without_ice_events() -> None:
    p = pod(tolerations=TOLERATES)
    karp = event("e1", "FailedScheduling", OFFERING)
    # The claim is already deleted (ICE deletes it at once); its event still names the pool via its name.
    ice = event("e9", "InsufficientCapacityError", ICE, involved="NodeClaim/gpu-q8m2n", namespace=None,
                last="2026-08-21T09:57:00Z")
    assert _run(*POOLS, p, karp, ice).status is CheckStatus.PASSED
    (f,) = _run(*POOLS, p, karp).findings
    assert "no instance type has the required offering" in f.title


NOMINATED = "Pod should schedule on: nodeclaim/gpu-7xk2q"
CLAIM = """
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  creationTimestamp: "2026-08-21T09:57:00Z"
  labels: {karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.2xlarge}
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  conditions:
  - {type: Launched, status: Unknown, reason: AwaitingReconciliation, message: object is awaiting reconciliation}
"""


def test_pod_nominated_to_live_claim_is_left_to_gt404_but_not_to_a_deleting_one() -> None:
    # The claim is for a pod whose selector no longer fits (edited after launch): nomination wins while live.
    p = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {team: vision}\n")
    nom = event("n1", "Nominated", NOMINATED, type_="Normal", last="2026-08-21T09:57:30Z")
    assert _run(*POOLS, p, CLAIM, nom).status is CheckStatus.PASSED
    deleting = CLAIM.replace('  creationTimestamp: "2026-08-21T09:57:00Z"\n',
                             '  creationTimestamp: "2026-08-21T09:57:00Z"\n'
                             '  deletionTimestamp: "2026-08-21T09:59:00Z"\n')
    (f,) = _run(*POOLS, p, deleting, nom).findings
    assert 'label "team" does not have known values' in f.title


def test_passes_when_a_pool_fits() -> None:
    result = _run(*POOLS, pod(tolerations=TOLERATES))
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_skipped_without_nodepools() -> None:
    result = _run(pod(), sources={"nodepools": SourceState.ABSENT})
    assert result.status is CheckStatus.SKIPPED
    assert "nodepools: not installed" in result.reason


def test_odd_objects_never_crash_the_pending_pod_checks() -> None:
    # Malformed quantities and requirements, v1beta1 and static pools, claims without status, huge and empty
    # messages: GT105 and GT401-GT404 must run (pass or fail), never error.
    odd_pod = pod("odd-0", owner="", tolerations="  tolerations: [junk, {operator: Exists}]\n", affinity="""  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [n1]}]
        - matchExpressions: [{key: karpenter.k8s.aws/instance-gpu-count, operator: Gt, values: ["x"]}, {operator: In}]
""")
    odd = """
apiVersion: karpenter.sh/v1beta1
kind: NodePool
metadata: {name: legacy}
spec:
  replicas: 2
  limits: {nvidia.com/gpu: "abc", nodes: "-1"}
  template: {spec: {requirements: [junk, {key: kubernetes.io/arch, operator: Lt, values: []}], taints: null}}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: legacy-abcde}
---
apiVersion: v1
kind: Pod
metadata: {name: empty, namespace: ml}
"""
    huge = "Failed to schedule pod, " + "; ".join(
        f'incompatible with nodepool "p{i}", daemonset overhead={{}}, did not tolerate k{i}=:NoSchedule'
        for i in range(3000))
    events = (event("h", "FailedScheduling", huge, involved="Pod/odd-0"),
              event("n", "Nominated", "Pod should schedule on: ", involved="Pod/odd-0", type_="Normal"),
              event("c", "FailedCreate", "Error creating: [] must be an integer [", involved="Job/j"))
    checks = ["nodepool-gpu-limit-reached", "pod-gpu-taint-not-tolerated", "pod-no-nodepool-fits",
              "pod-gpu-request-invalid", "pod-waiting-for-nodeclaim"]
    report = run(snapshot(odd, odd_pod, GPU_POOL, NODECLASS, *events), only=checks)
    assert {r.check: r.status for r in report.results if r.status is CheckStatus.ERRORED} == {}
    for f in report.findings:
        assert len(f.title) < 400
        assert all(len(str(e.value)) <= 1000 for e in f.evidence)


def test_a_limit_karpenter_reports_on_the_fitting_pool_is_left_to_gt105() -> None:
    # Pre-v1.5 wording names every pool: the CPU pool's incompatibility is expected, and what it says about the
    # GPU pool (its limit) is GT105's cause, not "fix the pod's selector" (GT402 fired at error here).
    msg = ('Failed to schedule pod, incompatible with nodepool "default", daemonset overhead={"cpu":"180m",'
           '"memory":"240Mi","pods":"5"}, incompatible requirements, key karpenter.k8s.aws/instance-category, '
           'karpenter.k8s.aws/instance-category In [g p] not in karpenter.k8s.aws/instance-category In [c m r]; '
           'incompatible with nodepool "gpu", daemonset overhead={"cpu":"180m","memory":"240Mi","pods":"5"}, '
           'all available instance types exceed limits for nodepool: "gpu"')
    assert _run(*POOLS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", msg)).status is CheckStatus.PASSED
    from diagnostics.relations import root_causes

    causes = root_causes(run(snapshot(*POOLS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", msg))))
    assert [(f.code, str(f.subject)) for f in causes.values()] == [("GT105", "nodepool/gpu")]
    # The same message with the GPU pool's verdict something else is still Karpenter disagreeing.
    other = msg.replace('all available instance types exceed limits for nodepool: "gpu"',
                        'no instance type satisfied resources {"cpu":"190","nvidia.com/gpu":"1"} and requirements '
                        'karpenter.sh/nodepool In [gpu]')
    (f,) = _run(*POOLS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", other)).findings
    assert "Karpenter cannot launch a node for it" in f.title


# --- pods Karpenter ignores: no NodePool change helps, so none is suggested ---------------------------------
#
# kubernetes-sigs/karpenter pkg/controllers/provisioning/provisioner.go Provisioner.Validate: a pod that
# requires karpenter.sh/nodepool DoesNotExist, a restricted label (kubernetes.io/hostname, the karpenter.sh
# domain), matchFields in any required term, or whose PVCs fail ValidatePersistentVolumeClaims is ignored
# whatever the NodePools say ("ignoring pod"); widening requirements or raising limits changes nothing.

FULL = GPU_POOL.replace('nodes: "1", nvidia.com/gpu: "1"}', 'nodes: "4", nvidia.com/gpu: "16"}')
NODEPOOL_ADVICE = ("widen", "spec.limits", "Allow instance types", "Make Deployment")


def _no_nodepool_advice(f) -> None:  # type: ignore[no-untyped-def]
    assert not any(w in f.remediation.text for w in NODEPOOL_ADVICE), f.remediation.text
    assert not any(c.startswith("kubectl get nodepool") for c in f.remediation.commands), f.remediation.commands


def test_a_hostname_pinned_pod_is_told_why_karpenter_will_not_act_and_where_it_can_run() -> None:
    pinned = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {kubernetes.io/hostname: ip-10-0-99-1.ec2.internal}\n")
    for pools in ((GPU_POOL, CPU_POOL), (FULL, CPU_POOL)):
        (f,) = _run(*pools, NODECLASS, pinned).findings
        assert f.title.startswith("ml/trainer-7c9d8f6b5-x2x7k (nvidia.com/gpu: 1): Karpenter ignores it")
        assert "kubernetes.io/hostname" in f.title
        assert f.remediation.text.startswith("Karpenter will not launch a node for this pod")
        assert "ip-10-0-99-1.ec2.internal" in f.remediation.text and "Deployment ml/trainer" in f.remediation.text
        assert "kubectl describe node ip-10-0-99-1.ec2.internal" in f.remediation.commands
        _no_nodepool_advice(f)


def test_a_pod_pinned_by_match_fields_is_told_to_use_labels() -> None:
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [ip-10-0-99-1.ec2.internal]}]
"""
    (f,) = _run(FULL, CPU_POOL, NODECLASS, pod(tolerations=TOLERATES, affinity=affinity)).findings
    assert "matchFields" in f.title and "Karpenter ignores it" in f.title
    assert "matchExpressions" in f.remediation.text and "ip-10-0-99-1.ec2.internal" in f.remediation.text
    assert "kubectl describe node ip-10-0-99-1.ec2.internal" in f.remediation.commands
    _no_nodepool_advice(f)


def test_a_pod_requiring_a_karpenter_sh_label_is_told_to_drop_it() -> None:
    p = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {karpenter.sh/initialized: 'true'}\n")
    (f,) = _run(*POOLS, p).findings
    assert "karpenter.sh/initialized" in f.remediation.text and "Karpenter will not launch" in f.remediation.text
    _no_nodepool_advice(f)


def test_a_pod_opting_out_of_karpenter_is_not_told_to_raise_a_limit() -> None:
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
"""
    for pools in ((FULL, CPU_POOL), (CPU_POOL,)):
        (f,) = _run(*pools, NODECLASS, pod(tolerations=TOLERATES, affinity=affinity)).findings
        assert f.severity is Severity.WARNING and "opts out of Karpenter" in f.remediation.text
        _no_nodepool_advice(f)


PVC_KARPENTER = ("Failed to schedule pod, unbound pvc must define a storage class "
                 "(PersistentVolumeClaim=ml/data-trainer-0, StorageClass=)")


def test_a_pod_karpenter_rejects_for_its_volume_is_told_to_fix_the_volume() -> None:
    # Karpenter's FailedScheduling carries the Validate error (PodFailedToScheduleEvent); the pool fits.
    (f,) = _run(*POOLS, pod(tolerations=TOLERATES), event("e1", "FailedScheduling", PVC_KARPENTER)).findings
    assert "Karpenter ignores it: unbound pvc must define a storage class" in f.title
    assert "unbound pvc must define a storage class" in f.remediation.text
    assert "kubectl -n ml get pvc" in f.remediation.commands
    assert "daemonset overhead" not in f.remediation.text
    _no_nodepool_advice(f)
