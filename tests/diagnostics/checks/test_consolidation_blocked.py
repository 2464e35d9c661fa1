"""consolidation-blocked: scenario D, one test per blocker kind, budget windows at NOW (a Friday), pass and skip."""

from __future__ import annotations

import json

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.model import Finding
from diagnostics.snapshot import SourceState
from tests.builders import snapshot

NODE_NAME = "ip-10-0-40-7.ec2.internal"


def pool(disruption: str = "{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30m}") -> str:
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: gpu}}
spec:
  disruption: {disruption}
  template:
    spec:
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements: [{{key: karpenter.k8s.aws/instance-family, operator: In, values: [g5]}}]
      taints: [{{key: nvidia.com/gpu, value: "true", effect: NoSchedule}}]
"""


def node(annotations: str = "{}") -> str:
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {NODE_NAME}
  creationTimestamp: "2026-08-21T02:00:00Z"
  annotations: {annotations}
  labels:
    karpenter.sh/nodepool: gpu
    karpenter.sh/capacity-type: on-demand
    node.kubernetes.io/instance-type: g5.12xlarge
    karpenter.k8s.aws/instance-gpu-count: "4"
spec:
  providerID: aws:///us-east-1a/i-0123456789abcdef0
  taints: [{{key: nvidia.com/gpu, value: "true", effect: NoSchedule}}]
status:
  conditions: [{{type: Ready, status: "True", reason: KubeletReady}}]
  capacity: {{cpu: "48", memory: 192Gi, nvidia.com/gpu: "4", pods: "234"}}
  allocatable: {{cpu: 47810m, memory: 185Gi, nvidia.com/gpu: "4", pods: "234"}}
"""


def claim(consolidatable: bool = True, last_pod_event: str = "2026-08-21T08:00:00Z") -> str:
    cond = ('\n  - {type: Consolidatable, status: "True", reason: Consolidatable, '
            'lastTransitionTime: "2026-08-21T08:30:00Z"}' if consolidatable else "")
    return f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-abc12
  labels: {{karpenter.sh/nodepool: gpu}}
status:
  nodeName: {NODE_NAME}
  providerID: aws:///us-east-1a/i-0123456789abcdef0
  lastPodEventTime: "{last_pod_event}"
  conditions:
  - {{type: Launched, status: "True", reason: Launched}}
  - {{type: Registered, status: "True", reason: Registered}}
  - {{type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "2026-08-21T02:03:00Z"}}{cond}
"""


DAEMON_POD = f"""
apiVersion: v1
kind: Pod
metadata:
  name: nvidia-device-plugin-daemonset-7xk2q
  namespace: gpu-operator
  ownerReferences: [{{apiVersion: apps/v1, kind: DaemonSet, name: nvidia-device-plugin-daemonset, uid: d1}}]
spec: {{nodeName: {NODE_NAME}, containers: [{{name: plugin, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}}]}}
status: {{phase: Running, startTime: "2026-08-21T02:04:00Z"}}
"""


def pod(name: str, ns: str = "ml", annotations: str = "{}", labels: str = "{}", gpu: bool = False,
        started: str = "2026-08-21T06:00:00Z", owner: str = "Job") -> str:
    res = '{limits: {nvidia.com/gpu: "1"}}' if gpu else "{requests: {cpu: 500m}}"
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: {ns}
  annotations: {annotations}
  labels: {labels}
  ownerReferences: [{{apiVersion: batch/v1, kind: {owner}, name: {name.rsplit('-', 1)[0]}, uid: o1}}]
spec:
  nodeName: {NODE_NAME}
  containers: [{{name: main, image: ghcr.io/acme/worker:1.4, resources: {res}}}]
status: {{phase: Running, startTime: "{started}"}}
"""


