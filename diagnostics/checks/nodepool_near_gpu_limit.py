"""NodePools whose GPU usage is above 90 % of their limit (Karpenter's nodepool usage/limit gauges)."""

from __future__ import annotations

import math
from collections.abc import Iterator

from diagnostics.facts.metric_facts import NODEPOOL_USAGE, Sample, facts_for, is_accelerator_type, metric_evidence
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.pod_fit import LIMIT, fit_pool
from diagnostics.records import is_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot

NEAR = 0.9
"""Usage/limit ratio from which a NodePool counts as near its limit."""


def _by_pool(samples: tuple[Sample, ...]) -> dict[tuple[str, str], Sample]:
    """(nodepool, resource_type) -> sample; the newer metric name wins during an upgrade."""
    out: dict[tuple[str, str], Sample] = {}
    for s in sorted(samples, key=lambda s: s.labels.get("__name__", "").startswith("karpenter_nodepools_")):
        pool, rt = s.labels.get("nodepool", ""), s.labels.get("resource_type", "")
        if pool and is_accelerator_type(rt):
            out[(pool, rt)] = s
    return out


def _resource_name(snap: Snapshot, pool: str, rt: str) -> str:
    """Karpenter writes `nvidia.com/mig-1g.5gb` as `nvidia.com/mig_1g.5gb`: show the real name."""
    np = snap.index.nodepool.get(pool)
    for name in (np.limits if np is not None else {}):
        if name.lower().replace("-", "_") == rt:
            return name
    return rt if is_accelerator(rt) else rt.replace("_", "-")


@check(code="GT701", slug="nodepool-near-gpu-limit", title="NodePools have GPU headroom under their limits",
       severity=Severity.WARNING, pending_pods_suffice=True, requires=("prometheus",), optional=("nodepools", "pods"))
def nodepool_near_gpu_limit(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodePool uses more than 90 % of its GPU limit (karpenter_nodepools_usage / _limit).

    Why it matters:
    Karpenter stops launching nodes for a NodePool at its `spec.limits`; the next GPU pods stay
    Pending with "all available instance types exceed limits for nodepool". Above 90 % one more
    multi-GPU node may already not fit. Both metric generations are read
    (`karpenter_nodepool_usage` in older releases, `karpenter_nodepools_usage` now).

    Fix:
    Raise the NodePool's GPU limit if the spend is intended, or free GPUs (idle or finished
    pods, see gpu-idle). Let another NodePool with headroom take the overflow.
    """
    facts = facts_for(snap, NODEPOOL_USAGE, "nodepool_usage")
    usage = _by_pool(facts.get("nodepool_usage"))
    limits = _by_pool(facts.get("nodepool_limit"))
    for (pool, rt), used in sorted(usage.items()):
        yield 1
        limit_s = limits.get((pool, rt))
        resource = _resource_name(snap, pool, rt)
        np = snap.index.nodepool.get(pool)
        limit = limit_s.value if limit_s is not None else (np.limits.get(resource) if np is not None else None)
        if limit is None or limit <= 0 or not math.isfinite(limit):
            continue  # no limit: nothing to be near (a limit of 0 disables the pool: nodepool-not-ready's job)
        ratio = used.value / limit
        if ratio <= NEAR:
            continue
        ref = ObjectRef("NodePool", pool)
        ev = [metric_evidence(ref, used, f"{resource} in use by the NodePool's nodes", round(used.value, 3))]
        if limit_s is not None:
            ev.append(metric_evidence(ref, limit_s, f"{resource} limit", round(limit_s.value, 3)))
        else:
            ev.append(Evidence.field(ref, f"spec.limits[{resource}]", limit, note="no limit gauge; from the NodePool"))
        # The pending GPU pods this pool would serve but for its limits, not every pending pod in the cluster.
        pending = [p.ref for p in snap.index.pending_gpu_pods
                   if np is not None and fit_pool(snap, p, np).kinds <= {LIMIT}][:20]
        reached = ratio >= 1
        new_limit = math.ceil(max(limit * 1.5, used.value + 8))
        yield Finding(
            subject=ref,
            title=(f"NodePool {pool} {'has reached' if reached else 'is near'} its {resource} limit: "
                   f"{used.value:g} of {limit:g} ({ratio:.0%})"
                   + (f"; {len(pending)} GPU pod{'s' if len(pending) != 1 else ''} pending" if reached and pending
                      else "")),
            evidence=tuple(ev),
            remediation=Remediation(
                f"Raise the NodePool's {resource} limit if the spend is intended, or free GPUs held by idle or "
                "finished pods.",
                (f"kubectl get nodepool {pool} -o jsonpath='{{.spec.limits}}'",
                 f"kubectl patch nodepool {pool} --type merge -p "
                 f"'{{\"spec\":{{\"limits\":{{\"{resource}\":\"{new_limit}\"}}}}}}'"),
            ),
            related=tuple(pending) if reached else (),
        )
