"""Accelerator requests the API rejects or that no node can ever satisfy."""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from diagnostics.facts.pool_accelerators import KARPENTER_MODELED, max_devices
from diagnostics.model import Evidence, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.pod_events import clip
from diagnostics.facts.provider import facts, previous
from diagnostics.records import Event, Pod, looks_like_accelerator
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.facts.workloads import owner_workload

# Resource names device plugins really register (anything else accelerator-looking is probably a typo).
KNOWN = KARPENTER_MODELED | {"nvidia.com/gpu.shared", "amd.com/gpu", "gpu.intel.com/i915", "gpu.intel.com/xe",
                             "aws.amazon.com/neurondevice"}
MIG = re.compile(r"^nvidia\.com/mig-(\d+c\.)?\d+g\.\d+gb([+-][a-z][a-z0-9.]*)*$")
"""MIG profiles as the device plugin names them: `1g.5gb`, `1c.3g.40gb` (a compute-instance slice),
`1g.10gb+me`, `1g.24gb+me.all`, `4g.48gb-me` (go-nvlib's `%dc.%dg.%dgb` plus attributes)."""
_SUFFIX: dict[str, int | Decimal] = {
    "": 1, "m": Decimal("0.001"), "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15,
    "E": 10**18, "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_QTY = re.compile(r"^([+-]?\d+(?:\.\d*)?|[+-]?\.\d+)(m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")
# Validation errors the API server returns (in FailedCreate events of ReplicaSets, Jobs, StatefulSets).
_API_ERROR = re.compile(r"(must be an integer|must be equal to \S+ limit|Limit must be set for non overcommitable "
                        r"resources|must be less than or equal to \S+ limit)")


def quantity(raw: Any) -> Decimal | None:
    """A Kubernetes quantity (`1`, `500m`, `0.5`, `2Ki`) as a Decimal; None when malformed."""
    if isinstance(raw, bool) or raw is None:
        return None
    if isinstance(raw, (int, float)):
        return Decimal(str(raw))
    m = _QTY.match(str(raw).strip())
    if not m:
        return None
    try:
        return Decimal(m.group(1)) * Decimal(_SUFFIX[m.group(2) or ""])
    except InvalidOperation:
        return None


@dataclass(frozen=True, slots=True)
class Problem:
    container: str
    path: str
    value: Any
    text: str
    api_rejects: bool
    resource: str = ""
    suggest: str = ""
    """Whole-device count to set as both request and limit."""


def problems(pod: Pod) -> list[Problem]:
    """What the API validation (k8s.io/kubernetes pkg/apis/core/validation) rejects for extended resources."""
    out: list[Problem] = []
    for c in pod.resources_written:
        name, req, lim = c.name, c.requests, c.limits
        base = f"spec.{c.section}[{name}].resources"
        for res in sorted(set(req) | set(lim)):
            if not looks_like_accelerator(str(res)):
                continue
            rq, lq = quantity(req.get(res)) if res in req else None, quantity(lim.get(res)) if res in lim else None
            for kind, raw, q in (("requests", req.get(res), rq), ("limits", lim.get(res), lq)):
                if q is not None and q != q.to_integral_value():
                    out.append(Problem(name, f"{base}.{kind}[{res}]", raw,
                                       f"{res} {raw!s} is fractional: accelerators are whole devices (the API "
                                       f"answers `must be an integer`)", True, str(res),
                                       str(max(1, math.ceil(q)))))
                elif q is not None and q < 0:
                    out.append(Problem(name, f"{base}.{kind}[{res}]", raw, f"{res} {raw!s} is negative", True))
            if res in req and res not in lim and (rq or 0) != 0:
                out.append(Problem(name, f"{base}.limits[{res}]", None,
                                   f"{res} is requested ({req.get(res)!s}) without a limit: extended resources need "
                                   f"limits (`Limit must be set for non overcommitable resources`)", True, str(res),
                                   _whole(rq)))
            elif rq is not None and lq is not None and rq != lq:
                out.append(Problem(name, f"{base}.requests[{res}]", {"requests": str(req.get(res)),
                                                                     "limits": str(lim.get(res))},
                                   f"{res} request {req.get(res)!s} != limit {lim.get(res)!s}: extended resources "
                                   f"cannot be overcommitted (`must be equal to {res} limit`)", True, str(res),
                                   _whole(lq)))
    return out


def _whole(q: Decimal | None) -> str:
    return str(max(1, math.ceil(q))) if q is not None else "1"


@facts(reads=("nodes", "nodepools"))
def _advertised(snap: Snapshot) -> tuple[dict[str, float], bool]:
    """Most of each resource any node has, and whether this is an AWS cluster (for the EC2 maximum)."""
    advertised: dict[str, float] = {}
    for n in snap.nodes:
        for k, v in n.capacity.items():
            advertised[k] = max(advertised.get(k, 0.0), v)
    aws = any(n.provider_id.startswith("aws://") for n in snap.nodes) or any(
        p.node_class_kind == "EC2NodeClass" for p in snap.nodepools)
    return advertised, aws


def _never_given(pod: Pod, advertised: dict[str, float], aws: bool) -> list[Problem]:
    """Requests no node can ever satisfy: unknown resource names, more devices than any instance has."""
    out: list[Problem] = []
    for res, want in sorted(pod.requests.items()):
        if want <= 0 or not looks_like_accelerator(res):
            continue
        known = res in KNOWN or MIG.match(res) is not None
        if not known and res not in advertised:
            hint = " (did you mean nvidia.com/gpu?)" if "nvidia" in res or res.endswith("gpu") or "gpu" in res else ""
            out.append(Problem("", "resources", {res: f"{want:g}"},
                               f"no node advertises {res} and no known device plugin registers it{hint}", False))
            continue
        if aws and res in KARPENTER_MODELED and want > max(max_devices(res), advertised.get(res, 0.0)):
            out.append(Problem("", "resources", {res: f"{want:g}"},
                               f"{want:g} {res} on one pod: no EC2 instance type has more than {max_devices(res)} and "
                               f"no node advertises that many, so it can never be scheduled", False))
    return out


@check(code="GT403", slug="pod-gpu-request-invalid", title="GPU requests are valid and satisfiable",
       severity=Severity.ERROR, pending_pods_suffice=True, requires=("pods",), optional=("events", "nodes", "nodepools"))
def pod_gpu_request_invalid(snap: Snapshot) -> Iterator[Finding | int]:
    """A GPU request the API rejects (fractional, request != limit, no limit) or that can never be satisfied.

    Why it matters:
    Extended resources such as `nvidia.com/gpu` are whole devices and cannot be overcommitted:
    the API rejects `500m`, a request that differs from its limit, or a request without a limit,
    so the controller's pods are never created (ReplicaSet/Job `FailedCreate` events). A request
    for a resource nothing advertises (a typo, or more GPUs than any instance type has) is
    accepted but stays Pending forever. `nvidia.com/gpu: "0"` is fine.

    Fix:
    Request whole devices and set limits equal to requests (setting only limits is enough).
    To share a GPU use MIG (`nvidia.com/mig-1g.5gb`) or time-slicing, not fractional quantities.
    """
    # Only pods still waiting: a pod that was bound already passed API validation and scheduling.
    examined, findings = _pending_findings(snap)
    yield examined
    yield from findings
    if snap.status("events").state.usable:
        yield from _rejected_creates(snap)


def _pending_findings(snap: Snapshot) -> tuple[int, list[Finding]]:
    """Pending pods asking for accelerators (how many), and the findings on their requests.

    What is advertised is read only when the nodes source is usable.
    """
    examined, findings, _ = _pending_problems(snap, snap.status("nodes").state.usable)
    return examined, findings


@facts(reads=("pending", "nodes", "nodepools"))
def _pending_problems(snap: Snapshot, with_nodes: bool) -> tuple[
        int, list[Finding], dict[int, tuple[Pod, bool, list[Problem]]]]:
    """_pending_findings, with what each pending pod's own record says: kept from the last computation for
    pods that stayed, so a new pending pod costs one pod, and a burst of changes to bound pods nothing."""
    before: dict[int, tuple[Pod, bool, list[Problem]]] = (previous(snap) or (0, [], {}))[2]
    advertised = _advertised(snap) if with_nodes else None
    per_pod: dict[int, tuple[Pod, bool, list[Problem]]] = {}
    examined = 0
    out: list[Finding] = []
    for pod in snap.index.pending:
        hit = before.get(id(pod))
        if hit is None or hit[0] is not pod:
            hit = (pod, *_asks_and_problems(pod))
        per_pod[id(pod)] = hit
        _, asks, found = hit
        if not asks:
            continue
        examined += 1
        if advertised is not None and pod.pending:
            found = found + _never_given(pod, *advertised)
        if found:
            out.append(_pod_finding(pod, found))
    return examined, out, per_pod


def _asks_and_problems(pod: Pod) -> tuple[bool, list[Problem]]:
    asks = any(looks_like_accelerator(k) for c in pod.resources_written for k in (*c.requests, *c.limits))
    return asks, problems(pod) if asks else []


def _pod_finding(pod: Pod, found: list[Problem]) -> Finding:
    wl = owner_workload(pod)
    first = found[0]
    where = f" container {first.container}" if first.container else ""
    more = f" (+{len(found) - 1} more)" if len(found) > 1 else ""
    title = f"{pod.namespace}/{pod.name}{where}: {first.text}{more}"
    ev = tuple(Evidence.field(pod.ref, p.path, p.value, note=p.text) for p in found)
    cmds: list[str] = []
    fixable = [p for p in found if p.container and p.suggest]
    if fixable and wl.kind in ("Deployment", "StatefulSet", "DaemonSet", "ReplicaSet"):
        fx = fixable[0]
        cmds.append(f"kubectl -n {wl.namespace} set resources {wl.resource} {wl.name} -c {fx.container} "
                    f"--limits={fx.resource}={fx.suggest} --requests={fx.resource}={fx.suggest}")
    cmds.append(f"kubectl -n {pod.namespace} get pod {pod.name} -o jsonpath="
                "'{range .spec.containers[*]}{.name}{\"\\t\"}{.resources}{\"\\n\"}{end}'")
    text = ("Request whole accelerators with limits equal to requests (setting only `limits` is enough); "
            "share GPUs with MIG or time-slicing instead of fractions.")
    if not first.api_rejects:
        text = ("Fix the resource name or the count: request a resource a node advertises, no more devices than one "
                "instance type has (split the job across pods otherwise).")
    related = (wl.ref,) if wl.kind != "Pod" else ()
    return Finding(subject=pod.ref, title=title, evidence=ev, remediation=Remediation(text, tuple(cmds)),
                   related=related)


@facts(reads=("events",))
def _failed_creates(snap: Snapshot) -> list[Event]:
    """FailedCreate events of the API refusing an accelerator request."""
    return [ev for ev in snap.events if ev.reason == "FailedCreate" and _API_ERROR.search(ev.message) and (
        any(looks_like_accelerator(tok) for tok in re.findall(r"\[([^\]]+)\]", ev.message))
        or "non overcommitable" in ev.message)]


def _rejected_creates(snap: Snapshot) -> Iterator[Finding]:
    """Controllers whose pod creation the API refused for an accelerator request (the pods never exist)."""
    latest: dict[ObjectRef, Event] = {}
    for e in _failed_creates(snap):
        ref = e.involved
        if ref not in latest or (e.last_seen or e.first_seen or snap.taken_at) >= (
                latest[ref].last_seen or latest[ref].first_seen or snap.taken_at):
            latest[ref] = e
    for ref, e in sorted(latest.items()):
        m = _API_ERROR.search(e.message)
        why = m.group(1) if m else "invalid"
        res = next((tok for tok in re.findall(r"\[([^\]]+)\]", e.message) if looks_like_accelerator(tok)), "")
        owner = ref
        if ref.kind == "ReplicaSet":
            base, _, suffix = ref.name.rpartition("-")
            if base and suffix.isalnum():
                owner = ObjectRef("Deployment", base, ref.namespace)
        target = f"{owner.kind.lower()}/{owner.name}"
        yield Finding(
            subject=ref,
            title=f"{ref.kind.lower()}/{ref.namespace}/{ref.name} cannot create pods: the API rejects the "
                  f"{res or 'accelerator'} request ({why})",
            evidence=(Evidence.event(ref, e.reason, clip(e.message), e.count, snap.age(e.last_seen), type_=e.type),),
            remediation=Remediation(
                "Fix the accelerator request in the pod template: whole devices, limits equal to requests.",
                (f"kubectl -n {ref.namespace} get {target} -o jsonpath="
                 "'{range .spec.template.spec.containers[*]}{.name}{\"\\t\"}{.resources}{\"\\n\"}{end}'",)),
            related=(owner,) if owner != ref else (),
        )
