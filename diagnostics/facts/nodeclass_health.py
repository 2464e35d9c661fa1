"""EC2NodeClass failures (selectors, AMIs, instance profile, validation), who depends on them, and how to check AWS."""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from diagnostics.facts.gpu_pools import fitting_pools, pool_ready
from diagnostics.model import Evidence, Finding, Remediation
from diagnostics.facts.pod_shape import Shape, pod_shape
from diagnostics.records import Condition, NodeClass, NodePool, Pod
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

Selector = Literal["subnets", "securityGroups"]

# The two selector failures GT101/GT102 own: condition type, reason, spec field, status field, nouns.
SELECTORS: dict[str, tuple[str, str, str, str, str]] = {
    "subnets": ("SubnetsReady", "SubnetsNotFound", "subnetSelectorTerms", "status.subnets", "subnet"),
    "securityGroups": ("SecurityGroupsReady", "SecurityGroupsNotFound", "securityGroupSelectorTerms",
                       "status.securityGroups", "security group"),
}
# Other Ready dependents GT103 owns, in the order a reader should fix them.
OTHER_CONDITIONS = ("AMIsReady", "InstanceProfileReady", "ValidationSucceeded", "PlacementGroupReady",
                    "CapacityReservationsReady")
# ValidationSucceeded=False with this reason only echoes another failing condition.
CONSEQUENCE_REASONS = frozenset({"DependenciesNotReady"})
RECONCILE_GRACE_SECONDS = 300.0
"""A class younger than this without resolved status may simply not be reconciled yet."""
MAX_MESSAGE = 300


def short(text: str, limit: int = MAX_MESSAGE) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


@dataclass(frozen=True, slots=True)
class SelectorFailure:
    """A subnet or security-group selector that resolved nothing."""

    nodeclass: NodeClass
    selector: Selector
    condition: Condition | None
    """None on v1beta1-style classes: no sub-conditions, just an empty status list."""

    @property
    def terms(self) -> tuple[Mapping[str, Any], ...]:
        nc = self.nodeclass
        return nc.subnet_terms if self.selector == "subnets" else nc.security_group_terms


def _reconciled(snap: Snapshot, nc: NodeClass) -> bool:
    """Has the controller written status yet? (otherwise an empty list means nothing)."""
    if nc.conditions or nc.amis or nc.subnets or nc.security_groups or nc.instance_profile:
        return True
    age = snap.age(nc.meta.created)
    return age is not None and age > RECONCILE_GRACE_SECONDS


def selector_failure(snap: Snapshot, nc: NodeClass, selector: Selector) -> SelectorFailure | None:
    """SubnetsReady/SecurityGroupsReady=False, or (v1beta1) no such condition and an empty status list."""
    cond_type = SELECTORS[selector][0]
    cond = nc.condition(cond_type)
    if cond is not None:
        return SelectorFailure(nc, selector, cond) if cond.status == "False" else None
    resolved = nc.subnets if selector == "subnets" else nc.security_groups
    ready = nc.condition("Ready")
    if resolved or (ready is not None and ready.status == "True") or not _reconciled(snap, nc):
        return None
    return SelectorFailure(nc, selector, None)


def other_failures(snap: Snapshot, nc: NodeClass) -> list[Condition]:
    """Failing Ready dependents other than the selectors; the root Ready when nothing more precise explains it."""
    out = [c for t in OTHER_CONDITIONS if (c := nc.condition(t)) is not None and c.status == "False"
           and not (t == "ValidationSucceeded" and c.reason in CONSEQUENCE_REASONS)]
    if out:
        return out
    ready = nc.condition("Ready")
    if (nc.condition("AMIsReady") is None and not nc.amis and (ready is None or ready.status != "True")
            and _reconciled(snap, nc)):
        # v1beta1-style: no sub-conditions; an AMI selector that matched nothing leaves status.amis empty.
        return [Condition("AMIsReady", "False", "AMINotFound", "status.amis is empty (no AMI resolved)")]
    if ready is not None and ready.status == "False" and not any(
            selector_failure(snap, nc, s) for s in ("subnets", "securityGroups")):
        return [ready]
    return []


