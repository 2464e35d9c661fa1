"""The pending-pod relation against what kube-scheduler and Karpenter really do with a pod.

Sources (read at kubernetes-sigs/karpenter 22664681, Aug 2026; kubernetes/kubernetes pkg/registry/core/pod):
- Karpenter acts only on `pod.IsProvisionable` pods (pkg/utils/pod/scheduling.go): PodScheduled reason
  `Unschedulable` (FailedToSchedule: any scheduler, no other reason), no spec.nodeName, no
  status.nominatedNodeName (IsPreempting), not owned by a DaemonSet or a Node (mirror pod).
- `Provisioner.Validate` (pkg/controllers/provisioning/provisioner.go) ignores a pod whose
  `scheduling.NewPodRequirements` (nodeSelector + heaviest preferred term + FIRST required term) holds
  `karpenter.sh/nodepool DoesNotExist`.
- A pod with spec.schedulingGates gets `PodScheduled=False SchedulingGated "Scheduling is blocked due to
  non-empty scheduling gates"` from the API server, and kube-scheduler's SchedulingGates PreEnqueue plugin
  keeps it out of the queue: no node or NodePool is why it waits.
"""

from __future__ import annotations

from diagnostics import ObjectRef, run
from diagnostics.facts.pod_fit import REQUIREMENTS, fit
from diagnostics.relations import all_candidates, focus, root_cause
from diagnostics.verdict import GATED, UNDETERMINED, VERDICTS
from diagnostics.facts.matching import requirement_matches
from diagnostics.model import Severity
from diagnostics.records import Requirement
from tests.builders import snapshot
from tests.diagnostics.pending_objects import GPU_POOL, NODECLASS, event, pod
from tests.diagnostics.test_relations import NO_KARPENTER, gke_node
from tests.diagnostics.test_relations import pod as gke_pod

POD = ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
FULL_POOL = GPU_POOL.replace('nvidia.com/gpu: "1"', 'nvidia.com/gpu: "16"')
"""The gpu NodePool with its 16-GPU limit used up: GT105 names it for every pod Karpenter would launch for."""
TOLERATES = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
GATES = "  schedulingGates: [{name: kueue.x-k8s.io/admission}]\n"
GATED_STATUS = """status:
  phase: Pending
  conditions:
  - {type: PodScheduled, status: "False", reason: SchedulingGated, lastTransitionTime: "2026-08-21T09:30:00Z",
     message: "Scheduling is blocked due to non-empty scheduling gates"}
"""


def _judged(*docs: str, ref: ObjectRef = POD, **kw):  # type: ignore[no-untyped-def]
    snap = snapshot(*docs, **kw)
    report = run(snap)
    return snap, report, focus(report, snap, ref).verdict


def test_the_limit_of_the_pool_explains_a_pod_karpenter_would_launch_for() -> None:
    # The baseline the cases below depart from: an Unschedulable pod the full pool would take.
    _snap, report, v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES))
    rc = root_cause(report, POD)
    assert rc is not None and (rc.check, str(rc.subject)) == ("nodepool-gpu-limit-reached", "nodepool/gpu")
    assert v.root_cause == rc


def test_a_gated_pod_is_held_by_its_gates_not_by_a_full_pool() -> None:
    snap, report, v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, extra_spec=GATES, status=GATED_STATUS))
    assert root_cause(report, POD) is None
    assert not any(POD in f.related for f in report.findings)
    assert all_candidates(snap)[POD][1].pools == frozenset()
    assert v.verdict == GATED and v.floor == Severity.WARNING and not v.all_clear
    assert "kueue.x-k8s.io/admission" in v.headline
    assert "no problems" not in v.headline


