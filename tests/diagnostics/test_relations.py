"""Why is this pod pending: which findings explain a pending GPU pod, focus, and the verdict's honesty."""

from __future__ import annotations

from dataclasses import replace

from rich.console import Console

from diagnostics import ObjectRef, run
from diagnostics.model import CheckResult, CheckStatus, Evidence, Finding, Report, Severity
from diagnostics.relations import attribute, focus, root_cause
from diagnostics.snapshot import SourceState
from diagnostics.verdict import EXPLAINED, INCOMPLETE, NO_PROBLEMS, UNDETERMINED, judge
from gputui.output.text import render_report
from tests.builders import NOW, snapshot

NO_KARPENTER = {"nodeclaims": SourceState.ABSENT, "nodepools": SourceState.ABSENT,
                "ec2nodeclasses": SourceState.ABSENT}


def gke_node(name: str, accelerator: str = "nvidia-l4", gpus: str = "") -> str:
    """A GKE Standard GPU node; `gpus` empty: its device plugin never registered nvidia.com/gpu."""
    res = f"nvidia.com/gpu: '{gpus}', " if gpus else ""
    return f"""
apiVersion: v1
kind: Node
metadata:
  name: {name}
  creationTimestamp: "2026-08-21T09:00:00Z"
  labels: {{cloud.google.com/gke-accelerator: {accelerator}, cloud.google.com/gke-accelerator-count: "1",
           cloud.google.com/gke-nodepool: l4-pool, node.kubernetes.io/instance-type: g2-standard-8}}
spec:
  providerID: gce://ml-prod/us-central1-a/{name}
  taints: [{{key: nvidia.com/gpu, value: present, effect: NoSchedule}}]
status:
  capacity: {{{res}cpu: "8", memory: 32Gi, pods: "110"}}
  allocatable: {{{res}cpu: 7910m, memory: 29Gi, pods: "110"}}
  conditions: [{{type: Ready, status: "True", reason: KubeletReady, lastTransitionTime: "2026-08-21T09:02:00Z"}}]
"""


def pod(name: str, accelerator: str = "nvidia-l4", node: str = "", phase: str = "Pending") -> str:
    bound = f"nodeName: {node}" if node else "schedulerName: default-scheduler"
    return f"""
apiVersion: v1
kind: Pod
metadata: {{name: {name}, namespace: ml, creationTimestamp: "2026-08-21T09:30:00Z"}}
spec:
  {bound}
  nodeSelector: {{cloud.google.com/gke-accelerator: {accelerator}}}
  tolerations: [{{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}}]
  containers: [{{name: main, image: vllm, resources: {{limits: {{nvidia.com/gpu: "1"}}}}}}]
status:
  phase: {phase}
  conditions: [{{type: PodScheduled, status: "{'True' if node else 'False'}", reason: {'Scheduled' if node else 'Unschedulable'},
                message: "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}}]
"""


POD = ObjectRef("Pod", "llm-0", "ml")


def gke_report(*extra: str) -> tuple[Report, object]:
    snap = snapshot(gke_node("gke-l4-a"), pod("llm-0"), *extra, sources=NO_KARPENTER)
    return run(snap), snap


def test_a_pod_nobody_nominated_is_explained_by_the_broken_node_it_could_run_on() -> None:
    # GKE, no Karpenter: no nomination, no chain. The L4 node its selector admits advertises no GPU.
    report, snap = gke_report()
    rc = root_cause(report, POD)
    assert rc is not None and (rc.check, str(rc.subject)) == ("gpu-not-advertised", "node/gke-l4-a")
    assert POD in rc.explains and POD in rc.related
    assert rc.impact is not None and rc.impact.pods == 1 and rc.impact.gpus >= 1
    focused = focus(report, snap, POD)
    assert focused.verdict.verdict == EXPLAINED and focused.verdict.root_cause == rc
    assert ("gpu-not-advertised", POD) in {(f.check, p) for f in focused.findings for p in f.explains}


def test_a_broken_node_the_pod_cannot_use_does_not_explain_it() -> None:
    # A T4 node also advertises none, but the pod selects L4 nodes: its finding is elsewhere.
    report, snap = gke_report(gke_node("gke-t4-b", accelerator="nvidia-tesla-t4"))
    t4 = next(f for f in report.findings if f.subject == ObjectRef("Node", "gke-t4-b"))
    assert t4.explains == () and POD not in t4.related
    focused = focus(report, snap, POD)
    assert ObjectRef("Node", "gke-t4-b") not in {f.subject for f in focused.findings}
    gt201 = next(r for r in focused.results if r.check == "gpu-not-advertised")
    assert gt201.status is CheckStatus.FAILED and gt201.elsewhere == 1  # never turned into "passed"


