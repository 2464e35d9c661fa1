"""The TUI's pure parts: filter, layout, styled cells, detail model, `:` views, status line."""

from __future__ import annotations

from diagnostics import ObjectRef, Severity, run
from diagnostics.model import Finding
from diagnostics.snapshot import SourceState
from gputui.output import rows
from gputui.tui import cells, objects
from gputui.tui.filtering import RowFilter
from gputui.tui.layout import allocate
from gputui.tui.screens.jump import resolve
from gputui.tui.widgets.status_line import status_text
from tests.builders import snapshot

CHAIN = """
apiVersion: v1
kind: Pod
metadata:
  name: trainer-0
  namespace: ml
  labels: {app: trainer}
  creationTimestamp: "2026-08-21T09:40:00Z"
spec:
  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]
  containers: [{name: t, image: x, resources: {limits: {nvidia.com/gpu: "1"}}}]
status:
  phase: Pending
  conditions: [{type: PodScheduled, status: "False", reason: Unschedulable}]
---
apiVersion: v1
kind: Event
metadata: {name: trainer-0.nominated, namespace: ml, uid: ev-1}
involvedObject: {kind: Pod, name: trainer-0, namespace: ml}
reason: Nominated
message: "Pod should schedule on: nodeclaim/gpu-7xk2q, node/ip-10-0-12-34.ec2.internal"
type: Normal
count: 3
firstTimestamp: "2026-08-21T09:41:00Z"
lastTimestamp: "2026-08-21T09:58:00Z"
source: {component: karpenter}
---
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  labels: {karpenter.sh/nodepool: gpu, node.kubernetes.io/instance-type: g5.2xlarge}
  creationTimestamp: "2026-08-21T09:40:30Z"
spec:
  nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
  resources: {requests: {nvidia.com/gpu: "1"}}
status:
  nodeName: ip-10-0-12-34.ec2.internal
  providerID: aws:///us-east-1b/i-0abc
  conditions:
  - {type: Launched, status: "True", reason: Launched}
  - {type: Registered, status: "True", reason: Registered}
  - {type: Initialized, status: Unknown, reason: ResourceNotRegistered,
     message: Resource "nvidia.com/gpu" was requested but not registered, lastTransitionTime: "2026-08-21T09:41:00Z"}
---
apiVersion: v1
kind: Node
metadata:
  name: ip-10-0-12-34.ec2.internal
  creationTimestamp: "2026-08-21T09:40:50Z"
  labels:
    karpenter.sh/nodepool: gpu
    node.kubernetes.io/instance-type: g5.2xlarge
    karpenter.k8s.aws/instance-gpu-count: "1"
spec:
  providerID: aws:///us-east-1b/i-0abc
status:
  conditions: [{type: Ready, status: "True", reason: KubeletReady}]
  capacity: {cpu: "8"}
  allocatable: {cpu: "8"}
---
apiVersion: karpenter.sh/v1
kind: NodePool
metadata: {name: gpu}
spec:
  weight: 10
  limits: {nvidia.com/gpu: "4"}
  template:
    spec:
      nodeClassRef: {group: karpenter.k8s.aws, kind: EC2NodeClass, name: gpu}
      taints: [{key: nvidia.com/gpu, effect: NoSchedule}]
---
apiVersion: karpenter.k8s.aws/v1
kind: EC2NodeClass
metadata: {name: gpu}
spec:
  role: KarpenterNodeRole
  subnetSelectorTerms: [{tags: {karpenter.sh/discovery: demo}}]
"""

POD = ObjectRef("Pod", "trainer-0", "ml")
CLAIM = ObjectRef("NodeClaim", "gpu-7xk2q")
NODE = ObjectRef("Node", "ip-10-0-12-34.ec2.internal")
POOL = ObjectRef("NodePool", "gpu")
CLASS = ObjectRef("EC2NodeClass", "gpu")


def test_filter_substring_and_labels() -> None:
    f = RowFilter.parse("trainer app=trainer")
    assert f.active
    assert f.matches(["ml/trainer-0", "1"], {"app": "trainer"})
    assert not f.matches(["ml/trainer-0"], {"app": "other"})
    assert not f.matches(["ml/eval-0"], {"app": "trainer"})
    assert RowFilter.parse("team!=infra").matches(["x"], {"team": "research"})
    assert not RowFilter.parse("team!=infra").matches(["x"], {"team": "infra"})
    # `key=` keeps rows that carry the label at all, like a label-exists selector.
    assert RowFilter.parse("karpenter.sh/nodepool=").matches(["n"], {"karpenter.sh/nodepool": "gpu"})
    assert not RowFilter.parse("GPU-7").matches(["gpu-8"])
    assert not RowFilter.parse("   ").active


def test_allocate_gives_small_tables_what_they_need_and_shares_the_rest() -> None:
    assert allocate([3, 4, 3], 40) == [3, 4, 3]
    # 80x24: 21 lines for five tables; the big one gets the spare lines, nobody gets less than 3.
    assert allocate([5, 30, 3, 4, 3], 21) == [5, 6, 3, 4, 3]
    assert allocate([10, 10], 9) == [5, 4]
    assert allocate([50, 50], 4) == [3, 3]  # too small: minimums, the page scrolls


def test_node_cells_lead_with_health_and_gpu_counts() -> None:
    snap = snapshot(CHAIN)
    report = run(snap)
    (row,) = rows.node_rows(snap, report)
    mine = cells.findings_by_subject(report)[NODE]
    out = cells.node_cells(row, mine)
    assert cells.NODE_COLUMNS[:4] == ("NAME", "HEALTH", "READY", "GPUS C/A/R")
    assert out[0].plain == NODE.name
    assert out[1].plain.startswith("✗ gpu-not-advertised")
    assert "red" in str(out[1].style)
    # capacity/allocatable/requested; "1?" = expected from labels but absent from status.capacity
    assert out[3].plain == "1?/0/0"