def test_a_gated_pod_is_not_explained_by_a_broken_node_it_could_run_on() -> None:
    # GKE, no Karpenter: the only L4 node advertises no GPU - but the pod has not been looked at by any scheduler.
    gated = gke_pod("llm-0").replace("schedulerName: default-scheduler", "schedulerName: default-scheduler\n" + GATES)
    gated = gated.replace("reason: Unschedulable", "reason: SchedulingGated").replace(
        "0/3 nodes are available: 3 Insufficient nvidia.com/gpu.", "Scheduling is blocked due to non-empty scheduling gates")
    ref = ObjectRef("Pod", "llm-0", "ml")
    _snap, report, v = _judged(gke_node("gke-l4-a"), gated, ref=ref, sources=NO_KARPENTER)
    assert root_cause(report, ref) is None
    assert v.verdict == GATED and v.floor == Severity.WARNING
    # The broken node is still reported, as a finding of its own.
    assert any(f.check == "gpu-not-advertised" for f in report.findings)


def test_the_gated_condition_alone_is_enough() -> None:
    # A read that dropped spec.schedulingGates (an old bundle) still carries the API server's condition.
    _snap, report, v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, status=GATED_STATUS))
    assert root_cause(report, POD) is None and v.verdict == GATED


FIRST_TERM_AVOIDS = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
        - matchExpressions: [{key: workload-class, operator: In, values: [gpu]}]
"""
PREFERRED_AVOIDS = """  affinity:
    nodeAffinity:
      preferredDuringSchedulingIgnoredDuringExecution:
      - weight: 1
        preference:
          matchExpressions: [{key: workload-class, operator: In, values: [gpu]}]
      - weight: 100
        preference:
          matchExpressions: [{key: karpenter.sh/nodepool, operator: DoesNotExist}]
"""


def test_karpenter_ignores_a_pod_whose_first_required_term_avoids_it() -> None:
    # Provisioner.Validate reads the FIRST required term only: the pod is ignored, whatever the second says.
    snap, report, v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, affinity=FIRST_TERM_AVOIDS))
    assert all_candidates(snap)[POD][1].pools == frozenset()
    rc = root_cause(report, POD)
    assert rc is not None and (rc.check, rc.subject) == ("pod-no-nodepool-fits", POD)
    assert "Karpenter ignores it" in rc.title and v.root_cause == rc
    assert not any(f.check == "nodepool-gpu-limit-reached" and POD in f.explains for f in report.findings)


def test_karpenter_ignores_a_pod_whose_heaviest_preference_avoids_it() -> None:
    snap, report, _v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, affinity=PREFERRED_AVOIDS))
    assert all_candidates(snap)[POD][1].pools == frozenset()
    rc = root_cause(report, POD)
    assert rc is not None and (rc.check, rc.subject) == ("pod-no-nodepool-fits", POD)


def test_a_lighter_preference_for_non_karpenter_nodes_does_not_make_karpenter_ignore_the_pod() -> None:
    lighter = PREFERRED_AVOIDS.replace("weight: 100", "weight: 0").replace("weight: 1\n", "weight: 50\n")
    _snap, report, _v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, affinity=lighter))
    rc = root_cause(report, POD)
    assert rc is not None and rc.check == "nodepool-gpu-limit-reached"


def test_a_pod_of_another_scheduler_it_has_not_marked_has_no_nodepool_candidates() -> None:
    # FailedToSchedule wants reason Unschedulable; Volcano has not said anything yet.
    volcano = pod(tolerations=TOLERATES, status="status:\n  phase: Pending\n").replace(
        "schedulerName: default-scheduler", "schedulerName: volcano")
    snap, report, v = _judged(FULL_POOL, NODECLASS, volcano)
    assert all_candidates(snap)[POD][1].pools == frozenset()
    assert root_cause(report, POD) is None and v.verdict == UNDETERMINED and v.floor == Severity.WARNING
    assert ("Karpenter does not launch for it: waits for scheduler volcano, which has not marked it Unschedulable"
            in v.checked)


def test_a_pod_of_another_scheduler_marked_unschedulable_is_karpenters() -> None:
    marked = pod(tolerations=TOLERATES).replace("schedulerName: default-scheduler", "schedulerName: volcano")
    _snap, report, _v = _judged(FULL_POOL, NODECLASS, marked)
    rc = root_cause(report, POD)
    assert rc is not None and rc.check == "nodepool-gpu-limit-reached"


GPU_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  creationTimestamp: "2026-08-21T08:00:00Z"
  labels: {karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.xlarge, workload-class: gpu,
           karpenter.sh/capacity-type: on-demand, kubernetes.io/arch: amd64}
spec:
  providerID: aws:///us-east-1a/i-0abc
  taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
status:
  capacity: {nvidia.com/gpu: "1", cpu: "4", memory: 16Gi, pods: "58"}
  allocatable: {nvidia.com/gpu: "1", cpu: 3920m, memory: 14Gi, pods: "58"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, lastTransitionTime: "2026-08-21T08:02:00Z"}]
"""


