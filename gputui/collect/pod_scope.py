"""What `gputui diagnose pod/X` must read: the nodes, NodeClaims and events its verdict can depend on.

A one-shot pod diagnosis keeps the findings about the pod's chain (pod -> NodeClaim -> node ->
NodePool -> EC2NodeClass) and those naming it. On a 5k-node cluster, listing every node, claim and
event for that costs seconds; this module decides the smaller set that yields the same findings:

- Pools of interest: the NodePools any check can tie to the pod - for a pending pod those its
  scheduling terms do not rule out and those its offering failures name; those of its claims and
  its chain; and every pool using a failing class of a pool of interest (a class finding names
  the pending pods waiting on it). Other pools on the chain's class are not read: their claim
  findings only list the shared class, which `focus` does not count as naming the pod.
- Nodes: those of the pools of interest, those the pod's nodeSelector/required affinity admit (a
  pending pod: which existing node could take it), and the ones named (its node, nominations).
- NodeClaims: those of the pools of interest, and the ones named.
- Non-pod events: all but those about nodes, claims and pools outside the above.

Checks see the nodes, NodeClaims and events sources marked partial. Pure functions, no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from typing import Any

from diagnostics.facts.matching import requirement_matches
from diagnostics.facts.messages import OFFERING_FRAGMENTS, parse_nominated
from diagnostics.facts.pod_fit import NODEPOOL_LABEL, pod_terms
from diagnostics.facts.pool_accelerators import KARPENTER_MODELED, max_devices
from diagnostics.records import Event, NodeClaim, NodePool, Pod, Requirement, looks_like_accelerator

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_EXCLUDING = ("In", "NotIn", "DoesNotExist")
"""Operators whose verdict on a label the pool's nodes all carry rules the pool out, by every check's rules."""


# --- label and field selectors ----------------------------------------------------------------

def object_name(name: str) -> bool:
    """A name a node or NodeClaim can have (so `metadata.name=<name>` is a field selector the API takes)."""
    return len(name) <= 253 and bool(_DNS_SUBDOMAIN.match(name))


def _label_key(key: str) -> bool:
    prefix, slash, name = key.rpartition("/")
    return bool(_LABEL_VALUE.match(name)) and (not slash or object_name(prefix))


def _part(r: Requirement) -> str:
    """`r` as a label selector requirement, '' to leave it out (which only widens the list).

    Gt/Lt are left out: the API server parses integers differently from Python. So is anything
    the API server would reject (a 400 would cost the whole source).
    """
    if not _label_key(r.key):
        return ""
    values = r.values
    if r.operator in ("In", "NotIn"):
        if not values or not all(_LABEL_VALUE.match(v) for v in values):
            return ""
        return f"{r.key} {r.operator.lower()} ({','.join(sorted(set(values)))})"
    if r.operator == "Exists":
        return r.key
    if r.operator == "DoesNotExist":
        return f"!{r.key}"
    return ""


def schedulable_selectors(pod: Pod) -> list[str] | None:
    """Label selectors whose union holds every node the pod's nodeSelector/required affinity admits.

    None when some term admits any node (nothing to narrow by). Mirrors the terms the checks judge
    nodes by (`pod_fit.pod_terms`, `matching.node_matches`).
    """
    out: set[str] = set()
    for term in pod_terms(pod):
        parts = sorted({p for p in map(_part, term) if p})
        if not parts:
            return None
        out.add(",".join(parts))
    return sorted(out)


def pools_selector(pools: Iterable[str]) -> str | None:
    """`karpenter.sh/nodepool in (...)` for these pools; None if a name cannot be a label value."""
    names = sorted(set(pools))
    if not names or not all(_LABEL_VALUE.match(n) for n in names):
        return None
    return f"{NODEPOOL_LABEL} in ({','.join(names)})"


# --- pools of interest ------------------------------------------------------------------------

def _ruled_out(pod: Pod, pool: NodePool) -> bool:
    """Every scheduling term of the pod fails on a label each node of the pool carries.

    Only labels both pool-fit models agree on (template labels and karpenter.sh/nodepool) and only
    In/NotIn/DoesNotExist count, so no check can still find the pool fitting the pod.
    """
    labels = {**pool.template_labels, NODEPOOL_LABEL: pool.name}
    return all(any(r.operator in _EXCLUDING and r.key in labels and not requirement_matches(r, labels)
                   for r in term)
               for term in pod_terms(pod))


def offering_pools(events: Iterable[Event], names: Iterable[str]) -> set[str]:
    """Pools named in the offering failures of the pod's FailedScheduling events (GT104 ties them to it).

    Other parts of Karpenter's message name every incompatible pool, and the checks that read
    them (GT105, GT402) need nothing beyond the NodePool objects, which are all read.
    """
    parts = [part for e in events if e.reason == "FailedScheduling" for part in e.message.split("; ")
             if any(f in part for f in OFFERING_FRAGMENTS)]
    text = "\n".join(parts)
    return {n for n in names if n and n in text}


def pools_using(classes: set[str], pools: Iterable[NodePool]) -> set[str]:
    """Every pool whose nodeClassRef names one of the classes."""
    return {p.name for p in pools if p.node_class in classes}


def pools_of_interest(pod: Pod, pod_events: Iterable[Event], pools: Iterable[NodePool],
                      claims: Iterable[str] = ()) -> set[str]:
    """NodePools the pod's findings may read the claims of, known before its chain is read.

    A pending pod: the pools its terms do not rule out, those its offering failures name, and those
    with a `nodes` limit but no reported usage (judged by counting their claims). Any pod: the
    pools of the claims it was nominated to (GT104 ties a pod to its nominations' pools).
    """
    pools = list(pools)
    out = {p.name for p in pools if any(c.startswith(p.name + "-") for c in claims)}
    if pod.pending:
        out |= offering_pools(pod_events, (p.name for p in pools))
        out |= {p.name for p in pools if not _ruled_out(pod, p)}
        out |= {p.name for p in pools if "nodes" in p.limits and "nodes" not in p.usage}
    return out


def nominations(pod_events: Iterable[Event]) -> tuple[set[str], set[str]]:
    """(NodeClaims, nodes) any `Nominated` event of the pod names, newest or not."""
    claims: set[str] = set()
    nodes: set[str] = set()
    for e in pod_events:
        nom = parse_nominated(e.message) if e.reason == "Nominated" else None
        if nom is not None:
            claims |= {nom.nodeclaim} - {""}
            nodes |= {nom.node} - {""}
    return claims, nodes


def needs_every_node(pod: Pod) -> bool:
    """A pending pod's accelerator request that only the most any node advertises can judge (GT403)."""
    return pod.pending and any(
        want > 0 and looks_like_accelerator(res) and (res not in KARPENTER_MODELED or want > max_devices(res))
        for res, want in pod.requests.items())


def unregistered(claims: Iterable[NodeClaim]) -> list[NodeClaim]:
    """Launched claims not registered yet: a check looks for their Node by providerID among all nodes."""
    out = []
    for c in claims:
        launched, registered = c.condition("Launched"), c.condition("Registered")
        if c.provider_id and launched is not None and launched.status == "True" and (
                registered is None or registered.status != "True"):
            out.append(c)
    return out


# --- events ---------------------------------------------------------------------------------

class EventScope:
    """Which non-pod events to keep: all but those about a node, NodeClaim or NodePool out of scope.

    Events naming a pool of interest in their message are always kept (`nodepool "X"` in repair
    events is how checks attribute them). A claim's pool is its name prefix (`<pool>-xxxxx`, also
    for claims already deleted) or, for a live claim that was read, its label. Claims named after
    no known pool are kept. Reads the raw object the way `ingest.event` does, so nothing out of
    scope is ever parsed into a record.
    """

    def __init__(self, pools: Iterable[str], all_pools: Iterable[str], nodes: Iterable[str],
                 claims: Iterable[str]) -> None:
        mine = sorted(set(pools))
        self.pools = frozenset(mine)
        self.nodes = frozenset(nodes)
        self.claims = frozenset(claims)
        self._mine = tuple(p + "-" for p in mine)
        self._known = tuple(p + "-" for p in all_pools)
        self._named = re.compile("|".join(map(re.escape, mine))) if mine else None

    def keep(self, raw: Mapping[str, Any]) -> bool:
        inv = raw.get("involvedObject") or raw.get("regarding") or {}
        kind = inv.get("kind") if isinstance(inv, Mapping) else None
        if kind not in ("Node", "NodeClaim", "NodePool"):
            return True
        name = str(inv.get("name") or "")
        if self._named is not None and self._named.search(str(raw.get("message") or raw.get("note") or "")):
            return True
        if kind == "Node":
            return name in self.nodes
        if kind == "NodePool":
            return name in self.pools
        return name in self.claims or name.startswith(self._mine) or not name.startswith(self._known)
