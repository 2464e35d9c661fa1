"""gpu-workload-disruption: GPU jobs on nodes Karpenter drifts, expires, force-deletes or loses to spot; and when not.

Times are relative to NOW (2026-08-21T10:00:00Z, a Friday). Event and condition texts are Karpenter v1's
(core disruption/events/events.go, node/termination/terminator/events/events.go; aws interruption/events).
"""

from __future__ import annotations

import json

from diagnostics import CheckStatus, ObjectRef, Severity, run
from diagnostics.model import CheckResult, Finding
from tests.builders import snapshot

NODE = "ip-10-0-61-20.ec2.internal"
CLAIM = "gpu-training-x4k9p"


def pool(expire: str = "720h", budgets: str = '[{nodes: "10%"}]', tgp: str = "") -> str:
    tgp_line = f"\n      terminationGracePeriod: {tgp}" if tgp else ""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {{name: gpu-training}}
spec:
  disruption: {{consolidationPolicy: WhenEmpty, consolidateAfter: 1h, budgets: {budgets}}}
  template:
    spec:
      expireAfter: {expire}{tgp_line}
      nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
      requirements:
      - {{key: karpenter.sh/capacity-type, operator: In, values: [on-demand]}}
      - {{key: karpenter.k8s.aws/instance-family, operator: In, values: [p4d]}}
      taints: [{{key: nvidia.com/gpu, value: "true", effect: NoSchedule}}]
"""


NODECLASS = """
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  amiSelectorTerms: [{alias: al2023@latest}]
  role: KarpenterNodeRole-ml-prod
status:
  amis:
  - {id: ami-0b1c2d3e4f5a60718, name: amazon-eks-node-al2023-x86_64-nvidia-1.34-v20260818}
"""


def node(taints: str = "[{key: nvidia.com/gpu, value: \"true\", effect: NoSchedule}]", deleting: str = "",
         capacity: str = "on-demand") -> str:
    dt = f'\n  deletionTimestamp: "{deleting}"' if deleting else ""
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {NODE}
  creationTimestamp: "2026-08-14T08:02:00Z"{dt}
  labels:
    karpenter.sh/nodepool: gpu-training
    karpenter.sh/capacity-type: {capacity}
    node.kubernetes.io/instance-type: p4d.24xlarge
    karpenter.k8s.aws/instance-gpu-count: "8"
spec:
  providerID: aws:///us-east-1a/i-0aa11bb22cc33dd44
  taints: {taints}
status:
  conditions: [{{type: Ready, status: "True", reason: KubeletReady}}]
  capacity: {{cpu: "96", memory: 1152Gi, nvidia.com/gpu: "8", pods: "737"}}
  allocatable: {{cpu: 95690m, memory: 1120Gi, nvidia.com/gpu: "8", pods: "737"}}
"""


def claim(drifted: str = "", reason: str = "", created: str = "2026-08-14T08:00:00Z", expire: str = "720h",
          tgp: str = "", deleting: str = "", annotations: str = "{}") -> str:
    conds = ""
    if drifted:
        conds += (f'\n  - {{type: Drifted, status: "True", reason: {drifted}, message: {drifted}, '
                  'lastTransitionTime: "2026-08-21T09:20:00Z"}')
    if reason:
        conds += (f'\n  - {{type: DisruptionReason, status: "True", reason: {reason}, '
                  'lastTransitionTime: "2026-08-21T09:50:00Z"}')
    dt = f'\n  deletionTimestamp: "{deleting}"' if deleting else ""
    tgp_line = f"\n  terminationGracePeriod: {tgp}" if tgp else ""
    return f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: {CLAIM}
  creationTimestamp: "{created}"{dt}
  annotations: {annotations}
  labels: {{karpenter.sh/nodepool: gpu-training, node.kubernetes.io/instance-type: p4d.24xlarge}}
spec:
  expireAfter: {expire}{tgp_line}
  nodeClassRef: {{group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}}
status:
  nodeName: {NODE}
  providerID: aws:///us-east-1a/i-0aa11bb22cc33dd44
  imageID: ami-0f3c5a7b9d1e2f401
  conditions:
  - {{type: Launched, status: "True", reason: Launched}}
  - {{type: Registered, status: "True", reason: Registered}}
  - {{type: Initialized, status: "True", reason: Initialized, lastTransitionTime: "{created}"}}{conds}