def test_a_preempting_pod_waits_on_its_node_not_on_its_nodepool() -> None:
    # kube-scheduler nominated the pod to an existing node (victims terminating): Karpenter ignores it
    # (IsPreempting), so the pool's limit is not why it waits.
    preempting = pod(tolerations=TOLERATES, status="""status:
  phase: Pending
  nominatedNodeName: ip-10-0-12-34.ec2.internal
  conditions:
  - {type: PodScheduled, status: "False", reason: Unschedulable, lastTransitionTime: "2026-08-21T09:30:01Z",
     message: "0/5 nodes are available: 5 Insufficient nvidia.com/gpu. preemption: 0/5 nodes are available: 1 Insufficient nvidia.com/gpu, 4 Preemption is not helpful for scheduling."}
""")
    snap, report, _v = _judged(FULL_POOL, NODECLASS, GPU_NODE, preempting)
    c = all_candidates(snap)[POD][1]
    assert c.nodes == frozenset({"ip-10-0-12-34.ec2.internal"}) and c.pools == frozenset()
    rc = root_cause(report, POD)
    assert rc is None or rc.check != "nodepool-gpu-limit-reached"


def test_karpenter_ignores_a_pod_pinned_by_hostname() -> None:
    # kubernetes.io/hostname is a RestrictedLabel (pkg/apis/v1/labels.go): Provisioner.Validate rejects the
    # pod ("using label kubernetes.io/hostname is not allowed as it might interfere with the internal
    # provisioning logic"), so no NodePool's limit is why it waits.
    pinned = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {kubernetes.io/hostname: ip-10-0-99-1.ec2.internal}\n")
    snap, report, _v = _judged(FULL_POOL, NODECLASS, pinned)
    assert all_candidates(snap)[POD][1].pools == frozenset()
    assert not any(f.check == "nodepool-gpu-limit-reached" and POD in f.explains for f in report.findings)
    fits = fit(snap, snap.index.pod[("ml", POD.name)]).pools
    assert fits and all(REQUIREMENTS in p.kinds and "kubernetes.io/hostname" in p.summary() for p in fits)


def test_one_matchfields_term_makes_karpenter_ignore_the_whole_pod() -> None:
    # validateAffinity checks every required term: matchFields in any of them rejects the pod, even when
    # another term would fit the pool.
    affinity = """  affinity:
    nodeAffinity:
      requiredDuringSchedulingIgnoredDuringExecution:
        nodeSelectorTerms:
        - matchFields: [{key: metadata.name, operator: In, values: [ip-10-0-99-1.ec2.internal]}]
        - matchExpressions: [{key: workload-class, operator: In, values: [gpu]}]
"""
    snap, report, _v = _judged(FULL_POOL, NODECLASS, pod(tolerations=TOLERATES, affinity=affinity))
    assert all_candidates(snap)[POD][1].pools == frozenset()
    assert not any(f.check == "nodepool-gpu-limit-reached" and POD in f.explains for f in report.findings)
    fits = fit(snap, snap.index.pod[("ml", POD.name)]).pools
    assert fits and all("matchFields (metadata.name)" in p.summary() for p in fits)


def test_a_pod_pinned_by_node_name_is_never_waiting_for_a_scheduler() -> None:
    # spec.nodeName bypasses kube-scheduler and Karpenter (IsScheduled): no candidates, no "cause not
    # determined"; its verdict is its phase, one of the documented values.
    pinned = pod(tolerations=TOLERATES, extra_spec="  nodeName: ip-10-0-12-34.ec2.internal\n",
                 status="status:\n  phase: Pending\n")
    snap, report, v = _judged(FULL_POOL, NODECLASS, GPU_NODE, pinned)
    assert POD not in all_candidates(snap)
    assert not any(POD in f.explains for f in report.findings)
    assert v.verdict == "pending" and v.verdict in VERDICTS