def nodeclass_failing(snap: Snapshot, nc: NodeClass) -> bool:
    """True when GT101/GT102/GT103 report this class (so NodePool checks need not repeat it)."""
    return bool(selector_failure(snap, nc, "subnets") or selector_failure(snap, nc, "securityGroups")
                or other_failures(snap, nc))


def pools_using(snap: Snapshot, nc: NodeClass) -> list[NodePool]:
    return [p for p in snap.index.pools_by_class.get(nc.name, ()) if p.node_class_kind == "EC2NodeClass"]


def _pool_healthy(snap: Snapshot, pool: NodePool) -> bool:
    if not pool_ready(pool):
        return False
    nc = snap.index.nodeclass.get(pool.node_class)
    return nc is None or not nodeclass_failing(snap, nc)


def dependent_pods(snap: Snapshot, broken: Sequence[NodePool]) -> list[Pod]:
    """Pending accelerator pods that fit one of `broken` and no healthy pool: they wait on the fix."""
    names = {p.name for p in broken}
    healthy: dict[int, bool] = {}
    verdicts: dict[int, tuple[list[NodePool], bool]] = {}  # replicas share their fitting_pools list
    by_shape: dict[Shape, bool] = {}  # fitting_pools gives one list per shape: look it up once per shape
    out = []
    for pod in snap.index.pending_gpu_pods:
        shape = pod_shape(snap, pod)
        waits = by_shape.get(shape)
        if waits is None:
            fits = fitting_pools(snap, pod)
            known = verdicts.get(id(fits))
            if known is None:
                known = verdicts[id(fits)] = (fits, any(p.name in names for p in fits) and all(
                    p.name in names or not _healthy(snap, p, healthy) for p in fits))
            waits = by_shape[shape] = known[1]
        if waits:
            out.append(pod)
    return out


def _healthy(snap: Snapshot, pool: NodePool, seen: dict[int, bool]) -> bool:
    if id(pool) not in seen:
        seen[id(pool)] = _pool_healthy(snap, pool)
    return seen[id(pool)]


# --- evidence shared by GT101-GT103 ---------------------------------------------------------

def pool_evidence(snap: Snapshot, pools: Sequence[NodePool]) -> list[Evidence]:
    """NodeClassReady of each pool using the class (what `kubectl get nodepools` READY reflects)."""
    out = []
    for pool in pools:
        c = pool.condition("NodeClassReady") or pool.condition("Ready")
        if c is not None:
            out.append(Evidence.condition(pool.ref, c.as_dict() | {"message": short(c.message)},
                                          snap.age(c.last_transition), note="NodePool using this class"))
        else:
            out.append(Evidence.field(pool.ref, "spec.template.spec.nodeClassRef.name", pool.node_class,
                                      note="NodePool using this class (no status conditions: v1beta1?)"))
    return out


