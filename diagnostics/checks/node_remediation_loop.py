"""The same node keeps rebooting, or a NodePool's nodes keep being replaced as unhealthy: a remediation loop."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from diagnostics.facts.metric_facts import KARPENTER, REPAIR_WINDOW, MetricUnavailable, Sample, facts_for, in_words, \
    metric_evidence
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.provider import facts
from diagnostics.facts.node_health import (
    REPAIR_POLICIES,
    blast_radius,
    clip,
    condition_is_bad,
    instance_id,
    pool_of_claim_name,
    repair_deadline,
    stamp,
)
from diagnostics.records import Condition, Event, Node, NodeClaim, accelerator_total
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

REBOOT_WINDOW_SECONDS = 6 * 3600.0
"""Reboots and NotReady flaps older than this do not count (the API server keeps events 1h by default)."""
MIN_REBOOTS = 3
"""Distinct kubelet `Rebooted` events (new boot IDs) within the window that make a loop."""
MIN_NOT_READY_FLAPS = 3
"""`NodeNotReady` transitions within the window that make a loop."""
REPLACEMENT_WINDOW_SECONDS = 6 * 3600.0
"""Window for counting NodeClaims of one NodePool replaced as Unhealthy by Karpenter node repair."""
MIN_REPLACEMENTS = 3
"""Unhealthy replacements in one NodePool within the window that make a loop."""

_BOOT_ID_RE = re.compile(r"boot id: (\S+)")
_LOOP_REASONS = frozenset({"Rebooted", "NodeNotReady", "RegisteredNode", "Starting", "NodeReady"})
"""The Node event reasons node_loops counts."""


@dataclass
class NodeLoop:
    node: str
    reboots: list[Event] = field(default_factory=list)
    boot_ids: list[str] = field(default_factory=list)
    reboot_count: int = 0
    not_ready: list[Event] = field(default_factory=list)
    flap_count: int = 0
    supporting: list[Event] = field(default_factory=list)
    first: datetime | None = None
    last: datetime | None = None


@dataclass
class Replacement:
    key: str
    """NodeClaim name (or node/NAME when only the node is known)."""
    pool: str
    when: datetime | None
    instance_type: str = ""
    zone: str = ""
    evidence: Event | None = None
    node: str = ""


@dataclass
class PoolLoop:
    pool: str
    replacements: list[Replacement]
    blocked: list[Event]
    metric_samples: list[Sample] = field(default_factory=list)
    """Karpenter's unhealthy-replacement counters for the pool (the only trace before v1.8)."""

    @property
    def metric_count(self) -> int:
        return sum(max(1, round(s.value)) for s in self.metric_samples)

    @property
    def count(self) -> int:
        """Replacements as unhealthy: what the objects and events show, or the counters if they saw more."""
        return max(len(self.replacements), self.metric_count)


@check(code="GT203", slug="node-remediation-loop", title="No node is stuck in a reboot or replace loop",
       severity=Severity.ERROR, requires=("events",),
       optional=("nodes", "nodeclaims", "pods", "nodepools", "prometheus"))
def node_remediation_loop(snap: Snapshot) -> Iterator[Finding | int]:
    """A node reboots again and again, or a NodePool's nodes keep being replaced as unhealthy.

    Why it matters:
    Automatic remediation (node-problem-detector + a rebooter such as medik8s or kured, EC2
    auto-recovery, or Karpenter node repair) fixes a transient GPU fault with a reboot or a new
    node. When the fault comes back, it loops: every cycle restarts or evicts every pod on the
    node, training jobs never finish, and a bad GPU that should go back to the vendor stays
    hidden. A loop should page a human, not run all night.

    Fix:
    Stop the loop rather than reboot again: cordon and taint the node (nothing is evicted), or
    replace the instance so EC2 places it on different hardware. When a NodePool's new nodes
    all fail the same way, the host is not the problem: exclude the failing instance type or
    zone, or pin the previous AMI, and pause node repair while you look.
    """
    idx = snap.index
    loops = node_loops(snap)
    yield _examined(snap)
    for loop in loops:
        yield _node_finding(snap, loop, idx.node.get(loop.node))
    for pl in pool_loops(snap, metric=metric_repairs(snap)):
        yield _pool_finding(snap, pl)


def _in_window(snap: Snapshot, e: Event, window: float) -> bool:
    when = e.last_seen or e.first_seen
    return when is None or snap.taken_at - when <= timedelta(seconds=window)