def test_a_bound_pod_that_has_not_started_is_no_all_clear() -> None:
    # Bound (spec.nodeName) but still Pending: the kubelet has not started it. Nothing gputui checks may be
    # about it, but "no problems found" (exit 0) would be a claim about a pod that is not running.
    pinned = pod(tolerations=TOLERATES, extra_spec="  nodeName: ip-10-0-12-34.ec2.internal\n", status="""status:
  phase: Pending
  containerStatuses:
  - {name: trainer, ready: false, restartCount: 0, image: nvcr.io/nvidia/pytorch:25.01-py3, imageID: "",
     state: {waiting: {reason: ImagePullBackOff, message: "Back-off pulling image nvcr.io/nvidia/pytorch:25.01-py3"}}}
""")
    _snap, _report, v = _judged(FULL_POOL.replace('"16"', '"1"'), NODECLASS, GPU_NODE, pinned)
    assert v.verdict == "pending" and not v.all_clear and v.floor == Severity.WARNING
    assert "no problems" not in v.headline
    assert "ip-10-0-12-34.ec2.internal" in v.headline and "trainer: ImagePullBackOff" in v.headline


def test_a_broken_node_too_small_for_the_pod_does_not_explain_it() -> None:
    # NodeResourcesFit compares every request with the node's allocatable: a pod asking for 16 CPUs never fits
    # an 8-vCPU g2-standard-8 ("Insufficient cpu"), however its GPU plugin does.
    big = gke_pod("llm-0").replace('limits: {nvidia.com/gpu: "1"}', 'requests: {cpu: "16"}, limits: {nvidia.com/gpu: "1"}')
    ref = ObjectRef("Pod", "llm-0", "ml")
    snap, report, v = _judged(gke_node("gke-l4-a"), big, ref=ref, sources=NO_KARPENTER)
    assert all_candidates(snap)[ref][1].nodes == frozenset()
    assert root_cause(report, ref) is None and v.verdict == UNDETERMINED
    small = big.replace('cpu: "16"', 'cpu: "4"')
    _snap, report, _v = _judged(gke_node("gke-l4-a"), small, ref=ref, sources=NO_KARPENTER)
    rc = root_cause(report, ref)
    assert rc is not None and rc.check == "gpu-not-advertised"


PVC_KARPENTER = ("Failed to schedule pod, unbound pvc must define a storage class "
                 "(PersistentVolumeClaim=ml/data-trainer-0, StorageClass=)")
PVC_SCHEDULER = ("0/5 nodes are available: pod has unbound immediate PersistentVolumeClaims. preemption: 0/5 nodes "
                 "are available: 5 Preemption is not helpful for scheduling.")


def test_a_pod_karpenter_rejects_for_its_volume_is_explained_by_that_not_by_a_full_pool() -> None:
    # volumetopology.go ValidatePersistentVolumeClaims fails Provisioner.Validate: Karpenter ignores the pod and
    # says why in a FailedScheduling event; kube-scheduler's VolumeBinding PreFilter rejects it before any node
    # is looked at ("0/N nodes are available: <PreFilterMsg>.", FitError.Error).
    snap, report, v = _judged(
        FULL_POOL, NODECLASS, pod(tolerations=TOLERATES),
        event("e1", "FailedScheduling", PVC_KARPENTER),
        event("e2", "FailedScheduling", PVC_SCHEDULER, source="default-scheduler"))
    c = all_candidates(snap)[POD][1]
    assert c.pools == frozenset() and c.nodes == frozenset()
    assert not any(f.check == "nodepool-gpu-limit-reached" for f in report.findings)  # not even elsewhere
    # What Karpenter said is the pod's own finding (GT402, as when the pool has room): fix the volume.
    rc = root_cause(report, POD)
    assert rc is not None and (rc.code, rc.subject) == ("GT402", POD) and v.root_cause == rc
    assert "unbound pvc must define a storage class" in rc.title and "spec.limits" not in rc.remediation.text
    assert any("unbound pvc must define a storage class" in m for m in v.messages)
    assert any("pod has unbound immediate PersistentVolumeClaims" in m for m in v.messages)