def event(kind: str, name: str, reason: str, message: str, at: str = "2026-08-21T09:55:00Z") -> str:
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {name}.{reason.lower()}, namespace: default}}
involvedObject: {{kind: {kind}, name: {name}}}
reason: {reason}
type: Normal
source: {{component: karpenter}}
count: 4
firstTimestamp: "2026-08-21T09:10:00Z"
lastTimestamp: "{at}"
message: {json.dumps(message)}
"""


def finding(*docs: str) -> Finding:
    (result,) = run(snapshot(*docs), only=["consolidation-blocked"]).results
    assert result.status is CheckStatus.FAILED, result
    (f,) = result.findings
    return f


def test_pod_do_not_disrupt_true() -> None:
    f = finding(pool(), node(), claim(), DAEMON_POD,
                pod("data-prep-7x2k", annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE_NAME, "DisruptionBlocked",
                      'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ml/data-prep-7x2k)'))
    assert f.code == "GT501"
    assert f.severity is Severity.WARNING
    assert f.subject == ObjectRef("Node", NODE_NAME)
    assert f.title == (f"{NODE_NAME} (g5.12xlarge, 4 GPUs) idle 2h but not consolidated: "
                       "pod ml/data-prep-7x2k has karpenter.sh/do-not-disrupt=true")
    by_path = {e.path: e for e in f.evidence}
    assert by_path["status.allocatable"].value == {"nvidia.com/gpu": 4.0}
    assert "4 GPUs idle for 2h (~8.0 GPU-hours)" in by_path["status.allocatable"].note
    assert by_path["status.conditions[Consolidatable]"].value["status"] == "True"
    assert by_path["metadata.annotations[karpenter.sh/do-not-disrupt]"].value == "true"
    # The event names the same pod: one blocker, not two.
    assert "(+" not in f.title
    assert "kubectl annotate pod -n ml data-prep-7x2k karpenter.sh/do-not-disrupt- --overwrite" in \
        f.remediation.commands
    assert "~8.0 GPU-hours" in f.remediation.text
    assert ObjectRef("Pod", "data-prep-7x2k", "ml") in f.related
    assert ObjectRef("NodeClaim", "gpu-abc12") in f.related


def test_node_annotation_only_exact_true_blocks() -> None:
    f = finding(pool(), node('{karpenter.sh/do-not-disrupt: "true"}'), claim(), DAEMON_POD)
    assert 'node annotated karpenter.sh/do-not-disrupt="true"' in f.title
    assert f"kubectl annotate node {NODE_NAME} karpenter.sh/do-not-disrupt-" in f.remediation.commands
    # "yes" is not "true": Karpenter ignores it, so nothing explains why the node stays.
    f = finding(pool(), node('{karpenter.sh/do-not-disrupt: "yes"}'), claim(), DAEMON_POD)
    assert f.title.endswith("no blocker visible in the snapshot")
    assert any(c.startswith("kubectl logs -n kube-system -l app.kubernetes.io/name=karpenter") for c in
               f.remediation.commands)


def test_pdb_with_zero_disruptions_allowed() -> None:
    pdb = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: inference-cache-pdb, namespace: serving}
spec: {minAvailable: 1, selector: {matchLabels: {app: inference-cache}}}
status: {currentHealthy: 1, desiredHealthy: 1, expectedPods: 1, disruptionsAllowed: 0}
"""
    f = finding(pool(), node(), claim(), DAEMON_POD, pdb,
                pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet"),
                event("NodeClaim", "gpu-abc12", "DisruptionBlocked",
                      "Pdb prevents pod evictions (PodDisruptionBudget=[serving/inference-cache-pdb])"))
    assert "PDB serving/inference-cache-pdb allows 0 disruptions (selects pod serving/inference-cache-0)" in f.title
    assert "(+" not in f.title  # the event and the PDB object are the same blocker
    by_path = {e.path: e for e in f.evidence}
    assert by_path["status.disruptionsAllowed"].value == 0
    assert "currentHealthy=1, desiredHealthy=1" in by_path["status.disruptionsAllowed"].note
    assert ("kubectl patch pdb -n serving inference-cache-pdb --type merge -p "
            "'{\"spec\":{\"minAvailable\":null,\"maxUnavailable\":1}}'") in f.remediation.commands
    assert ObjectRef("PodDisruptionBudget", "inference-cache-pdb", "serving") in f.related


def test_pdb_known_only_from_the_event() -> None:
    # PDBs unreadable (or deleted since): the event's PodDisruptionBudget= suffix still names it.
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("inference-cache-0", ns="serving"),
                event("Node", NODE_NAME, "DisruptionBlocked",
                      "Pdb prevents pod evictions (PodDisruptionBudget=[serving/inference-cache-pdb])"))
    assert "PDB serving/inference-cache-pdb prevents pod evictions" in f.title


