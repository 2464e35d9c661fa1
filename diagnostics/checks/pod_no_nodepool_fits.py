"""A pending GPU pod that no NodePool can launch a node for, with each NodePool's reason."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field, replace

from diagnostics.facts.messages import LIMITS, NODE_LIMITS, KarpenterMessage
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.gpu_forms import mismatches
from diagnostics.facts.pending import karpenter_ignores, placeable
from diagnostics.facts.provider import derived
from diagnostics.facts.pod_events import (
    PodScheduling,
    capacity_errors,
    clip,
    event_evidence,
    events_note,
)
from diagnostics.facts.pod_fit import (
    ACCELERATOR,
    AVOIDS_KARPENTER,
    LIMIT,
    NODEPOOL_LABEL,
    NOT_READY,
    REQUIREMENTS,
    STATIC,
    PodFit,
    accel_text,
    avoids_karpenter,
    karpenter_rejects,
)
from diagnostics.records import Event, Pod, is_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.facts.workloads import Workload, owner_workload


STALE_AFTER = 900.0
"""Seconds after which a Karpenter FailedScheduling no longer speaks for the present (it re-emits every 5 min)."""


@dataclass
class _Group:
    pods: list[Pod] = field(default_factory=list)
    fit: PodFit | None = None
    sched: PodScheduling = field(default_factory=PodScheduling)
    karpenter_only: bool = False
    workload: Workload | None = None
    refs: list[ObjectRef] = field(default_factory=list)
    """The refs of `pods`."""
    ignored: str = ""
    """pending.karpenter_ignores: why Karpenter launches nothing for these pods ('' when it would)."""


@check(code="GT402", slug="pod-no-nodepool-fits", title="Every pending GPU pod has a NodePool that can serve it",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("pods", "nodepools"),
       optional=("events", "nodes", "nodeclaims", "ec2nodeclasses"))
def pod_no_nodepool_fits(snap: Snapshot) -> Iterator[Finding | int]:
    """A pending GPU pod that no NodePool can launch a node for, and no existing node can take.

    Why it matters:
    Karpenter tries every NodePool and gives up when none is compatible: the pod's
    nodeSelector/affinity conflicts with the requirements, the requirements allow no instance
    type with the accelerator (CPU-only families, wrong GPU name, too few GPUs per instance),
    the resource is one Karpenter cannot provision (MIG slices, shared GPUs), or the pod opts
    out of Karpenter. The pod stays Pending with no node ever launched.

    Fix:
    Make the pod and one NodePool agree: widen that NodePool's requirements (GPU instance
    families, sizes with enough GPUs), add the label the pod selects on to the NodePool's
    `spec.template.metadata.labels`, or fix the pod's selector. A pod Karpenter ignores (pinned
    by kubernetes.io/hostname or matchFields, a karpenter.sh label, `karpenter.sh/nodepool
    DoesNotExist`, a PVC its validation rejects) is told why and what can help instead: the
    node it is pinned to, its own spec, its volumes. Causes owned by other checks
    (taints: GT401, limits: GT105, NodePool/NodeClass not Ready: GT101-GT103/GT106, capacity:
    GT104, a node already on its way: GT404) are reported there instead.
    """
    groups: dict[tuple[object, ...], _Group] = {}
    ice: dict[str, list[Event]] | None = None
    considered, todo = placeable(snap)
    yield considered
    mismatched = mismatches(snap)[1]  # asks for a MIG profile / shared form its nodes do not offer: GT405's
    for t, pf in todo:
        pod, sched = t.pod, t.sched
        if pod.ref in mismatched:
            continue
        karpenter_only = False
        ignored = karpenter_ignores(t)
        if pf.servable:
            ice = capacity_errors(snap) if ice is None else ice
            if not _karpenter_disagrees(snap, pf, sched, ice):
                continue
            karpenter_only = True
        elif _explained_elsewhere(snap, pf) and not (ignored and not pf.taint_only()[1]):
            continue  # a pod Karpenter ignores waits on no NodePool's limit or readiness: only a node's taint
        wl = t.workload
        key = (wl.ref, _signature(snap, pf), karpenter_only, _accel_sig(pod), ignored)
        g = groups.get(key)
        if g is None:
            g = groups[key] = _Group(fit=pf, sched=sched, karpenter_only=karpenter_only, workload=wl,
                                     ignored=ignored)
        g.pods.append(pod)
        g.refs.append(t.ref)
    for g in groups.values():
        yield _finding(snap, g)


def _accel_sig(pod: Pod) -> tuple[tuple[str, float], ...]:
    return tuple(sorted((k, v) for k, v in pod.requests.items() if is_accelerator(k)))


# Derived from a PodFit alone, which replicas of a workload share (see pod_fit): worked out once per PodFit.

@derived
def _signature(pf: PodFit) -> tuple[tuple[str, str], ...]:
    """Each NodePool's verdict, to group pods that fail the same way."""
    return tuple((p.pool.name, p.summary()) for p in pf.pools)


