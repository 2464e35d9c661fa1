"""A GPU node is NotReady, or its GPU health condition (AcceleratedHardwareReady, Xid, GPU missing) is bad."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.accelerator_stack import health_command
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.provider import facts
from diagnostics.facts.node_health import (
    blast_radius,
    clip,
    gpu_events,
    gpu_trouble_conditions,
    instance_id,
    repair_deadline,
    since,
    stamp,
    xids_in,
)
from diagnostics.records import Condition, Node, NodeClaim
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age
from diagnostics.wording import counted


@check(code="GT204", slug="gpu-node-not-ready", title="GPU nodes are Ready and their GPUs healthy",
       severity=Severity.ERROR, requires=("nodes",), optional=("pods", "nodeclaims", "events"))
def gpu_node_not_ready(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU node is NotReady/Unknown, or a GPU health condition on it reports a fault.

    Why it matters:
    Pods on a NotReady node stop being managed: after 5 minutes the `unreachable`/`not-ready`
    NoExecute taint evicts them, and until the node is deleted their GPUs stay counted as used.
    `AcceleratedHardwareReady=False` (EKS node monitoring agent) or an Xid condition from
    node-problem-detector means a GPU faulted: jobs on it crash or hang. With the Karpenter
    `NodeRepair` feature gate on, such nodes are replaced after 10 min (GPU) or 30 min (Ready).

    Fix:
    Find out whether the GPU or the whole node failed (`gputui debug node/NAME`, `kubectl
    describe node`, EC2 status checks). A faulty GPU does not heal by itself: cordon and drain
    the node and delete its NodeClaim so Karpenter launches a replacement on other hardware.
    """
    examined, troubled = _troubled(snap)
    yield examined
    for node, claim, troubles in troubled:
        yield _finding(snap, node, claim, list(troubles))


@facts(reads=("nodes", "nodeclaims"))
def _troubled(snap: Snapshot) -> tuple[int, list[tuple[Node, NodeClaim | None, tuple[Condition, ...]]]]:
    """GPU nodes (how many), and those NotReady or with a bad GPU condition. Reads records only."""
    idx = snap.index
    examined = 0
    out = []
    for node, claim in idx.gpu_nodes:
        examined += 1
        troubles: list[Condition] = []
        ready = next((c for c in node.conditions if c.type == "Ready"), None)
        if ready is not None and ready.status in ("False", "Unknown") and not _never_initialized(claim):
            troubles.append(ready)
        troubles += gpu_trouble_conditions(node)
        if troubles:
            out.append((node, claim, tuple(troubles)))
    return examined, out


def _never_initialized(claim: NodeClaim | None) -> bool:
    """A node Karpenter never initialised: nodeclaim-not-initialized reports its NotReady state (no workload yet)."""
    if claim is None:
        return False
    init = claim.condition("Initialized")
    return init is not None and init.status != "True"