"""


def job(name: str = "pretrain-llama-70b-0-7xk2q", annotations: str = "{}", started: str = "2026-08-20T03:00:00Z",
        owner: str = "Job", gpus: int = 8) -> str:
    return f"""
apiVersion: v1
kind: Pod
metadata:
  name: {name}
  namespace: ml
  annotations: {annotations}
  ownerReferences: [{{apiVersion: batch/v1, kind: {owner}, name: pretrain-llama-70b, uid: j1}}]
spec:
  nodeName: {NODE}
  containers: [{{name: pytorch, image: ghcr.io/acme/pretrain:2026.08, resources: {{limits: {{nvidia.com/gpu: "{gpus}"}}}}}}]
status: {{phase: Running, startTime: "{started}"}}
"""


def event(kind: str, name: str, reason: str, message: str, type_: str = "Normal",
          at: str = "2026-08-21T09:55:00Z") -> str:
    return f"""
apiVersion: v1
kind: Event
metadata: {{name: {name}.{reason.lower()}, namespace: default}}
involvedObject: {{kind: {kind}, name: {name}}}
reason: {reason}
type: {type_}
source: {{component: karpenter}}
count: 1
firstTimestamp: "{at}"
lastTimestamp: "{at}"
message: {json.dumps(message)}
"""


def result(*docs: str) -> CheckResult:
    (r,) = run(snapshot(*docs), only=["gpu-workload-disruption"]).results
    return r


def finding(*docs: str) -> Finding:
    r = result(*docs)
    assert r.status is CheckStatus.FAILED, r
    (f,) = r.findings
    return f


DRIFT_DRAIN = (event("Node", NODE, "DisruptionTerminating", "Disrupting Node: Drifted"),
               event("NodeClaim", CLAIM, "DisruptionTerminating", "Disrupting NodeClaim: Drifted"))
DISRUPTED_TAINT = ('[{key: nvidia.com/gpu, value: "true", effect: NoSchedule}, '
                   '{key: karpenter.sh/disrupted, effect: NoSchedule}]')


def test_drift_drain_evicts_an_unprotected_training_job() -> None:
    f = finding(pool(), NODECLASS, node(taints=DISRUPTED_TAINT), claim(drifted="AMIDrift", reason="Drifted"),
                job(), *DRIFT_DRAIN)
    assert (f.code, f.check, f.severity) == ("GT503", "gpu-workload-disruption", Severity.ERROR)
    assert f.subject == ObjectRef("Node", NODE)
    assert f.title == ("GPU job ml/pretrain-llama-70b-0-7xk2q (8 GPU, running 1d7h) will be evicted now: "
                       "Karpenter is draining its node for drift (AMIDrift)")
    paths = {e.path: e for e in f.evidence}
    assert paths["status.conditions[Drifted]"].value["reason"] == "AMIDrift"
    assert paths["event Normal/DisruptionTerminating"].value == "Disrupting NodeClaim: Drifted"
    assert paths["spec.taints"].value == "karpenter.sh/disrupted:NoSchedule"
    assert "loses 1d7h of running time (~248 GPU-hours)" in paths["status.startTime"].note
    assert paths["metadata.annotations[karpenter.sh/do-not-disrupt]"].kind.value == "absence"
    cmds = f.remediation.commands
    assert "kubectl annotate pod -n ml pretrain-llama-70b-0-7xk2q karpenter.sh/do-not-disrupt=true --overwrite" in cmds
    budget = next(c for c in cmds if "budgets/-" in c)
    assert '"reasons":["Drifted"]' in budget and '"schedule":"0 0 * * 0-5"' in budget
    # AMIDrift from an @latest alias: pin the release the class resolves to now.
    assert ("kubectl patch ec2nodeclass gpu --type merge -p "
            '\'{"spec":{"amiSelectorTerms":[{"alias":"al2023@v20260818"}]}}\'') in cmds
    assert "~248 GPU-hours" in f.remediation.text
    assert ObjectRef("Pod", "pretrain-llama-70b-0-7xk2q", "ml") in f.related


def test_drifted_but_not_yet_draining_is_a_warning() -> None:
    f = finding(pool(), node(), claim(drifted="NodePoolDrifted"), job())
    assert f.severity is Severity.WARNING
    assert "will be evicted when the drain starts" in f.title
    assert "its node has drifted (NodePoolDrifted): Karpenter replaces it as soon as a budget allows" in f.title
    assert not any("ec2nodeclass" in c for c in f.remediation.commands)  # not an AMI drift


def test_a_budget_blocking_drifted_during_working_hours_holds_drift_off() -> None:
    # 09:00 UTC Mon-Fri for 10h: active at NOW (Friday 10:00). Karpenter starts no drift now: no warning.
    budgets = '[{nodes: "10%"}, {nodes: "0", reasons: [Drifted], schedule: "0 9 * * mon-fri", duration: 10h}]'
    r = result(pool(budgets=budgets), node(), claim(drifted="AMIDrift"), job())
    assert r.status is CheckStatus.PASSED and r.examined == 1
    # Outside the window (a budget for Saturdays only), the same node is reported.
    budgets = '[{nodes: "0", reasons: [Drifted], schedule: "0 0 * * sat", duration: 24h}]'
    assert finding(pool(budgets=budgets), node(), claim(drifted="AMIDrift"), job()).severity is Severity.WARNING


def test_do_not_disrupt_protects_from_drift_unless_termination_grace_period() -> None:
    protected = job(annotations='{karpenter.sh/do-not-disrupt: "true"}')
    r = result(pool(), node(taints=DISRUPTED_TAINT), claim(drifted="AMIDrift", reason="Drifted"), protected,
               *DRIFT_DRAIN)
    assert r.status is CheckStatus.PASSED
    # With terminationGracePeriod drift ignores the annotation: pods are deleted at the deadline.
    f = finding(pool(), node(taints=DISRUPTED_TAINT),
                claim(drifted="AMIDrift", reason="Drifted", tgp="2h", deleting="2026-08-21T09:30:00Z"), protected,
                *DRIFT_DRAIN)
    assert f.severity is Severity.ERROR
    assert "will be deleted at 2026-08-21T11:30:00Z (in 1h30m) although karpenter.sh/do-not-disrupt=true" in f.title
    assert "terminationGracePeriod 2h, so drift ignores karpenter.sh/do-not-disrupt" in f.remediation.text


def test_expired_node_with_termination_grace_period_kills_a_do_not_disrupt_job() -> None:
    f = finding(pool(expire="336h", tgp="4h"), node(deleting="2026-08-21T08:00:05Z"),
                claim(created="2026-08-07T08:00:00Z", expire="336h", tgp="4h", deleting="2026-08-21T08:00:05Z"),
                job(annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE, "TerminationGracePeriodExpiring",
                      "All pods will be deleted by 2026-08-21T12:00:05Z", type_="Warning"))
    assert f.severity is Severity.ERROR
    assert ("will be deleted at 2026-08-21T12:00:05Z (in 2h) although karpenter.sh/do-not-disrupt=true: "
            "its node's NodeClaim expired (expireAfter 336h) and is being deleted") in f.title
    paths = {e.path: e for e in f.evidence}
    assert paths["event Warning/TerminationGracePeriodExpiring"].value == \
        "All pods will be deleted by 2026-08-21T12:00:05Z"
    assert "expires 2026-08-21T08:00:00Z (2h ago)" in paths["spec.expireAfter"].note
    assert paths["spec.terminationGracePeriod"].value == "4h"
    # Running 31h now plus the 2h left: what is lost at the deadline.
    assert "loses 1d9h of running time" in paths["status.startTime"].note
    assert ("kubectl patch nodepool gpu-training --type merge -p "
            '\'{"spec":{"template":{"spec":{"expireAfter":"Never"}}}}\'') in f.remediation.commands
    assert "expireAfter: Never" in f.remediation.text and "cannot be moved" in f.remediation.text


def test_expiry_within_a_day_is_a_warning_and_never_is_not() -> None:
    # Created 29.5 days ago with the default 720h: expires in 12h; the job has no do-not-disrupt.
    soon = claim(created="2026-07-22T22:00:00Z")
    f = finding(pool(), node(), soon, job())
    assert f.severity is Severity.WARNING
    assert "its node's NodeClaim expires in 12h (expireAfter 720h)" in f.title
    # A training pool with expireAfter: Never: an old node and a long job are fine.
    r = result(pool(expire="Never"), node(), claim(created="2026-05-01T00:00:00Z", expire="Never"), job())
    assert r.status is CheckStatus.PASSED and r.examined == 1


def test_spot_interruption_notice() -> None:
    f = finding(pool(), node(capacity="spot"), claim(),
                job(annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE, "SpotInterrupted", "Spot interruption warning was triggered", type_="Warning",
                      at="2026-08-21T09:59:30Z"))
    assert f.severity is Severity.ERROR
    assert "will be deleted at 2026-08-21T10:01:30Z" in f.title and "SpotInterrupted" in f.title
    assert "ignores karpenter.sh/do-not-disrupt" in f.remediation.text
    assert any('"values":["on-demand"]' in c for c in f.remediation.commands)
    # core nodeclaim/disruption/drift.go areRequirementsDrifted: the pool's other spot nodes drift too.
    assert "drifts the pool's spot nodes" in f.remediation.text
    # An hour-old notice is about a node that is gone or was spared.
    old = event("Node", NODE, "SpotInterrupted", "Spot interruption warning was triggered", at="2026-08-21T09:00:00Z")
    assert result(pool(), node(capacity="spot"), claim(), job(), old).status is CheckStatus.PASSED


def test_stateless_replicas_and_healthy_nodes_are_not_reported() -> None:
    replica = job(name="vllm-7d9f8c-x2k4q", owner="ReplicaSet")
    assert result(pool(), node(taints=DISRUPTED_TAINT), claim(drifted="AMIDrift", reason="Drifted"), replica,
                  *DRIFT_DRAIN).status is CheckStatus.PASSED
    r = result(pool(), node(), claim(), job())
    assert r.status is CheckStatus.PASSED and r.examined == 1


def test_skipped_without_nodeclaims() -> None:
    from diagnostics.snapshot import SourceState

    (r,) = run(snapshot(pool(), node(), job(), sources={"nodeclaims": SourceState.FORBIDDEN}),
               only=["gpu-workload-disruption"]).results
    assert r.status is CheckStatus.SKIPPED and "nodeclaims" in r.reason


def test_expiry_due_with_termination_grace_period_reaches_do_not_disrupt_jobs() -> None:
    # Expires in 12h; terminationGracePeriod 4h: the do-not-disrupt job is deleted at expiry + 4h.
    f = finding(pool(tgp="4h"), node(), claim(created="2026-07-22T22:00:00Z", tgp="4h"),
                job(annotations='{karpenter.sh/do-not-disrupt: "true"}'))
    assert f.severity is Severity.WARNING
    assert "will be deleted at 2026-08-22T02:00:00Z (in 16h) although karpenter.sh/do-not-disrupt=true" in f.title
    # Without terminationGracePeriod the annotation holds the expired node until the job ends: nothing is lost.
    assert result(pool(), node(), claim(created="2026-07-22T22:00:00Z"),
                  job(annotations='{karpenter.sh/do-not-disrupt: "true"}')).status is CheckStatus.PASSED


def test_a_pdb_allowing_no_eviction_holds_a_drift_drain() -> None:
    pdb = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: pretrain-pdb, namespace: ml}
spec: {minAvailable: 1, selector: {matchLabels: {job-name: pretrain-llama-70b}}}
status: {currentHealthy: 1, desiredHealthy: 1, expectedPods: 1, disruptionsAllowed: 0}
"""
    labelled = job().replace("  annotations: {}", "  annotations: {}\n  labels: {job-name: pretrain-llama-70b}")
    r = result(pool(), node(taints=DISRUPTED_TAINT), claim(drifted="AMIDrift", reason="Drifted"), labelled, pdb,
               *DRIFT_DRAIN)
    assert r.status is CheckStatus.PASSED


