"""NodePool zones in which its EC2NodeClass has no subnet: nothing can launch there."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence

from diagnostics.facts.aws_facts import (
    ZONE_ID,
    AwsFacts,
    Subnet,
    aws_evidence,
    class_subnets,
    class_zones,
    cluster_vpcs,
    pool_zone_limits,
    subject_ref,
    usable_facts,
)
from diagnostics.facts.gpu_pools import ZONE, pool_fits_pod
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.nodeclass_health import selector_failure, tag_args
from diagnostics.records import NodeClass, NodePool, Pod
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT602", slug="nodepool-zones-without-subnets", title="NodePool zones have subnets",
       severity=Severity.WARNING, pending_pods_suffice=True, requires=("nodepools", "ec2nodeclasses"), optional=("aws", "pods"))
def nodepool_zones_without_subnets(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodePool's zone requirement names zones where its EC2NodeClass selects no subnet.

    Why it matters:
    Karpenter only offers instance types in the zones of the class's subnets. A zone the NodePool
    asks for without a subnet silently drops out: pods pinned to it never get a node, and when
    none of the pool's zones has a subnet the pool launches nothing (`no instance type has the
    required offering`). Fewer zones also means less GPU capacity to draw from.

    Fix:
    Tag a subnet in the missing zone (in the cluster's VPC) with the class's selector tags, or
    drop the zone from the NodePool's `topology.kubernetes.io/zone` requirement. Uses the AWS
    answer for the selector when the AWS source ran, else the class's `status.subnets`.
    """
    facts = usable_facts(snap)
    idx = snap.index
    for pool in snap.nodepools:
        nc = idx.nodeclass.get(pool.node_class)
        if nc is None or pool.node_class_kind not in ("EC2NodeClass", ""):
            continue  # a missing class is nodepool-not-ready's finding
        allowed, excluded, ids = pool_zone_limits(pool)
        if allowed is None and ids is None and not excluded:
            continue  # any zone of the class: nothing to compare
        if selector_failure(snap, nc, "subnets") is not None:
            continue  # no subnet at all is nodeclass-subnets-not-found's finding
        zones, where = class_zones(snap, nc, facts)
        if not zones:
            continue
        yield 1
        finding = _check_pool(snap, facts, pool, nc, zones, where, allowed, excluded, ids)
        if finding is not None:
            yield finding


def _check_pool(snap: Snapshot, facts: AwsFacts | None, pool: NodePool, nc: NodeClass, zones: Mapping[str, str],
                where: str, allowed: set[str] | None, excluded: set[str], ids: set[str] | None) -> Finding | None:
    wanted = set(allowed) if allowed is not None else set(zones)
    missing = sorted(wanted - set(zones))
    missing_ids = sorted(ids - set(zones.values())) if ids is not None else []
    usable = sorted(z for z in wanted if z in zones and z not in excluded and (ids is None or zones[z] in ids))
    if usable and not missing and not missing_ids:
        return None
    ev: list[Evidence] = []
    if allowed is not None:
        ev.append(Evidence.field(pool.ref, f"spec.template.spec.requirements[{ZONE}]", sorted(allowed),
                                 note=f"zones without a subnet: {', '.join(missing) or 'none'}"))
    if excluded:
        ev.append(Evidence.field(pool.ref, f"spec.template.spec.requirements[{ZONE}] NotIn", sorted(excluded)))
    if ids is not None:
        ev.append(Evidence.field(pool.ref, f"spec.template.spec.requirements[{ZONE_ID}]", sorted(ids),
                                 note=f"zone ids without a subnet: {', '.join(missing_ids) or 'none'}"))
    subs = class_subnets(facts, nc) if facts is not None else None
    if facts is not None and subs is not None:
        ev.append(aws_evidence(nc.ref, f"ec2:DescribeSubnets (subnetSelectorTerms, {facts.region})",
                               {z: sorted(s.id for s in subs if s.zone == z) for z in sorted(zones)},
                               note="zones of the subnets the selector matches"))
    else:
        ev.append(Evidence.field(nc.ref, "status.subnets", [{"id": s.get("id"), "zone": s.get("zone")}
                                                            for s in nc.subnets], note=f"zones from {where}"))
    candidates = _candidates(snap, facts, missing, subs)
    for s in candidates:
        ev.append(aws_evidence(subject_ref(s), f"ec2:DescribeSubnets {s.id}",
                               {"zone": s.zone, "vpc": s.vpc_id, "freeIPs": s.available_ips,
                                "tags": dict(list(s.tags.items())[:6])},
                               note="in the cluster's VPC but not matched by the selector: tagging it adds the zone"))
    pods = _pinned_pods(snap, pool, set(missing))
    have = ", ".join(sorted(zones))
    if not usable:
        severity = Severity.ERROR
        if allowed is not None:
            asked = ", ".join(sorted(allowed))
        elif ids is not None:
            asked = "zone ids " + ", ".join(sorted(ids))
        else:
            asked = "any zone but " + ", ".join(sorted(excluded))
        title = (f"NodePool {pool.name}: none of its zones ({asked}) has a subnet of EC2NodeClass {nc.name} "
                 f"(subnets in {have}): nothing can launch")
    else:
        severity = None
        gone = ", ".join(missing + missing_ids)
        title = (f"NodePool {pool.name}: zone {gone} has no subnet of EC2NodeClass {nc.name} (subnets in {have}): "
                 "nothing launches there")
    if pods:
        title += f"; {len(pods)} pending pod(s) pinned to it"
    return Finding(subject=pool.ref, title=title, evidence=tuple(ev), severity=severity,
                   remediation=_remediation(facts, pool, nc, missing, candidates),
                   related=(nc.ref,) + tuple(p.ref for p in pods))