def test_budget_window_active_now() -> None:
    # 2026-08-21 is a Friday: the 09:00 mon-fri window with 8h runs until 17:00.
    budgets = ('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: '
               '[{nodes: "0", schedule: "0 9 * * mon-fri", duration: 8h}, {nodes: "1"}]}')
    f = finding(pool(budgets), node(), claim(), DAEMON_POD,
                event("NodePool", "gpu", "DisruptionBlocked",
                      "No allowed disruptions for disruption reason Empty due to blocking budget"))
    assert ("NodePool gpu budget #0 nodes=0 is active now (schedule '0 9 * * mon-fri' for 8h, "
            "until 2026-08-21T17:00:00Z)") in f.title
    assert "(+" not in f.title  # the NodePool's DisruptionBlocked event is evidence for the same budget
    by_path = {e.path: e for e in f.evidence}
    assert by_path["spec.disruption.budgets[0]"].value == {"nodes": "0", "schedule": "0 9 * * mon-fri",
                                                           "duration": "8h"}
    assert "event Normal/DisruptionBlocked" in by_path
    assert ("kubectl patch nodepool gpu --type json -p "
            "'[{\"op\":\"replace\",\"path\":\"/spec/disruption/budgets/0/nodes\",\"value\":\"1\"}]'"
            in f.remediation.commands)


def test_unscheduled_zero_percent_budget_and_malformed_cron() -> None:
    f = finding(pool('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: [{nodes: "0%"}]}'),
                node(), claim(), DAEMON_POD)
    assert "NodePool gpu budget #0 nodes=0% blocks Empty disruptions at all times" in f.title
    # Karpenter fails closed on a schedule it cannot parse: that budget blocks too.
    f = finding(pool('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: '
                     '[{nodes: "0", schedule: "0 25 * * *", duration: 1h}]}'), node(), claim(), DAEMON_POD)
    assert "has a schedule Karpenter cannot parse ('0 25 * * *' for '1h'): fails closed" in f.title


def test_budget_window_not_active_now_is_not_a_blocker() -> None:
    # 18:00 mon-fri for 8h: Thursday's window ended Friday 02:00; at 10:00 it does not apply.
    # Same for a "0%" budget limited to Drifted: the node is Empty, not Drifted.
    budgets = ('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: '
               '[{nodes: "0", schedule: "0 18 * * mon-fri", duration: 8h}, {nodes: "0%", reasons: [Drifted]}]}')
    f = finding(pool(budgets), node(), claim(), DAEMON_POD)
    assert f.title.endswith("no blocker visible in the snapshot")
    assert not any(e.path.startswith("spec.disruption.budgets") for e in f.evidence)


def test_consolidate_after_never() -> None:
    f = finding(pool("{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: Never}"), node(),
                claim(consolidatable=False), DAEMON_POD,
                event("Node", NODE_NAME, "Unconsolidatable", 'NodePool "gpu" has consolidation disabled'))
    assert "NodePool gpu has consolidateAfter: Never (consolidation disabled)" in f.title
    assert "(+" not in f.title  # the Unconsolidatable event says the same thing as the spec
    assert ("kubectl patch nodepool gpu --type merge -p '{\"spec\":{\"disruption\":{\"consolidateAfter\":\"30m\"}}}'"
            in f.remediation.commands)


def test_when_empty_with_cpu_pods_left() -> None:
    f = finding(pool("{consolidationPolicy: WhenEmpty, consolidateAfter: 5m}"), node(), claim(), DAEMON_POD,
                pod("log-shipper-5d8f", ns="observability", owner="ReplicaSet"),
                event("Node", NODE_NAME, "Unconsolidatable",
                      'NodePool "gpu" has consolidation policy WhenEmpty, but node is not empty'))
    assert ("NodePool gpu consolidates only WhenEmpty but 1 non-DaemonSet pod(s) remain "
            "(observability/log-shipper-5d8f)") in f.title
    assert {e.path: e for e in f.evidence}["non-DaemonSet pods"].value == ["observability/log-shipper-5d8f"]
    assert "kubectl delete pod -n observability log-shipper-5d8f" in f.remediation.commands