@derived
def _explained_elsewhere(pf: PodFit) -> bool:
    """Some NodePool or node is blocked by exactly one cause another check reports."""
    if any(not p.fits and p.kinds == {LIMIT} and all(
            r.resource == "nodes" or is_accelerator(r.resource) for r in p.reasons) for p in pf.pools):
        return True  # GT105 nodepool-gpu-limit-reached
    if any(p.kinds == {NOT_READY} for p in pf.pools):
        return True  # GT101/GT102/GT103 (EC2NodeClass) or GT106 (NodePool itself)
    pools, nodes = pf.taint_only()
    return bool(pools or nodes)  # GT401 pod-gpu-taint-not-tolerated


def _karpenter_disagrees(snap: Snapshot, pf: PodFit, sched: PodScheduling, ice: dict[str, list[Event]]) -> bool:
    """gputui sees a fitting NodePool, yet Karpenter's latest verdict is a failure nobody else owns."""
    km = sched.karpenter_msg
    if not sched.karpenter_current or km is None or not km.fragments or sched.karpenter is None:
        return False
    age = snap.age(sched.karpenter.last_seen)
    if age is not None and age > STALE_AFTER:
        return False  # Karpenter repeats a failure every few minutes (5 min dedupe); silence means it moved on
    fitting = {p.pool.name for p in pf.pools if p.fits}
    # What Karpenter says about the pools gputui finds incompatible is the expected part of its message:
    # only its verdicts on the fitting pools (or on none in particular) can disagree.
    about = [f for f in km.fragments if not f.nodepool or f.nodepool in fitting]
    if about and {f.kind for f in about} <= {LIMITS, NODE_LIMITS}:
        return False  # GT105 reads Karpenter's limit messages too
    if (km.mentions_offering or (about and all(f.offering_only for f in about))) and any(ice.get(p) for p in fitting):
        return False  # GT104 spot-capacity-shortage: ICE churn
    return True


def _karpenter_summary(km: KarpenterMessage) -> str:
    parts = []
    for f in km.fragments[:3]:
        text = f.variant or f.raw
        parts.append(clip(text, 120))
    return "; ".join(parts) + (f" (+{len(km.fragments) - 3} more)" if len(km.fragments) > 3 else "")


