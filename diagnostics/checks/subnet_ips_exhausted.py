"""Subnets an EC2NodeClass selects that have (almost) no free IP addresses left."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from diagnostics.facts.aws_facts import SUBNETS, AwsFacts, Subnet, aws_evidence, class_subnets, facts_for, launch_zones
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.nodeclass_health import pools_using, short, tag_args
from diagnostics.records import NodeClass, NodePool
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

MIN_FREE_IPS = 32
"""Below this many free addresses a subnet counts as exhausted. With the VPC CNI defaults one node
takes its primary ENI's addresses plus a warm ENI's: 2 x 15 for a g5.xlarge, 2 x 50 for a p5.48xlarge."""
IP_ERROR = "InsufficientFreeAddressesInSubnet"


@check(code="GT601", slug="subnet-ips-exhausted", title="Selected subnets have free IP addresses",
       severity=Severity.WARNING, requires=("aws", "ec2nodeclasses"), optional=("nodepools", "events"))
def subnet_ips_exhausted(snap: Snapshot) -> Iterator[Finding | int]:
    """A subnet an EC2NodeClass selects has fewer free IP addresses than a GPU node needs.

    Why it matters:
    Karpenter launches into the subnet with the most free addresses in each zone; when that one is
    nearly full, new GPU nodes there cannot give their pods addresses, and at zero launches fail
    with `InsufficientFreeAddressesInSubnet` (Karpenter marks the subnet unavailable and tries other
    zones). NodePools or pods pinned to its zone
    get no node at all, and when every subnet of a class is short, nothing launches. NodeClaims
    come and go like a capacity shortage, but waiting does not help.

    Fix:
    Free addresses (unattached ENIs, oversized warm pools: `WARM_IP_TARGET`), tag an additional,
    larger subnet in the same zone for the class's `subnetSelectorTerms`, or enable VPC CNI prefix
    delegation so a node consumes /28 prefixes instead of one ENI worth of addresses each.
    """
    yield from ip_findings(snap, MIN_FREE_IPS)


def ip_findings(snap: Snapshot, min_free: int = MIN_FREE_IPS) -> Iterator[Finding | int]:
    """The check with its threshold as a parameter: one finding per subnet below `min_free` free addresses."""
    facts = facts_for(snap, SUBNETS)
    users: dict[str, list[NodeClass]] = {}
    selected: dict[str, list[Subnet]] = {}
    for nc in snap.ec2nodeclasses:
        subs = class_subnets(facts, nc) or []
        selected[nc.name] = subs
        for s in subs:
            users.setdefault(s.id, []).append(nc)
    yield len(users)
    for sid in sorted(users):
        subnet = facts.subnets[sid]
        if subnet.ipv6_native or subnet.available_ips >= min_free:
            continue  # an IPv6-only subnet's IPv4 count says nothing
        if all(_zone_has_room(selected[nc.name], subnet, min_free) for nc in users[sid]):
            continue  # Karpenter launches into the roomiest subnet of each zone: this one is not used
        yield _finding(snap, facts, subnet, users[sid], selected, min_free)


def _zone_has_room(subnets: Sequence[Subnet], low: Subnet, min_free: int) -> bool:
    """Another subnet of the class in the same zone with room (Karpenter's ZonalSubnetsForLaunch picks it)."""
    return any(x.id != low.id and x.zone == low.zone and x.available_ips >= min_free for x in subnets)


def _finding(snap: Snapshot, facts: AwsFacts, s: Subnet, classes: Sequence[NodeClass],
             selected: dict[str, list[Subnet]], min_free: int) -> Finding:
    ref = ObjectRef("Subnet", s.id)
    low = {x.id for subs in selected.values() for x in subs if x.available_ips < min_free}
    ev: list[Evidence] = []
    usable = s.usable_ips
    ev.append(aws_evidence(ref, f"ec2:DescribeSubnets {s.id} AvailableIpAddressCount", s.available_ips,
                           note=f"{s.zone}, {s.cidr}" + (f" ({usable} usable addresses)" if usable else "")
                                + f", {s.vpc_id}; fewer than {min_free} free (one GPU node takes an ENI's worth "
                                  "or two with the VPC CNI defaults)"))
    starved: list[NodeClass] = []
    pools: list[NodePool] = []
    stuck_pools: list[tuple[NodePool, set[str]]] = []
    same: dict[tuple[str, ...], list[NodeClass]] = {}  # classes selecting the same subnets share one evidence
    for nc in classes:
        subs = selected.get(nc.name, [])
        same.setdefault(tuple(x.id for x in subs), []).append(nc)
        all_low = all(x.id in low for x in subs)
        if all_low:
            starved.append(nc)
        for pool in pools_using(snap, nc):
            pools.append(pool)
            zones, _ = launch_zones(snap, pool, facts)
            if zones and not all_low and all(x.id in low for x in subs if x.zone in zones):
                stuck_pools.append((pool, zones))
    for ids, ncs in same.items():
        subs = [facts.subnets[i] for i in ids]
        all_low = all(i in low for i in ids)
        names = ", ".join(f"ec2nodeclass/{c.name}" for c in ncs)
        ev.append(aws_evidence(ncs[0].ref if len(ncs) == 1 else None, f"ec2:DescribeSubnets ({names} subnetSelectorTerms)",
                               [{"id": x.id, "zone": x.zone, "freeIPs": x.available_ips} for x in subs],
                               note="every subnet the selector matches" + (
                                   ": all nearly full, nothing launches for this class" if all_low else
                                   ": Karpenter launches into the roomiest subnet of each zone; this zone has "
                                   "none with room")))
    for pool, zones in stuck_pools:
        ev.append(Evidence.field(pool.ref, "spec.template.spec.requirements[topology.kubernetes.io/zone]",
                                 sorted(zones), note="the pool can only launch in zones whose subnets are nearly full"))
    ev.extend(_ip_events(snap, pools))
    severity = Severity.ERROR if starved or stuck_pools else None
    free = "no free IP addresses" if s.available_ips <= 0 else f"only {s.available_ips} free IP addresses"
    title = f"Subnet {s.id} ({s.zone}) has {free}: launches there fail with {IP_ERROR}"
    if starved:
        title += f"; EC2NodeClass {', '.join(c.name for c in starved)} has no other subnet with room"
    elif stuck_pools:
        title += f"; NodePool {', '.join(p.name for p, _ in stuck_pools)} can only launch there"
    else:
        title += f" (used by EC2NodeClass {', '.join(c.name for c in classes)})"
    return Finding(subject=ref, title=title, evidence=tuple(ev), severity=severity,
                   remediation=_remediation(facts, s, classes),
                   related=tuple(dict.fromkeys([c.ref for c in classes] + [p.ref for p in pools])))


def _ip_events(snap: Snapshot, pools: Sequence[NodePool]) -> list[Evidence]:
    """Recent launch failures naming the IP error on the classes' NodeClaims or NodePools (proof it bites)."""
    if not snap.status("events").state.usable:
        return []
    names = {p.name for p in pools}
    hits = [e for e in snap.events if IP_ERROR in e.message and e.involved_kind in ("NodeClaim", "NodePool")
            and (e.involved_name in names or any(e.involved_name.startswith(f"{n}-") for n in names))]
    if not hits:
        return []
    e = max(hits, key=lambda x: x.last_seen or snap.taken_at)
    total = sum(max(x.count, 1) for x in hits)
    return [Evidence.event(e.involved, e.reason, short(e.message), total, snap.age(e.last_seen), type_=e.type,
                           note=f"{total} launch failure event(s) name {IP_ERROR}")]


def _remediation(facts: AwsFacts, s: Subnet, classes: Sequence[NodeClass]) -> Remediation:
    region = f" --region {facts.region}" if facts.region else ""
    tags = next((t.get("tags") for c in classes for t in c.subnet_terms if t.get("tags")), None) or {}
    tagged = tag_args(tags)
    commands = [
        f"aws ec2 describe-subnets --subnet-ids {s.id}{region} "
        "--query 'Subnets[].{id:SubnetId,az:AvailabilityZone,cidr:CidrBlock,freeIPs:AvailableIpAddressCount}'",
        f"aws ec2 describe-network-interfaces{region} --filters Name=subnet-id,Values={s.id} "
        "Name=status,Values=available --query 'NetworkInterfaces[].NetworkInterfaceId'",
    ]
    if tagged:
        commands.append(f"aws ec2 create-tags{region} --resources <larger-subnet-in-{s.zone}> --tags {tagged}")
    commands.append("kubectl set env daemonset aws-node -n kube-system WARM_IP_TARGET=5 MINIMUM_IP_TARGET=10")
    return Remediation(
        f"Give {s.zone} more addresses: tag an additional, larger subnet in the same zone with the EC2NodeClass's "
        "selector tags (Karpenter uses the roomiest one on its next reconcile), delete unattached ENIs (listed "
        "by the second command), or lower the VPC CNI's warm pool (WARM_IP_TARGET) so each GPU node holds fewer "
        "spare addresses. Prefix delegation does not help a nearly full subnet: it needs free contiguous /28 "
        "blocks (use a new subnet or a CIDR reservation for it).",
        tuple(commands))
