"""A NodePool at its accelerator (or node-count) limit while GPU pods it would serve are pending."""

from __future__ import annotations

import json
import math
from collections.abc import Iterator

from diagnostics.facts.messages import LIMITS, NODE_LIMITS, KarpenterFragment
from diagnostics.model import Evidence, Finding, Remediation, Severity
from diagnostics.facts.pending import karpenter_ignores, placeable
from diagnostics.facts.pod_events import PodScheduling, clip, event_evidence, events_note
from diagnostics.facts.pod_fit import LIMIT, FitReason, NodeFit, PodFit, PoolFit, qty
from diagnostics.facts.provider import derived
from diagnostics.records import NodePool, Pod, is_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot


@check(code="GT105", slug="nodepool-gpu-limit-reached", title="GPU NodePools have room under their limits",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("nodepools", "pods"), optional=("events", "nodeclaims", "nodes"))
def nodepool_gpu_limit_reached(snap: Snapshot) -> Iterator[Finding | int]:
    """A NodePool has used up `spec.limits` for its accelerators (or `nodes`) while GPU pods it would serve wait.

    Why it matters:
    Karpenter never launches a node that would push a NodePool past `spec.limits`, and it counts
    the whole instance, not the pod's request: every instance type whose capacity exceeds what is
    left of the limit is dropped, so a pool with 4 GPUs left and only 8-GPU instance types launches
    nothing for a 1-GPU pod. There is no condition on the NodePool for this: the only traces are
    the pod event `all available instance types exceed limits for nodepool` (or `node limits have
    been exhausted`) and the `karpenter_nodepools_usage` / `karpenter_nodepools_limit` metrics, so
    it is easy to miss.

    Fix:
    Raise `spec.limits` on the NodePool (a patch is given: the current usage plus the accelerators
    of the smallest instance type the pool can launch for the pending pods), allow smaller instance
    types, free capacity held by idle or stuck nodes of that NodePool, or add a lower-weight
    fallback NodePool for the same GPUs.
    """
    blocked_by: dict[str, list[_Blocked]] = {}
    for t, pf in placeable(snap)[1]:
        pod, sched = t.pod, t.sched
        if karpenter_ignores(t):
            continue  # Provisioner.Validate rejected it (its volumes, a restricted label): no limit is why it waits
        by_model = _limit_blocked(snap, pf)
        said = [f for f in (sched.karpenter_msg.fragments if sched.karpenter_msg and sched.karpenter_current
                            else ()) if f.kind in (LIMITS, NODE_LIMITS)]
        for name in dict.fromkeys([*by_model, *(f.nodepool for f in said)]):
            blocked_by.setdefault(name, []).append(
                (pod, sched, [f for f in said if f.nodepool == name], _limit_reasons(pf, name) if name in by_model
                 else ()))
    for pool in sorted(snap.nodepools, key=lambda p: p.name):
        yield 1
        blocked = blocked_by.get(pool.name)
        if blocked:
            yield _finding(snap, pool, blocked)


_Blocked = tuple[Pod, PodScheduling, list[KarpenterFragment], tuple[FitReason, ...]]
"""A pod a pool's limit blocks, its scheduling events, Karpenter's limit fragments and gputui's LIMIT reasons."""

def _limit_blocked(snap: Snapshot, pf: PodFit) -> frozenset[str]:
    """NodePools that would serve the pod but for an accelerator or node-count limit (when nothing else can)."""
    # Replicas of a workload share their PoolFit/NodeFit tuples (pod_fit shares them by pod shape).
    return _limit_blocked_in(snap, pf.pools, pf.nodes)


@derived
def _limit_blocked_in(pools: tuple[PoolFit, ...], nodes: tuple[NodeFit, ...]) -> frozenset[str]:
    if any(p.fits for p in pools) or any(n.fits for n in nodes):
        return frozenset()  # servable (PodFit.servable)
    first: dict[str, PoolFit] = {}
    for p in pools:
        first.setdefault(p.pool.name, p)  # the first fit of a name speaks for it
    return frozenset(name for name, p in first.items() if p.only(LIMIT) and all(
        r.resource == "nodes" or is_accelerator(r.resource) for r in p.reasons))


def _limit_reasons(pf: PodFit, name: str) -> tuple[FitReason, ...]:
    """The LIMIT reasons of the pool's first fit (the one that speaks for it, as in `_limit_blocked`)."""
    p = next((p for p in pf.pools if p.pool.name == name), None)
    return tuple(r for r in p.reasons if r.kind == LIMIT) if p is not None else ()


def _needs(pool: NodePool, blocked: list[_Blocked]) -> dict[str, float]:
    """How much of each limited resource launches for the blocked pods add on top of the current usage.

    A launch adds a whole instance (the smallest the pool admits for the pod, `FitReason.adds`): pods that
    would share one instance type are packed onto as few of them as their requests allow.
    """
    out: dict[str, float] = {}
    for res in pool.limits:
        if res == "nodes":
            out[res] = float(len(blocked))
            continue
        by_unit: dict[float, list[float]] = {}
        for pod, _sched, _said, reasons in blocked:
            want = pod.requests.get(res, 0.0)
            unit = next((r.adds for r in reasons if r.resource == res and r.adds > 0), want)
            if unit > 0:
                by_unit.setdefault(unit, []).append(min(want, unit) or unit)
        total = sum(unit * _instances(sizes, unit) for unit, sizes in by_unit.items())
        if total > 0:
            out[res] = total
    return out


