"""gpu-nodepool-practices: the seed guide's best-practice list applied to GPU NodePools, pass and skip."""

from __future__ import annotations

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.model import Finding
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

# The seed guide's production-grade training pool: taint, GPU limit, on-demand, WhenEmpty.
GOOD = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-training}
spec:
  template:
    metadata: {labels: {workload: training}}
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu-training}
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a100, h100]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  limits: {nvidia.com/gpu: "32"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 30m, budgets: [{nodes: "0"}]}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: default}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: default}
      requirements: [{key: karpenter.k8s.aws/instance-category, operator: In, values: [c, m, r]}]
"""

UNTAINTED = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-inference}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-name, operator: In, values: [a10g, l4]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
status:
  resources: {cpu: "8", nvidia.com/gpu: "1", nodes: "1"}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-7-7.ec2.internal
  labels: {karpenter.sh/nodepool: gpu-inference, karpenter.sh/capacity-type: spot,
           node.kubernetes.io/instance-type: g5.2xlarge}
status:
  capacity: {nvidia.com/gpu: "1"}
  allocatable: {nvidia.com/gpu: "1"}
---
apiVersion: v1
kind: Pod
metadata:
  name: grafana-6b8d9-2xk4p
  namespace: monitoring
  ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: grafana-6b8d9, uid: r1}]
spec: {nodeName: ip-10-0-7-7.ec2.internal, containers: [{name: grafana, image: grafana/grafana:11.2.0}]}
status: {phase: Running}
"""


def findings(*docs: str) -> dict[str, Finding]:
    (result,) = run(snapshot(*docs), only=["gpu-nodepool-practices"]).results
    return {f.title: f for f in result.findings}


def test_untainted_pool_without_limits() -> None:
    found = findings(UNTAINTED)
    taint = next(f for t, f in found.items() if "has no GPU taint" in t)
    assert taint.code == "GT502"
    assert taint.severity is Severity.WARNING
    assert taint.subject == ObjectRef("NodePool", "gpu-inference")
    assert taint.title == ("GPU NodePool gpu-inference has no GPU taint: CPU pods will land on (and keep alive) "
                           "GPU nodes (1 non-GPU pod(s) there now)")
    by_path = {e.path: e for e in taint.evidence}
    assert by_path["spec.template.spec.taints"].value == "none"
    assert by_path["pods without GPU requests on NodePool gpu-inference nodes"].value == 1
    assert taint.related == (ObjectRef("Pod", "grafana-6b8d9-2xk4p", "monitoring"),)
    assert taint.remediation.commands == (
        "kubectl patch nodepool gpu-inference --type json -p '[{\"op\":\"add\",\"path\":\"/spec/template/spec/"
        "taints\",\"value\":[{\"key\":\"nvidia.com/gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}]}]'",)
    limit = found["GPU NodePool gpu-inference has no nvidia.com/gpu limit (no GPU cost cap)"]
    assert limit.severity is Severity.INFO
    assert {e.path: e.value for e in limit.evidence}["status.resources"] == {"nvidia.com/gpu": "1"}
    # spot + on-demand in one pool is its own fallback: no fallback finding.
    assert not any("fallback" in t for t in found)


def test_training_pool_on_spot_without_fallback() -> None:
    spot_training = GOOD.replace("values: [on-demand]", "values: [spot]")
    found = findings(spot_training)
    f = found["Training GPU NodePool gpu-training allows spot: an interruption kills the job (2-minute notice)"]
    assert f.severity is Severity.WARNING
    ev = f.evidence[0]
    assert ev.path == "spec.template.spec.requirements[karpenter.sh/capacity-type]"
    assert ev.value == ["spot"]
    assert ev.note == "training pool: named/labelled 'gpu-training'"
    assert f.remediation.commands == (
        "kubectl patch nodepool gpu-training --type json -p '[{\"op\":\"replace\",\"path\":\"/spec/template/spec/"
        "requirements/1\",\"value\":{\"key\":\"karpenter.sh/capacity-type\",\"operator\":\"In\","
        "\"values\":[\"on-demand\"]}}]'",)
    fallback = found["Spot-only GPU NodePool gpu-training has no on-demand fallback NodePool"]
    assert fallback.severity is Severity.INFO