def test_a_pod_rejected_before_any_node_is_looked_at_is_not_explained_by_a_broken_node() -> None:
    gke = gke_pod("llm-0")
    ref = ObjectRef("Pod", "llm-0", "ml")
    prefilter = ('0/1 nodes are available: persistentvolumeclaim "models" not found. preemption: 0/1 nodes are '
                 'available: 1 Preemption is not helpful for scheduling.')
    snap, report, v = _judged(gke_node("gke-l4-a"), gke,
                              event("e1", "FailedScheduling", prefilter, source="default-scheduler", involved="Pod/llm-0"),
                              ref=ref, sources=NO_KARPENTER)
    assert all_candidates(snap)[ref][1].nodes == frozenset()
    assert root_cause(report, ref) is None and v.verdict == UNDETERMINED
    # The same node explains the pod once the scheduler judges nodes again and finds it wanting.
    per_node = "0/1 nodes are available: 1 Insufficient nvidia.com/gpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."
    _snap, report, _v = _judged(gke_node("gke-l4-a"), gke,
                                event("e1", "FailedScheduling", prefilter, source="default-scheduler", involved="Pod/llm-0"),
                                event("e2", "FailedScheduling", per_node, source="default-scheduler", involved="Pod/llm-0",
                                      last="2026-08-21T09:59:00Z"),
                                ref=ref, sources=NO_KARPENTER)
    rc = root_cause(report, ref)
    assert rc is not None and rc.check == "gpu-not-advertised"


MIN_VALUES_POOL = GPU_POOL.replace(
    "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6, g6e]}",
    "      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [c7i, m7i, g5, g6, g6e], minValues: 3}")


def test_a_pod_that_leaves_fewer_instance_families_than_min_values_fits_no_pool() -> None:
    # filterInstanceTypesByRequirements -> InstanceTypes.SatisfiesMinValues (MinValuesPolicy Strict, the
    # default): "minValues requirement is not met for label(s)". A pod selecting one family leaves 1 of 3.
    one = pod(tolerations=TOLERATES, node_selector="  nodeSelector: {karpenter.k8s.aws/instance-family: g5}\n")
    snap = snapshot(MIN_VALUES_POOL, NODECLASS, one)
    pf = fit(snap, snap.index.pod[("ml", POD.name)]).pools[0]
    assert REQUIREMENTS in pf.kinds and "minValues" in pf.summary() and "karpenter.k8s.aws/instance-family" in pf.summary()
    # The GPU the pod asks for narrows the families as well: c7i and m7i carry none, g5/g6/g6e are 3.
    snap = snapshot(MIN_VALUES_POOL, NODECLASS, pod(tolerations=TOLERATES))
    assert fit(snap, snap.index.pod[("ml", POD.name)]).pools[0].fits


def test_min_values_counts_only_the_families_with_the_pods_accelerator() -> None:
    pool = MIN_VALUES_POOL.replace("minValues: 3", "minValues: 4")
    snap = snapshot(pool, NODECLASS, pod(tolerations=TOLERATES))
    pf = fit(snap, snap.index.pod[("ml", POD.name)]).pools[0]
    assert REQUIREMENTS in pf.kinds and "minValues" in pf.summary()


INF2_NODE = """
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-45-211.ec2.internal
  creationTimestamp: "2026-08-21T09:00:00Z"
  labels: {node.kubernetes.io/instance-type: inf2.8xlarge, eks.amazonaws.com/nodegroup: neuron, kubernetes.io/arch: amd64}
spec:
  providerID: aws:///us-east-1b/i-01c1f8a990e677825
  taints: [{key: aws.amazon.com/neuron, value: "true", effect: NoSchedule}]
status:
  capacity: {cpu: "32", memory: 127617Mi, pods: "234"}
  allocatable: {cpu: 31850m, memory: 124102Mi, pods: "234"}
  conditions: [{type: Ready, status: "True", reason: KubeletReady, lastTransitionTime: "2026-08-21T09:02:00Z"}]
"""