def test_consolidation_and_plain_deletion_of_a_node_running_a_job() -> None:
    f = finding(pool(), node(taints=DISRUPTED_TAINT), claim(reason="Underutilized"), job(),
                event("Node", NODE, "DisruptionTerminating", "Disrupting Node: Underutilized"))
    assert f.severity is Severity.ERROR
    assert f.title.endswith("will be evicted now: Karpenter is consolidating its node (Underutilized)")
    assert ("kubectl patch nodepool gpu-training --type merge -p "
            "'{\"spec\":{\"disruption\":{\"consolidationPolicy\":\"WhenEmpty\"}}}'") in f.remediation.commands
    # Someone deleted the node (no reason, no expiry, no drift): the job goes all the same.
    f = finding(pool(), node(deleting="2026-08-21T09:58:00Z"), claim(), job())
    assert f.title.endswith("will be evicted now: its node is being deleted")
    assert f"kubectl get events -A --field-selector involvedObject.name={NODE}" in f.remediation.commands


# aws pkg/controllers/interruption/utils.go: a scheduled change (AWS Health maintenance) publishes InstanceUnhealthy
# and CordonAndDrain deletes the NodeClaim (TerminatingOnInterruption); the drain is the ordinary one, so PDBs and
# do-not-disrupt hold pods. Only spot and capacity-reservation warnings (2 minutes) and an instance already
# stopping or terminating take the pods whatever they say.
HEALTH = (event("Node", NODE, "InstanceUnhealthy", "An unhealthy warning was triggered for the instance",
                type_="Warning", at="2026-08-21T09:58:00Z"),
          event("Node", NODE, "TerminatingOnInterruption", "Interruption triggered termination for the Node",
                type_="Warning", at="2026-08-21T09:58:01Z"))