def test_a_broken_node_whose_gpus_are_all_held_is_no_candidate() -> None:
    # The only L4 node should have 1 GPU and a running pod holds it: its plugin is broken, but it has no room
    # for the pending pod either way, so it does not explain it.
    snap = snapshot(gke_node("gke-l4-a"), pod("llm-0"), pod("busy-0", node="gke-l4-a", phase="Running"),
                    sources=NO_KARPENTER)
    report = run(snap)
    assert root_cause(report, POD) is None
    v = focus(report, snap, POD).verdict
    assert v.verdict == UNDETERMINED and v.floor == Severity.WARNING
    assert any("Insufficient nvidia.com/gpu" in m for m in v.messages)
    assert v.checked and v.checked[0].startswith("candidates: 0 nodes")


def _result(check: str, code: str, *findings: Finding) -> CheckResult:
    stamped = tuple(replace(f, check=check, code=code, severity=f.severity or Severity.ERROR) for f in findings)
    return CheckResult(check, code, check, CheckStatus.FAILED if stamped else CheckStatus.PASSED, stamped)


def test_a_finding_lists_only_the_pending_pods_it_explains() -> None:
    # A metric about another NodePool listed every pending pod (GT703 did): the pod's candidates hold no
    # such pool, so it is not explained by it and no longer listed as affected.
    snap = snapshot(gke_node("gke-l4-a"), pod("llm-0"), sources=NO_KARPENTER)
    other = Finding(ObjectRef("NodePool", "gpu-b"), "NodePool gpu-b: 3 NodeClaims failed", related=(POD,))
    out = attribute(snap, [_result("karpenter-provisioning-failures", "GT703", other)])
    f = out[0].findings[0]
    assert f.explains == () and f.related == ()


def test_one_root_cause_one_finding() -> None:
    # Events (GT104) and metrics (GT703) see the same pool's spot shortage: one finding, both evidences.
    snap = snapshot(pod("llm-0"), sources=NO_KARPENTER)
    pool = ObjectRef("NodePool", "gpu-spot")
    ice = Finding(pool, "NodePool gpu-spot: no EC2 capacity", (Evidence.event(pool, "InsufficientCapacityError", "x"),))
    metric = Finding(pool, "NodePool gpu-spot: 5 NodeClaims failed",
                     (Evidence.field(pool, "karpenter_nodeclaims_disrupted_total", 5),))
    out = attribute(snap, [_result("spot-capacity-shortage", "GT104", ice),
                           _result("karpenter-provisioning-failures", "GT703", metric)])
    merged = [f for r in out for f in r.findings]
    assert len(merged) == 1 and merged[0].check == "spot-capacity-shortage"
    assert [e.path for e in merged[0].evidence] == ["event InsufficientCapacityError", "karpenter_nodeclaims_disrupted_total"]
    gt703 = out[1]
    assert gt703.status is CheckStatus.FAILED and "reported with GT104 spot-capacity-shortage" in gt703.reason


def test_an_idle_node_karpenter_does_not_consolidate_is_one_finding_with_dcgm_evidence() -> None:
    # consolidation-blocked (GT501) and gpu-idle (GT702) both said "8 GPUs idle" on the same p4d: one finding, with
    # the DCGM evidence added. An idle GPU a pod holds stays GT702's own (a hung job, not the node).
    snap = snapshot(pod("llm-0"), sources=NO_KARPENTER)
    idle_node, held_node = ObjectRef("Node", "ip-10-0-44-12"), ObjectRef("Node", "ip-10-0-22-190")
    blocked = [Finding(n, f"{n.name} idle but not consolidated", (Evidence.field(n, "status.allocatable", 8),),
                       severity=Severity.WARNING) for n in (idle_node, held_node)]
    util = Evidence.field(idle_node, "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h])", 0.8)
    idle = Finding(idle_node, "8 of 8 GPUs idle: not allocated to any pod", (util,), severity=Severity.WARNING)
    held = Finding(held_node, "1 of 4 GPUs idle: held by ml/nb-0",
                   (Evidence.field(held_node, "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h])", 1.0),),
                   related=(ObjectRef("Pod", "nb-0", "ml"),), severity=Severity.WARNING)
    out = attribute(snap, [_result("consolidation-blocked", "GT501", *blocked), _result("gpu-idle", "GT702", idle, held)])
    gt501, gt702 = out
    merged = next(f for f in gt501.findings if f.subject == idle_node)
    assert [e.path for e in merged.evidence] == ["status.allocatable", "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h])"]
    assert [f.title for f in gt702.findings] == ["1 of 4 GPUs idle: held by ml/nb-0"]
    other = next(f for f in gt501.findings if f.subject == held_node)
    assert [e.path for e in other.evidence] == ["status.allocatable"]


def _render(report: Report) -> str:
    console = Console(width=200, record=True, color_system=None)
    render_report(report, console, verbose=False)
    return console.export_text()


