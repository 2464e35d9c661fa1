"""Why Karpenter will not disrupt a node: do-not-disrupt, PDBs, budgets, policy, and its own events."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import cached_property

from diagnostics.facts.matching import selector_matches
from diagnostics.facts.provider import derived, facts, per_snapshot
from diagnostics.model import Evidence, ObjectRef
from diagnostics.records import Budget, Event, Node, NodeClaim, NodePool, Pdb, Pod, Taint
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import budget_active, human_age, last_cron_hit, parse_go_duration

DO_NOT_DISRUPT = "karpenter.sh/do-not-disrupt"
EVENT_MAX_AGE = timedelta(hours=1)
"""Disruption events older than this describe a state that may have passed."""

# Event texts, current and older generations (core statenode.go / disruption/types.go / events.go).
_POD_REF = re.compile(r'\(Pod=([^/\s)]+)/([^\s)]+)\)|[Pp]od "([^"/]+)/([^"]+)"')
_PDB_REF = re.compile(r"PodDisruptionBudget(?:\(s\))?=\[?([^\])]+)\]?|(?i:pdb)\s+\"?([^\"\s]+/[^\"\s]+)\"?\s+prevents")
"""v1: `Pdb prevents pod evictions (PodDisruptionBudget=[ns/name])`; older: `PDB "ns/name" prevents`,
`Cannot disrupt Node: pdb "ns/name" prevents pod evictions`, `pdb ns/name prevents pod evictions`."""
_TAINT_PATCH = ("kubectl patch nodepool {pool} --type merge -p '{{\"spec\":{{\"template\":{{\"spec\":{{\"taints\":"
                "[{{\"key\":\"nvidia.com/gpu\",\"value\":\"true\",\"effect\":\"NoSchedule\"}}]}}}}}}}}'")
_POOL_BUDGET = re.compile(r"No allowed disruptions(?: for disruption reason (\w+))? due to blocking budget")


@dataclass(frozen=True, slots=True)
class Blocker:
    """One reason a node stays: what, the evidence, the fix, and the objects involved."""

    kind: str
    """pod-annotation | node-annotation | pdb | budget | consolidate-never | when-empty | unconsolidatable | event."""
    summary: str
    evidence: tuple[Evidence, ...]
    fix: str
    commands: tuple[str, ...] = ()
    refs: tuple[ObjectRef, ...] = ()


@dataclass
class NodeDisruption:
    """The disruption-relevant facts about one node, gathered once."""

    node: Node
    claim: NodeClaim | None
    pool: NodePool | None
    pods: list[Pod]
    """Active (non-terminal) pods bound to the node."""
    blockers: list[Blocker] = field(default_factory=list)

    @cached_property
    def workload_pods(self) -> list[Pod]:
        """Pods Karpenter would have to reschedule (not DaemonSet, not mirror). Do not modify (computed once)."""
        return [p for p in self.pods if not p.is_daemonset and not _is_mirror(p)]

    @property
    def empty(self) -> bool:
        return not self.workload_pods

    @cached_property
    def annotated_pods(self) -> list[Pod]:
        """Pods carrying karpenter.sh/do-not-disrupt (whether it still blocks depends on the time)."""
        return [p for p in self.pods if DO_NOT_DISRUPT in p.meta.annotations]


def _is_mirror(pod: Pod) -> bool:
    meta = pod.meta
    if "kubernetes.io/config.mirror" in meta.annotations:
        return True
    for o in meta.owners:
        if o.get("kind") == "Node":
            return True
    return False


def _recent(snap: Snapshot, e: Event) -> bool:
    when = e.last_seen or e.first_seen
    return when is not None and snap.taken_at - when <= EVENT_MAX_AGE


def do_not_disrupt_state(pod: Pod, now: datetime) -> tuple[bool, str]:
    """(blocks now?, explanation) for a pod's karpenter.sh/do-not-disrupt annotation.

    "true" blocks indefinitely; a Go duration blocks until pod start + duration (Karpenter v1.12+: before, only
    "true" blocked); anything else is ignored by Karpenter (it emits InvalidDoNotDisruptAnnotation).
    """
    raw = pod.meta.annotations.get(DO_NOT_DISRUPT)
    if raw is None:
        return False, ""
    if raw == "true":
        return True, '"true": blocks voluntary disruption indefinitely'
    seconds = parse_go_duration(raw)
    if seconds is None:
        return False, f"{raw!r} is not \"true\" or a duration: Karpenter ignores it"
    if pod.started is None:
        return True, f"{raw}: grace period counts from pod start, which is unknown"
    until = pod.started + timedelta(seconds=seconds)
    stamp = until.strftime("%Y-%m-%dT%H:%M:%SZ")
    if now >= until:
        return False, f"{raw} from pod start: elapsed at {stamp} ({human_age((now - until).total_seconds())} ago)"
    return True, (f"{raw} from pod start: blocks until {stamp} (in {human_age((until - now).total_seconds())}) "
                  'on Karpenter v1.12+ (earlier versions honour only "true")')


def do_not_disrupt_static(pod: Pod) -> bool | None:
    """do_not_disrupt_state(pod, now)[0] where it does not depend on `now`; None where it does (a duration
    counted from a known pod start), so callers may carry the answer."""
    raw = pod.meta.annotations.get(DO_NOT_DISRUPT)
    if raw is None:
        return False
    if raw == "true":
        return True
    if parse_go_duration(raw) is None:
        return False
    return True if pod.started is None else None


def budget_window_end(b: Budget, now: datetime) -> datetime | None:
    """When the scheduled budget's window that holds `now` ends (its last hit at or before `now` + duration)."""
    dur = parse_go_duration(b.duration)
    last = last_cron_hit(b.schedule, now) if b.schedule and dur is not None else None
    return last + timedelta(seconds=dur) if last is not None and dur is not None else None