def test_scheduled_maintenance_drains_like_a_deletion_not_in_two_minutes() -> None:
    draining = (node(taints=DISRUPTED_TAINT, deleting="2026-08-21T09:58:01Z"),
                claim(deleting="2026-08-21T09:58:01Z"))
    # A do-not-disrupt job holds the drain (the instance is retired on the event's date, not in 2 minutes).
    r = result(pool(), *draining, job(annotations='{karpenter.sh/do-not-disrupt: "true"}'), *HEALTH)
    assert r.status is CheckStatus.PASSED
    f = finding(pool(), *draining, job(), *HEALTH)
    assert f.severity is Severity.ERROR
    assert f.title.endswith("will be evicted now: Karpenter is draining its node after an AWS health event "
                            "(scheduled maintenance or a failed status check)")
    assert "2 minutes" not in f.title and "spot" not in f.remediation.text.lower()
    assert not any("on-demand" in c for c in f.remediation.commands)  # it is on-demand already
    assert ("aws ec2 describe-instance-status --region us-east-1 --instance-ids i-0aa11bb22cc33dd44 --include-all-instances "
            "--query 'InstanceStatuses[].Events'") in f.remediation.commands
    paths = {e.path: e for e in f.evidence}
    assert paths["event Warning/InstanceUnhealthy"].value == "An unhealthy warning was triggered for the instance"