def _clean() -> Report:
    return Report((CheckResult("gpu-not-advertised", "GT201", "t", CheckStatus.PASSED, examined=3),), NOW)


def test_a_check_skipped_for_partial_data_is_no_all_clear() -> None:
    report = _clean()
    partial = CheckResult("consolidation-blocked", "GT501", "t", CheckStatus.SKIPPED,
                          reason="pods: partial (only the target's pods were read)", blind=True)
    report = replace(report, results=report.results + (partial,))
    v = judge(report)
    assert v.verdict == INCOMPLETE and v.floor == Severity.WARNING
    assert "cannot rule out: consolidation-blocked" in v.blind[0]
    text = _render(replace(report, verdict=v))
    assert "no problems found" not in text.lower() and "✓ GT501" not in text and "- GT501" in text
    assert text.splitlines()[0].startswith("cluster: nothing found, but not an all-clear; could not see")


def test_a_forbidden_source_says_what_it_cannot_rule_out() -> None:
    forbidden = CheckResult("spot-capacity-shortage", "GT104", "t", CheckStatus.SKIPPED,
                            reason="events: forbidden (list events)", blind=True)
    v = judge(replace(_clean(), results=_clean().results + (forbidden,)))
    assert v.verdict == INCOMPLETE and v.blind == ("events: forbidden (list events) - cannot rule out: "
                                                   "spot-capacity-shortage",)


def test_a_pass_judged_without_a_forbidden_optional_source_is_no_all_clear() -> None:
    """GT201 uses DaemonSets when it may read them: with them forbidden its pass is only partly judged."""
    report = replace(_clean(), sources={"daemonsets": {"state": "forbidden", "detail": "list daemonsets.apps"}})
    v = judge(report)
    assert v.verdict == INCOMPLETE and v.floor == Severity.WARNING
    assert v.blind == ("daemonsets: forbidden (list daemonsets.apps) - passed without it: gpu-not-advertised",)
    assert "no problems found" not in _render(replace(report, verdict=v)).lower()


def test_a_component_that_is_not_installed_does_not_block_an_all_clear() -> None:
    absent = CheckResult("nodeclaim-launch-failed", "GT301", "t", CheckStatus.SKIPPED,
                         reason="nodeclaims: not installed (CRD absent)")
    report = replace(_clean(), results=_clean().results + (absent,))
    v = judge(report)
    assert v.verdict == NO_PROBLEMS and v.floor == Severity.OK
    assert _render(replace(report, verdict=v)).splitlines()[0] == "cluster: no problems found"


def test_a_failure_filtered_out_by_focus_is_never_shown_as_passed() -> None:
    report, snap = gke_report(gke_node("gke-t4-b", accelerator="nvidia-tesla-t4"))
    node_a = ObjectRef("Node", "gke-l4-a")
    focused = focus(report, snap, ObjectRef("Node", "gke-t4-b"))
    text = _render(focused)
    assert "finding elsewhere in the cluster" in text or "findings elsewhere in the cluster" in text
    assert "(run `gputui diagnose`)" in text
    assert node_a not in {f.subject for f in focused.findings}
    assert "✓ GT201" not in text and "no problems found" not in text.lower()


def test_the_tui_why_column_reads_the_relation() -> None:
    # Nobody nominated the pod and no check listed it: the WHY cell still names its broken node's finding.
    from gputui.output.rows import pending_rows

    report, snap = gke_report()
    row = next(r for r in pending_rows(snap, report) if r.ref == POD)
    assert row.cells[-1].startswith(root_cause(report, POD).title[:60])


def test_what_keeps_a_check_from_looking_and_what_is_only_absent() -> None:
    """The engine says which skips are blindness (forbidden, unreachable, a failed query, an errored check)
    and which are facts (a CRD not installed, a source not configured, a metric nobody exports): the
    verdict reads that, never the wording of a reason."""
    from diagnostics.facts.metric_facts import MetricUnavailable
    from diagnostics.model import CheckSkipped
    from diagnostics.snapshot import SourceState
    from diagnostics.verdict import kept_from_looking

    def ran(check: str, **sources: SourceState) -> CheckResult:
        (result,) = run(snapshot(sources=sources), only=[check]).results
        return result

    # spot-capacity-shortage requires events; nodepool-gpu-limit-reached requires nodepools.
    assert kept_from_looking(ran("spot-capacity-shortage", events=SourceState.FORBIDDEN))
    assert kept_from_looking(ran("spot-capacity-shortage", events=SourceState.UNREACHABLE))
    assert kept_from_looking(ran("spot-capacity-shortage", events=SourceState.LOADING))
    assert not kept_from_looking(ran("nodepool-gpu-limit-reached", nodepools=SourceState.ABSENT))
    # Exceptions that skip a check carry the same distinction.
    assert MetricUnavailable("query for xid failed: 503", blind=True).blind
    assert not MetricUnavailable("DCGM_FI_DEV_XID_ERRORS not exported (is dcgm-exporter scraped?)").blind
    assert not CheckSkipped("nothing to judge").blind and CheckSkipped("x", blind=True).blind
    assert kept_from_looking(CheckResult("c", "GT999", "t", CheckStatus.ERRORED, reason="KeyError: 'x'"))
    # A reason that merely sounds blind does not make a skip blind: the engine's flag decides.
    assert not kept_from_looking(CheckResult("c", "GT999", "t", CheckStatus.SKIPPED, reason="events: forbidden"))