def test_do_not_disrupt_duration_elapsed_vs_running() -> None:
    # Both pods started 06:00. "2h" elapsed at 08:00 and no longer blocks; "6h" blocks until 12:00.
    elapsed = pod("etl-a-1", annotations='{karpenter.sh/do-not-disrupt: "2h"}')
    running = pod("etl-b-1", annotations='{karpenter.sh/do-not-disrupt: "6h"}')
    f = finding(pool(), node(), claim(), DAEMON_POD, elapsed, running)
    assert "pod ml/etl-b-1 has karpenter.sh/do-not-disrupt=6h" in f.title
    assert "(+" not in f.title
    notes = {e.subject: e.note for e in f.evidence if e.path == "metadata.annotations[karpenter.sh/do-not-disrupt]"}
    assert notes[ObjectRef("Pod", "etl-a-1", "ml")] == (
        "2h from pod start: elapsed at 2026-08-21T08:00:00Z (2h ago): no longer blocks")
    # Durations count since Karpenter v1.12 (core pkg/utils/pod/scheduling.go IsDoNotDisruptActive, #2874);
    # before, only "true" blocked, so the note says which versions this holds for.
    assert notes[ObjectRef("Pod", "etl-b-1", "ml")] == (
        "6h from pod start: blocks until 2026-08-21T12:00:00Z (in 2h) on Karpenter v1.12+ "
        '(earlier versions honour only "true")')
    # Only the elapsed one: the node has no blocker left.
    f = finding(pool(), node(), claim(), DAEMON_POD, elapsed)
    assert f.title.endswith("no blocker visible in the snapshot")


def test_unconsolidatable_cheaper_node_event() -> None:
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("api-gw-7d9f", ns="web", owner="ReplicaSet"),
                event("NodeClaim", "gpu-abc12", "Unconsolidatable", "Can't replace with a cheaper node"))
    assert f.title.endswith("not consolidated: Can't replace with a cheaper node")
    assert "CPU pods on a GPU node" in f.remediation.text


def test_passes_when_gpu_pod_runs_or_consolidate_after_not_reached() -> None:
    (result,) = run(snapshot(pool(), node(), claim(), DAEMON_POD, pod("trainer-0", gpu=True)),
                    only=["consolidation-blocked"]).results
    assert result.status is CheckStatus.PASSED and result.examined == 1
    # Last pod left 10 minutes ago, consolidateAfter is 30m: Karpenter is still waiting, as it should.
    (result,) = run(snapshot(pool(), node(), claim(consolidatable=False, last_pod_event="2026-08-21T09:50:00Z"),
                             DAEMON_POD), only=["consolidation-blocked"]).results
    assert result.status is CheckStatus.PASSED


def test_skipped_without_pods() -> None:
    (result,) = run(snapshot(pool(), node(), sources={"pods": SourceState.FORBIDDEN}),
                    only=["consolidation-blocked"]).results
    assert result.status is CheckStatus.SKIPPED
    assert "pods: forbidden" in result.reason


def test_older_karpenter_event_texts() -> None:
    # v0.3x wording and kubectl's aggregation prefix: 'PDB "ns/name" prevents pod evictions'.
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("inference-cache-0", ns="serving"),
                event("Node", NODE_NAME, "DisruptionBlocked",
                      '(combined from similar events): PDB "serving/inference-cache-pdb" prevents pod evictions'))
    assert "PDB serving/inference-cache-pdb prevents pod evictions" in f.title
    for text in ('Cannot disrupt Node: pdb "serving/inference-cache-pdb" prevents pod evictions',
                 "pdb serving/inference-cache-pdb prevents pod evictions"):
        f = finding(pool(), node(), claim(), DAEMON_POD, pod("inference-cache-0", ns="serving"),
                    event("Node", NODE_NAME, "DisruptionBlocked", text))
        assert "PDB serving/inference-cache-pdb prevents pod evictions" in f.title, text
        assert ObjectRef("PodDisruptionBudget", "inference-cache-pdb", "serving") in f.related
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("api-gw-7d9f", ns="web", owner="ReplicaSet"),
                event("NodeClaim", "gpu-abc12", "Unconsolidatable", "Can't replace with a lower-priced node"))
    assert "CPU pods on a GPU node" in f.remediation.text
    # A transient state in the older wording is not a blocker to act on.
    f = finding(pool(), node(), claim(), DAEMON_POD,
                event("Node", NODE_NAME, "DisruptionBlocked", "Node in the process of deletion"))
    assert f.title.endswith("no blocker visible in the snapshot"), f.title
    f = finding(pool(), node(), claim(), DAEMON_POD,
                event("Node", NODE_NAME, "DisruptionBlocked",
                      'Pod "ml/gone-pod" has "karpenter.sh/do-not-disrupt" annotation'))
    assert "pod ml/gone-pod has karpenter.sh/do-not-disrupt" in f.title


# Under-used GPU nodes: the node has 4 GPUs; a 1-GPU notebook keeps it (3 GPUs unrequested).
NOTEBOOK = pod("nb-alice-0", gpu=True, owner="StatefulSet", annotations='{karpenter.sh/do-not-disrupt: "true"}')