def _finding(snap: Snapshot, g: _Group) -> Finding:
    pod = g.pods[0]
    pf = g.fit or PodFit((), ())
    wl = g.workload or owner_workload(pod)
    more = f" (+{len(g.pods) - 1} more pods of {wl})" if len(g.pods) > 1 else ""
    who = f"{pod.namespace}/{pod.name} ({accel_text(pod.requests)})"
    severity = None
    km = g.sched.karpenter_msg
    ignored = _ignored(pod, g.ignored) if g.ignored else None
    if ignored is not None and ignored.kind != _OPTED_OUT:
        title = f"{who}: Karpenter ignores it{ignored.short}{more}"
    elif g.karpenter_only and km is not None:
        title = f"{who}: Karpenter cannot launch a node for it: {_karpenter_summary(km)}{more}"
    elif not pf.pools:
        title = f"{who} is pending and no NodePool exists to launch a node for it{more}"
    elif all(AVOIDS_KARPENTER in p.kinds for p in pf.pools):
        title = (f"{who} requires karpenter.sh/nodepool DoesNotExist: Karpenter ignores it and no existing "
                 f"node can take it{more}")
        severity = Severity.WARNING  # it may be waiting for a non-Karpenter node group on purpose
    else:
        title = f"{who} fits no NodePool - " + _clauses(snap, pf) + more
    ev: list[Evidence] = list(_pool_evidence(snap, pf))
    if not pf.pools:
        ev.append(Evidence.absence(None, "NodePools (karpenter.sh/v1)", note="none in the cluster"))
    if g.sched.karpenter is not None and km is not None:
        note = f"Karpenter ({km.generation} wording): " + ", ".join(
            f"{f.kind}" + (f" [{f.nodepool}]" if f.nodepool else "") + (f" key {f.key}" if f.key else "")
            for f in km.fragments[:6])
        if not g.sched.karpenter_current:
            note += " (older than its last Nominated event)"
        ev.extend(event_evidence(snap, pod, g.sched.karpenter, note=note))
    elif snap.status("events").state.usable and pf.pools:
        ev.append(Evidence.absence(pod.ref, "Karpenter FailedScheduling event",
                                   note="Karpenter said nothing: it skips NodePools that are not Ready and pods "
                                        "that opt out of it"))
    ev.extend(event_evidence(snap, pod, g.sched.scheduler))
    ev.extend(events_note(snap))
    related: list[ObjectRef] = g.refs[1:] + list(_pool_refs(snap, pf))
    if wl.kind != "Pod":
        related.append(wl.ref)
    remedy = _ignored_remedy(pod, wl, ignored) if ignored is not None else _remedy(pod, pf, wl, g)
    return Finding(subject=pod.ref, title=title, evidence=tuple(ev), remediation=remedy,
                   related=tuple(related), severity=severity)


_OPTED_OUT = "opted-out"
_HOSTNAME = "hostname"
_MATCH_FIELDS = "match-fields"
_LABEL = "restricted-label"
_REJECTED = "rejected"
HOSTNAME = "kubernetes.io/hostname"


@dataclass(frozen=True)
class _Ignored:
    """Why Karpenter ignores a pod, in the words the finding uses."""

    kind: str
    short: str
    """Title clause after `Karpenter ignores it`."""
    why: str
    nodes: tuple[str, ...] = ()
    """Existing nodes the pod is pinned to (kubernetes.io/hostname or matchFields metadata.name values)."""
    key: str = ""


def _ignored(pod: Pod, why: str) -> _Ignored:
    """Classify pending.karpenter_ignores' reason by what the pod asks (Provisioner.Validate's checks)."""
    if avoids_karpenter(pod):
        return _Ignored(_OPTED_OUT, "", why)
    terms = [*pod.required_affinity]
    selected = [v for k, v in pod.node_selector.items() if k == HOSTNAME]
    if why.startswith("matchFields"):
        names = tuple(dict.fromkeys(v for t in terms for r in t if r.key == "field:metadata.name" for v in r.values))
        return _Ignored(_MATCH_FIELDS, f" (pinned by matchFields to {', '.join(names) or 'existing nodes'}) and no "
                        "existing node can take it", why, names)
    if karpenter_rejects(pod) == why:
        if f"requires {HOSTNAME}," in why:
            names = tuple(dict.fromkeys([*selected, *(v for t in terms for r in t if r.key == HOSTNAME
                                                      for v in r.values)]))
            return _Ignored(_HOSTNAME, f" (pinned by {HOSTNAME} to {', '.join(names) or 'a node'}) and no existing "
                            "node can take it", why, names, HOSTNAME)
        key = why.removeprefix("the pod requires ").split(",", 1)[0]
        return _Ignored(_LABEL, f" (requires {key}) and no existing node can take it", why, key=key)
    return _Ignored(_REJECTED, f": {clip(why, 160)}", why)