def zero_budgets(pool: NodePool, reason: str, now: datetime) -> list[tuple[int, Budget, bool | None]]:
    """Budgets allowing 0 disruptions for `reason` (Empty/Underutilized/Drifted) that are in force at `now`.

    Returns (index, budget, active) where active None means the schedule cannot be parsed. Karpenter fails
    closed on that: the budget allows 0 whatever its `nodes`, and the error of any budget, whatever its
    reasons, makes every reason allow 0 (core pkg/apis/v1/nodepool.go GetAllowedDisruptionsByReason,
    MustGetAllowedDisruptions).
    """
    out: list[tuple[int, Budget, bool | None]] = []
    for i, b in enumerate(pool.budgets):
        active = True if not b.schedule else budget_active(b.schedule, b.duration, now)
        if active is None:
            out.append((i, b, None))
            continue
        if not active or not _allows_none(b.nodes) or (b.reasons and reason not in b.reasons):
            continue
        out.append((i, b, active))
    return out


def _allows_none(nodes: str) -> bool:
    """`nodes` scales to 0: "0", "0%" (or "00"; percentages round up, so any other one allows a node)."""
    text = nodes.strip().removesuffix("%")
    return text.isdigit() and int(text) == 0


def blockers_for(snap: Snapshot, nd: NodeDisruption) -> list[Blocker]:
    """Every reason found in the snapshot why Karpenter leaves this node alone.

    An idle fleet asks this of hundreds of nodes per run: what reads records only (node annotation,
    PDBs, policy, which events could speak) is carried per node, what is the NodePool's alone is
    worked out once per snapshot; only pod annotations and events are judged against the time here.
    """
    now = snap.taken_at
    idx = snap.index
    claim_events = idx.events("NodeClaim", nd.claim.name) if nd.claim is not None else None
    static = _static_blockers(snap, nd, _pdbs_by_namespace(snap), idx.events("Node", nd.node.name), claim_events,
                              within=snap)
    out: list[Blocker] = list(static.node)
    seen_pods: set[tuple[str, str]] = set()

    # Pod annotations.
    for p in nd.annotated_pods:
        blocks, why = do_not_disrupt_state(p, now)
        if not blocks:
            continue
        seen_pods.add((p.namespace, p.name))
        out.append(Blocker(
            "pod-annotation", f"pod {p.namespace}/{p.name} has {DO_NOT_DISRUPT}={p.meta.annotations[DO_NOT_DISRUPT]}",
            (Evidence.field(p.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]", p.meta.annotations[DO_NOT_DISRUPT],
                            note=why),),
            "Remove the annotation (or delete the pod if its work is done); if a controller template sets it, "
            "change the template too.",
            (f"kubectl annotate pod -n {p.namespace} {p.name} {DO_NOT_DISRUPT}- --overwrite",), (p.ref,)))

    # PDBs with no disruptions left that select a pod here.
    out += static.pdbs

    # NodePool-level reasons.
    pool = nd.pool
    if pool is not None:
        reason = "Empty" if nd.empty else "Underutilized"
        out += _pool_blockers(snap, pool.name, reason, pool=pool)
        out += static.policy

    # Karpenter's own words on the Node and NodeClaim.
    if static.events:
        seen_pdbs = set(static.pdb_keys)
        latest: dict[str, Event] = {}
        for e in static.events:
            if _recent(snap, e):
                latest[e.message] = e
        for e in sorted(latest.values(), key=lambda e: e.last_seen or now, reverse=True):
            out.extend(_event_blocker(snap, nd, e, seen_pods, seen_pdbs))
    return out