def test_underused_node_blocked_by_a_do_not_disrupt_notebook() -> None:
    f = finding(pool(), node(), claim(), DAEMON_POD, NOTEBOOK,
                event("Node", NODE_NAME, "DisruptionBlocked",
                      'Pod has "karpenter.sh/do-not-disrupt" annotation (Pod=ml/nb-alice-0)'))
    assert f.severity is Severity.WARNING
    assert f.title == (f"{NODE_NAME} (g5.12xlarge, 4 GPUs) with 1 of 4 GPUs requested for 2h but not consolidated: "
                       "pod ml/nb-alice-0 has karpenter.sh/do-not-disrupt=true")
    by_path = {e.path: e for e in f.evidence}
    note = by_path["status.allocatable"].note
    assert "3 GPUs unrequested for 2h (~6.0 GPU-hours)" in note
    assert "1 GPU pod requests 1 of 4 GPUs (ml/nb-alice-0)" in note
    assert by_path["status.conditions[Consolidatable]"].value["status"] == "True"
    assert by_path["spec.disruption"].value["consolidationPolicy"] == "WhenEmptyOrUnderutilized"
    assert "kubectl annotate pod -n ml nb-alice-0 karpenter.sh/do-not-disrupt- --overwrite" in f.remediation.commands
    assert "its GPU pods are evicted and rescheduled" in f.remediation.text
    assert ObjectRef("Pod", "nb-alice-0", "ml") in f.related


def test_underused_node_blocked_by_an_underutilized_budget_window() -> None:
    budgets = ('{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: 30m, budgets: '
               '[{nodes: "0", reasons: [Underutilized], schedule: "0 9 * * mon-fri", duration: 10h}]}')
    f = finding(pool(budgets), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"),
                event("NodePool", "gpu", "DisruptionBlocked",
                      "No allowed disruptions for disruption reason Underutilized due to blocking budget"))
    assert "NodePool gpu budget #0 nodes=0 is active now (schedule '0 9 * * mon-fri' for 10h" in f.title
    assert "applies to reason Underutilized" in {e.path: e for e in f.evidence}["spec.disruption.budgets[0]"].note
    # A budget for Empty only does not hold an under-used node: nothing blocks, so nothing is reported.
    budgets = budgets.replace("[Underutilized]", "[Empty]")
    (r,) = run(snapshot(pool(budgets), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet")),
               only=["consolidation-blocked"]).results
    assert r.status is CheckStatus.PASSED


def test_underused_node_with_cheaper_node_event_gets_a_gpu_hint() -> None:
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"),
                event("NodeClaim", "gpu-abc12", "Unconsolidatable", "Can't replace with a cheaper node"))
    assert f.title.endswith("not consolidated: Can't replace with a cheaper node")
    assert "allow smaller GPU sizes" in f.remediation.text


def test_underused_node_not_reported_when_it_should_not_be() -> None:
    def passed(*docs: str) -> bool:
        (r,) = run(snapshot(*docs), only=["consolidation-blocked"]).results
        return r.status is CheckStatus.PASSED

    # consolidateAfter (30m) has not elapsed since the notebook started 10 minutes ago: Karpenter is waiting.
    assert passed(pool(), node(), claim(consolidatable=False, last_pod_event="2026-08-21T09:50:00Z"), DAEMON_POD,
                  NOTEBOOK)
    # Three of four GPUs in use: not under-used.
    assert passed(pool(), node(), claim(), DAEMON_POD, NOTEBOOK,
                  *(pod(f"trainer-{i}", gpu=True) for i in range(2)))
    # A WhenEmpty pool never consolidates an occupied node: that is its design, not a blocker.
    assert passed(pool("{consolidationPolicy: WhenEmpty, consolidateAfter: 30m}"), node(), claim(), DAEMON_POD,
                  NOTEBOOK)
    # Under-used, but nothing blocks: Karpenter may just have no cheaper node for the notebook.
    assert passed(pool(), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"))


def test_underused_node_in_a_pool_with_consolidation_disabled() -> None:
    f = finding(pool("{consolidationPolicy: WhenEmptyOrUnderutilized, consolidateAfter: Never}"), node(), claim(),
                DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"),
                event("Node", NODE_NAME, "Unconsolidatable", 'NodePool "gpu" has consolidation disabled'))
    assert f.title.endswith("not consolidated: NodePool gpu has consolidateAfter: Never (consolidation disabled)")
    assert ("kubectl patch nodepool gpu --type merge -p '{\"spec\":{\"disruption\":{\"consolidateAfter\":\"30m\"}}}'"
            in f.remediation.commands)


def test_spot_to_spot_needs_fifteen_cheaper_types_not_the_feature_gate() -> None:
    # core disruption/consolidation.go: with the gate on, a spot node is replaced only from at least 15 cheaper
    # spot types (MinInstanceTypesForSpotToSpotConsolidation); a GPU pool rarely has that many.
    msg = ("SpotToSpotConsolidation requires 15 cheaper instance type options than the current candidate to "
           "consolidate, got 2")
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"),
                event("NodeClaim", "gpu-abc12", "Unconsolidatable", msg))
    assert f.title.endswith(f"not consolidated: {msg}")
    assert "feature gate" not in f.remediation.text
    assert "at least 15 cheaper spot instance types" in f.remediation.text
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("nb-alice-0", gpu=True, owner="StatefulSet"),
                event("NodeClaim", "gpu-abc12", "Unconsolidatable",
                      "SpotToSpotConsolidation is disabled, can't replace a spot node with a spot node"))
    assert "Enable the SpotToSpotConsolidation feature gate" in f.remediation.text


