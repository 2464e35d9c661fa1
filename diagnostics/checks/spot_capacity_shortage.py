"""NodePools whose launches keep failing for lack of EC2 capacity, quota or subnet IPs (ICE-class errors)."""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

import yaml

from diagnostics.facts.gpu_pools import (
    CAPACITY_TYPE,
    GPU_NAME,
    INSTANCE_TYPE,
    ZONE,
    capacity_types,
    fitting_pools,
    instance_shape,
    on_demand_fallbacks,
    pool_requirement_values,
    quota_class,
    spot_only,
)
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.nodeclass_health import short
from diagnostics.facts.pod_shape import Shape, pod_shape
from diagnostics.facts.provider import derived, facts
from diagnostics.records import Event, NodeClaim, NodePool, Pod
from diagnostics.facts.aws_facts import region_of_zone, spot_advice_evidence
from diagnostics.facts.messages import OFFERING_FRAGMENTS, Nomination, parse_nominated
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

WINDOW = timedelta(minutes=30)
"""How far back events and short-lived NodeClaims count."""
SHORT_LIVED_SECONDS = 60.0
"""A NodeClaim deleted this soon after creation never got an instance (ICE deletes it immediately)."""

# EC2 fleet error codes Karpenter treats as "unfulfillable capacity" (aws pkg/errors), by what they mean.
CAPACITY_CODES = ("InsufficientInstanceCapacity", "UnfulfillableCapacity", "ReservationCapacityExceeded")
UNSUPPORTED_CODES = ("Unsupported",)
"""`Your requested instance type (X) is not supported in your requested Availability Zone`: no
amount of waiting brings capacity that EC2 does not sell there."""
QUOTA_CODES = ("MaxSpotInstanceCountExceeded", "VcpuLimitExceeded", "MaxFleetCountExceeded")
IP_CODES = ("InsufficientFreeAddressesInSubnet",)
SLR_CODE = "AuthFailure.ServiceLinkedRoleCreationNotPermitted"
UNAVAILABLE = "all requested instance types were unavailable during launch"

# Service Quotas codes: (bucket, capacity type) -> (code, name).
QUOTAS = {
    ("G", "spot"): ("L-3819A6DF", "All G and VT Spot Instance Requests"),
    ("P", "spot"): ("L-7212CCBC", "All P Spot Instance Requests"),
    ("G", "on-demand"): ("L-DB2E81BA", "Running On-Demand G and VT instances"),
    ("P", "on-demand"): ("L-417A185B", "Running On-Demand P instances"),
    ("Inf", "spot"): ("L-B5D1601B", "All Inf Spot Instance Requests"),
    ("Inf", "on-demand"): ("L-1945791B", "Running On-Demand Inf instances"),
    ("Trn", "spot"): ("L-6B0D517C", "All Trn Spot Instance Requests"),
    ("Trn", "on-demand"): ("L-2C3B7624", "Running On-Demand Trn instances"),
}

_CLAIM_IN_MESSAGE = re.compile(r"NodeClaim (\S+) event:")
_POOL_REQ = re.compile(r"karpenter\.sh/nodepool In \[([^\]]+)\]")
_OLD_POOL = re.compile(r'incompatible with nodepool "([^"]+)"')
_GENERATED = re.compile(r"^(.+)-[a-z0-9]{5}$")


def error_codes(message: str) -> list[str]:
    """ICE-class codes in a launch error, most specific first; `UnavailableOfferings` for the ICE-cache text."""
    return list(_error_codes(message))


_CODE_PATTERNS = tuple((c, re.compile(rf"\b{re.escape(c)}\b"))
                       for c in (*QUOTA_CODES, *IP_CODES, *CAPACITY_CODES, *UNSUPPORTED_CODES))


def _error_codes(message: str) -> tuple[str, ...]:
    found = [c for c, pattern in _CODE_PATTERNS if pattern.search(message)]
    if SLR_CODE in message:
        found.insert(0, SLR_CODE)
    if UNAVAILABLE in message:
        found.append("UnavailableOfferings")
    return tuple(found) or ("InsufficientCapacity",)


@derived
def _event_codes(e: Event) -> tuple[str, ...]:
    """error_codes of the event, kept per event record: every run reads the same ICE events again."""
    return _error_codes(e.message)