@dataclass(frozen=True, slots=True)
class _StaticBlockers:
    """The parts of blockers_for that read records only, in the order it reports them."""

    node: tuple[Blocker, ...]
    """The node's own do-not-disrupt annotation."""
    pdbs: tuple[Blocker, ...]
    pdb_keys: frozenset[str]
    policy: tuple[Blocker, ...]
    """A WhenEmpty pool with non-DaemonSet pods left on the node."""
    events: tuple[Event, ...]
    """DisruptionBlocked/Unconsolidatable events on the node, then its NodeClaim, that _event_blocker does not
    dismiss by their text alone (whether recent is the caller's)."""


@derived
def _static_blockers(nd: NodeDisruption, pdbs: object, node_events: object, claim_events: object, *,
                     within: Snapshot) -> _StaticBlockers:
    """What blockers_for finds whatever the time: carried per node while the node's facts, the PDBs and the
    events on its Node and NodeClaim are the same objects (it reads no more of the snapshot `within`)."""
    snap = within
    node = nd.node
    own: list[Blocker] = []
    # Node annotation: only the exact value "true" blocks.
    if node.meta.annotations.get(DO_NOT_DISRUPT) == "true":
        own.append(Blocker(
            "node-annotation", f'node annotated {DO_NOT_DISRUPT}="true"',
            (Evidence.field(node.ref, f"metadata.annotations[{DO_NOT_DISRUPT}]", "true"),),
            "Remove the node annotation (it may come from the NodePool's template annotations).",
            (f"kubectl annotate node {node.name} {DO_NOT_DISRUPT}-",), (node.ref,)))
    pdb_blockers, pdb_keys = _pdb_blockers(snap, nd, _pdbs_by_namespace(snap))
    policy: list[Blocker] = []
    pool = nd.pool
    if pool is not None and pool.consolidation_policy == "WhenEmpty" and nd.workload_pods:
        names = [f"{p.namespace}/{p.name}" for p in nd.workload_pods]
        policy.append(Blocker(
            "when-empty", f"NodePool {pool.name} consolidates only WhenEmpty but {len(names)} non-DaemonSet "
                          f"pod(s) remain ({', '.join(names[:3])})",
            (Evidence.field(pool.ref, "spec.disruption.consolidationPolicy", "WhenEmpty"),
             Evidence.field(node.ref, "non-DaemonSet pods", names[:10],
                            note="none requests a GPU: they keep the GPU node alive")),
            "Keep CPU pods off GPU nodes (a NoSchedule GPU taint on the pool) or move them; with "
            "WhenEmpty the node stays as long as any pod remains."
            + ("" if pool.taints else " Adding the taint to the pool's template drifts every node of the pool "
               "(Karpenter replaces them, evicting their pods): add a Drifted budget or do it in a quiet hour."),
            tuple(f"kubectl delete pod -n {p.namespace} {p.name}" for p in nd.workload_pods[:3])
            + (() if pool.taints else (_TAINT_PATCH.format(pool=pool.name),)),
            tuple(p.ref for p in nd.workload_pods[:10])))
    events = list(snap.index.events("Node", node.name))
    if nd.claim is not None:
        events += snap.index.events("NodeClaim", nd.claim.name)
    has_pool = nd.pool is not None
    said = tuple(e for e in events if e.reason in ("DisruptionBlocked", "Unconsolidatable")
                 and not _dismissed(e.message, has_pool))
    return _StaticBlockers(tuple(own), tuple(pdb_blockers), pdb_keys, tuple(policy), said)


