"""GPUs that averaged under 10 % utilisation over the last hour (DCGM), with the pod holding them."""

from __future__ import annotations

from collections.abc import Iterator

from diagnostics.facts.gpu_findings import gpu_names, gpus_by_node, node_context, pods_of
from diagnostics.facts.metric_facts import (
    GPU_UTIL,
    IDLE_WINDOW,
    GpuLabels,
    NodeResolver,
    facts_for,
    in_words,
    metric_evidence,
)
from diagnostics.model import Finding, Remediation, Severity
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import parse_go_duration
from diagnostics.wording import counted, noun

IDLE_PERCENT = 10.0
"""Average DCGM_FI_DEV_GPU_UTIL below this over the window counts as idle."""


@check(code="GT702", slug="gpu-idle", title="GPUs are doing work",
       severity=Severity.WARNING, requires=("prometheus",), optional=("nodes", "pods", "nodeclaims"))
def gpu_idle(snap: Snapshot) -> Iterator[Finding | int]:
    """GPUs whose average utilisation (DCGM_FI_DEV_GPU_UTIL) stayed under 10 % for the last hour.

    Why it matters:
    An idle GPU still costs the full instance price, and a pod that holds one idle blocks every
    pending GPU pod that could use it (a hung job, a notebook left open, a job waiting on data).
    Only GPUs reporting both now and an hour ago are judged, so a pod that just started is not
    called idle, nor is a node younger than the hour (the older series are another instance's, such as
    a reused EC2 hostname, or a demo's history). MIG instances are left out: DCGM reports no per-instance GPU_UTIL.

    Fix:
    Check what the pod is doing (`nvidia-smi` inside it, its logs). Delete a hung or finished
    pod to free the GPU; for interactive work, use a smaller GPU or time-slicing/MIG. A GPU no
    pod holds means the node is oversized or waiting for consolidation.
    """
    facts = facts_for(snap, GPU_UTIL, "gpu_util")
    resolver = NodeResolver(snap)
    window = in_words(IDLE_WINDOW)
    window_s = parse_go_duration(IDLE_WINDOW) or 3600.0
    for node, gpus in sorted(gpus_by_node(facts.get("gpu_util"), resolver, skip_mig=True).items()):
        yield 1
        record = snap.index.node.get(node)
        age = snap.age(record.meta.created) if record is not None else None
        if age is not None and age < window_s:
            continue  # cannot have been idle for the whole window
        idle = [(g, s) for g, s in gpus if s.value < IDLE_PERCENT]
        if not idle:
            continue
        ref = resolver.ref(idle[0][0])
        ev, related = node_context(snap, node)
        held = [g for g, _s in idle if g.pod]
        free = [g for g, _s in idle if not g.pod]
        for g, s in idle:
            who = f"held by pod {g.as_value()['pod']}" if g.pod else "no pod holds it"
            ev.append(metric_evidence(ref, s, f"{g.describe()}: average {s.value:.1f}% over the last {window}; {who}",
                                      g.as_value(avg_util_percent=round(s.value, 1))))
        pods = sorted({g.as_value()["pod"] for g in held})
        holders = f"held by {', '.join(pods[:4])}{' and more' if len(pods) > 4 else ''}"
        head = f"{len(idle)} of {counted(len(gpus), 'GPU')} on {node} idle for the last {window}"
        # Each GPU is named once: in the parenthesis when all idle GPUs share one state, else per state.
        if held and free:
            title = (f"{head} (average under {IDLE_PERCENT:g}%): {gpu_names(held)} {holders}; "
                     f"{gpu_names(free)} not allocated to any pod")
        else:
            state = holders if held else "not allocated to any pod"
            title = f"{head} (average under {IDLE_PERCENT:g}%: {gpu_names(g for g, _s in idle)}): {state}"
        commands: list[str] = []
        for pref in pods_of(held)[:3]:
            commands += [f"kubectl exec -n {pref.namespace} {pref.name} -- nvidia-smi",
                         f"kubectl logs -n {pref.namespace} {pref.name} --tail=50"]
        if free:
            commands.append(f"kubectl get pods -A --field-selector spec.nodeName={node} -o wide")
        yield Finding(
            subject=ref,
            title=title,
            evidence=tuple(ev),
            remediation=Remediation(_fix(held, free, karpenter=bool(related)), tuple(commands)),
            related=pods_of(held) + related,
        )


def _fix(held: list[GpuLabels], free: list[GpuLabels], karpenter: bool) -> str:
    """Speaks of pods only when a pod holds an idle GPU, and of Karpenter only when it manages the node."""
    text = []
    if held:
        one = len(pods_of(held)) <= 1
        text.append(f"Find out whether {'the pod' if one else 'the pods'} holding {noun(len(held), 'this GPU', 'these GPUs')} "
                    f"still {'does' if one else 'do'} useful work; delete a hung or finished pod to free its GPUs.")
    if free:
        which = gpu_names(free) if held else noun(len(free), "this GPU", "these GPUs")
        shrink = "let Karpenter consolidate it" if karpenter else "scale its node group down"
        text.append(f"No pod holds {which}: the node is bigger than its workload; {shrink} or use a smaller "
                    "instance type.")
    return " ".join(text)