def test_stage_and_health_badges() -> None:
    assert cells.stage_cell("Registered").plain == "▰▰▱▱ Registered"
    assert cells.stage_cell("GPU ready").plain == "▰▰▰▰ GPU ready"
    assert cells.health([]).plain == "✓ ok"
    warn = Finding(NODE, "t", severity=Severity.WARNING, check="consolidation-blocked")
    err = Finding(NODE, "t", severity=Severity.ERROR, check="gpu-not-advertised")
    assert cells.health([err, warn]).plain == "✗ gpu-not-advertised +1"


def test_grouped_findings_have_one_header_per_severity() -> None:
    fs = [Finding(NODE, "a", severity=Severity.WARNING, code="GT501", check="c"),
          Finding(POD, "b", severity=Severity.ERROR, code="GT201", check="g"),
          Finding(POOL, "c", severity=Severity.WARNING, code="GT502", check="p")]
    keys = [r.key for r in cells.grouped_finding_rows(fs)]
    assert keys[0] == "group|error" and keys[2] == "group|warning"
    assert len(keys) == 5


def test_related_objects_follow_the_chain_pod_claim_node_pool_class() -> None:
    snap = snapshot(CHAIN)
    assert [r for r, _ in objects.related_objects(snap, POD)][:4] == [CLAIM, NODE, POOL, CLASS]
    how = dict(objects.related_objects(snap, POD))
    assert how[CLAIM] == "NodeClaim (nominated for this pod)"
    assert dict(objects.related_objects(snap, CLAIM))[POD] == "pending pod waiting for it"
    assert CLAIM in dict(objects.related_objects(snap, POOL))
    assert dict(objects.related_objects(snap, CLASS)) == {POOL: "NodePool using it"}


def test_key_fields_conditions_and_events() -> None:
    snap = snapshot(CHAIN)
    pod = objects.find(snap, POD)
    fields = dict(objects.key_fields(snap, POD, pod))
    assert fields["NodeClaim (nominated)"] == "gpu-7xk2q"
    assert fields["Accelerators requested"] == "nvidia.com/gpu=1"
    node_fields = dict(objects.key_fields(snap, NODE, objects.find(snap, NODE)))
    assert node_fields["GPUs expected"] == "1" and node_fields["Allocatable"] == "none"
    pool_fields = dict(objects.key_fields(snap, POOL, objects.find(snap, POOL)))
    assert pool_fields["Weight"] == "10"
    conds = dict(objects.condition_rows(snap, objects.find(snap, CLAIM)))
    assert conds["Initialized"][:3] == ("Initialized", "Unknown", "ResourceNotRegistered")
    assert conds["Initialized"][3] == "19m"
    (ev,) = objects.event_rows(snap, POD)
    assert ev[1] == ("Normal", "Nominated", "x3", "2m", "karpenter", ev[1][5])
    assert objects.find(snap, ObjectRef("Node", "gone")) is None


def test_jump_resolves_views_aliases_and_objects() -> None:
    assert resolve(":nodes") == ("nodes", "")
    assert resolve("nc") == ("nodeclaims", "")
    assert resolve("po") == ("pods", "")
    assert resolve("findings") == ("findings", "")
    assert resolve("node ip-1") == ("object", "node/ip-1")
    assert resolve("pod/ml/trainer-0") == ("object", "pod/ml/trainer-0")
    assert resolve("bogus") is None
    assert resolve("q") == ("quit", "") and resolve("ctx prod") == ("ctx", "prod") and resolve("ns") == ("ns", "")
    assert resolve("pods pending") == ("pods", "pending") and resolve("pending") == ("pods", "pending")
    assert resolve("") is None


def test_status_text_names_failing_sources_and_counts_healthy_ones() -> None:
    snap = snapshot(CHAIN, sources={"nodeclaims": SourceState.FORBIDDEN})
    text = status_text(snap).plain
    assert text.startswith("● limited · 9 sources ok")  # not "live": one source cannot be seen
    assert "nodeclaims forbidden (list nodeclaims)" in text
    assert "updated 10:00:00" in text
    bundle = status_text(snap, bundle_time=snap.taken_at).plain
    assert bundle.startswith("bundle from 2026-08-21 10:00:00Z")
    assert "connecting" in status_text(None).plain


def test_a_pending_pod_links_to_the_pool_it_selects_and_to_the_cause_of_its_wait() -> None:
    from dataclasses import replace

    from diagnostics.model import CheckResult, CheckStatus, Report

    pinned = CHAIN.replace("  tolerations:", "  nodeSelector: {karpenter.sh/nodepool: gpu}\n  tolerations:", 1)
    snap = snapshot(pinned)
    snap = replace(snap, events=())  # no Nominated event: the pod waits on its NodePool only
    cause = Finding(CLASS, "subnets missing", severity=Severity.ERROR, check="nodeclass-subnets-not-found",
                    related=(POD,))
    report = Report((CheckResult("nodeclass-subnets-not-found", "GT101", "t", CheckStatus.FAILED, (cause,)),),
                    taken_at=snap.taken_at)
    how = dict(objects.related_objects(snap, POD, report))
    assert how[POOL] == "NodePool it selects"
    assert how[CLASS] == "EC2NodeClass of that NodePool"
    assert dict(objects.related_objects(snap, POOL, report)).get(CLASS) == "EC2NodeClass"
    # The finding's subject is reachable from the pod it affects even without a spec link.
    assert "via finding nodeclass-subnets-not-found" in dict(
        objects.related_objects(replace(snapshot(CHAIN), events=()), POD, report)).values()