def test_a_node_target_judges_a_missing_plugin_pod_as_the_whole_cluster_run_does() -> None:
    # `diagnose node/N` reads every pod on N (pods partial, N in pods_read_on): "the plugin has no pod here" is
    # then as certain as in the whole-cluster run. On a node whose pods were not read, nothing is concluded.
    from diagnostics.snapshot import SourceStatus
    from tests.diagnostics.checks.test_gpu_not_advertised import CLAIM, NODE, PLUGIN

    node = NODE.replace("  - {key: dedicated, value: ml-training, effect: NoSchedule}\n", "")
    whole = snapshot(node, CLAIM, PLUGIN)
    partial = {**whole.sources, "pods": SourceStatus("pods", SourceState.OK, partial=True)}
    target = replace(whole, sources=partial, target="node/ip-10-0-12-34.ec2.internal",
                     pods_read_on=frozenset({"ip-10-0-12-34.ec2.internal"}))
    unread = replace(target, pods_read_on=frozenset())

    def title(snap: object) -> str:
        (f,) = run(snap, only=["gpu-not-advertised"]).findings
        return f.title

    assert "has no pod on the node" in title(whole)
    assert title(target) == title(whole)
    assert "has no pod on the node" not in title(unread)


def test_a_mig_pod_is_explained_by_its_broken_node_that_advertises_nothing() -> None:
    # Which MIG profiles a node offers is its plugin's configuration: one advertising nothing may be the one.
    mig = pod("llm-0").replace('nvidia.com/gpu: "1"}}', 'nvidia.com/mig-1g.10gb: "1"}}')
    snap = snapshot(gke_node("gke-l4-a"), mig, sources=NO_KARPENTER)
    rc = root_cause(run(snap), POD)
    assert rc is not None and (rc.check, str(rc.subject)) == ("gpu-not-advertised", "node/gke-l4-a")
    # A node advertising whole GPUs only is no candidate for it.
    full = snapshot(gke_node("gke-l4-a", gpus="1"), mig, sources=NO_KARPENTER)
    from diagnostics.relations import all_candidates

    assert all_candidates(full)[POD][1].nodes == frozenset()


def test_the_tui_header_judges_blindness_as_diagnose_does() -> None:
    # An errored check or one skipped for partial data keeps the TUI from "✓ no problems found" too.
    from gputui.tui.honesty import blind_checks, findings_summary

    report = replace(_clean(), results=_clean().results + (
        CheckResult("consolidation-blocked", "GT501", "t", CheckStatus.SKIPPED, reason="pods: partial", blind=True),
        CheckResult("gpu-idle", "GT702", "t", CheckStatus.ERRORED, reason="KeyError: 'x'")))
    assert blind_checks(report) == ["consolidation-blocked", "gpu-idle"]
    assert "no problems found" not in findings_summary(report).plain


def test_a_pool_with_room_for_the_pod_but_not_for_its_smallest_instance_explains_it() -> None:
    # Karpenter holds the whole instance against the limit (filterByRemainingResources): 4 GPUs left, p4d-only
    # pool, a 1-GPU pod -> "all available instance types exceed limits for nodepool". GT105 is its root cause.
    from tests.diagnostics.pending_objects import GPU_POOL, NODECLASS
    from tests.diagnostics.pending_objects import pod as pending_pod
    p4d = (GPU_POOL.replace("values: [g5, g6, g6e]", "values: [p4d]")
           .replace('nvidia.com/gpu: "16"}', 'nvidia.com/gpu: "20"}').replace('nvidia.com/gpu: "1"}', 'nvidia.com/gpu: "16"}'))
    tolerates = "  tolerations: [{key: nvidia.com/gpu, operator: Exists, effect: NoSchedule}]\n"
    snap = snapshot(p4d, NODECLASS, pending_pod(tolerations=tolerates))
    report = run(snap)
    ref = ObjectRef("Pod", "trainer-7c9d8f6b5-x2x7k", "ml")
    rc = root_cause(report, ref)
    assert rc is not None and (rc.code, rc.subject) == ("GT105", ObjectRef("NodePool", "gpu"))
    assert focus(report, snap, ref).verdict.verdict == EXPLAINED