def _finding(snap: Snapshot, node: Node, claim: NodeClaim | None, troubles: list[Condition]) -> Finding:
    radius = blast_radius(snap, node, claim)
    ev: list[Evidence] = []
    xids: list[int] = []
    repair_notes: list[str] = []
    managed = claim is not None or bool(node.nodepool)
    for c in troubles:
        note = f"since {stamp(c.last_transition)} ({since(snap, c.last_transition)})"
        due = repair_deadline(c) if managed else None
        if due is not None:
            left = (due - snap.taken_at).total_seconds()
            repair_notes.append(
                f"Karpenter NodeRepair (feature gate NodeRepair=true) replaces it at {stamp(due)}"
                + (f", in {human_age(left)}" if left > 0 else
                   f" - {human_age(-left)} overdue, so NodeRepair is off or blocked"))
        ev.append(Evidence.condition(node.ref, c.as_dict(), snap.age(c.last_transition), note=note))
        xids += xids_in(c.reason, c.message)
    for t in node.taints:
        if t.key in ("node.kubernetes.io/unreachable", "node.kubernetes.io/not-ready") and t.effect == "NoExecute":
            ev.append(Evidence.field(node.ref, "spec.taints", str(t),
                                     note="pods without a matching toleration are evicted after 300s"))
    for e in gpu_events(snap, node.name):
        ev.append(Evidence.event(node.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type))
        xids += xids_in(e.reason, e.message)
    blocked = [e for e in snap.index.events("Node", node.name) if e.reason == "NodeRepairBlocked"]
    if blocked:
        e = blocked[-1]
        ev.append(Evidence.event(node.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type))
    if repair_notes:
        ev.append(Evidence.field(node.ref, "node repair", repair_notes[0],
                                 note="AWS policy: AcceleratedHardwareReady=False 10m, Ready=False/Unknown 30m"))
    ev.append(Evidence.field(node.ref, "pods on node", radius.names() or "none",
                             note=radius.describe()))
    if node.meta.deleting:
        ev.append(Evidence.field(node.ref, "metadata.deletionTimestamp", stamp(node.meta.deleting),
                                 note=f"already being deleted for {since(snap, node.meta.deleting)}"))

    first = troubles[0]
    not_ready = first.type == "Ready"
    state = ("NotReady" if first.status == "False" else "Unknown (kubelet stopped reporting)") if not_ready \
        else f"{first.type}={first.status}"
    why = first.reason + (f": {clip(first.message, 120)}" if first.message and not xids else "")
    xid_note = f", Xid {', '.join(str(x) for x in sorted(set(xids)))}" if xids else ""
    impact = (f"{counted(len(radius.gpu_pods), 'GPU pod')} holding {counted(radius.gpus_in_use, 'GPU')} affected" if radius.gpu_pods
              else radius.describe())
    title = (f"{node.name} ({node.instance_type or 'GPU node'}) {state} for {since(snap, first.last_transition)}"
             f" ({why or 'no reason'}{xid_note}): {impact}")

    iid = instance_id(node.provider_id)
    commands = [f"kubectl describe node {node.name}"]
    if not not_ready or node.ready:
        commands.insert(0, health_command(node))
    commands.append(f"kubectl get events -A --field-selector involvedObject.kind=Node,involvedObject.name={node.name} "
                    f"--sort-by=.lastTimestamp")
    if iid:
        commands.append(f"aws ec2 describe-instance-status --instance-ids {iid} --include-all-instances")
        if not_ready:
            commands.append(f"aws ec2 get-console-output --instance-id {iid} --latest --output text")
    # A kubelet that is down never confirms its pods are gone: without these the drain waits forever.
    wait = " --skip-wait-for-delete-timeout=60 --timeout=10m" if not_ready and not node.ready else ""
    commands += [f"kubectl cordon {node.name}",
                 f"kubectl drain {node.name} --ignore-daemonsets --delete-emptydir-data{wait}"]
    if claim is not None:
        commands.append(f"kubectl delete nodeclaim {claim.name}")
    elif iid:
        commands.append(f"aws ec2 terminate-instances --instance-ids {iid}")
    if not_ready:
        text = (f"The kubelet on {node.name} is not reporting Ready. Check EC2 status checks and the console log "
                f"for a hung kernel or a lost GPU (Xid 79 often takes the node down). If it does not come back, "
                f"cordon, drain and replace it. Blast radius: {radius.describe()}")
    else:
        text = (f"A GPU on {node.name} reports a fault; jobs on it will crash or hang and it does not heal by "
                f"itself. Confirm with `{health_command(node)}`, then cordon, drain and replace the node "
                f"(a reboot only helps for a one-off Xid). Blast radius: {radius.describe()}")
    text += "." + (f" {repair_notes[0]}." if repair_notes else "")
    # Critical while live GPU work sits on it; pods already being evicted do not count.
    severity = Severity.CRITICAL if any(not p.meta.deleting for p in radius.gpu_pods) else None
    return Finding(subject=node.ref, title=title, evidence=tuple(ev),
                   remediation=Remediation(text, tuple(commands)), severity=severity,
                   related=((claim.ref,) if claim else ()) + radius.refs)