def category(code: str) -> str:
    """quota | ips | spot-permission | unsupported | capacity."""
    if code in QUOTA_CODES:
        return "quota"
    if code in UNSUPPORTED_CODES:
        return "unsupported"
    if code in IP_CODES:
        return "ips"
    if code == SLR_CODE:
        return "spot-permission"
    return "capacity"


def pool_of_claim(name: str, claim: NodeClaim | None, pools: dict[str, NodePool]) -> str:
    """The NodePool of a (possibly already deleted) claim: its label, else the generateName prefix."""
    if claim is not None and claim.nodepool:
        return claim.nodepool
    m = _GENERATED.match(name)
    if not m:
        return ""
    prefix = m.group(1)
    if prefix in pools or not pools:
        return prefix
    # A claim name is `<nodepool>-<5 chars>`; pool names may themselves contain dashes.
    best = max((p for p in pools if name.startswith(p + "-")), key=len, default="")
    return best or prefix


@dataclass
class Shortage:
    """Everything seen for one NodePool."""

    pool_name: str
    window: timedelta = WINDOW
    ice_events: list[Event] = field(default_factory=list)
    codes: Counter[str] = field(default_factory=Counter)
    claims: set[str] = field(default_factory=set)
    short_lived: list[NodeClaim] = field(default_factory=list)
    nominations: dict[tuple[str, str], set[str]] = field(default_factory=lambda: defaultdict(set))
    offering_events: list[tuple[Pod, Event]] = field(default_factory=list)
    slr_events: list[Event] = field(default_factory=list)

    @property
    def strong(self) -> bool:
        return bool(self.ice_events or self.offering_events or self.slr_events or len(self.short_lived) >= 2)


def find_shortages(snap: Snapshot, window: timedelta = WINDOW) -> dict[str, Shortage]:
    """Per NodePool, the ICE evidence within `window` before the snapshot."""
    idx = snap.index
    since = snap.taken_at - window
    out: dict[str, Shortage] = {}

    def get(name: str) -> Shortage:
        return out.setdefault(name, Shortage(name, window))

    def recent(e: Event) -> bool:
        when = e.last_seen or e.first_seen
        return when is not None and when >= since

    claim_events, short_lived, pod_events = _candidates(snap)
    for e in claim_events:
        if not recent(e):
            continue
        claim = idx.nodeclaim.get(e.involved_name)
        pool = pool_of_claim(e.involved_name, claim, idx.nodepool)
        if e.reason == "InsufficientCapacityError" or (e.type == "Warning" and "insufficient capacity" in e.message):
            s = get(pool)
            s.ice_events.append(e)
            s.claims.add(e.involved_name)
            for code in _event_codes(snap, e):
                s.codes[code] += max(e.count, 1)
        else:
            get(pool).slr_events.append(e)
    for c in short_lived:
        if c.meta.created >= since:  # type: ignore[operator]
            s = get(pool_of_claim(c.name, c, idx.nodepool))
            s.short_lived.append(c)
            s.claims.add(c.name)
    for pod, e, nom in pod_events:
        if not recent(e):
            continue
        if nom is not None:
            name = nom.nodeclaim
            pool = pool_of_claim(name, idx.nodeclaim.get(name), idx.nodepool)
            get(pool).nominations[(pod.namespace, pod.name)].add(name)
        else:
            for pool in _offering_pools(snap, pod, e):
                get(pool).offering_events.append((pod, e))
    return {k: v for k, v in out.items() if k and v.strong}


def _candidates(snap: Snapshot) -> tuple[list[Event], list[NodeClaim], list[tuple[Pod, Event, Nomination | None]]]:
    """Everything find_shortages may count, before the time window: ICE/SLR events on NodeClaims, claims
    deleted unlaunched within a minute, and pending GPU pods' nominations and offering failures.

    Each part is a provider of the records it reads (the pod part needs only the pending GPU pods, not
    every pod), so it is carried across snapshots while those are unchanged.
    """
    return _claim_events(snap), _short_lived(snap), _pod_events(snap)


@facts(reads=("events",))
def _claim_events(snap: Snapshot) -> list[Event]:
    """ICE and service-linked-role events on NodeClaims."""
    return [e for e in snap.events if e.involved_kind == "NodeClaim" and (
        e.reason == "InsufficientCapacityError" or (e.type == "Warning" and "insufficient capacity" in e.message)
        or SLR_CODE in e.message)]