def test_capacity_reservation_interruption_gives_two_minutes_and_instance_stopping_none() -> None:
    f = finding(pool(), node(capacity="reserved"), claim(), job(annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE, "CapacityReservationInstanceInterrupted",
                      "Capacity Reservation interruption warning was triggered", type_="Warning",
                      at="2026-08-21T09:59:30Z"))
    assert "will be deleted at 2026-08-21T10:01:30Z" in f.title and "CapacityReservationInstanceInterrupted" in f.title
    assert "spot" not in f.remediation.text.lower()
    assert not any("on-demand" in c for c in f.remediation.commands)
    f = finding(pool(), node(), claim(), job(annotations='{karpenter.sh/do-not-disrupt: "true"}'),
                event("Node", NODE, "InstanceStopping", "Instance is stopping", type_="Warning",
                      at="2026-08-21T09:59:00Z"))
    assert "will be deleted at 2026-08-21T09:59:00Z (60s ago)" in f.title
    assert f.title.endswith("InstanceStopping: the EC2 instance is stopping")
    assert ("aws cloudtrail lookup-events --region us-east-1 --lookup-attributes "
            "AttributeKey=ResourceName,AttributeValue=i-0aa11bb22cc33dd44") in f.remediation.commands


def test_a_broken_budget_schedule_holds_drift_whatever_its_reasons() -> None:
    # An Underutilized budget whose cron Karpenter cannot parse: allowed disruptions are 0 for Drifted too.
    budgets = '[{nodes: "1", reasons: [Underutilized], schedule: "0 25 * * *", duration: 1h}]'
    r = result(pool(budgets=budgets), node(), claim(drifted="AMIDrift"), job())
    assert r.status is CheckStatus.PASSED and r.examined == 1