def node_loops(snap: Snapshot, *, window: float = REBOOT_WINDOW_SECONDS, min_reboots: int = MIN_REBOOTS,
               min_flaps: int = MIN_NOT_READY_FLAPS) -> list[NodeLoop]:
    """Nodes whose events show `min_reboots` reboots or `min_flaps` NotReady transitions within `window`."""
    by_node: dict[str, NodeLoop] = {}
    flaps_by_source: dict[str, Counter[str]] = defaultdict(Counter)
    events = _events_of(snap, "Node")
    if min_reboots > 0 and min_flaps > 0:
        # Other reasons only open an empty loop, which such thresholds never report.
        events = _loop_events(snap)
    for e in events:
        if not _in_window(snap, e, window):
            continue
        loop = by_node.setdefault(e.involved_name, NodeLoop(e.involved_name))
        if e.reason == "Rebooted":
            loop.reboots.append(e)
            m = _BOOT_ID_RE.search(e.message)
            if m and m.group(1) not in loop.boot_ids:
                loop.boot_ids.append(m.group(1))
            loop.reboot_count += max(e.count, 1)
        elif e.reason == "NodeNotReady":
            loop.not_ready.append(e)
            # kubelet and node-controller may both report one transition: count the source that saw most.
            flaps_by_source[e.involved_name][e.source or "?"] += max(e.count, 1)
        elif e.reason in ("RegisteredNode", "Starting", "NodeReady"):
            loop.supporting.append(e)
        else:
            continue
        for t in (e.first_seen, e.last_seen):
            if t is not None:
                loop.first = t if loop.first is None or t < loop.first else loop.first
                loop.last = t if loop.last is None or t > loop.last else loop.last
    out = []
    for name, loop in sorted(by_node.items()):
        loop.reboot_count = max(loop.reboot_count, len(loop.boot_ids))
        loop.flap_count = max(flaps_by_source[name].values(), default=0)
        if loop.reboot_count >= min_reboots or loop.flap_count >= min_flaps:
            out.append(loop)
    return out


def _is_repair_event(e: Event) -> bool:
    if e.reason == "DisruptionTerminating":
        return "unhealthy" in e.message.lower()
    return e.reason == "Unhealthy"


def metric_repairs(snap: Snapshot) -> dict[str, list[Sample]]:
    """Replacements as unhealthy per NodePool from Karpenter's counters over REPAIR_WINDOW; {} without them.

    Before v1.8 node repair force-deletes the claim within a minute and leaves only a log line and
    these counters. Where both counters are scraped, the specific one (condition, AMI) is used.
    """
    try:
        facts = facts_for(snap, KARPENTER, "unhealthy_repairs")
    except MetricUnavailable:
        return {}
    found: dict[tuple[str, bool], list[Sample]] = defaultdict(list)
    for s in facts.get("unhealthy_repairs"):
        if s.labels.get("nodepool"):
            found[(s.labels["nodepool"], "unhealthy_disrupted" in s.query)].append(s)
    return {pool: ss for (pool, specific), ss in found.items() if specific or (pool, True) not in found}