@facts(reads=("nodeclaims",))
def _short_lived(snap: Snapshot) -> list[NodeClaim]:
    """Claims deleted within SHORT_LIVED_SECONDS of creation without launching (what ICE leaves behind)."""
    out = []
    for c in snap.nodeclaims:
        if c.meta.deleting and c.meta.created:
            lived = (c.meta.deleting - c.meta.created).total_seconds()
            launched = c.condition("Launched")
            if lived <= SHORT_LIVED_SECONDS and (launched is None or launched.status != "True"):
                out.append(c)
    return out


@facts(reads=("pending", "events"))
def _pod_events(snap: Snapshot) -> list[tuple[Pod, Event, Nomination | None]]:
    """The pending GPU pods' Nominated events (with the claim named) and offering failures, in order."""
    idx = snap.index
    out: list[tuple[Pod, Event, Nomination | None]] = []
    for pod in idx.pending_gpu_pods:
        for e in idx.events("Pod", pod.name, pod.namespace):
            if e.reason == "Nominated":
                nom = parse_nominated(e.message)
                if nom is not None and nom.nodeclaim:
                    out.append((pod, e, nom))
            elif e.reason == "FailedScheduling" and any(f in e.message for f in OFFERING_FRAGMENTS):
                out.append((pod, e, None))
    return out


def _offering_pools(snap: Snapshot, pod: Pod, e: Event) -> list[str]:
    """Which pools an offering failure is about: named in the requirements (v1.5+) or the prefix (older)."""
    names: list[str] = []
    for part in e.message.split("; "):
        if not any(f in part for f in OFFERING_FRAGMENTS):
            continue
        m = _POOL_REQ.search(part) or _OLD_POOL.search(part)
        if m:
            names.extend(n.strip() for n in m.group(1).split(",") if n.strip())
    if names:
        return list(dict.fromkeys(names))
    return [p.name for p in fitting_pools(snap, pod) if "spot" in capacity_types(p)]