def nothing_happens_evidence(snap: Snapshot, pools: Sequence[NodePool], pods: Sequence[Pod]) -> list[Evidence]:
    """In v1 a broken class means no NodeClaim and no Karpenter event on the pod: say so with the proof."""
    out: list[Evidence] = []
    names = sorted(p.name for p in pools)
    what = f"NodeClaims with karpenter.sh/nodepool in [{', '.join(names)}]"
    why = ("in v1 Karpenter skips a NodePool whose NodeClass is not Ready (log 'ignoring nodepool, not ready'): "
           "nothing happens, no NodeClaim is created, no launch error appears")
    if pools and snap.status("nodeclaims").state.usable:
        claims = [c for n in names for c in snap.index.nodeclaims_by_pool.get(n, ())]
        live = [c for c in claims if not c.meta.deleting]
        if not live:
            out.append(Evidence.absence(None, what, note=why))
        else:
            out.append(Evidence.field(None, what, len(live),
                                      note="created before the class broke; no new NodeClaim is created while "
                                           "the class is not Ready"))
    elif pools:
        out.append(Evidence.absence(None, what, note=f"{snap.status('nodeclaims').reason()}; {why}"))
    if pods and snap.status("events").state.usable:
        pod = pods[0]
        evs = snap.index.events("Pod", pod.name, pod.namespace)
        sched = [e for e in evs if e.reason == "FailedScheduling" and e.source != "karpenter"]
        karp = [e for e in evs if e.source == "karpenter" or e.reason == "Nominated"]
        if sched and not karp:
            e = sched[-1]
            out.append(Evidence.event(pod.ref, e.reason, short(e.message), e.count, snap.age(e.last_seen),
                                      note="only kube-scheduler's event: Karpenter never considered a pool "
                                           "for this pod (no Nominated, no Karpenter FailedScheduling)",
                                      type_=e.type))
    return out


def transition_event(snap: Snapshot, nc: NodeClass, cond_type: str) -> list[Evidence]:
    """The condition-transition event opkg publishes on the class (reason = condition type)."""
    evs = [e for e in snap.index.events("EC2NodeClass", nc.name) if e.reason == cond_type]
    if not evs:
        return []
    e = evs[-1]
    return [Evidence.event(nc.ref, e.reason, short(e.message), e.count, snap.age(e.last_seen), type_=e.type)]


# --- AWS commands built from the selector terms ---------------------------------------------

def _filters(tags: Mapping[str, Any]) -> list[str]:
    out = []
    for k, v in tags.items():
        # Karpenter treats "*" as "tag present with any value".
        out.append(f"Name=tag-key,Values={k}" if str(v) == "*" else f"Name=tag:{k},Values={v}")
    return out


def tag_args(tags: Mapping[str, Any]) -> str:
    """`aws ec2 create-tags --tags` arguments for every tag of a selector term (`*` = any value)."""
    return " ".join(f"Key={shlex.quote(str(k))},Value={shlex.quote('<any>' if str(v) == '*' else str(v))}"
                    for k, v in tags.items())


def describe_commands(selector: Selector, terms: Iterable[Mapping[str, Any]]) -> list[str]:
    """One `aws ec2 describe-*` per selector term (terms are ORed, the fields of one term ANDed)."""
    cmd = "describe-subnets" if selector == "subnets" else "describe-security-groups"
    query = ("'Subnets[].{id:SubnetId,az:AvailabilityZone,vpc:VpcId,freeIPs:AvailableIpAddressCount}'"
             if selector == "subnets" else "'SecurityGroups[].{id:GroupId,name:GroupName,vpc:VpcId}'")
    out = []
    for term in terms:
        tid = term.get("id")
        if tid:
            flag = "--subnet-ids" if selector == "subnets" else "--group-ids"
            out.append(f"aws ec2 {cmd} {flag} {shlex.quote(str(tid))} --query {query}")
            continue
        filters = _filters(term.get("tags") or {})
        if selector == "securityGroups" and term.get("name"):
            filters.append(f"Name=group-name,Values={term['name']}")
        if filters:
            out.append(f"aws ec2 {cmd} --filters {' '.join(shlex.quote(f) for f in filters)} --query {query}")
    return out


def describe_terms(terms: Iterable[Mapping[str, Any]]) -> str:
    """`tags karpenter.sh/discovery=prod` / `id subnet-0abc` for titles."""
    parts = []
    for term in terms:
        bits = [f"id {term['id']}"] if term.get("id") else []
        if term.get("name"):
            bits.append(f"name {term['name']}")
        tags = term.get("tags") or {}
        if tags:
            bits.append("tags " + ",".join(f"{k}={v}" for k, v in tags.items()))
        parts.append(" ".join(bits) or "{}")
    return " or ".join(parts) or "no selector terms"