@derived
def _pdb_blockers(nd: NodeDisruption, pdbs_by_ns: dict[str, list[Pdb]]) -> tuple[list[Blocker], frozenset[str]]:
    """PDBs with no disruptions left that select a pod on the node (each once), and their namespace/name keys.

    Reads the node's pods and the PDBs only: carried per node while both are the same records.
    """
    out: list[Blocker] = []
    seen: set[str] = set()
    for p in nd.pods:
        if do_not_disrupt_static(p) is True:
            continue  # never evicted, its PDBs are not consulted (a duration may run out: those are)
        pdbs, holding = _holding_pdbs(pdbs_by_ns.get(p.namespace, ()), p)
        if len(pdbs) > 1:
            keys = [f"{b.meta.namespace}/{b.meta.name}" for b in pdbs]
            if "+".join(keys) in seen:
                continue
            seen.update(("+".join(keys), *keys))
            out.append(Blocker(
                "pdb", f"pod {p.namespace}/{p.name} is selected by {len(pdbs)} PDBs ({', '.join(keys[:3])}): "
                       "eviction refuses that",
                tuple(Evidence.field(b.ref, "spec.selector", b.selector, note=f"selects pod {p.namespace}/{p.name}")
                      for b in pdbs[:3]),
                "Make each pod match at most one PodDisruptionBudget (narrow or delete the extra ones).",
                tuple(f"kubectl get pdb -n {b.meta.namespace} {b.meta.name} -o yaml" for b in pdbs[:3]),
                tuple(b.ref for b in pdbs) + (p.ref,)))
            continue
        for pdb in holding:
            key = f"{pdb.meta.namespace}/{pdb.meta.name}"
            if key in seen:
                continue
            seen.add(key)
            out.append(_pdb_blocker(pdb, p))
    return out, frozenset(seen)


_DISRUPTED_TAINT = Taint("karpenter.sh/disrupted", "", "NoSchedule")


def tolerates_disrupted(pod: Pod) -> bool:
    """The pod tolerates karpenter.sh/disrupted:NoSchedule (often a blanket `operator: Exists`): Karpenter's drain
    neither evicts it nor waits for it (core pkg/utils/pod/scheduling.go IsEvictable, IsDrainable)."""
    return any(t.tolerates(_DISRUPTED_TAINT) for t in pod.tolerations)


def _holding_pdbs(pdbs: Sequence[Pdb], pod: Pod) -> tuple[list[Pdb], list[Pdb]]:
    """(PDBs selecting the pod, those of them that refuse its eviction now), as Karpenter's pdb.Limits reads them
    (core pkg/utils/pdb/pdb.go isEvictable): a pod it never evicts (a mirror pod, one tolerating
    karpenter.sh/disrupted:NoSchedule) is held by none; an unready pod under unhealthyPodEvictionPolicy: AlwaysAllow
    neither. The caller handles do-not-disrupt (it depends on the time) and more than one PDB (never evictable)."""
    if _is_mirror(pod) or tolerates_disrupted(pod):
        return [], []
    selecting = [b for b in pdbs if pdb_selects(b, pod)]
    unready = any(c.type == "Ready" and c.status == "False" for c in pod.conditions)
    holding = [b for b in selecting if b.disruptions_allowed == 0
               and not (unready and b.unhealthy_pod_eviction_policy == "AlwaysAllow")]
    return selecting, holding


def pdb_selects(pdb: Pdb, pod: Pod) -> bool:
    """policy/v1 as Karpenter and the eviction API read it (metav1.LabelSelectorAsSelector): an empty selector
    selects every pod of the namespace, an absent one none."""
    if not pdb.has_selector:
        return False
    return selector_matches(pdb.selector, pod.meta.labels)


