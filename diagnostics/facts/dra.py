"""Dynamic Resource Allocation (resource.k8s.io) as a pod sees it: which ResourceClaims it waits on, and their state.

A DRA GPU node advertises no `nvidia.com/gpu`: its GPUs are ResourceSlice devices, and a pod gets
one through a ResourceClaim (named in `spec.resourceClaims[].resourceClaimName`, or created from
a ResourceClaimTemplate and named in `status.resourceClaimStatuses`). Field names are the v1 API's
(`requests[].exactly.deviceClassName`) with the v1beta1 shape (`requests[].deviceClassName`) read too.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from diagnostics.records import Pod, PodClaim

__all__ = ["ClaimState", "PodClaim", "claim_names", "claim_state", "pod_claims"]


def _list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def _map(v: Any) -> Mapping[str, Any]:
    return v if isinstance(v, Mapping) else {}


def pod_claims(pod: Pod) -> list[PodClaim]:
    """The claims the pod needs, resolved to ResourceClaim names where the API already did."""
    return list(pod.claims)


def claim_names(pod: Pod) -> list[str]:
    """`namespace/name` of the ResourceClaims the pod waits on (those that exist by name)."""
    return [f"{pod.namespace}/{c.claim}" for c in pod_claims(pod) if c.claim]


@dataclass(frozen=True, slots=True)
class ClaimState:
    allocated: bool
    devices: tuple[str, ...]
    """`driver/pool/device` of each allocated device."""
    requests: tuple[str, ...]
    """`request: deviceClass xN` of each request."""
    reserved_for: tuple[str, ...]
    deleting: bool


def claim_state(obj: Mapping[str, Any]) -> ClaimState:
    spec = _map(obj.get("spec"))
    status = _map(obj.get("status"))
    alloc = _map(status.get("allocation"))
    results = _list(_map(alloc.get("devices")).get("results"))
    devices = tuple(f"{_map(r).get('driver')}/{_map(r).get('pool')}/{_map(r).get('device')}" for r in results)
    reqs = []
    for r in _list(_map(spec.get("devices")).get("requests")):
        r = _map(r)
        exact = _map(r.get("exactly")) or r  # v1 wraps the request in `exactly`; v1beta1 does not
        first = _list(r.get("firstAvailable"))
        cls = str(exact.get("deviceClassName") or (first and _map(first[0]).get("deviceClassName")) or "?")
        count = exact.get("count") or 1
        mode = str(exact.get("allocationMode") or "ExactCount")
        reqs.append(f"{r.get('name')}: {cls} " + ("(all)" if mode == "All" else f"x{count}"))
    reserved = tuple(f"{_map(c).get('resource')}/{_map(c).get('name')}" for c in _list(status.get("reservedFor")))
    return ClaimState(bool(alloc), devices, tuple(reqs), reserved,
                      bool(_map(obj.get("metadata")).get("deletionTimestamp")))