def pool_loops(snap: Snapshot, *, window: float = REPLACEMENT_WINDOW_SECONDS, min_replacements: int = MIN_REPLACEMENTS,
               metric: dict[str, list[Sample]] | None = None) -> list[PoolLoop]:
    """NodePools with `min_replacements` NodeClaims replaced as Unhealthy within `window` (events and objects,
    or `metric`: the counters of `metric_repairs`)."""
    idx = snap.index
    found: dict[str, Replacement] = {}

    def add(r: Replacement) -> None:
        old = found.get(r.key)
        if old is None or (r.when and (old.when is None or r.when > old.when)):
            found[r.key] = r

    cutoff = snap.taken_at - timedelta(seconds=window)
    repairs = _repair_events(snap)
    for e in repairs:
        if not _in_window(snap, e, window):
            continue
        if e.involved_kind == "NodeClaim":
            claim = idx.nodeclaim.get(e.involved_name)
            add(Replacement(e.involved_name, pool_of_claim_name(snap, e.involved_name), e.last_seen,
                            claim.instance_type if claim else "", claim.zone if claim else "", e,
                            claim.node_name if claim else ""))
            continue
        node = idx.node.get(e.involved_name)
        if node is None:
            continue  # a gone node's disruption is counted through its NodeClaim's own event
        claim = idx.nodeclaim_by_node.get(node.name)
        add(Replacement(claim.name if claim else f"node/{node.name}",
                        node.nodepool or (claim.nodepool if claim else ""),
                        e.last_seen, node.instance_type, node.zone, e, node.name))
    claims = _repair_claims(snap)
    for claim, reason, node in claims:
        when: datetime | None = None
        if reason is not None and reason.status == "True" and reason.reason == "Unhealthy":
            when = reason.last_transition or claim.meta.deleting
        elif claim.meta.deleting and node is not None and _past_repair_deadline(snap, node):
            when = claim.meta.deleting  # Karpenter before v1.8 deleted unhealthy claims without an event
        if when is not None and when >= cutoff:
            add(Replacement(claim.name, claim.nodepool, when,
                            claim.instance_type or (node.instance_type if node else ""),
                            claim.zone or (node.zone if node else ""), None, claim.node_name))
    by_pool: dict[str, list[Replacement]] = defaultdict(list)
    for r in found.values():
        if r.pool:
            by_pool[r.pool].append(r)
    out = []
    metric = metric or {}
    for pool in sorted(set(by_pool) | set(metric)):
        reps = by_pool.get(pool, [])
        loop = PoolLoop(pool, sorted(reps, key=lambda r: r.when or snap.taken_at), [], metric.get(pool, []))
        if loop.count < min_replacements:
            continue
        loop.blocked = [e for e in _repair_blocked(snap) if _event_in_pool(snap, e, pool)]
        out.append(loop)
    return out


@facts(reads=("events", "nodes"))
def _examined(snap: Snapshot) -> int:
    """Nodes looked at: those with events and those in the snapshot."""
    return len({e.involved_name for e in snap.events if e.involved_kind == "Node"} | {n.name for n in snap.nodes})


@facts(reads=("events",))
def _events_of(snap: Snapshot, kind: str) -> list[Event]:
    """The snapshot's events about objects of one kind, in snapshot order."""
    return [e for e in snap.events if e.involved_kind == kind]


@facts(reads=("events",))
def _loop_events(snap: Snapshot) -> list[Event]:
    """Node events that can open a loop (other reasons only open an empty one)."""
    return [e for e in _events_of(snap, "Node") if e.reason in _LOOP_REASONS]


@facts(reads=("events",))
def _repair_events(snap: Snapshot) -> list[Event]:
    return [e for e in snap.events if e.involved_kind in ("NodeClaim", "Node") and _is_repair_event(e)]


@facts(reads=("events",))
def _repair_blocked(snap: Snapshot) -> list[Event]:
    return [e for e in snap.events if e.reason == "NodeRepairBlocked"]


@facts(reads=("nodeclaims", "nodes"))
def _repair_claims(snap: Snapshot) -> list[tuple[NodeClaim, Condition | None, Node | None]]:
    """NodeClaims node repair may have replaced: marked Unhealthy, or being deleted while their node has a
    repair condition (whether its deadline passed depends on the time: the caller decides)."""
    out = []
    for claim in snap.nodeclaims:
        reason = claim.condition("DisruptionReason")
        node = snap.index.node.get(claim.node_name) if claim.node_name else None
        if (reason is not None and reason.status == "True" and reason.reason == "Unhealthy") or (
                claim.meta.deleting and node is not None and any(
                    c.type in REPAIR_POLICIES and (condition_is_bad(c) or (c.type == "Ready" and c.status == "Unknown"))
                    for c in node.conditions)):
            out.append((claim, reason, node))
    return out


def _past_repair_deadline(snap: Snapshot, node: Node) -> bool:
    for c in node.conditions:
        if c.type in REPAIR_POLICIES and (condition_is_bad(c) or (c.type == "Ready" and c.status == "Unknown")):
            due = repair_deadline(c)
            if due is not None and due <= snap.taken_at:
                return True
    return False


def _event_in_pool(snap: Snapshot, e: Event, pool: str) -> bool:
    if e.involved_kind == "NodePool":
        return e.involved_name == pool
    if f'nodepool "{pool}"' in e.message:
        return True
    if e.involved_kind == "NodeClaim":
        return pool_of_claim_name(snap, e.involved_name) == pool
    node = snap.index.node.get(e.involved_name) if e.involved_kind == "Node" else None
    return node is not None and node.nodepool == pool


def _span(snap: Snapshot, first: datetime | None) -> str:
    """'the last 52m' - from the oldest event counted to the snapshot."""
    return f"the last {human_age(snap.age(first))}" if first is not None else "a short window"