def _instances(sizes: list[float], unit: float) -> int:
    """Instances of `unit` capacity the requests need, first-fit decreasing (what Karpenter's bin-packing nears)."""
    free: list[float] = []
    for s in sorted(sizes, reverse=True):
        i = next((i for i, f in enumerate(free) if f >= s), None)
        if i is None:
            free.append(unit - s)
        else:
            free[i] -= s
    return len(free)


def _smallest_launch(blocked: list[_Blocked], res: str) -> FitReason | None:
    """The LIMIT reason naming the smallest instance type that carries more of `res` than a pod asks for."""
    found = [r for pod, _s, _k, reasons in blocked for r in reasons
             if r.resource == res and r.adds > pod.requests.get(res, 0.0)]
    return min(found, key=lambda r: (r.adds, r.launch == "", r.launch)) if found else None


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else f"{v:g}"


def _finding(snap: Snapshot, pool: NodePool, blocked: list[_Blocked]) -> Finding:
    pods = [b[0] for b in blocked]
    needs = _needs(pool, blocked)
    usage = {r: pool.usage.get(r, 0.0) for r in pool.limits}
    if "nodes" in pool.limits and "nodes" not in pool.usage:
        usage["nodes"] = float(len(snap.index.nodeclaims_by_pool.get(pool.name, ())) or
                               len(snap.index.nodes_by_pool.get(pool.name, ())))
    exhausted = [r for r, lim in sorted(pool.limits.items())
                 if (r == "nodes" or is_accelerator(r)) and usage[r] + (needs.get(r, 0.0) or 0.0) > lim]
    full = [r for r in exhausted if usage[r] >= pool.limits[r]]
    n = len(pods)
    podword = "pod" if n == 1 else "pods"
    r = (full or exhausted or [""])[0]
    launch = _smallest_launch(blocked, r) if r else None
    if launch is not None and not full:
        it = f"{launch.launch}: {launch.adds:g}" if launch.launch else f"{launch.adds:g}"
        title = (f"NodePool {pool.name} has {qty(r, pool.limits[r] - usage[r])} {r} left under its limit "
                 f"({qty(r, usage[r])}/{qty(r, pool.limits[r])}), fewer than the smallest instance type it can launch "
                 f"for the {podword} carries ({it}): {n} pending GPU {podword} blocked")
    elif exhausted:
        state = "at" if usage[r] == pool.limits[r] else ("over" if usage[r] > pool.limits[r] else "near")
        title = (f"NodePool {pool.name} is {state} its {r} limit ({qty(r, usage[r])}/{qty(r, pool.limits[r])}): "
                 f"{n} pending GPU {podword} blocked")
    else:
        first = next((f for b in blocked for f in b[2]), None)
        what = "node limit is exhausted" if first is not None and first.kind == NODE_LIMITS else \
            "limits leave no room for any instance type"
        title = f"NodePool {pool.name}: Karpenter says its {what}; {n} pending GPU {podword} blocked"
    ev: list[Evidence] = [
        Evidence.field(pool.ref, "spec.limits", {k: qty(k, v) for k, v in sorted(pool.limits.items())}),
        Evidence.field(pool.ref, "status.resources", {k: qty(k, usage[k]) for k in sorted(pool.limits)},
                       note="in-flight NodeClaims count against the limit too"),
    ]
    if needs:
        ev.append(Evidence.field(None, "pending pods' requests", {k: qty(k, v) for k, v in sorted(needs.items())},
                                 note=", ".join(f"{p.namespace}/{p.name}" for p in pods[:5])
                                 + (f" (+{n - 5} more)" if n > 5 else "")))
    if launch is not None:
        ev.append(Evidence.field(pool.ref, "smallest instance type for the pending pods", launch.launch or "unknown",
                                 note=f"{launch.adds:g} {r}, more than is left of the limit: Karpenter drops every "
                                      "instance type whose capacity exceeds the rest of spec.limits (\"all available "
                                      "instance types exceed limits for nodepool\")"))
    shown = 0
    for pod, sched, said, _reasons in blocked:
        if said and shown < 2 and sched.karpenter is not None:
            km = sched.karpenter_msg
            ev.extend(event_evidence(snap, pod, sched.karpenter,
                                     note=f"Karpenter ({km.generation if km else ''} wording): "
                                          + clip(said[0].raw, 120)))
            shown += 1
    ev.extend(events_note(snap))
    new_limits = {}
    for r, lim in pool.limits.items():
        # Only a value above the limit: when Karpenter alone says "exceed limits" (status.resources lagging,
        # a type gputui has no table for), the same limit again would be a patch that changes nothing.
        if r in needs and math.ceil(usage[r] + needs[r]) > lim:
            new_limits[r] = _fmt(math.ceil(usage[r] + needs[r]))
    cmds = []
    if new_limits:
        patch = json.dumps({"spec": {"limits": new_limits}}, separators=(",", ":"))
        cmds.append(f"kubectl patch nodepool {pool.name} --type=merge -p '{patch}'")
    cmds.append(f"kubectl get nodeclaims -l karpenter.sh/nodepool={pool.name} -o wide")
    why = ""
    if launch is not None and r in new_limits:
        why = f": {qty(r, usage[r])} in use + {qty(r, needs[r])} for {launch.launch or 'the smallest instance type'}"
    text = ("Raise the NodePool's spec.limits so the pending pods fit"
            + (f" (to {', '.join(f'{k}={v}' for k, v in new_limits.items())}{why})" if new_limits else "")
            + (", or allow smaller instance types in its requirements" if launch is not None else "")
            + ", or free capacity held by idle/stuck nodes of this NodePool, or add a lower-weight fallback "
              "NodePool for the same GPUs.")
    return Finding(subject=pool.ref, title=title, evidence=tuple(ev), remediation=Remediation(text, tuple(cmds)),
                   related=tuple(p.ref for p in pods))