def test_a_neuroncore_pod_is_explained_by_its_inf2_node_without_the_neuron_plugin() -> None:
    # inf2.8xlarge: one Inferentia2 device, two NeuronCores (Karpenter's instance type capacity:
    # aws.amazon.com/neuron 1, aws.amazon.com/neuroncore 2). A pod asking for both cores fits the node
    # once the Neuron device plugin runs; the node's device count is not the cores it offers.
    cores = pod(resource="aws.amazon.com/neuroncore", gpus='"2"',
                tolerations="  tolerations: [{key: aws.amazon.com/neuron, operator: Exists, effect: NoSchedule}]\n")
    snap, report, v = _judged(INF2_NODE, cores, sources=NO_KARPENTER)
    assert all_candidates(snap)[POD][1].nodes == frozenset({"ip-10-0-45-211.ec2.internal"})
    rc = root_cause(report, POD)
    assert rc is not None and rc.subject == ObjectRef("Node", "ip-10-0-45-211.ec2.internal")
    three = cores.replace('aws.amazon.com/neuroncore: "2"', 'aws.amazon.com/neuroncore: "3"')
    snap, report, _v = _judged(INF2_NODE, three, sources=NO_KARPENTER)
    assert all_candidates(snap)[POD][1].nodes == frozenset()


def test_gt_lt_parse_label_values_as_kube_scheduler_does() -> None:
    # labels.Requirement.Matches (apimachinery): strconv.ParseInt(value, 10, 64) on the label and on exactly one
    # requirement value; anything else does not match. Python's int() took "1_6", " 8" and a second value.
    gt4 = Requirement("nvidia.com/gpu.count", "Gt", ("4",))
    assert requirement_matches(gt4, {"nvidia.com/gpu.count": "8"})
    assert requirement_matches(gt4, {"nvidia.com/gpu.count": "+8"})
    assert not requirement_matches(gt4, {"nvidia.com/gpu.count": "1_6"})
    assert not requirement_matches(gt4, {"nvidia.com/gpu.count": "8 "})
    assert not requirement_matches(gt4, {"nvidia.com/gpu.count": "٨"})  # an Arabic-Indic eight
    assert not requirement_matches(gt4, {"nvidia.com/gpu.count": "99999999999999999999"})  # over int64
    assert not requirement_matches(Requirement("nvidia.com/gpu.count", "Gt", ("4", "6")), {"nvidia.com/gpu.count": "8"})
    assert requirement_matches(Requirement("nvidia.com/gpu.count", "Lt", ("-1",)), {"nvidia.com/gpu.count": "-2"})


BIG_NODE = GPU_NODE.replace("g5.xlarge", "g5.2xlarge").replace(
    'cpu: "4", memory: 16Gi', 'cpu: "8", memory: 32Gi').replace("cpu: 3920m, memory: 14Gi", "cpu: 7910m, memory: 30Gi")
BROKEN_NODE = BIG_NODE.replace('nvidia.com/gpu: "1", ', "")
"""A g5.2xlarge of the gpu pool whose device plugin never registered nvidia.com/gpu."""


def test_a_node_karpenter_is_disrupting_is_no_candidate() -> None:
    # karpenter.sh/disrupted:NoSchedule (pkg/apis/v1/taints.go DisruptedNoScheduleTaint) goes on a node Karpenter
    # is draining to delete: kube-scheduler keeps the pod off it and it will not come back, so its broken
    # plugin is not why the pod waits.
    _snap, report, _v = _judged(GPU_POOL, NODECLASS, BROKEN_NODE, pod(tolerations=TOLERATES))
    rc = root_cause(report, POD)
    assert rc is not None and (rc.check, rc.subject.kind) == ("gpu-not-advertised", "Node")
    disrupted = BROKEN_NODE.replace(
        'taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]',
        'taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}, {key: karpenter.sh/disrupted, effect: NoSchedule}]')
    snap, report, _v = _judged(GPU_POOL, NODECLASS, disrupted, pod(tolerations=TOLERATES))
    assert all_candidates(snap)[POD][1].nodes == frozenset()
    assert not any(f.subject.kind == "Node" and POD in f.explains for f in report.findings)