def _node_finding(snap: Snapshot, loop: NodeLoop, node: Node | None) -> Finding:
    ref = ObjectRef("Node", loop.node)
    claim = snap.index.nodeclaim_by_node.get(loop.node) if node else None
    window = human_age(REBOOT_WINDOW_SECONDS)
    ev: list[Evidence] = []
    what: list[str] = []
    if loop.reboot_count:
        latest = max(loop.reboots, key=lambda e: e.last_seen or snap.taken_at)
        ev.append(Evidence.event(ref, "Rebooted", clip(latest.message), loop.reboot_count, snap.age(latest.last_seen),
                                 type_=latest.type,
                                 note=(f"{loop.reboot_count} reboots, boot IDs {', '.join(loop.boot_ids[-5:])}; "
                                       f"loop threshold MIN_REBOOTS={MIN_REBOOTS} within "
                                       f"REBOOT_WINDOW_SECONDS={window}")))
        what.append(f"rebooted {loop.reboot_count} times")
    if loop.flap_count:
        latest = max(loop.not_ready, key=lambda e: e.last_seen or snap.taken_at)
        ev.append(Evidence.event(ref, "NodeNotReady", clip(latest.message), loop.flap_count,
                                 snap.age(latest.last_seen), type_=latest.type,
                                 note=(f"went NotReady {loop.flap_count} times; threshold "
                                       f"MIN_NOT_READY_FLAPS={MIN_NOT_READY_FLAPS} within {window}")))
        what.append(f"went NotReady {loop.flap_count} times")
    for reason in ("RegisteredNode", "Starting"):
        evs = [e for e in loop.supporting if e.reason == reason]
        if evs:
            ev.append(Evidence.event(ref, reason, clip(evs[-1].message), sum(max(e.count, 1) for e in evs),
                                     snap.age(evs[-1].last_seen), type_=evs[-1].type))
    span = _span(snap, loop.first)
    ev.append(Evidence.field(ref, "events window", {"first": stamp(loop.first), "last": stamp(loop.last)},
                             note="the API server keeps events 1h by default (--event-ttl): older cycles are not "
                                  "counted, so the loop may be longer"))
    if node is None:
        ev.append(Evidence.absence(ref, f"node {loop.node}", note="the node no longer exists; it was replaced"))
    else:
        ready = next((c for c in node.conditions if c.type == "Ready"), None)
        if ready is not None:
            ev.append(Evidence.condition(ref, ready.as_dict(), snap.age(ready.last_transition)))
        for c in node.conditions:
            if c.type != "Ready" and condition_is_bad(c) and c.type not in ("MemoryPressure", "DiskPressure",
                                                                              "PIDPressure", "NetworkUnavailable"):
                ev.append(Evidence.condition(ref, c.as_dict(), snap.age(c.last_transition)))
        mig = node.labels.get("nvidia.com/mig.config.state")
        if mig:
            ev.append(Evidence.field(ref, "metadata.labels[nvidia.com/mig.config.state]", mig,
                                     note="the GPU Operator MIG manager reboots nodes to apply MIG layouts"))

    commands = [f"kubectl get events -A --field-selector involvedObject.kind=Node,involvedObject.name={loop.node} "
                f"--sort-by=.lastTimestamp"]
    if node is None:
        text = (f"{loop.node} {' and '.join(what)} in {span} and is gone now. Check whether its replacement "
                f"does the same (the NodePool view of this check), and find which tool rebooted it.")
        return Finding(subject=ref, title=f"{loop.node} {' and '.join(what)} in {span} (since {stamp(loop.first)}): "
                                          f"remediation loop", evidence=tuple(ev),
                       remediation=Remediation(text, tuple(commands)))
    radius = blast_radius(snap, node, claim)
    iid = instance_id(node.provider_id)
    commands = [f"kubectl cordon {node.name}",
                f"kubectl taint node {node.name} gputui.dev/quarantine=remediation-loop:NoSchedule",
                f"gputui debug node/{node.name}"] + commands
    if claim is not None:
        commands.append(f"kubectl delete nodeclaim {claim.name}")
    elif iid:
        commands += [f"kubectl drain {node.name} --ignore-daemonsets --delete-emptydir-data",
                     f"aws ec2 terminate-instances --instance-ids {iid}"]
    text = (
        f"Stop the loop instead of letting it reboot again: every reboot restarts all pods on the node and the "
        f"fault comes back. Options by blast radius: (1) cordon it and add a quarantine taint - nothing is "
        f"evicted, {radius.describe()} keep running, no new pods land, and the taint survives tools that uncordon "
        f"after a reboot (kured, draino, medik8s); pause the tool that reboots it. (2) Replace the instance so "
        f"EC2 puts it on different hardware ("
        + (f"`kubectl delete nodeclaim {claim.name}`; Karpenter drains it and launches a replacement"
           if claim else f"drain, then terminate {iid or 'the instance'}")
        + f") - evicts {radius.describe()}. (3) Note the Xid from `gputui debug node/{node.name}`; if it recurs, "
        f"report instance {iid or node.provider_id or node.name} to AWS Support as bad hardware."
    )
    gpu = accelerator_total(node.capacity) or radius.gpus_total
    title = (f"{node.name} ({node.instance_type or ('GPU node' if gpu else 'node')}) {' and '.join(what)} "
             f"in {span} (since {stamp(loop.first)}): remediation loop")
    return Finding(subject=ref, title=title, evidence=tuple(ev), remediation=Remediation(text, tuple(commands)),
                   related=((claim.ref,) if claim else ()) + radius.refs)