def test_a_schedule_karpenter_cannot_parse_blocks_every_reason_whatever_its_nodes() -> None:
    # core pkg/apis/v1/nodepool.go: Budget.GetAllowedDisruptions returns 0 with the cron error, whatever `nodes`
    # says, and GetAllowedDisruptionsByReason collects the error of every budget (its reasons aside), so
    # MustGetAllowedDisruptions allows 0 for each reason.
    budgets = ('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: '
               '[{nodes: "10%", reasons: [Drifted], schedule: "0 25 * * *", duration: 1h}]}')
    f = finding(pool(budgets), node(), claim(), DAEMON_POD)
    assert f.title.endswith("budget #0 nodes=10% has a schedule Karpenter cannot parse ('0 25 * * *' for '1h'): "
                            "fails closed")
    note = {e.path: e for e in f.evidence}["spec.disruption.budgets[0]"].note
    assert "every disruption reason" in note
    assert "kubectl edit nodepool gpu" in f.remediation.commands
    assert not any("budgets/0/nodes" in c for c in f.remediation.commands)  # "1" would fail closed all the same


def test_budget_event_without_a_zero_budget_in_the_spec() -> None:
    # Since v1.1 core disruption/helpers.go publishes the NodePool event only when a budget itself allows 0
    # (before nodes being deleted or NotReady are subtracted); v1.0 published it after the subtraction.
    f = finding(pool('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: [{nodes: "10%"}]}'),
                node(), claim(), DAEMON_POD,
                event("NodePool", "gpu", "DisruptionBlocked",
                      "No allowed disruptions for disruption reason Empty due to blocking budget"))
    assert "NodePool gpu: No allowed disruptions for disruption reason Empty due to blocking budget" in f.title
    text = f.remediation.text
    assert "no budget in the spec allows 0 now" in text and "Karpenter v1.0" in text
    assert "kubectl get nodepool gpu -o jsonpath='{.spec.disruption.budgets}'" in f.remediation.commands


def _pdb(name: str, spec: str, allowed: int, ns: str = "serving") -> str:
    return f"""
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {{name: {name}, namespace: {ns}}}
spec: {spec}
status: {{currentHealthy: 2, desiredHealthy: 2, expectedPods: 2, disruptionsAllowed: {allowed}}}
"""


def test_pdbs_as_karpenter_reads_them() -> None:
    # core pkg/utils/pdb/pdb.go isEvictable + metav1.LabelSelectorAsSelector: in policy/v1 an empty selector
    # selects every pod of its namespace, an absent one none; a pod matched by two PDBs cannot be evicted at all.
    cache = pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet")
    f = finding(pool(), node(), claim(), DAEMON_POD, cache, _pdb("whole-namespace", "{minAvailable: 2, selector: {}}", 0))
    assert "PDB serving/whole-namespace allows 0 disruptions (selects pod serving/inference-cache-0)" in f.title
    f = finding(pool(), node(), claim(), DAEMON_POD, cache, _pdb("no-selector", "{minAvailable: 2}", 0))
    assert f.title.endswith("no blocker visible in the snapshot")
    f = finding(pool(), node(), claim(), DAEMON_POD, cache,
                _pdb("cache-a", "{maxUnavailable: 1, selector: {matchLabels: {app: inference-cache}}}", 1),
                _pdb("cache-b", "{maxUnavailable: 1, selector: {}}", 1))
    assert ("pod serving/inference-cache-0 is selected by 2 PDBs (serving/cache-a, serving/cache-b): "
            "eviction refuses that") in f.title
    assert "allows 0" not in f.title