@per_snapshot
def _pool_blockers(snap: Snapshot, name: str, reason: str, *, pool: NodePool) -> list[Blocker]:
    """What stops every node of the pool (`name`) whose disruption would be for `reason`: a budget allowing none
    right now (or Karpenter saying the budget is used up), consolidateAfter: Never. Once per snapshot."""
    now = snap.taken_at
    out: list[Blocker] = []
    pool_event = _pool_budget_event(snap, pool.name, reason)
    event_ev = (Evidence.event(pool.ref, pool_event.reason, pool_event.message, pool_event.count,
                               snap.age(pool_event.last_seen), type_=pool_event.type),) if pool_event else ()
    zeros = zero_budgets(pool, reason, now)
    for n, (i, b, active) in enumerate(zeros):
        end = budget_window_end(b, now)
        if active is None:
            what = (f"budget #{i} nodes={b.nodes} has a schedule Karpenter cannot parse "
                    f"({b.schedule!r} for {b.duration!r}): fails closed")
        elif b.schedule:
            what = (f"budget #{i} nodes={b.nodes} is active now (schedule {b.schedule!r} for {b.duration}"
                    + (f", until {end.strftime('%Y-%m-%dT%H:%M:%SZ')}" if end else "") + ")")
        else:
            what = f"budget #{i} nodes={b.nodes} blocks {reason} disruptions at all times"
        body = {k: v for k, v in (("nodes", b.nodes), ("schedule", b.schedule), ("duration", b.duration),
                                  ("reasons", list(b.reasons))) if v}
        note = ("Karpenter allows 0 for every disruption reason while a budget's schedule does not parse"
                if active is None else f"applies to reason {reason}; most restrictive active budget wins")
        out.append(Blocker(
            "budget", f"NodePool {pool.name} {what}",
            (Evidence.field(pool.ref, f"spec.disruption.budgets[{i}]", body, note=note),)
            + (event_ev if n == 0 else ()),
            "Fix the budget's schedule (a 5-field cron or @daily-style macro, read in UTC)." if active is None else
            "Wait for the window to end, or allow one node at a time for this reason.",
            (f"kubectl edit nodepool {pool.name}",) if active is None else
            (f"kubectl patch nodepool {pool.name} --type json -p "
             f"'[{{\"op\":\"replace\",\"path\":\"/spec/disruption/budgets/{i}/nodes\",\"value\":\"1\"}}]'",),
            (pool.ref,)))
    used_up = None if zeros else _budget_used_up(snap, pool, reason)
    if used_up is not None:
        out.append(Blocker(used_up.kind, used_up.summary, used_up.evidence + event_ev, used_up.fix,
                           used_up.commands, used_up.refs))
    elif pool_event is not None and not zeros:
        # Since v1.1 the event means a budget itself allows 0 (core disruption/helpers.go); v1.0 sent it once
        # nodes being deleted or NotReady had used the budget up.
        out.append(Blocker(
            "budget", f"NodePool {pool.name}: {pool_event.message}", event_ev,
            "Karpenter said so within the hour, but no budget in the spec allows 0 now: a scheduled window may "
            "have closed since, or (Karpenter v1.0) nodes being deleted or NotReady used up the budget.",
            (f"kubectl get nodepool {pool.name} -o jsonpath='{{.spec.disruption.budgets}}'",
             f"kubectl get nodes -l karpenter.sh/nodepool={pool.name}"), (pool.ref,)))
    if pool.consolidate_after.strip() == "Never":
        out.append(Blocker(
            "consolidate-never", f"NodePool {pool.name} has consolidateAfter: Never (consolidation disabled)",
            (Evidence.field(pool.ref, "spec.disruption.consolidateAfter", "Never"),),
            "Set a consolidateAfter (e.g. 30m for GPU nodes) so idle nodes are removed.",
            (f"kubectl patch nodepool {pool.name} --type merge -p "
             "'{\"spec\":{\"disruption\":{\"consolidateAfter\":\"30m\"}}}'",), (pool.ref,)))
    return out


def _budget_used_up(snap: Snapshot, pool: NodePool, reason: str) -> Blocker | None:
    """The pool's budget for `reason` used up by its nodes that are NotReady or being deleted, as Karpenter counts
    (core disruption/helpers.go BuildDisruptionBudgetMapping): allowed = the most restrictive active budget
    (a percentage of the initialized nodes, rounded up) minus those nodes. Since v1.1 no event says so."""
    if snap.status("nodes").partial or snap.status("nodeclaims").partial:
        return None  # a pod's one-shot read narrows them: the pool's nodes cannot be counted
    now = snap.taken_at
    counted, disrupting = _budget_use(snap, pool.name, pool=pool)
    if not disrupting:
        return None
    best: tuple[int, int, Budget] | None = None
    for i, b in enumerate(pool.budgets):
        if b.reasons and reason not in b.reasons:
            continue
        if b.schedule and budget_active(b.schedule, b.duration, now) is not True:
            continue  # inactive (an unparseable one is zero_budgets' and already reported)
        allowed = _scaled(b.nodes, len(counted))
        if allowed is not None and (best is None or allowed < best[0]):
            best = (allowed, i, b)
    if best is None or best[0] > len(disrupting):
        return None
    allowed, i, b = best
    names = [n.name for n in disrupting]
    share = f" of {len(counted)} nodes, rounded up" if b.nodes.strip().endswith("%") else ""
    ev = [Evidence.field(pool.ref, f"spec.disruption.budgets[{i}]", {"nodes": b.nodes, **(
        {"reasons": list(b.reasons)} if b.reasons else {}), **({"schedule": b.schedule, "duration": b.duration}
                                                                 if b.schedule else {})},
                         note=f"{allowed} of {len(counted)} initialized node(s) for reason {reason}")]
    for n in disrupting[:3]:
        if n.meta.deleting is not None:
            ev.append(Evidence.field(n.ref, "metadata.deletionTimestamp", n.meta.deleting.strftime(
                "%Y-%m-%dT%H:%M:%SZ"), note="being deleted: counts against the budget"))
        else:
            ready = next((c for c in n.conditions if c.type == "Ready"), None)
            ev.append(Evidence.field(n.ref, "status.conditions[Ready]", ready.status if ready else None,
                                     note="not Ready: counts against the budget"))
    return Blocker(
        "budget", f"NodePool {pool.name} allows {allowed} {reason} disruption(s) now (budget #{i} nodes={b.nodes}"
                  f"{share}) and {len(names)} node(s) are NotReady or being deleted ({', '.join(names[:3])}): "
                  "none left",
        tuple(ev),
        "Karpenter subtracts the pool's NotReady and deleting nodes from its budget: repair or remove those "
        "(delete their NodeClaims), or raise the budget.",
        (f"kubectl get nodes -l karpenter.sh/nodepool={pool.name}", f"kubectl describe node {names[0]}"),
        (pool.ref, *(n.ref for n in disrupting[:3])))