def _ignored_remedy(pod: Pod, wl: Workload, ig: _Ignored) -> Remediation:
    """Why Karpenter will not act and what can: the pinned nodes, the pod's own spec, its volumes. No NodePool
    change (requirements, limits, readiness) makes Karpenter launch for a pod it ignores."""
    target = f"{wl.kind} {wl.namespace}/{wl.name}" if wl.kind != "Pod" else "the pod"
    cmds = [f"kubectl -n {pod.namespace} describe pod {pod.name}"]
    spec_cmd = (f"kubectl -n {wl.namespace} get {wl.resource} {wl.name} -o jsonpath="
                "'{..nodeSelector}{\"\\n\"}{..affinity.nodeAffinity}'" if wl.kind != "Pod" else
                f"kubectl -n {pod.namespace} get pod {pod.name} -o jsonpath='{{.spec.nodeSelector}}{{.spec.affinity}}'")
    head = "Karpenter will not launch a node for this pod"
    nodes = ", ".join(ig.nodes)
    if ig.kind == _OPTED_OUT:
        text = (f"{head}: the pod opts out of Karpenter ({NODEPOOL_LABEL} DoesNotExist), so no NodePool change "
                f"helps. It needs a node outside Karpenter with free GPUs, or drop that affinity from {target} so "
                "Karpenter can launch for it.")
        cmds += ["kubectl get nodes -l '!karpenter.sh/nodepool' -o wide", spec_cmd]
    elif ig.kind in (_HOSTNAME, _MATCH_FIELDS):
        how = (f"pins it with {HOSTNAME} ({nodes}), a label Karpenter does not launch for (\"using label {HOSTNAME} "
               "is not allowed as it might interfere with the internal provisioning logic\")" if ig.kind == _HOSTNAME
               else f"pins it to existing nodes with matchFields (metadata.name: {nodes}), which Karpenter does not "
                    "launch for (\"node selector term with matchFields is not supported\")")
        instead = ("labels a NodePool gives its nodes (karpenter.sh/nodepool, karpenter.k8s.aws/instance-gpu-name)"
                   if ig.kind == _HOSTNAME else "matchExpressions on node labels")
        text = (f"{head}: {target} {how}, so no NodePool change helps. It can only run on "
                f"{nodes or 'the node it names'}: make room there (a free GPU, the node Ready and schedulable), or "
                f"pin {target} with {instead} instead so Karpenter can launch a node for it.")
        cmds += [f"kubectl describe node {n}" for n in ig.nodes[:3]] + [spec_cmd]
    elif ig.kind == _LABEL:
        text = (f"{head}: {target} requires {ig.key}, a label in Karpenter's own domain that it does not launch for "
                f"(\"using label {ig.key} is not allowed as it might interfere with the internal provisioning "
                f"logic\"), so no NodePool change helps. Remove it from {target}'s nodeSelector/affinity "
                f"({NODEPOOL_LABEL} and karpenter.sh/capacity-type are the karpenter.sh labels it launches for).")
        cmds.append(spec_cmd)
    else:
        volume = any(w in ig.why.lower() for w in ("pvc", "persistentvolume"))
        text = (f"{head}: Karpenter rejected it (\"{clip(ig.why, 200)}\"), so no NodePool change helps. Fix what "
                "that names first" + (": the pod's PersistentVolumeClaims (a StorageClass for an unbound claim, a "
                                      "PersistentVolume that exists, a claim not being deleted)." if volume else "."))
        if volume:
            cmds.append(f"kubectl -n {pod.namespace} get pvc")
    return Remediation(text, tuple(dict.fromkeys(cmds)))


@derived
def _pool_refs(pf: PodFit) -> tuple[ObjectRef, ...]:
    return tuple(p.pool.ref for p in pf.pools)


@derived
def _clauses(pf: PodFit) -> str:
    """Each NodePool's first reason (or the one they all share), for the title: the same for every pod of the fit."""
    firsts = {p.reasons[0].text for p in pf.pools}
    if len(pf.pools) > 1 and len(firsts) == 1:
        clauses = [f"all {len(pf.pools)} NodePools: {firsts.pop()}"]
    else:
        clauses = [f"{p.pool.name}: {p.reasons[0].text}"
                   + (f" (+{len(p.reasons) - 1})" if len(p.reasons) > 1 else "") for p in pf.pools]
    return clip("; ".join(clauses), 240)