def test_pdbs_do_not_hold_pods_karpenter_never_evicts() -> None:
    # IsEvictable: a pod that tolerates karpenter.sh/disrupted:NoSchedule (here a blanket toleration) or has
    # do-not-disrupt is never evicted, so its PDB is not consulted; nor is an unready pod under
    # unhealthyPodEvictionPolicy: AlwaysAllow.
    pdb = _pdb("cache-pdb", "{minAvailable: 2, selector: {matchLabels: {app: inference-cache}}}", 0)
    tolerant = pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet").replace(
        "spec:\n  nodeName:", "spec:\n  tolerations: [{operator: Exists}]\n  nodeName:")
    f = finding(pool(), node(), claim(), DAEMON_POD, tolerant, pdb)
    assert f.title.endswith("no blocker visible in the snapshot")
    annotated = pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet",
                    annotations='{karpenter.sh/do-not-disrupt: "true"}')
    f = finding(pool(), node(), claim(), DAEMON_POD, annotated, pdb)
    assert f.title.endswith("pod serving/inference-cache-0 has karpenter.sh/do-not-disrupt=true")  # not "(+1 more)"
    unready = pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet").replace(
        'status: {phase: Running,', 'status: {conditions: [{type: Ready, status: "False"}], phase: Running,')
    always = _pdb("cache-pdb", "{minAvailable: 2, unhealthyPodEvictionPolicy: AlwaysAllow, "
                               "selector: {matchLabels: {app: inference-cache}}}", 0)
    f = finding(pool(), node(), claim(), DAEMON_POD, unready, always)
    assert f.title.endswith("no blocker visible in the snapshot")
    assert "PDB serving/cache-pdb allows 0" in finding(pool(), node(), claim(), DAEMON_POD, unready, pdb).title


def test_multiple_pdbs_event_does_not_claim_zero_disruptions() -> None:
    f = finding(pool(), node(), claim(), DAEMON_POD,
                pod("inference-cache-0", ns="serving", labels="{app: inference-cache}", owner="StatefulSet"),
                _pdb("cache-a", "{maxUnavailable: 1, selector: {matchLabels: {app: other}}}", 1),
                event("Node", NODE_NAME, "DisruptionBlocked", "Eviction does not support multiple PDBs "
                      "(PodDisruptionBudget(s)=[serving/cache-a serving/cache-b])"))
    assert "allows 0" not in f.title
    assert "more than one PDB" in f.title


def test_karpenter_v1_0_transient_texts_are_not_blockers() -> None:
    # v1.0.x core pkg/controllers/state/statenode.go + disruption/events/events.go: "Cannot disrupt Node: " + error.
    for text in ("Cannot disrupt Node: state node is marked for deletion",
                 "Cannot disrupt NodeClaim: state node is nominated for a pending pod",
                 "Cannot disrupt Node: state node isn't initialized"):
        f = finding(pool(), node(), claim(), DAEMON_POD, event("Node", NODE_NAME, "DisruptionBlocked", text))
        assert f.title.endswith("no blocker visible in the snapshot"), text
    f = finding(pool(), node(), claim(), DAEMON_POD, pod("data-prep-7x2k", annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE_NAME, "DisruptionBlocked",
                      'Cannot disrupt Node: pod "ml/data-prep-7x2k" has "karpenter.sh/do-not-disrupt" annotation'))
    assert f.title.endswith("pod ml/data-prep-7x2k has karpenter.sh/do-not-disrupt=true")


def test_deleting_the_nodeclaim_does_not_get_past_a_do_not_disrupt_pod() -> None:
    # core pkg/utils/pod/scheduling.go: IsEvictable is false for an active do-not-disrupt pod but IsDrainable is
    # true, so a manual NodeClaim deletion taints the node and waits for that pod to end.
    f = finding(pool(), node(), claim(), DAEMON_POD, NOTEBOOK)
    assert "kubectl delete nodeclaim gpu-abc12" in f.remediation.commands
    assert "waits for pods annotated karpenter.sh/do-not-disrupt" in f.remediation.text


