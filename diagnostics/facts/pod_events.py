"""What kube-scheduler and Karpenter last said about a pending pod, and where it is nominated."""

from __future__ import annotations

import re
from dataclasses import dataclass

from diagnostics.facts.messages import (
    KarpenterMessage,
    Nomination,
    SchedulerMessage,
    parse_karpenter_message,
    parse_nominated,
    parse_scheduler_message,
)
from diagnostics.facts.provider import derived, per_snapshot
from diagnostics.model import Evidence
from diagnostics.records import Event, Node, NodeClaim, Pod
from diagnostics.snapshot import Snapshot

MAX_MESSAGE = 300


def clip(text: str, limit: int = MAX_MESSAGE) -> str:
    """Event messages can be many KB (one clause per NodePool); evidence keeps the head."""
    return text if len(text) <= limit else text[: limit - 3] + "..."


@dataclass(frozen=True, slots=True)
class PodScheduling:
    """The latest scheduling verdicts on one pod (None where nothing was said or events are unreadable)."""

    karpenter: Event | None = None
    karpenter_msg: KarpenterMessage | None = None
    scheduler: Event | None = None
    scheduler_msg: SchedulerMessage | None = None
    nominated: Event | None = None
    nomination: Nomination | None = None

    @property
    def karpenter_current(self) -> bool:
        """Karpenter's failure is newer than its last nomination (a nomination after it supersedes it)."""
        if self.karpenter is None:
            return False
        if self.nominated is None:
            return True
        return _when(self.karpenter) >= _when(self.nominated)


def _when(e: Event) -> float:
    t = e.last_seen or e.first_seen
    return t.timestamp() if t else 0.0


def scheduling(snap: Snapshot, pod: Pod) -> PodScheduling:
    """Pick the newest Karpenter FailedScheduling, kube-scheduler FailedScheduling and Nominated events.

    Recognised by message shape as well as source, because events.k8s.io/v1 events from other
    schedulers or older Karpenter builds do not always fill `source.component`.
    """
    if not snap.status("events").state.usable:
        return PodScheduling()
    return _scheduling(snap, pod, snap.index.events("Pod", pod.name, pod.namespace))


@derived
def _scheduling(pod: Pod, events: list[Event]) -> PodScheduling:
    """Depends on the pod and its events only: carried across snapshots while both are the same objects."""
    karp = sched = nom = None
    karp_msg = sched_msg = None
    nomination = None
    born = pod.meta.created
    for e in events:  # oldest first: later wins
        if born is not None and e.last_seen is not None and e.last_seen < born:
            continue  # said about an earlier pod of the same name (StatefulSet replica, re-created Job pod)
        if e.reason == "FailedScheduling":
            km = parse_karpenter_message(e.message)
            if km is not None:
                karp, karp_msg = e, km
                continue
            sm = parse_scheduler_message(e.message)
            if sm is not None:
                sched, sched_msg = e, sm
        elif e.reason == "Nominated":
            n = parse_nominated(e.message)
            if n is not None:
                nom, nomination = e, n
    return PodScheduling(karp, karp_msg, sched, sched_msg, nom, nomination)


def event_evidence(snap: Snapshot, pod: Pod, e: Event | None, note: str = "") -> list[Evidence]:
    if e is None:
        return []
    return [Evidence.event(pod.ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen),
                           note=note or (f"from {e.source}" if e.source else ""), type_=e.type)]


def events_note(snap: Snapshot) -> list[Evidence]:
    """An absence line saying events could not be read, so the reader knows what is missing."""
    st = snap.status("events")
    if st.state.usable:
        return []
    return [Evidence.absence(None, "pod events", note=f"Karpenter/kube-scheduler verdicts not read: {st.reason()}")]


_CLAIM_SUFFIX = re.compile(r"^(.+)-[a-z0-9]{5}$")


def pool_of_claim_name(snap: Snapshot, claim: str) -> str:
    """NodePool of a NodeClaim, also for claims already deleted (Karpenter names them `<pool>-<5 chars>`)."""
    live = snap.index.nodeclaim.get(claim)
    if live is not None and live.nodepool:
        return live.nodepool
    m = _CLAIM_SUFFIX.match(claim)
    if m and m.group(1) in snap.index.nodepool:
        return m.group(1)
    return ""


@per_snapshot
def capacity_errors(snap: Snapshot) -> dict[str, list[Event]]:
    """InsufficientCapacityError events by NodePool, from its NodeClaims live or already deleted; oldest first."""
    out: dict[str, list[Event]] = {}
    if not snap.status("events").state.usable:
        return out
    for e in snap.events:
        if e.reason == "InsufficientCapacityError" and e.involved_kind == "NodeClaim":
            pool = pool_of_claim_name(snap, e.involved_name)
            if pool:
                out.setdefault(pool, []).append(e)
    for evs in out.values():
        evs.sort(key=_when)
    return out


def live_claim(snap: Snapshot, name: str) -> NodeClaim | None:
    """The NodeClaim if it exists and is not being deleted."""
    claim = snap.index.nodeclaim.get(name)
    if claim is None or claim.meta.deleting:
        return None
    return claim


@dataclass(frozen=True, slots=True)
class Waiting:
    """Where a pending pod is already headed: a NodeClaim still coming up, or a nominated live node."""

    claim: NodeClaim | None
    node: Node | None
    via: str
    """`event` (Karpenter's Nominated) or `status.nominatedNodeName` (kube-scheduler preemption)."""
    event: Event | None = None

    @property
    def in_progress(self) -> bool:
        """The claim has not finished initializing (GT404's territory)."""
        return self.claim is not None and self.claim.stage != "Ready"


def waiting_on(snap: Snapshot, pod: Pod, sched: PodScheduling | None = None) -> Waiting | None:
    """The live NodeClaim/Node a pending pod is nominated to; None if the nomination is stale or absent.

    A nomination to a claim that is gone or being deleted (ICE churn, launch/registration timeout),
    to a node being deleted, or followed by a newer Karpenter FailedScheduling no longer means
    anything: the pod is back to square one.
    """
    sched = sched if sched is not None else scheduling(snap, pod)
    src = snap.index.sources
    return _waiting_on(snap, pod, sched, src["nodes"], src["nodeclaims"], within=snap)


@derived
def _waiting_on(pod: Pod, sched: PodScheduling, nodes: object, claims: object, *, within: Snapshot) -> Waiting | None:
    """Reads the pod, its scheduling verdicts, and `within` the nodes and NodeClaims only: carried while those
    are the same objects."""
    snap = within
    idx = snap.index
    if sched.nomination is not None and not sched.karpenter_current:
        n = sched.nomination
        claim = live_claim(snap, n.nodeclaim) if n.nodeclaim else None
        if claim is None and n.node:
            claim = idx.nodeclaim_by_node.get(n.node)
            claim = claim if claim is not None and not claim.meta.deleting else None
        node = idx.node.get(n.node or (claim.node_name if claim else ""))
        if node is not None and node.meta.deleting:
            node = None
        if claim is not None and (claim.stage != "Ready" or node is not None):
            return Waiting(claim, node, "event", sched.nominated)
    if pod.nominated_node:
        node = idx.node.get(pod.nominated_node)
        claim = idx.nodeclaim_by_node.get(pod.nominated_node)
        if claim is not None and claim.meta.deleting:
            claim = None
        if node is not None and not node.meta.deleting:
            return Waiting(claim, node, "status.nominatedNodeName")
        if claim is not None:
            return Waiting(claim, None, "status.nominatedNodeName")
    return None