def _candidates(snap: Snapshot, facts: AwsFacts | None, missing: Sequence[str],
                selected: Sequence[Subnet] | None) -> list[Subnet]:
    """Subnets of the cluster's VPC in the missing zones that the selector does not match (AWS only)."""
    if facts is None or not missing or selected is None:
        return []
    vpcs = cluster_vpcs(facts, snap.ec2nodeclasses)
    chosen = {s.id for s in selected}
    out = [s for s in facts.subnets.values() if s.zone in missing and s.id not in chosen and s.vpc_id in vpcs]
    return sorted(out, key=lambda s: (-s.available_ips, s.id))[:3]


def _pinned_pods(snap: Snapshot, pool: NodePool, missing: set[str]) -> list[Pod]:
    """Pending pods that fit the pool and may only run in the zones without a subnet."""
    if not missing or not snap.status("pods").state.usable:
        return []
    out = []
    for pod in snap.index.pending:
        pins: list[set[str]] = []
        if ZONE in pod.node_selector:
            pins.append({pod.node_selector[ZONE]})
        if pod.required_affinity:
            per_term = [set().union(*(set(r.values) for r in term if r.key == ZONE and r.operator == "In"))
                        for term in pod.required_affinity]
            if all(per_term):
                pins.append(set().union(*per_term))
        if pins and all(p <= missing for p in pins) and pool_fits_pod(pool, pod):
            out.append(pod)
    return out


def _remediation(facts: AwsFacts | None, pool: NodePool, nc: NodeClass, missing: Sequence[str],
                 candidates: Sequence[Subnet]) -> Remediation:
    region = f" --region {facts.region}" if facts is not None and facts.region else ""
    tags = next((t.get("tags") for t in nc.subnet_terms if t.get("tags")), None) or {}
    tagged = tag_args(tags)
    commands: list[str] = []
    if missing:
        vpcs = sorted({s.vpc_id for s in candidates if s.vpc_id})
        vpc = f" Name=vpc-id,Values={','.join(vpcs)}" if vpcs else ""
        commands.append(f"aws ec2 describe-subnets{region} --filters Name=availability-zone,Values={','.join(missing)}"
                        f"{vpc} --query 'Subnets[].{{id:SubnetId,az:AvailabilityZone,vpc:VpcId,"
                        "freeIPs:AvailableIpAddressCount,tags:Tags}'")
        if tagged:
            target = candidates[0].id if candidates else f"<subnet-in-{missing[0]}>"
            commands.append(f"aws ec2 create-tags{region} --resources {target} --tags {tagged}")
    commands.append(f"kubectl edit nodepool {pool.name}")
    commands.append(f"kubectl get ec2nodeclass {nc.name} -o jsonpath='{{.status.subnets}}'")
    return Remediation(
        f"Either tag a private subnet in {', '.join(missing) or 'the missing zone'} (in the cluster's VPC) with "
        f"EC2NodeClass {nc.name}'s selector tags, so Karpenter can launch there, or remove the zone from NodePool "
        f"{pool.name}'s topology.kubernetes.io/zone requirement.",
        tuple(commands))