def test_a_budget_window_opening_at_the_snapshot_time_is_in_force() -> None:
    # core Budget.IsActive: !Next(now - duration).After(now): a hit exactly at NOW (10:00) opens the window.
    budgets = ('{consolidationPolicy: WhenEmpty, consolidateAfter: 10m, budgets: '
               '[{nodes: "0", schedule: "0 10 * * *", duration: 2h}]}')
    f = finding(pool(budgets), node(), claim(), DAEMON_POD)
    assert "budget #0 nodes=0 is active now (schedule '0 10 * * *' for 2h, until 2026-08-21T12:00:00Z)" in f.title


def _pool_node(name: str, ready: str = "True") -> str:
    """Another initialized node of pool gpu, with its own instance and NodeClaim, running a 4-GPU job."""
    instance = "i-0" + name.split("-")[-1].split(".")[0].rjust(16, "0")
    own = (node().replace(NODE_NAME, name).replace("i-0123456789abcdef0", instance)
           .replace('[{type: Ready, status: "True", reason: KubeletReady}]', f'[{{type: Ready, status: "{ready}"}}]'))
    nc = (claim().replace(NODE_NAME, name).replace("i-0123456789abcdef0", instance)
          .replace("name: gpu-abc12", f"name: gpu-{instance[-5:]}"))
    job = pod(f"train-{instance[-5:]}-0", gpu=True).replace(NODE_NAME, name).replace('nvidia.com/gpu: "1"',
                                                                                    'nvidia.com/gpu: "4"')
    return "\n---\n".join((own, nc, job))


def test_a_notready_node_uses_up_a_small_pools_percentage_budget() -> None:
    # core disruption/helpers.go BuildDisruptionBudgetMapping: allowed = budget (10% of 3 initialized nodes, rounded
    # up: 1) minus nodes NotReady or being deleted (1) = 0. Since v1.1 no event says so (it fires only when the
    # budget itself is 0).
    def ours(*docs: str) -> Finding:
        (result,) = run(snapshot(*docs), only=["consolidation-blocked"]).results
        return next(f for f in result.findings if f.subject == ObjectRef("Node", NODE_NAME))

    others = (_pool_node("ip-10-0-40-8.ec2.internal"), _pool_node("ip-10-0-40-9.ec2.internal", ready="Unknown"))
    f = ours(pool(), node(), claim(), DAEMON_POD, *others)
    assert ("NodePool gpu allows 1 Empty disruption(s) now (budget #0 nodes=10% of 3 nodes, rounded up) and 1 "
            "node(s) are NotReady or being deleted (ip-10-0-40-9.ec2.internal): none left") in f.title
    assert "kubectl get nodes -l karpenter.sh/nodepool=gpu" in f.remediation.commands
    # With both other nodes Ready, the budget allows one: nothing blocks.
    f = ours(pool(), node(), claim(), DAEMON_POD, others[0], _pool_node("ip-10-0-40-9.ec2.internal"))
    assert f.title.endswith("no blocker visible in the snapshot")


def test_the_taint_fix_warns_that_it_drifts_the_whole_pool() -> None:
    # core pkg/apis/v1/nodepool.go Hash(): spec.template (taints included; requirements not) is hashed, and
    # nodeclaim/disruption/drift.go areStaticFieldsDrifted marks every NodeClaim with the old hash NodePoolDrifted.
    untainted = pool("{consolidationPolicy: WhenEmpty, consolidateAfter: 5m}").replace(
        '      taints: [{key: nvidia.com/gpu, value: "true", effect: NoSchedule}]\n', "")
    f = finding(untainted, node(), claim(), DAEMON_POD, pod("log-shipper-5d8f", ns="observability", owner="ReplicaSet"))
    assert any('"taints":[{"key":"nvidia.com/gpu"' in c for c in f.remediation.commands)
    assert "drifts every node of the pool" in f.remediation.text


def test_a_tolerant_do_not_disrupt_pod_is_not_waited_for_by_a_nodeclaim_deletion() -> None:
    # IsDrainable is false for a pod tolerating karpenter.sh/disrupted:NoSchedule: the drain does not wait for it.
    tolerant = NOTEBOOK.replace("spec:\n  nodeName:", "spec:\n  tolerations: [{operator: Exists}]\n  nodeName:")
    f = finding(pool(), node(), claim(), DAEMON_POD, tolerant)
    assert "pod ml/nb-alice-0 has karpenter.sh/do-not-disrupt=true" in f.title  # it still blocks consolidation
    assert "the drain waits for" not in f.remediation.text
    assert "ml/nb-alice-0 tolerates karpenter.sh/disrupted:NoSchedule" in f.remediation.text