def test_only_the_nodeclaims_own_termination_grace_period_forces_deletion() -> None:
    # core: NewCandidate and the nodeclaim lifecycle controller read nodeClaim.Spec.TerminationGracePeriod only.
    # A pool given one after this NodeClaim was made (which drifts the claim) does not force its pods.
    protected = job(annotations='{karpenter.sh/do-not-disrupt: "true"}')
    r = result(pool(expire="336h", tgp="4h"), node(deleting="2026-08-21T08:00:05Z"),
               claim(created="2026-08-07T08:00:00Z", expire="336h", deleting="2026-08-21T08:00:05Z"), protected)
    assert r.status is CheckStatus.PASSED
    r = result(pool(tgp="4h"), node(), claim(drifted="NodePoolDrifted"), protected)
    assert r.status is CheckStatus.PASSED


def test_drifted_with_termination_grace_period_deletes_a_protected_job_that_long_after_the_drain_starts() -> None:
    # Drift is "eventual" (core disruption/types.go): with the NodeClaim's terminationGracePeriod the node is taken
    # despite do-not-disrupt, and the drain deletes the pod so that it is gone by deletion + that period
    # (node/termination/terminator/eviction.go needsForceDelete): not evicted when the drain starts.
    f = finding(pool(), node(), claim(drifted="AMIDrift", tgp="2h"), job(annotations='{karpenter.sh/do-not-disrupt: "true"}'))
    assert f.severity is Severity.WARNING
    assert "will be deleted within 2h of the drain starting although karpenter.sh/do-not-disrupt=true" in f.title


def test_a_node_annotated_do_not_disrupt_is_not_drifted_away_but_still_expires() -> None:
    # core state/statenode.go ValidateNodeDisruptable: a node annotated karpenter.sh/do-not-disrupt: "true" is no
    # candidate for any disruption method (terminationGracePeriod lifts only pod-level blocks); expiration deletes
    # the NodeClaim without asking (nodeclaim/expiration/controller.go).
    held = node().replace("  labels:\n", '  annotations: {karpenter.sh/do-not-disrupt: "true"}\n  labels:\n', 1)
    r = result(pool(), held, claim(drifted="AMIDrift", tgp="2h"), job())
    assert r.status is CheckStatus.PASSED and r.examined == 1
    f = finding(pool(), held, claim(created="2026-07-22T22:00:00Z"), job())
    assert "its node's NodeClaim expires in 12h (expireAfter 720h)" in f.title


def test_a_budget_holding_drift_does_not_hold_expiry() -> None:
    budgets = '[{nodes: "0", reasons: [Drifted]}]'
    f = finding(pool(budgets=budgets), node(), claim(drifted="AMIDrift", created="2026-07-22T22:00:00Z"), job())
    assert "its node's NodeClaim expires in 12h (expireAfter 720h)" in f.title


def test_a_blanket_toleration_lets_the_drain_leave_a_protected_job_to_die_with_the_instance() -> None:
    # core pkg/utils/pod/scheduling.go: a pod tolerating karpenter.sh/disrupted:NoSchedule (here operator: Exists
    # with no key) is neither evicted (IsEvictable) nor waited for (IsDrainable), so an expiring node is drained of
    # the others and terminated with it; do-not-disrupt holds only a drift that has not started (candidacy).
    tolerant = job(annotations='{karpenter.sh/do-not-disrupt: "true"}').replace(
        "spec:\n  nodeName:", "spec:\n  tolerations: [{operator: Exists}]\n  nodeName:")
    f = finding(pool(), node(), claim(created="2026-07-22T22:00:00Z"), tolerant)
    assert ("will be killed when the instance terminates (it tolerates karpenter.sh/disrupted:NoSchedule, so "
            "the drain neither evicts nor waits for it) although karpenter.sh/do-not-disrupt=true") in f.title
    assert "toleration" in f.remediation.text
    assert result(pool(), node(), claim(drifted="AMIDrift"), tolerant).status is CheckStatus.PASSED