# --- the GT101/GT102 finding ----------------------------------------------------------------

def selector_evidence(snap: Snapshot, failure: SelectorFailure, pools: Sequence[NodePool],
                      pods: Sequence[Pod], extra: Sequence[Evidence] = ()) -> list[Evidence]:
    """Everything the selector finding shows; `extra` carries AWS answers when the AWS source ran."""
    nc = failure.nodeclass
    cond_type, _, spec_field, status_field, noun = SELECTORS[failure.selector]
    ev: list[Evidence] = []
    if failure.condition is not None:
        c = failure.condition
        ev.append(Evidence.condition(nc.ref, c.as_dict() | {"message": short(c.message)},
                                     snap.age(c.last_transition),
                                     note=f"for {human_age(snap.age(c.last_transition))}"
                                     if c.last_transition else ""))
    ev.append(Evidence.field(nc.ref, f"spec.{spec_field}", [dict(t) for t in failure.terms] or "none",
                             note="terms are ORed; tags within one term must all match"))
    ev.append(Evidence.field(nc.ref, status_field, [],
                             note=f"no {noun} resolved" + (" (v1beta1-style class: no "
                                                            f"{cond_type} condition)" if failure.condition is None
                                                            else "")))
    ready = nc.condition("Ready")
    if ready is not None and ready.status != "True":
        ev.append(Evidence.condition(nc.ref, ready.as_dict(), snap.age(ready.last_transition)))
    ev.extend(transition_event(snap, nc, cond_type))
    ev.extend(pool_evidence(snap, pools))
    ev.extend(nothing_happens_evidence(snap, pools, pods))
    ev.extend(extra)
    return ev


def selector_finding(snap: Snapshot, failure: SelectorFailure, extra: Sequence[Evidence] = ()) -> Finding:
    nc = failure.nodeclass
    _, _, spec_field, status_field, noun = SELECTORS[failure.selector]
    pools = pools_using(snap, nc)
    pods = dependent_pods(snap, pools) if snap.status("pods").state.usable else []
    terms = failure.terms
    impact = []
    if pools:
        impact.append(f"NodePool {', '.join(p.name for p in pools)} cannot launch nodes")
    if pods:
        impact.append(f"{len(pods)} GPU pod(s) pending on it")
    title = (f"EC2NodeClass {nc.name}: {spec_field} match no {noun} ({describe_terms(terms)})"
             + (": " + ", ".join(impact) if impact else ""))
    commands = describe_commands(failure.selector, terms)
    tag_hint = next((t.get("tags") for t in terms if t.get("tags")), None)
    if tag_hint:
        # Every tag of the term must match: tagging with the first one alone changes nothing.
        tags = tag_args(tag_hint)
        what = "<subnet-id>" if failure.selector == "subnets" else "<security-group-id>"
        commands.append(f"aws ec2 create-tags --resources {what} --tags {tags}")
    commands.append(f"kubectl edit ec2nodeclass {nc.name}")
    commands.append(f"kubectl get ec2nodeclass {nc.name} -o jsonpath='{{.{status_field}}}'")
    remediation = Remediation(
        f"Run the describe command(s) built from spec.{spec_field}: if they return nothing, either tag the "
        f"intended {noun}s (in the cluster's VPC) with the selector's tags or fix the selector (typo in the "
        f"tag key/value, wrong cluster name, stale {noun} id). Karpenter re-resolves on the next reconcile; "
        f"{status_field} fills in and NodeClassReady turns True, then pending pods get NodeClaims.",
        tuple(commands),
    )
    related = [p.ref for p in pools] + [p.ref for p in pods]
    return Finding(subject=nc.ref, title=title, evidence=tuple(selector_evidence(snap, failure, pools, pods, extra)),
                   remediation=remediation, related=tuple(related))