@check(code="GT104", slug="spot-capacity-shortage", title="NodePools get the EC2 capacity they ask for",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("events",), optional=("nodepools", "nodeclaims", "pods", "ec2nodeclasses", "aws"))
def spot_capacity_shortage(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodePool's launches fail with ICE-class errors: no spot capacity, a quota, or no free subnet IPs.

    Why it matters:
    Karpenter deletes the NodeClaim at once, marks the offering unavailable for 3 minutes and
    tries again, so NodeClaims appear and vanish within seconds and pods are nominated to a
    new claim each cycle. A spot-only GPU pool with no on-demand fallback never gets a node
    while the shortage lasts. Quota (`MaxSpotInstanceCountExceeded`, `VcpuLimitExceeded`) and
    IP (`InsufficientFreeAddressesInSubnet`) errors look the same but do not go away by waiting.

    Fix:
    Capacity: allow more GPU instance types/families and every AZ, and add an on-demand
    NodePool with a lower weight as fallback. Quota: raise the EC2 Service Quota named in the
    evidence. IPs: add or enlarge subnets selected by the EC2NodeClass.
    """
    pools = snap.index.nodepool
    yield len(pools)
    for name, s in sorted(find_shortages(snap).items()):
        yield _finding(snap, s, pools.get(name))


def _finding(snap: Snapshot, s: Shortage, pool: NodePool | None) -> Finding:
    idx = snap.index
    subject = pool.ref if pool is not None else ObjectRef("NodePool", s.pool_name)
    claims = [idx.nodeclaim[c] for c in sorted(s.claims) if c in idx.nodeclaim]
    cats = Counter({category(c): n for c, n in s.codes.items()})
    if s.slr_events:
        cats["spot-permission"] += len(s.slr_events)
    main = cats.most_common(1)[0][0] if cats else "capacity"

    types = _claim_values(claims, INSTANCE_TYPE) or (pool_requirement_values(pool, INSTANCE_TYPE) if pool else [])
    zones = _claim_values(claims, ZONE) or (pool_requirement_values(pool, ZONE) if pool else [])
    ctypes = _claim_values(claims, CAPACITY_TYPE) or (sorted(capacity_types(pool)) if pool else [])

    ev: list[Evidence] = []
    window = human_age(s.window.total_seconds())
    if s.ice_events:
        latest = max(s.ice_events, key=lambda e: e.last_seen or snap.taken_at)
        total = sum(max(e.count, 1) for e in s.ice_events)
        codes = ", ".join(f"{c} x{n}" for c, n in s.codes.most_common())
        ev.append(Evidence.event(latest.involved, latest.reason or "InsufficientCapacityError", short(latest.message),
                                 count=total, age_seconds=snap.age(latest.last_seen), type_=latest.type,
                                 note=f"{total} event(s) on {len({e.involved_name for e in s.ice_events})} "
                                      f"NodeClaim(s) in the last {window}: {codes}"))
        if "UnavailableOfferings" in s.codes:
            ev.append(Evidence.field(subject, "offerings", "all requested instance types were unavailable",
                                     note="every offering is in Karpenter's 3-minute ICE cache"))
    for e in s.slr_events[-1:]:
        ev.append(Evidence.event(e.involved, e.reason or "(no reason)", short(e.message), e.count,
                                 snap.age(e.last_seen), type_=e.type,
                                 note="spot is disabled until the Spot service-linked role exists"))
    if s.short_lived:
        lived = sorted(int((c.meta.deleting - c.meta.created).total_seconds())  # type: ignore[operator]
                       for c in s.short_lived)
        ev.append(Evidence.field(subject, f"NodeClaims deleted within {SHORT_LIVED_SECONDS:g}s of creation",
                                 len(s.short_lived),
                                 note=f"in the last {window} (lifetimes {', '.join(f'{x}s' for x in lived[:5])}): "
                                      f"{', '.join(c.name for c in s.short_lived[:5])}"))
    churned = {pod: names for pod, names in s.nominations.items() if len(names) >= 2}
    for (ns, pname), names in sorted(churned.items())[:3]:
        ev.append(Evidence.event(ObjectRef("Pod", pname, ns), "Nominated",
                                 f"Pod should schedule on: nodeclaim/{sorted(names)[-1]}", count=len(names),
                                 type_="Normal",
                                 note=f"nominated to {len(names)} different NodeClaims: {', '.join(sorted(names))}"))
    for pod, e in s.offering_events[:2]:
        ev.append(Evidence.event(pod.ref, e.reason, short(e.message), e.count, snap.age(e.last_seen), type_=e.type,
                                 note="Karpenter found no instance type with an available offering"))
    if types:
        ev.append(Evidence.field(subject, "instance types", types[:12]))
    elif pool is not None and instance_shape(pool):
        ev.append(Evidence.field(pool.ref, "spec.template.spec.requirements", instance_shape(pool),
                                 note="instance selection"))
    ev.append(Evidence.field(subject, "zones", zones or "any zone of the EC2NodeClass subnets"))
    if main == "capacity" and types:
        # Where AWS says the same GPUs (or bigger) are offered, with spot prices: what to allow next.
        ev.extend(spot_advice_evidence(snap, types, zones or (), pool=pool, subject=subject))
    ev.append(Evidence.field(subject, "capacity types", ctypes or "unknown",
                             note="spot only: no on-demand fallback inside this pool" if ctypes == ["spot"] else ""))
    if pool is not None:
        reg = pool.condition("NodeRegistrationHealthy")
        if reg is not None and reg.status == "False":
            ev.append(Evidence.condition(pool.ref, reg.as_dict() | {"message": short(reg.message)},
                                         snap.age(reg.last_transition)))

    pods = _affected_pods(snap, s, pool)
    fallbacks = on_demand_fallbacks(snap, pool, pods) if pool is not None else []
    severity = None
    if pool is not None and spot_only(pool) and not fallbacks:
        severity = Severity.CRITICAL
        ev.append(Evidence.absence(None, "on-demand NodePool that could serve these pods",
                                   note="the pool is spot-only and no other ready NodePool allows on-demand GPU "
                                        "instances for them: nothing launches until spot capacity returns"))
    elif fallbacks:
        ev.append(Evidence.field(subject, "on-demand fallback", [p.name for p in fallbacks],
                                 note="other NodePools that allow on-demand for these pods"))

    what = {"capacity": "no EC2 capacity for its instance types",
            "quota": "an EC2 quota is exhausted",
            "ips": "its subnets ran out of free IP addresses",
            "spot-permission": "spot launches are not permitted (Spot service-linked role missing)",
            "unsupported": "EC2 does not offer an instance type it tried in that zone"}[main]
    n_claims = len(s.claims)
    detail = ", ".join(c for c, _ in s.codes.most_common(2)) if s.codes else ""
    offering = " ".join(x for x in ("/".join(ctypes), ", ".join(types[:3])) if x)
    title = (f"NodePool {s.pool_name}: {what}"
             + (f" ({detail})" if detail else "")
             + (f", {n_claims} NodeClaim(s) failed in {window}" if n_claims else "")
             + (f", {offering}" if offering else ""))
    return Finding(
        subject=subject,
        title=title,
        evidence=tuple(ev),
        remediation=_remediation(snap, s, pool, main, types, ctypes, claims, fallbacks),
        severity=severity,
        related=tuple(p.ref for p in pods) + tuple(c.ref for c in claims),
    )


def _claim_values(claims: Sequence[NodeClaim], key: str) -> list[str]:
    vals: list[str] = []
    for c in claims:
        if c.meta.labels.get(key):
            vals.append(c.meta.labels[key])
        for r in c.requirements:
            if r.key == key and r.operator == "In":
                vals.extend(r.values)
    return list(dict.fromkeys(vals))


def _affected_pods(snap: Snapshot, s: Shortage, pool: NodePool | None) -> list[Pod]:
    idx = snap.index
    keys = set(s.nominations) | {(p.namespace, p.name) for p, _ in s.offering_events}
    pods = [idx.pod[k] for k in sorted(keys) if k in idx.pod and idx.pod[k].pending]
    if not pods and pool is not None:
        fits: dict[Shape, bool] = {}  # fitting_pools answers per shape: ask once per shape
        for p in idx.pending_gpu_pods:
            shape = pod_shape(snap, p)
            fit = fits.get(shape)
            if fit is None:
                fit = fits[shape] = pool.name in {fp.name for fp in fitting_pools(snap, p)}
            if fit:
                pods.append(p)
    return pods


def _region_flag(snap: Snapshot, pool: NodePool | None) -> str:
    """` --region R` from the pool's NodeClass subnets (or any node's region label): the user's CLI default
    region may be another one."""
    nc = snap.index.nodeclass.get(pool.node_class) if pool else None
    zones = [str(x.get("zone") or "") for x in (nc.subnets if nc else ())]
    labelled = (n.labels.get("topology.kubernetes.io/region") for n in snap.nodes)
    region = next((r for r in map(region_of_zone, zones) if r), None) or next((r for r in labelled if r), None)
    return f" --region {region}" if region else ""


def _remediation(snap: Snapshot, s: Shortage, pool: NodePool | None, main: str, types: list[str],
                 ctypes: list[str], claims: Sequence[NodeClaim], fallbacks: Sequence[NodePool]) -> Remediation:
    name = s.pool_name
    commands: list[str] = []
    texts: list[str] = []
    region = _region_flag(snap, pool)
    if main == "quota" or any(category(c) == "quota" for c in s.codes):
        gpu_names = pool_requirement_values(pool, GPU_NAME) if pool else []
        buckets = sorted(quota_class(types, gpu_names)) or ["G", "P"]
        quota_ct = ["spot"] if "MaxSpotInstanceCountExceeded" in s.codes else (
            [c for c in ctypes if c in ("spot", "on-demand")] or ["spot", "on-demand"])
        for b in buckets:
            for ct in quota_ct:
                code, qname = QUOTAS[(b, ct)]
                commands.append(f"aws service-quotas get-service-quota{region} --service-code ec2 --quota-code {code}"
                                f"  # {qname}")
        code0 = QUOTAS[(buckets[0], quota_ct[0])][0]
        commands.append(f"aws service-quotas request-service-quota-increase{region} --service-code ec2 "
                        f"--quota-code {code0} "
                        "--desired-value <vCPUs>")
        texts.append("EC2 quotas for accelerated instances are counted in vCPUs per instance bucket (G/VT, P, Inf, "
                     "Trn) and "
                     "capacity type; request an increase for the quota named here (waiting does not help).")
    if main == "ips" or "InsufficientFreeAddressesInSubnet" in s.codes:
        nc = snap.index.nodeclass.get(pool.node_class) if pool else None
        ids = [str(x.get("id")) for x in (nc.subnets if nc else ()) if x.get("id")]
        commands.append(f"aws ec2 describe-subnets{region} "
                        + (f"--subnet-ids {' '.join(ids)} " if ids else "--filters Name=tag:karpenter.sh/discovery,"
                                                                       "Values=<cluster> ")
                        + "--query 'Subnets[].{id:SubnetId,az:AvailabilityZone,freeIPs:AvailableIpAddressCount}'")
        texts.append("Tag additional (larger) subnets for the EC2NodeClass's subnetSelectorTerms, or enable VPC CNI "
                     "prefix delegation so each node consumes fewer addresses.")
    if main == "spot-permission":
        commands.append("aws iam create-service-linked-role --aws-service-name spot.amazonaws.com")
        texts.append("Create the EC2 Spot service-linked role once per account (or allow the controller "
                     "iam:CreateServiceLinkedRole for spot.amazonaws.com).")
    if main == "unsupported" or "Unsupported" in s.codes:
        commands.append(f"aws ec2 describe-instance-type-offerings{region} --location-type availability-zone --filters "
                        f"Name=instance-type,Values={','.join(types[:6]) or '<instance-types>'} "
                        "--query 'InstanceTypeOfferings[].[InstanceType,Location]' --output table")
        texts.append("EC2 does not sell the instance type in the zone Karpenter tried (Unsupported); waiting does "
                     "not help. Restrict the NodePool's zones (topology.kubernetes.io/zone) or instance types to "
                     "offered pairs (see instance-type-not-offered).")
    if main == "capacity" or not texts:
        example = ("instance-family In [p4d, p4de, p5, p5e, p5en]" if "P" in quota_class(types)
                   else "instance-gpu-name In [a10g, l4, t4] or instance-family In [g5, g6, g6e]")
        texts.append("GPU capacity is scarce per instance type, zone and capacity type: allow more GPU instance "
                     f"types and families (e.g. {example}) and every AZ, and give the pool an on-demand fallback "
                     "NodePool with a lower weight.")
        commands.append(f"kubectl edit nodepool {name}")
    if pool is not None and spot_only(pool) and not fallbacks:
        commands.append(_fallback_yaml(snap, pool))
        if pool.weight <= 1:
            commands.append(f"kubectl patch nodepool {name} --type merge -p '{{\"spec\":{{\"weight\":100}}}}'")
    commands.append(f"kubectl get events -A --field-selector reason=InsufficientCapacityError "
                    f"--sort-by=.lastTimestamp | grep {name}")
    return Remediation(" ".join(texts), tuple(dict.fromkeys(commands)))


@derived
def _fallback_yaml(pool: NodePool) -> str:
    """`kubectl apply` heredoc for an on-demand copy of the pool with a lower weight (the seed's tiered pools)."""
    tspec: dict[str, Any] = dict(pool.template_spec)
    reqs = [dict(r) for r in tspec.get("requirements") or () if isinstance(r, dict) and r.get("key") != CAPACITY_TYPE]
    reqs.insert(0, {"key": CAPACITY_TYPE, "operator": "In", "values": ["on-demand"]})
    spec_t: dict[str, Any] = {"requirements": reqs,
                              "nodeClassRef": {"group": "karpenter.k8s.aws", "kind": pool.node_class_kind,
                                               "name": pool.node_class}}
    # Everything that shapes the nodes' life as the pool has it (startup taints, kubelet settings, expiry,
    # termination grace): a copy without them would get Karpenter's defaults.
    for key in ("taints", "startupTaints", "expireAfter", "terminationGracePeriod"):
        if tspec.get(key):
            spec_t[key] = tspec[key]
    weight = pool.weight - 1 if 1 < pool.weight <= 10 else 10
    doc: dict[str, Any] = {
        "apiVersion": "karpenter.sh/v1", "kind": "NodePool",
        "metadata": {"name": f"{pool.name}-on-demand"},
        "spec": {"weight": weight, "template": {"spec": spec_t}},
    }
    if pool.disruption_spec:
        # Else Karpenter's default (WhenEmptyOrUnderutilized, at once) could consolidate running training pods.
        doc["spec"]["disruption"] = dict(pool.disruption_spec)
    if pool.template_labels:
        doc["spec"]["template"]["metadata"] = {"labels": dict(pool.template_labels)}
    if pool.limits_spec:
        doc["spec"]["limits"] = dict(pool.limits_spec)
    body = yaml.safe_dump(doc, sort_keys=False, default_flow_style=False).rstrip()
    return f"kubectl apply -f - <<'EOF'\n{body}\nEOF"
