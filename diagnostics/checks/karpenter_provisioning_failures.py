"""NodeClaims that never became nodes, and EC2 launch failures, in the last 15 minutes (Karpenter metrics)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator

from diagnostics.facts.metric_facts import FAILURE_WINDOW, KARPENTER, Sample, facts_for, in_words, metric_evidence
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

_WHY = {
    "insufficient_capacity": "EC2 had no capacity for any allowed instance type/zone (ICE)",
    "launch_timeout": "the instance never launched within Karpenter's launch timeout",
    "registration_timeout": "the instance never joined the cluster as a node within 15 minutes",
    "liveness": "the instance never joined the cluster (older Karpenter's liveness timeout)",
    "nodeclass_not_ready": "the NodePool's EC2NodeClass is not Ready",
}


def _count(s: Sample) -> int:
    return max(1, round(s.value))


@check(code="GT703", slug="karpenter-provisioning-failures", title="Karpenter launches nodes without failing",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("prometheus",), optional=("nodepools", "pods"))
def karpenter_provisioning_failures(snap: Snapshot) -> Iterator[Finding | int]:
    """NodeClaims failed (no capacity, launch/registration timeout, NodeClass not ready) in the last 15 minutes.

    Why it matters:
    Each of these is a node Karpenter tried and failed to create; the pods it was for stay
    Pending and Karpenter keeps retrying. Read from `karpenter_nodeclaims_disrupted_total`
    (`karpenter_nodeclaims_terminated` with a reason before v1) and
    `karpenter_cloudprovider_instance_launch_failures_total`.

    Fix:
    insufficient_capacity: allow more instance types, zones or on-demand (a fallback NodePool).
    launch/registration timeout: read the NodeClaim's conditions and the node's bootstrap
    (AMI, user data, security groups, instance profile). nodeclass_not_ready: fix the EC2NodeClass.
    """
    facts = facts_for(snap, KARPENTER, "nodeclaim_failures", "launch_failures")
    by_pool: dict[str, list[Sample]] = defaultdict(list)
    for s in facts.get("nodeclaim_failures"):
        by_pool[s.labels.get("nodepool") or "(unknown)"].append(s)
    pools = set(by_pool) | {p.name for p in snap.nodepools}
    yield len(pools) or 1
    launches = facts.get("launch_failures")
    for pool, samples in sorted(by_pool.items()):
        ref = ObjectRef("NodePool", pool)
        reasons: dict[str, int] = defaultdict(int)
        for s in samples:
            reasons[s.labels.get("reason", "?")] += _count(s)
        ev = [_claim_evidence(ref, s) for s in samples]
        types = {s.labels.get("capacity_type") for s in samples if s.labels.get("capacity_type")}
        for s in launches:
            if not types or s.labels.get("capacity_type") in types:
                ev.append(_launch_evidence(ref, s))
        np = snap.index.nodepool.get(pool)
        if np is None and snap.nodepools:
            ev.append(Evidence.absence(ref, f"nodepool {pool}", note="no NodePool by this name now"))
        total = sum(reasons.values())
        main = max(reasons.items(), key=lambda kv: kv[1])[0]
        waiting = [p.ref for p in snap.index.pending_gpu_pods][:20]
        yield Finding(
            subject=ref,
            title=(f"NodePool {pool}: {total} NodeClaim{'s' if total != 1 else ''} failed in the last "
                   f"{in_words(FAILURE_WINDOW)} ({', '.join(f'{r} x{n}' for r, n in sorted(reasons.items()))})"
                   f"{': ' + _WHY[main] if main in _WHY else ''}"),
            evidence=tuple(ev),
            remediation=_remediation(snap, pool, set(reasons)),
            related=tuple(waiting),
        )
    if launches and not by_pool:
        ref = ObjectRef("Karpenter", "instance-launches")
        total = sum(_count(s) for s in launches)
        why = sorted({s.labels.get("reason", "?") for s in launches})
        yield Finding(
            subject=ref,
            title=f"{total} EC2 instance launches failed in the last {in_words(FAILURE_WINDOW)} ({', '.join(why)})",
            evidence=tuple(_launch_evidence(ref, s) for s in launches),
            remediation=Remediation(
                "Read Karpenter's launch errors: capacity (LaunchFailed for plain ICE), quotas "
                "(SpotQuotaExceeded, VCPULimitExceeded) or permissions; widen instance types/zones or raise quotas.",
                ("kubectl get events -A --field-selector reason=InsufficientCapacityError",
                 "kubectl get nodeclaims -o wide"),
            ),
        )


def _claim_evidence(ref: ObjectRef, s: Sample) -> Evidence:
    reason = s.labels.get("reason", "?")
    why = f": {_WHY[reason]}" if reason in _WHY else ""
    note = (f"{_count(s)} NodeClaims {reason} ({s.labels.get('capacity_type') or 'any capacity type'}) "
            f"in the last {in_words(FAILURE_WINDOW)}{why}")
    value = {k: v for k, v in s.labels.items() if k in ("nodepool", "reason", "capacity_type")}
    return metric_evidence(ref, s, note, value | {"count": _count(s)})


def _launch_evidence(ref: ObjectRef, s: Sample) -> Evidence:
    where = "/".join(v for v in (s.labels.get("capacity_type"), s.labels.get("zone")) if v)
    return metric_evidence(ref, s, f"{_count(s)} instance launches failed ({s.labels.get('reason', '?')}"
                                   f"{', ' + where if where else ''}) in the last {in_words(FAILURE_WINDOW)}",
                           {k: v for k, v in s.labels.items() if k in ("reason", "capacity_type", "zone",
                                                                      "instance_type")} | {"count": _count(s)})


def _remediation(snap: Snapshot, pool: str, reasons: set[str]) -> Remediation:
    commands = [f"kubectl get nodeclaims -l karpenter.sh/nodepool={pool} -o wide"]
    text: list[str] = []
    if "insufficient_capacity" in reasons:
        text.append("EC2 has no capacity for this NodePool's instance types: allow more GPU instance types and "
                    "zones, or add an on-demand fallback NodePool with a lower weight.")
        commands.append("kubectl get events -A --field-selector reason=InsufficientCapacityError")
        commands.append(f"kubectl get nodepool {pool} -o jsonpath='{{.spec.template.spec.requirements}}'")
    if reasons & {"launch_timeout", "registration_timeout", "liveness"}:
        text.append("Instances launched but never became nodes: check the NodeClaims' conditions and the node "
                    "bootstrap (AMI, user data, security groups, instance profile).")
        commands.append("kubectl describe nodeclaims -l karpenter.sh/nodepool=" + pool)
    if "nodeclass_not_ready" in reasons:
        np = snap.index.nodepool.get(pool)
        cls = np.node_class if np is not None and np.node_class else "<nodeclass>"
        text.append(f"The EC2NodeClass {cls} is not Ready: fix what its Ready condition names.")
        commands.append(f"kubectl describe ec2nodeclass {cls}")
    return Remediation(" ".join(text) or "Read the NodeClaims' conditions and Karpenter's logs.", tuple(commands))