def test_p5_pool_with_when_empty_counts_as_training() -> None:
    # No "train" in name or labels, but p5 instances and WhenEmpty: the seed's training shape.
    pool = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: big-gpu}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: node.kubernetes.io/instance-type, operator: In, values: [p5.48xlarge]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  limits: {nvidia.com/gpu: "16"}
  disruption: {consolidationPolicy: WhenEmpty, consolidateAfter: 1h}
"""
    found = findings(pool)
    (f,) = found.values()
    assert f.title.startswith("Training GPU NodePool big-gpu allows spot")
    assert f.evidence[0].note == "training pool: allows p4d/p5-class instances with consolidationPolicy WhenEmpty"


def test_long_running_gpu_pods_at_risk() -> None:
    pool = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-batch}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5, g6e]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [spot, on-demand]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  limits: {nvidia.com/gpu: "16"}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m}
"""

    def node(name: str, ct: str) -> str:
        return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  labels: {{karpenter.sh/nodepool: gpu-batch, karpenter.sh/capacity-type: {ct}}}
status: {{allocatable: {{nvidia.com/gpu: "4"}}, capacity: {{nvidia.com/gpu: "4"}}}}
"""

    def pod(name: str, node_name: str, owner: str, started: str, annotations: str = "{}") -> str:
        return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ml
  annotations: {annotations}
  ownerReferences: [{{apiVersion: batch/v1, kind: {owner}, name: owner, uid: o}}]
spec:
  nodeName: {node_name}
  containers: [{{name: main, image: ghcr.io/acme/train:3, resources: {{limits: {{nvidia.com/gpu: "4"}}}}}}]
status: {{phase: Running, startTime: "{started}"}}
"""

    docs = [pool, node("od-1", "on-demand"), node("spot-1", "spot"),
            # 10h on an on-demand node of a consolidating pool, unprotected: at risk.
            pod("finetune-llama-x8k2p", "od-1", "Job", "2026-08-21T00:00:00Z"),
            # Protected by do-not-disrupt on on-demand: fine.
            pod("finetune-mistral-p2l9q", "od-1", "Job", "2026-08-21T00:00:00Z",
                '{karpenter.sh/do-not-disrupt: "true"}'),
            # On spot, do-not-disrupt cannot help: at risk.
            pod("embed-0", "spot-1", "StatefulSet", "2026-08-20T20:00:00Z", '{karpenter.sh/do-not-disrupt: "true"}'),
            # Deployment replica (ReplicaSet owner): stateless, not flagged.
            pod("vllm-7c9d-2xk4p", "spot-1", "ReplicaSet", "2026-08-19T00:00:00Z"),
            # Only 2h old: not long-running yet.
            pod("finetune-qwen-a1b2c", "od-1", "Job", "2026-08-21T08:00:00Z")]
    found = findings(*docs)
    (f,) = [f for t, f in found.items() if "long-running" in t]
    assert f.severity is Severity.WARNING
    assert f.title.startswith("2 long-running GPU pod(s) on NodePool gpu-batch can be interrupted or consolidated")
    assert set(f.related) == {ObjectRef("Pod", "finetune-llama-x8k2p", "ml"), ObjectRef("Pod", "embed-0", "ml")}
    notes = {e.subject.name: e.note for e in f.evidence}
    assert notes["finetune-llama-x8k2p"] == ("running 10h on od-1, pool consolidates WhenEmptyOrUnderutilized, "
                                             "no karpenter.sh/do-not-disrupt")
    assert notes["embed-0"] == "on spot node spot-1 for 14h (do-not-disrupt does not stop spot interruption)"
    assert f.remediation.commands == (
        "kubectl annotate pod -n ml finetune-llama-x8k2p karpenter.sh/do-not-disrupt=true",)