@per_snapshot
def _budget_use(snap: Snapshot, name: str, *, pool: NodePool) -> tuple[list[Node], list[Node]]:
    """(the pool's initialized Karpenter nodes, those of them NotReady or being deleted), as Karpenter counts them:
    a NodeClaim whose instance is already terminating counts for neither."""
    idx = snap.index
    counted: list[Node] = []
    disrupting: list[Node] = []
    for n in idx.nodes_by_pool.get(pool.name, ()):
        claim = idx.nodeclaim_by_node.get(n.name)
        if claim is None:
            continue  # not Karpenter's (cluster state counts managed nodes only)
        init = claim.condition("Initialized")
        if not ((init is not None and init.status == "True") or n.meta.labels.get("karpenter.sh/initialized") == "true"):
            continue
        term = claim.condition("InstanceTerminating")
        if term is not None and term.status == "True":
            continue
        counted.append(n)
        if n.ready is not True or n.meta.deleting or claim.meta.deleting or any(
                t.key in ("karpenter.sh/disrupted", "karpenter.sh/disruption") for t in n.taints):
            disrupting.append(n)
    return counted, disrupting


def _scaled(nodes: str, total: int) -> int | None:
    """intstr.GetScaledValueFromIntOrPercent(nodes, total, roundUp=true); None when malformed."""
    text = nodes.strip()
    if text.endswith("%"):
        return -(-int(text[:-1]) * total // 100) if text[:-1].isdigit() else None
    return int(text) if text.isdigit() else None


@per_snapshot
def _pool_budget_event(snap: Snapshot, pool: str, reason: str) -> Event | None:
    """The NodePool's latest recent "no allowed disruptions due to blocking budget" event for `reason`.

    Once per snapshot, pool and reason (every idle node of the pool asks). Events are oldest first (those
    without a time sort as of `taken_at`), so the walk back stops at the first one too old to count.
    """
    events = snap.index.events("NodePool", pool)
    said = _blocking_budget_events(snap, events, reason)
    since = snap.taken_at - EVENT_MAX_AGE
    for e in reversed(said):
        when = e.last_seen or e.first_seen
        if when is not None and when < since:
            return None
        if _recent(snap, e):
            return e
    return None


@derived
def _blocking_budget_events(events: list[Event], reason: str) -> list[Event]:
    """A NodePool's blocking-budget events for a reason, oldest first: carried while its events are the same."""
    return [e for e in events if (m := _POOL_BUDGET.search(e.message)) and m.group(1) in (None, reason)]


@facts(reads=("pdbs",))
def _pdbs_by_namespace(snap: Snapshot) -> dict[str, list[Pdb]]:
    """PDBs per namespace (every idle node's blockers look them up)."""
    out: dict[str, list[Pdb]] = {}
    for pdb in snap.pdbs:
        out.setdefault(pdb.meta.namespace or "", []).append(pdb)
    return out


def blocking_pdb(snap: Snapshot, pod: Pod) -> Pdb | None:
    """A PDB that makes an eviction of the pod be refused now: one allowing no disruption, or either of two
    selecting it (the eviction API refuses a pod with more than one)."""
    pdbs_by_ns = _pdbs_by_namespace(snap)
    selecting, holding = _holding_pdbs(pdbs_by_ns.get(pod.namespace, ()), pod)
    return selecting[0] if len(selecting) > 1 else holding[0] if holding else None


def _pdb_blocker(pdb: Pdb, pod: Pod | None) -> Blocker:
    spec, status = pdb.budget, pdb.health
    patch = ('{"spec":{"minAvailable":null,"maxUnavailable":1}}' if "minAvailable" in spec
             else '{"spec":{"maxUnavailable":1}}')
    ns, name = pdb.meta.namespace, pdb.meta.name
    return Blocker(
        "pdb", f"PDB {ns}/{name} allows 0 disruptions" + (f" (selects pod {pod.namespace}/{pod.name})" if pod else ""),
        (Evidence.field(pdb.ref, "status.disruptionsAllowed", pdb.disruptions_allowed,
                        note=", ".join(f"{k}={status[k]}" for k in ("currentHealthy", "desiredHealthy", "expectedPods")
                                       if k in status)
                        + (f"; spec {json.dumps({k: spec[k] for k in ('minAvailable', 'maxUnavailable') if k in spec})}"
                           if any(k in spec for k in ("minAvailable", "maxUnavailable")) else "")),),
        "Scale the workload up so a replica may go, or relax the PDB (maxUnavailable: 1).",
        (f"kubectl get pdb -n {ns} {name} -o wide", f"kubectl patch pdb -n {ns} {name} --type merge -p '{patch}'"),
        (pdb.ref,) + ((pod.ref,) if pod else ()))


def _dismissed(message: str, has_pool: bool) -> bool:
    """_event_blocker returns [] for this text whatever the time (`has_pool`: the node's NodePool is known)."""
    msg = message.removeprefix("(combined from similar events): ")
    if "do-not-disrupt" in msg and _POD_REF.search(msg):
        return False
    if ("pdb" in msg.lower() or "PodDisruptionBudget" in msg) and _PDB_REF.search(msg):
        return False
    if "do-not-disrupt" in msg:
        return True
    if "nominated for a pending pod" in msg.lower() or "isn't initialized" in msg or _deleting(msg):
        return True
    return ("consolidation policy WhenEmpty" in msg or "consolidation disabled" in msg) and has_pool


def _event_blocker(snap: Snapshot, nd: NodeDisruption, e: Event, seen_pods: set[tuple[str, str]],
                   seen_pdbs: set[str]) -> list[Blocker]:
    """Turn a DisruptionBlocked/Unconsolidatable event into a blocker unless the object check already did."""
    msg = e.message.removeprefix("(combined from similar events): ")
    m = _POD_REF.search(msg)
    if m and "do-not-disrupt" in msg:
        ns, name = (m.group(1), m.group(2)) if m.group(1) else (m.group(3), m.group(4))
        if (ns, name) in seen_pods:
            return []
        pod = snap.index.pod.get((ns, name))
        if pod is not None:
            blocks, _ = do_not_disrupt_state(pod, snap.taken_at)
            if not blocks:
                return []  # the event is older than the annotation's expiry or removal
        return [Blocker("pod-annotation", f"pod {ns}/{name} has {DO_NOT_DISRUPT}", (_event_evidence(snap, e),),
                        "Remove the annotation (or delete the pod if its work is done).",
                        (f"kubectl annotate pod -n {ns} {name} {DO_NOT_DISRUPT}- --overwrite",),
                        (ObjectRef("Pod", name, ns),))]
    m = _PDB_REF.search(msg)
    if m and ("pdb" in msg.lower() or "PodDisruptionBudget" in msg):
        keys = [k.strip() for k in (m.group(1) or m.group(2) or "").replace(",", " ").split() if "/" in k]
        out = []
        ev = _event_evidence(snap, e)
        if "multiple PDBs" in msg:  # v1.7+: whatever each allows, a pod two PDBs select is never evicted
            if keys and all(k in seen_pdbs for k in keys):
                return []
            seen_pdbs.update(keys)
            return [Blocker("pdb", f"more than one PDB selects a pod here ({', '.join(keys[:3])}): eviction "
                                   "refuses that", (ev,),
                            "Make each pod match at most one PodDisruptionBudget (narrow or delete the extra ones).",
                            tuple(f"kubectl get pdb -n {k.split('/', 1)[0]} {k.split('/', 1)[1]} -o yaml"
                                  for k in keys[:3]),
                            tuple(ObjectRef("PodDisruptionBudget", k.split("/", 1)[1], k.split("/", 1)[0])
                                  for k in keys))]
        for key in keys:
            if key in seen_pdbs:
                continue
            seen_pdbs.add(key)
            ns, name = key.split("/", 1)
            pdb = next((p for p in snap.pdbs if p.meta.namespace == ns and p.meta.name == name), None)
            if pdb is not None:
                b = _pdb_blocker(pdb, None)
                out.append(Blocker(b.kind, b.summary, b.evidence + (ev,), b.fix, b.commands, b.refs))
            else:
                out.append(Blocker("pdb", f"PDB {key} prevents pod evictions", (ev,),
                                   "Relax the PDB or scale its workload.",
                                   (f"kubectl get pdb -n {ns} {name} -o yaml",),
                                   (ObjectRef("PodDisruptionBudget", name, ns),)))
        return out
    if "do-not-disrupt" in msg:  # node annotation text; the object check above already saw it if still set
        return []
    if "nominated for a pending pod" in msg.lower() or "isn't initialized" in msg or _deleting(msg):
        return []  # transient states, handled elsewhere (pending pods, GT201/GT303)
    if ("consolidation policy WhenEmpty" in msg or "consolidation disabled" in msg) and nd.pool is not None:
        return []  # the pool's own settings are reported from the spec
    return [Blocker("unconsolidatable" if e.reason == "Unconsolidatable" else "event", msg[:300],
                    (_event_evidence(snap, e),), _hint(msg, any(p.wants_accelerator for p in nd.workload_pods)))]


def _event_evidence(snap: Snapshot, e: Event) -> Evidence:
    """The event as evidence (built only for events that become blockers: most are dismissed)."""
    return Evidence.event(e.involved, e.reason, e.message[:300], e.count, snap.age(e.last_seen), type_=e.type)


def _deleting(msg: str) -> bool:
    """`Node is deleting or marked for deletion`; v1.0: `state node is marked for deletion`; older: `Node in the
    process of deletion`."""
    return "deleting" in msg or "marked for deletion" in msg or "process of deletion" in msg


def _hint(msg: str, gpu_pods: bool = False) -> str:
    if ("cheaper node" in msg or "lower-priced node" in msg) and gpu_pods:
        return ("No cheaper instance type in the NodePool fits the GPU pods still here: allow smaller GPU sizes in "
                "the pool's requirements, or pack GPU pods onto fewer nodes.")
    if "cheaper node" in msg or "lower-priced node" in msg:  # older: "Can't replace with a lower-priced node"
        return ("Karpenter found no cheaper replacement for the pods still here (often CPU pods on a GPU node): "
                "move them to CPU nodes with a GPU taint on the pool.")
    if "SpotToSpotConsolidation requires" in msg:  # the gate is on: too few cheaper spot types (core consolidation.go)
        return ("Karpenter replaces a single spot node with a spot node only when at least 15 cheaper spot instance "
                "types fit its pods (to avoid a race to the bottom): allow more GPU instance types in the pool's "
                "requirements, or remove the node manually.")
    if "SpotToSpotConsolidation" in msg:
        return "Enable the SpotToSpotConsolidation feature gate, or remove the node manually."
    return "Read the Karpenter controller log for this node."


def nodes_with_all_pods(snap: Snapshot) -> frozenset[str] | None:
    """The nodes whose pods were all read, None when every node's were.

    A one-shot `diagnose TARGET` reads pods only on the target's own node(s) (and marks pods partial):
    any other node would look emptier than it is, so disruption checks judge those nodes only.
    """
    if not snap.status("pods").partial:
        return None
    if snap.pods_read_on is not None:
        return snap.pods_read_on  # what the one-shot read in full (its target's nodes, a pending pod's broken candidates)
    kind, _, rest = snap.target.partition("/")
    idx = snap.index
    if kind == "node":
        return frozenset((rest,))
    if kind == "pod":
        ns, _, name = rest.partition("/")
        pod = idx.pod.get((ns, name))
        return frozenset((pod.node_name,)) if pod is not None and pod.node_name else frozenset()
    if kind == "nodeclaim":
        claim = idx.nodeclaim.get(rest)
        return frozenset((claim.node_name,)) if claim is not None and claim.node_name else frozenset()
    if kind == "nodepool":
        return frozenset(n.name for n in idx.nodes_by_pool.get(rest, ()))
    return frozenset()


def gather(snap: Snapshot, node: Node) -> NodeDisruption:
    idx = snap.index
    claim = idx.nodeclaim_by_node.get(node.name)
    pool_name = node.nodepool or (claim.nodepool if claim else "")
    pods = [p for p in idx.pods_by_node.get(node.name, ()) if not p.terminal and not p.meta.deleting]
    return NodeDisruption(node, claim, idx.nodepool.get(pool_name), pods)


def refs_of(blockers: Sequence[Blocker]) -> tuple[ObjectRef, ...]:
    return tuple(dict.fromkeys(r for b in blockers for r in b.refs))
