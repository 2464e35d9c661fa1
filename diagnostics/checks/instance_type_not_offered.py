"""GPU instance types a NodePool relies on that EC2 does not offer in any of its zones."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

from diagnostics.facts.aws_facts import (
    INSTANCE_TYPES,
    OFFERINGS,
    AwsFacts,
    InstanceType,
    aws_evidence,
    candidate_types,
    check_region,
    facts_for,
    launch_zones,
    named_values,
    spot_alternatives,
)
from diagnostics.facts.gpu_pools import INSTANCE_FAMILY, INSTANCE_TYPE, fitting_pools, gpu_admission, is_gpu_pool
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.nodeclass_health import selector_failure
from diagnostics.records import NodePool
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

_WHAT = {INSTANCE_TYPE: "instance type", INSTANCE_FAMILY: "instance family",
         "karpenter.k8s.aws/instance-gpu-name": "GPU", "karpenter.k8s.aws/instance-accelerator-name": "accelerator"}


@check(code="GT603", slug="instance-type-not-offered", title="NodePool GPU instance types are offered in its zones",
       severity=Severity.WARNING, pending_pods_suffice=True, requires=("aws", "nodepools"), optional=("ec2nodeclasses", "pods"))
def instance_type_not_offered(snap: Snapshot) -> Iterator[Finding | int]:
    """GPU instance types (or families, GPU models) a NodePool names are not offered in any of its zones.

    Why it matters:
    EC2 sells each instance type only in some availability zones, and the biggest GPUs (p5, p5e,
    p6) only in a few zones of a few regions. A type that is not offered where the pool can
    launch is silently dropped by Karpenter; when it was the only one, pods wait forever with
    `no instance type has the required offering` and it looks like a capacity shortage.

    Fix:
    Launch where the type is offered (add that zone to the NodePool and a subnet there to its
    EC2NodeClass), or allow another type with the same GPUs that is offered in the pool's zones.
    `aws ec2 describe-instance-type-offerings` shows where a type is sold.
    """
    facts = facts_for(snap, INSTANCE_TYPES, OFFERINGS)
    for pool in snap.nodepools:
        if not is_gpu_pool(pool):
            continue
        nc = snap.index.nodeclass.get(pool.node_class)
        if nc is not None and selector_failure(snap, nc, "subnets") is not None:
            continue  # no subnet, no zone: nodeclass-subnets-not-found says it
        zones, where = launch_zones(snap, pool, facts)
        if zones is not None and not zones:
            continue  # no zone with a subnet: nodepool-zones-without-subnets says it
        check_region(facts, zones or ())
        yield 1
        finding = _check_pool(snap, facts, pool, zones, where)
        if finding is not None:
            yield finding


def _sold(facts: AwsFacts, key: str, value: str) -> bool:
    """EC2 returned this type (or a type of this family) with no accelerator gputui counts."""
    if key == INSTANCE_TYPE:
        return value in facts.unmodeled_types
    return key == INSTANCE_FAMILY and any(t.split(".")[0] == value for t in facts.unmodeled_types)


def _offered(facts: AwsFacts, it: InstanceType, zones: set[str] | None) -> set[str]:
    offered = set(facts.offerings.get(it.name, ()))
    return offered & zones if zones is not None else offered


def _check_pool(snap: Snapshot, facts: AwsFacts, pool: NodePool, zones: set[str] | None,
                where: str) -> Finding | None:
    cands = candidate_types(facts, pool)
    usable = [t for t in cands if _offered(facts, t, zones)]
    problems: list[tuple[str, str, list[InstanceType]]] = []
    """(requirement key, value named, the types it means in this region; [] = none in the region)."""
    for key, value in named_values(pool):
        everywhere = [t for t in facts.instance_types.values() if t.labels().get(key) == value]
        if not everywhere:
            probe = value if key == INSTANCE_TYPE else f"{value}.x"
            if key in (INSTANCE_TYPE, INSTANCE_FAMILY) and facts.type_queried(probe):
                problems.append((key, value, []))
            continue
        mine = [t for t in everywhere if t in cands] or everywhere
        if not any(_offered(facts, t, zones) for t in mine):
            problems.append((key, value, mine))
    if usable and not problems:
        return None
    if not usable and not problems and gpu_admission(pool) != "only":
        return None  # it may launch non-accelerated types too; nothing to say about GPUs
    if not usable and not problems and any(_sold(facts, k, v) for k, v in named_values(pool)):
        return None  # it names types EC2 sells here whose accelerator gputui does not count (g6f, dl2q)
    zone_text = ", ".join(sorted(zones)) if zones is not None else f"any zone of {facts.region}"
    ev: list[Evidence] = []
    for key, value, types in problems:
        offered = {t.name: sorted(facts.offerings.get(t.name, ())) for t in types[:6]}
        ev.append(aws_evidence(pool.ref, f"ec2:DescribeInstanceTypeOfferings ({_WHAT.get(key, key)} {value})",
                               offered or f"no {value} type in {facts.region}",
                               note=f"the pool's zones: {zone_text} (from {where or 'its requirements'})"))
    if not usable:
        ev.append(aws_evidence(pool.ref, "ec2:DescribeInstanceTypes + DescribeInstanceTypeOfferings",
                               [t.name for t in cands[:12]] or "no accelerated type matches the requirements",
                               note=f"accelerated types the requirements allow in {facts.region}; none is offered "
                                    f"in {zone_text}"))
    alternatives = _alternatives(facts, pool, problems, cands, zones)
    if alternatives:
        ev.append(aws_evidence(pool.ref, "ec2:DescribeInstanceTypeOfferings (alternatives)", alternatives,
                               note=f"offered in {zone_text} with at least as many accelerators"))
    named = [value for _k, value, _t in problems]
    if not usable:
        severity = Severity.ERROR
        what = ", ".join(named) if named else "its GPU instance types"
        title = f"NodePool {pool.name}: {what} not offered in its zones ({zone_text}): nothing can launch"
    else:
        severity = None
        title = f"NodePool {pool.name}: {', '.join(named)} not offered in any of its zones ({zone_text})"
    elsewhere = sorted({z for _k, _v, types in problems for t in types for z in facts.offerings.get(t.name, ())}
                       - (zones or set()))
    if elsewhere:
        title += f"; offered in {', '.join(elsewhere)}"
    elif any(not types for _k, _v, types in problems):
        title += f"; not sold in {facts.region}"
    pods = [p for p in snap.index.pending_gpu_pods
            if pool.name in {fp.name for fp in fitting_pools(snap, p)}] if snap.status("pods").state.usable else []
    if pods and severity is Severity.ERROR:
        title += f"; {len(pods)} GPU pod(s) pending"
    return Finding(subject=pool.ref, title=title, evidence=tuple(ev), severity=severity,
                   remediation=_remediation(facts, pool, problems, cands, elsewhere, alternatives),
                   related=tuple(p.ref for p in pods))


def _alternatives(facts: AwsFacts, pool: NodePool, problems: Sequence[tuple[str, str, list[InstanceType]]],
                  cands: Sequence[InstanceType], zones: set[str] | None) -> list[str]:
    """Other accelerated types offered in the pool's zones that could take the same pods."""
    names = [t.name for _k, _v, types in problems for t in types] or [t.name for t in cands]
    if not names:
        return []
    opts = spot_alternatives(facts, names, launchable_zones=zones)
    seen: dict[str, list[str]] = {}
    for o in opts:
        if o.same_type:
            continue
        seen.setdefault(f"{o.instance_type} ({o.accelerator})", []).append(o.zone)
        if len(seen) >= 4:
            break
    return [f"{k} in {', '.join(sorted(v))}" for k, v in seen.items()]


def _remediation(facts: AwsFacts, pool: NodePool, problems: Sequence[tuple[str, str, list[InstanceType]]],
                 cands: Sequence[InstanceType], elsewhere: Sequence[str], alternatives: Sequence[str]) -> Remediation:
    types = [t.name for _k, _v, ts in problems for t in ts][:6] or [t.name for t in cands][:6]
    region = f" --region {facts.region}" if facts.region else ""
    commands = []
    if types:
        commands.append(f"aws ec2 describe-instance-type-offerings --location-type availability-zone{region} "
                        f"--filters Name=instance-type,Values={','.join(types)} "
                        "--query 'InstanceTypeOfferings[].[InstanceType,Location]' --output text")
    commands.append(f"kubectl edit nodepool {pool.name}")
    text = []
    if elsewhere:
        text.append(f"Let the pool launch in {', '.join(elsewhere)} (add the zone to its topology.kubernetes.io/zone "
                    "requirement and make sure its EC2NodeClass selects a subnet there)")
    if alternatives:
        text.append(f"or allow a type that is offered in its zones: {'; '.join(alternatives)}")
    if not text:
        text.append("Allow GPU instance types that this region sells, or run the pool in a region that sells them")
    return Remediation(", ".join(text) + ".", tuple(commands))