@derived
def _pool_evidence(pf: PodFit) -> tuple[Evidence, ...]:
    """Every NodePool's reasons, each fact once."""
    ev: list[Evidence] = []
    seen: set[tuple[str, str, str]] = set()
    for p in pf.pools:
        for r in p.reasons:
            for i, e in enumerate(r.evidence):
                key = (str(e.subject), e.path, repr(e.value))
                if key in seen:
                    continue  # the same pod-side fact explains several NodePools
                seen.add(key)
                ev.append(e if e.note or i else replace(e, note=r.text))
    return tuple(ev)


def _remedy(pod: Pod, pf: PodFit, wl: Workload, g: _Group) -> Remediation:
    kinds = {r.kind for p in pf.pools for r in p.reasons}
    texts: list[str] = []
    cmds: list[str] = [f"kubectl -n {pod.namespace} describe pod {pod.name}"]
    pools = [p.pool.name for p in pf.pools]
    target = f"{wl.kind} {wl.namespace}/{wl.name}" if wl.kind != "Pod" else "the pod"
    if not pf.pools:
        texts.append("Create a NodePool whose requirements allow GPU instance types (e.g. "
                     "karpenter.k8s.aws/instance-category In [g p]) and taint it nvidia.com/gpu=true:NoSchedule.")
        cmds.append("kubectl get nodepools,ec2nodeclasses")
    if g.karpenter_only:
        texts.append("Karpenter's own simulation rejects every NodePool (daemonset overhead and instance sizes "
                     "count): compare the resources in its message with the instance types the NodePool allows.")
    if AVOIDS_KARPENTER in kinds:
        texts.append("The pod opts out of Karpenter (karpenter.sh/nodepool DoesNotExist): it needs a node group "
                     "outside Karpenter with free GPUs, or drop that affinity so Karpenter can launch for it.")
        cmds.append("kubectl get nodes -l '!karpenter.sh/nodepool' -o wide")
    if REQUIREMENTS in kinds:
        texts.append(f"Make {target}'s nodeSelector/affinity match a NodePool: widen the NodePool's requirements, "
                     "or add the selected label to its spec.template.metadata.labels.")
        cmds.append(f"kubectl -n {wl.namespace} get {wl.resource} {wl.name} -o jsonpath="
                    "'{..nodeSelector}{\"\\n\"}{..affinity.nodeAffinity}'" if wl.kind != "Pod" else
                    f"kubectl -n {pod.namespace} get pod {pod.name} "
                    "-o jsonpath='{.spec.nodeSelector}{.spec.affinity}'")
    if ACCELERATOR in kinds:
        unmodeled = [r for p in pf.pools for r in p.reasons if r.kind == ACCELERATOR and "does not model" in r.text]
        if unmodeled and unmodeled[0].resource.startswith("aws.amazon.com/neuron"):
            texts.append(f"Karpenter cannot provision for {unmodeled[0].resource}: request aws.amazon.com/neuron "
                         "(devices) or aws.amazon.com/neuroncore so Karpenter can launch for the pod.")
        elif unmodeled:
            texts.append(f"Karpenter cannot provision for {unmodeled[0].resource}: request whole GPUs "
                         "(nvidia.com/gpu) so Karpenter can launch for the pod, or keep MIG/shared nodes running "
                         "outside Karpenter's scale-from-zero and check they have free slices.")
        if any(r.kind == ACCELERATOR and "does not model" not in r.text for p in pf.pools for r in p.reasons):
            texts.append("Allow instance types that carry the accelerator in a NodePool's requirements (GPU "
                         "families such as g5, g6, g6e, p4d, p5; inf2/trn1 for Neuron; sizes with enough devices "
                         "per node).")
    if LIMIT in kinds:
        texts.append("Raise the NodePool's spec.limits for the resource it has used up.")
    if NOT_READY in kinds:
        texts.append("Fix the NodePools that are not Ready (see their conditions).")
    if STATIC in kinds:
        texts.append("Static NodePools only keep spec.replicas nodes: scale them or use a dynamic NodePool.")
    cmds.extend(f"kubectl get nodepool {name} -o yaml" for name in pools[:3])
    return Remediation(" ".join(texts) or "See each NodePool's reason above.", tuple(dict.fromkeys(cmds)))