def test_do_not_disrupt_durations_protect_until_they_run_out() -> None:
    # A duration counts from the pod's start: 20h still protects a pod started 10h ago, 5h no longer does.
    # Whether it protects depends on the time, so it is checked per snapshot even where the rest is carried.
    docs = ["""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu-batch}
spec:
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      requirements:
      - {key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}
      - {key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}
      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]
  limits: {nvidia.com/gpu: "16"}
  disruption: {consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 5m}
""", """
apiVersion: v1
kind: Node
metadata:
  name: od-1
  labels: {karpenter.sh/nodepool: gpu-batch, karpenter.sh/capacity-type: on-demand}
status: {allocatable: {nvidia.com/gpu: "4"}, capacity: {nvidia.com/gpu: "4"}}
"""]
    for name, duration in (("train-a", "20h"), ("train-b", "5h")):
        docs.append(f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ml
  annotations: {{karpenter.sh/do-not-disrupt: "{duration}"}}
  ownerReferences: [{{apiVersion: batch/v1, kind: Job, name: {name}, uid: {name}}}]
spec:
  nodeName: od-1
  containers: [{{name: main, image: x, resources: {{limits: {{nvidia.com/gpu: "2"}}}}}}]
status: {{phase: Running, startTime: "2026-08-21T00:00:00Z"}}
""")
    (f,) = [f for t, f in findings(*docs).items() if "long-running" in t]
    assert f.related == (ObjectRef("Pod", "train-b", "ml"),)


def test_passes_for_well_configured_pool_and_ignores_cpu_pools() -> None:
    (result,) = run(snapshot(GOOD), only=["gpu-nodepool-practices"]).results
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1  # the CPU-only default pool is not a GPU pool


def test_skipped_without_nodepools() -> None:
    (result,) = run(snapshot(sources={"nodepools": SourceState.ABSENT}), only=["gpu-nodepool-practices"]).results
    assert result.status is CheckStatus.SKIPPED


def test_odd_objects_never_crash_the_karpenter_checks() -> None:
    # Shared robustness test for the NodePool/EC2NodeClass/disruption checks written together:
    # malformed quantities, durations, schedules, requirement entries, events and annotations.
    odd = """
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: weird}
spec:
  weight: "5"
  limits: {nvidia.com/gpu: "abc"}
  disruption: {budgets: [{nodes: "0", schedule: "@daily", duration: "bogus"}], consolidateAfter: "1x"}
  template:
    metadata: {labels: null}
    spec:
      requirements:
      - {key: karpenter.k8s.aws/instance-gpu-count, operator: Gt, values: ["x"]}
      - {key: karpenter.sh/capacity-type, operator: NotIn, values: [on-demand]}
      - junk
      taints: [{key: nvidia.com/gpu}]
status: {conditions: [{type: Ready, status: "False"}, {status: "True"}]}
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: odd}
spec: {subnetSelectorTerms: [{}, {tags: {"a": "*"}}], securityGroupSelectorTerms: null}
status:
  subnets: notalist
  conditions: [{type: SubnetsReady, status: "False"}, {type: AMIsReady, status: "False", reason: UnsupportedAlias}]
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata: {name: x, deletionTimestamp: "2026-08-21T09:59:00Z", creationTimestamp: "2026-08-21T09:59:30Z"}
---
apiVersion: v1
kind: Event
metadata: {name: e1, namespace: default}
involvedObject: {kind: NodeClaim, name: weird-abcde}
reason: InsufficientCapacityError
type: Warning
lastTimestamp: "2026-08-21T09:59:00Z"
message: ""
---
apiVersion: v1
kind: Event
metadata: {name: e2, namespace: default}
involvedObject: {kind: Node, name: n1}
reason: DisruptionBlocked
lastTimestamp: "2026-08-21T09:59:00Z"
message: "Pdb prevents pod evictions (PodDisruptionBudget=[])"
---
apiVersion: v1
kind: Node
metadata:
  name: n1
  creationTimestamp: "2026-08-21T01:00:00Z"
  labels: {karpenter.sh/nodepool: weird, karpenter.k8s.aws/instance-gpu-count: "0"}
status: {capacity: {nvidia.com/gpu: "2"}, allocatable: {nvidia.com/gpu: "2"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: a, annotations: {karpenter.sh/do-not-disrupt: "10q"}}
spec: {nodeName: n1, containers: [{name: c, resources: {limits: {nvidia.com/gpu: "0"}}}]}
status: {phase: Running}
"""
    mine = ["nodeclass-subnets-not-found", "nodeclass-security-groups-not-found", "nodeclass-not-ready",
            "nodepool-not-ready", "spot-capacity-shortage", "consolidation-blocked", "gpu-nodepool-practices"]
    report = run(snapshot(odd), only=mine)
    assert [r.check for r in report.results if r.status is CheckStatus.ERRORED] == []
    # The invalid do-not-disrupt value is ignored (as Karpenter does); the unparsable budget fails closed.
    (blocked,) = [r for r in report.results if r.check == "consolidation-blocked"]
    (f,) = blocked.findings
    assert f.title.endswith(
        "budget #0 nodes=0 has a schedule Karpenter cannot parse ('@daily' for 'bogus'): fails closed")