def _pool_finding(snap: Snapshot, pl: PoolLoop) -> Finding:
    ref = ObjectRef("NodePool", pl.pool)
    reps = pl.replacements
    first = min((r.when for r in reps if r.when), default=None)
    last = max((r.when for r in reps if r.when), default=None)
    by_metric = pl.metric_count > len(reps)
    span = f"the last {in_words(REPAIR_WINDOW)}" if by_metric else _span(snap, first)
    types = Counter(r.instance_type or "unknown" for r in reps)
    zones = Counter(r.zone or "unknown" for r in reps)
    # Name the shape in the title only when every replaced claim is known to share it.
    shape = ", ".join(x for x in (next(iter(types)) if len(types) == 1 and "unknown" not in types else "",
                                  next(iter(zones)) if len(zones) == 1 and "unknown" not in zones else "") if x)
    ev: list[Evidence] = []
    for r in reps[-5:]:
        subject = ObjectRef("NodeClaim", r.key) if not r.key.startswith("node/") else ObjectRef("Node", r.key[5:])
        if r.evidence is not None:
            ev.append(Evidence.event(subject, r.evidence.reason, clip(r.evidence.message), r.evidence.count,
                                     snap.age(r.evidence.last_seen), type_=r.evidence.type,
                                     note=" ".join(x for x in (r.instance_type, r.zone) if x)))
        else:
            ev.append(Evidence.field(subject, "status.conditions[DisruptionReason]", "Unhealthy",
                                     note=f"deleted by node repair at {stamp(r.when)}"))
    for sample in pl.metric_samples[:5]:
        what = ", ".join(f"{k}={sample.labels[k]}" for k in ("condition", "image_id", "capacity_type")
                         if sample.labels.get(k))
        ev.append(metric_evidence(ref, sample, value=max(1, round(sample.value)),
                                  note=f"replaced as unhealthy by node repair in the last {in_words(REPAIR_WINDOW)}"
                                       + (f" ({what})" if what else "")))
    if reps:
        ev.append(Evidence.field(ref, "replaced instance types / zones",
                                 {"instance types": dict(types), "zones": dict(zones)},
                                 note="unknown = the NodeClaim is gone and its event does not say"))
    ev.append(Evidence.field(ref, "unhealthy replacements", pl.count,
                             note=(f"{pl.count} NodeClaims replaced as Unhealthy "
                                   + (f"in the last {in_words(REPAIR_WINDOW)} by Karpenter's counters (no events or "
                                      "conditions left: Karpenter before v1.8 deletes them without one)" if by_metric
                                      else f"between {stamp(first)} and {stamp(last)}")
                                   + f"; loop threshold MIN_REPLACEMENTS={MIN_REPLACEMENTS} within "
                                   f"REPLACEMENT_WINDOW_SECONDS={human_age(REPLACEMENT_WINDOW_SECONDS)}")))
    idx = snap.index
    cutoff = snap.taken_at - timedelta(seconds=REPLACEMENT_WINDOW_SECONDS)
    claims = idx.nodeclaims_by_pool.get(pl.pool, [])
    fresh = [c for c in claims if c.meta.created and c.meta.created >= cutoff and not c.meta.deleting]
    deleting = [c for c in claims if c.meta.deleting]
    if claims:
        ev.append(Evidence.field(ref, "nodeclaims", {"created in window": len(fresh), "deleting": len(deleting),
                                                     "total": len(claims)},
                                 note="replacements launched while the old ones terminate"))
    causes: Counter[str] = Counter()
    nodes = idx.nodes_by_pool.get(pl.pool, [])
    for n in nodes:
        for c in n.conditions:
            if c.type in REPAIR_POLICIES and (condition_is_bad(c) or (c.type == "Ready" and c.status == "Unknown")):
                causes[f"{c.type}={c.status} ({c.reason or 'no reason'})"] += 1
    for cause, count in causes.most_common(3):
        ev.append(Evidence.field(ref, "nodes with a repair condition", cause, note=f"{count} current node(s)"))
    if pl.blocked:
        e = pl.blocked[-1]
        ev.append(Evidence.event(e.involved, e.reason, clip(e.message), sum(max(x.count, 1) for x in pl.blocked),
                                 snap.age(e.last_seen), type_=e.type,
                                 note="repair is now paused: too many nodes in the pool are unhealthy"))

    pods = [p for n in nodes for p in idx.pods_by_node.get(n.name, ()) if not p.terminal and not p.is_daemonset]
    gpu_pods = [p for p in pods if p.gpus > 0]
    gpus = sum(accelerator_total(n.capacity) for n in nodes)
    radius = (f"{len(nodes)} node(s) with {gpus:g} GPUs running {len(pods)} pod(s), "
              f"{len(gpu_pods)} of them GPU pods holding {sum(p.gpus for p in gpu_pods):g} GPUs")
    commands = [f"kubectl get nodeclaims -l karpenter.sh/nodepool={pl.pool} -o wide",
                f"kubectl get nodes -l karpenter.sh/nodepool={pl.pool} "
                # Quoted: unquoted, the shell eats the backslashes and TYPE always shows <none>.
                f"-o 'custom-columns=NAME:.metadata.name,TYPE:.metadata.labels.node\\.kubernetes\\.io/instance-type,"
                f"AGE:.metadata.creationTimestamp'",
                "kubectl get events -A --field-selector reason=DisruptionTerminating --sort-by=.lastTimestamp"]
    top_type = next((t for t, _ in types.most_common() if t != "unknown"), "")
    if top_type and types[top_type] >= MIN_REPLACEMENTS:
        commands.append(
            f"kubectl patch nodepool {pl.pool} --type=json -p '[{{\"op\":\"add\",\"path\":\"/spec/template/spec/"
            f"requirements/-\",\"value\":{{\"key\":\"node.kubernetes.io/instance-type\",\"operator\":\"NotIn\","
            f"\"values\":[\"{top_type}\"]}}}}]'")
    ns = '"${KARPENTER_NAMESPACE:-kube-system}"'
    commands += [f"helm list -n {ns} -f '^karpenter$'",
                 f"helm upgrade karpenter oci://public.ecr.aws/karpenter/karpenter -n {ns} "
                 "--version <chart version listed above> --reuse-values --set settings.featureGates.nodeRepair=false"]
    text = (
        f"Karpenter node repair keeps replacing {pl.pool} nodes and the new ones fail the same way, so another "
        f"replacement will not fix it. Stop the loop: if the failures share an instance type or zone "
        f"({shape or 'see the evidence'}), exclude it from the NodePool - existing nodes of that type then drift "
        f"and are replaced one at a time within the disruption budget; if every new node shows the same condition or "
        f"Xid, suspect the AMI or driver and pin the previous AMI in the EC2NodeClass amiSelectorTerms - all nodes of "
        f"the pool drift. To pause repair while you investigate, turn off the NodeRepair feature gate - nothing is "
        f"evicted but broken nodes stay. Each repair drains a whole node; the pool now has {radius}."
    )
    title = (f"NodePool {pl.pool}: {pl.count} nodes replaced as Unhealthy in {span}"
             + (f" ({shape})" if shape else "") + ": node repair is looping")
    related = tuple(ObjectRef("NodeClaim", r.key) for r in reps if not r.key.startswith("node/")
                    and r.key in idx.nodeclaim) + tuple(p.ref for p in gpu_pods)
    return Finding(subject=ref, title=title, evidence=tuple(ev), remediation=Remediation(text, tuple(commands)),
                   related=related)
