"""The DRA ResourceClaims pending pods wait on, read once by the one-shot collection.

Only the claims pending pods name are read (a GET each, at most 20), so a cluster without DRA costs
nothing. A claim that cannot be read is recorded with the reason (`resourceclaims.resource.k8s.io:
forbidden`, or the API has no resource.k8s.io), never as "not allocated".
"""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from diagnostics.facts.dra import claim_names
from diagnostics.snapshot import Snapshot
from gputui.kube.api import KubeError

LIMIT = 20
API = "/apis/resource.k8s.io/v1"


def with_resource_claims(api: Any, snap: Snapshot, workers: int = 4) -> Snapshot:
    if not snap.status("pods").state.usable:
        return snap
    names = sorted({n for p in snap.index.pending for n in claim_names(p)})[:LIMIT]
    if not names:
        return snap

    def fetch(key: str) -> tuple[str, dict[str, Any]]:
        ns, name = key.split("/", 1)
        try:
            obj = api.get(f"{API}/namespaces/{ns}/resourceclaims/{name}", timeout=10)
        except KubeError as exc:
            what = "forbidden (get resourceclaims.resource.k8s.io)" if exc.status == 403 else (
                "not found" if exc.status == 404 else exc.message[:200])
            return key, {"error": what}
        return key, obj if isinstance(obj, dict) else {"error": "not an object"}

    with ThreadPoolExecutor(max_workers=min(workers, len(names))) as pool:
        got = dict(pool.map(fetch, names))
    return replace(snap, resource_claims={**snap.resource_claims, **got})
