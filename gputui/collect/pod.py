"""`diagnose pod/X` collection: only the nodes, NodeClaims and events the pod's own findings depend on.

`gputui.collect.pod_scope` decides what that is; this module reads it in as few rounds as the data allows:

1. with the pod's GET: the small cluster-wide lists (NodePools, EC2NodeClasses, namespaces,
   DaemonSets, PDBs, RuntimeClasses) and the pod's own events;
2. once the pod is known: every non-pod event (unparsed until the scope is known, then
   filtered), the pods on its node, and the nodes and NodeClaims of the pools of interest,
   those the pod's scheduling terms admit and those named (its node, its nominations);
3. only if the chain (pod -> claim -> node -> pool) reaches beyond what was read: the rest of it.

The nodes and NodeClaims sources are marked partial when they were narrowed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from datetime import datetime
from typing import Any

from diagnostics.model import ObjectRef
from diagnostics.facts.nodeclass_health import nodeclass_failing
from diagnostics.facts.node_health import node_gpu_total
from diagnostics.facts.pod_fit import TAINT, fit_nodes
from diagnostics.records import Event, Node, NodeClaim, NodePool, Pod, accelerator_total
from diagnostics.relations import admits
from diagnostics.snapshot import Snapshot, SourceStatus
from gputui.kube import ingest
from gputui.collect import pod_scope
from gputui.kube.api import Api, KubeError
from gputui.collect.reads import Merged, Result, freeze, merge, raise_if_unreachable, read, retrying
from diagnostics.relations import chain
from gputui.kube.resources import RESOURCES
from gputui.kube.informer import gc_paused, iter_pages, status_for_error
from gputui.collect.store import Store, key_of

SMALL = ("namespaces", "daemonsets", "pdbs", "runtimeclasses", "nodepools", "ec2nodeclasses")
NOTHING = f"{pod_scope.NODEPOOL_LABEL},!{pod_scope.NODEPOOL_LABEL}"
"""A label selector nothing matches: still tells whether the list is allowed and the CRD installed."""
MAX_ROUNDS = 4
MAX_NAMED = 16
"""More objects than this to read by name: one whole list is cheaper."""


class PodReads:
    """One pod target's reads. Construct before the pod's GET returns (round 1 starts at once)."""

    def __init__(self, api: Api, target: ObjectRef, pool: ThreadPoolExecutor, now: Callable[[], datetime]) -> None:
        self.api = api
        self.target = target
        self.pool = pool
        self.now = now
        self.merged: Merged = {}
        self.failed: dict[str, SourceStatus] = {}
        self._small = [pool.submit(read, api, s) for s in SMALL]
        self._own_events = pool.submit(read, api, "events", target.namespace,
                                       f"involvedObject.kind=Pod,involvedObject.name={target.name}")
        self._lists: set[tuple[str, str | None, str | None]] = set()
        self._pending: list[Future[Result]] = []
        self.pools: set[str] | None = set()
        """Pools of interest (see `pod_scope`); None when the NodePools cannot be read."""
        self.all_nodes = False
        self.all_claims = False
        self.named_claims: set[str] = set()
        self._all_pools: set[str] = set()
        self._others: Future[tuple[list[dict[str, Any]] | None, SourceStatus | None]] | None = None
        self._ingest: Future[Result] | None = None

    def finish(self, obj: dict[str, Any]) -> tuple[Merged, dict[str, SourceStatus], tuple[str, ...], frozenset[str]]:
        """Everything for the pod whose object the GET returned: merged records, failures, partial sources,
        and the nodes whose pods were all read."""
        pod = ingest.record("pods", obj)
        self.merged["pods"] = {key_of("pods", pod): pod}
        # The biggest read; started only once the pod exists, so a mistyped name fails fast.
        self._others = self.pool.submit(_other_events, self.api)
        node_pods = {pod.node_name: self._submit("pods", f"spec.nodeName={pod.node_name}")} if pod.node_name else {}
        small = [f.result() for f in self._small]
        raise_if_unreachable(small)
        merge(small, self.merged, self.failed)
        own = self._own_events.result()
        own_events: list[Event] = own[1] or []
        merge([own], self.merged, self.failed)  # the nominations the chain follows

        pools = list(self.merged.get("nodepools", {}).values()) if "nodepools" not in self.failed else None
        self._first_round(pod, own_events, pools)
        self._wait()
        snap = self._close(pools)

        # Pods on the chain's nodes (for node checks: device plugin pods, GPUs in use), in node order, and on
        # the broken-looking nodes that would take a pending pod (whether they have room for it).
        nodes = sorted({r.name for r in chain(snap, self.target) if r.kind == "Node"} | broken_candidates(snap, pod))
        on_nodes = [node_pods.get(n) or self._submit("pods", f"spec.nodeName={n}") for n in nodes]
        answers = [f.result() for f in on_nodes]
        merge((r for r in answers if r[2] is None), self.merged, self.failed)
        read_on = frozenset(n for n, r in zip(nodes, answers) if r[2] is None)
        stack_events = [self.pool.submit(read, self.api, "events", p.namespace, pod_events_selector(p.name))
                        for p in troubled_daemon_pods(answers)]

        # As the whole-list path orders them: every non-pod event, then the pod's own.
        self.merged.pop("events", None)
        self.failed.pop("events", None)
        events = (self._ingest or self.pool.submit(self._events, pools)).result()
        merge([events, own, *(f.result() for f in stack_events)], self.merged, self.failed)
        for source in ("nodes", "nodeclaims"):
            if source in self.merged:
                self.merged[source] = dict(sorted(self.merged[source].items(), key=lambda kv: kv[0][1]))
        partial = tuple(s for s, every in (("nodes", self.all_nodes), ("nodeclaims", self.all_claims)) if not every)
        return self.merged, self.failed, partial, read_on

    # --- rounds ---------------------------------------------------------------------------------

    def _submit(self, source: str, field: str | None = None, label: str | None = None) -> Future[Result]:
        return self.pool.submit(read, self.api, source, None, field, label)

    def _list(self, source: str, field: str | None = None, label: str | None = None) -> None:
        """Queue a list unless it, the whole list or a list holding all it would return was read already.

        A pod's scheduling term (`karpenter.sh/nodepool in (p),nvidia.com/gpu.present in (true)`) often
        narrows its pool's selector (`karpenter.sh/nodepool in (p)`): every requirement of the pool's
        list is one of the term's, so the term's nodes are among the pool's and were read with them.
        """
        if (source, None, None) in self._lists or (source, field, label) in self._lists:
            return
        if label is not None and field is None:
            wanted = requirements(label)
            if any(s == source and f is None and lb is not None and requirements(lb) <= wanted
                   for s, f, lb in self._lists):
                return
        self._lists.add((source, field, label))
        self._pending.append(self._submit(source, field, label))

    def _wait(self) -> None:
        results = [f.result() for f in self._pending]
        self._pending = []
        merge(results, self.merged, self.failed)

    def _read_pools(self, pools: set[str]) -> None:
        """The nodes and NodeClaims of these pools (all of them once most pools are of interest)."""
        if self.all_nodes and self.all_claims:
            return
        selector = pod_scope.pools_selector(pools)
        if selector is None or (self.pools is not None and len(self.pools) * 2 > len(self._all_pools)):
            # Most pools: their lists would cost about what the whole ones do, in more rounds.
            self._read_all_nodes()
            self._read_all_claims()
            return
        self._list("nodes", label=selector)
        self._list("nodeclaims", label=selector)

    def _read_all_nodes(self) -> None:
        self.all_nodes = True
        self._list("nodes")
        self._ingest_unfiltered()

    def _read_all_claims(self) -> None:
        self.all_claims = True
        self._list("nodeclaims")
        self._ingest_unfiltered()

    def _ingest_unfiltered(self) -> None:
        """With every node and claim read no event is filtered: parse them while the lists are on their way."""
        if self.all_nodes and self.all_claims and self._ingest is None:
            self._ingest = self.pool.submit(self._events, None)

    def _first_round(self, pod: Pod, own_events: list[Event], pools: list[NodePool] | None) -> None:
        claims, nodes = pod_scope.nominations(own_events)
        self.named_claims = claims
        self._all_pools = {p.name for p in pools or ()}
        if pools is None:
            self.pools = None  # NodePools unreadable: nothing to narrow by
            self._read_all_nodes()
            self._read_all_claims()
        else:
            self.pools = pod_scope.pools_of_interest(pod, own_events, pools, claims)
            if self.pools:
                self._read_pools(self.pools)
        if pod.pending and not self.all_nodes:
            terms = pod_scope.schedulable_selectors(pod)
            if terms is None or pod_scope.needs_every_node(pod):
                self._read_all_nodes()
            else:
                for t in terms:
                    self._list("nodes", label=t)
        named = {n for n in nodes | {pod.node_name, pod.nominated_node} if pod_scope.object_name(n)}
        claims = {c for c in claims if pod_scope.object_name(c)}  # no object can have another name
        if len(named) > MAX_NAMED:
            self._read_all_nodes()
        if len(claims) > MAX_NAMED:
            self._read_all_claims()
        for n in sorted(named):
            self._list("nodes", field=f"metadata.name={n}")
        for c in sorted(claims):
            self._list("nodeclaims", field=f"metadata.name={c}")
        # The sources' status (forbidden, CRD absent) is known only from a request.
        for source in ("nodes", "nodeclaims"):
            if not any(s == source for s, _f, _l in self._lists):
                self._list(source, label=NOTHING)

    def _close(self, pools: list[NodePool] | None) -> Snapshot:
        """Read on until the pod's chain and what its findings reach is all there; the snapshot of the reads."""
        looked_up = False
        for _ in range(MAX_ROUNDS):
            snap = freeze(Store(clock=self.now), self.merged, self.failed, self.target)
            if self.pools is None or pools is None or (self.all_nodes and self.all_claims):
                return snap
            idx = snap.index
            refs = chain(snap, self.target)
            classes = {r.name for r in refs if r.kind == "EC2NodeClass"}
            # Another pool's claim findings only list the shared class, which `focus` does not keep.
            reach = {r.name for r in refs if r.kind == "NodePool"}
            used = {p.node_class for p in pools if p.name in self.pools | reach}
            failing = {nc.name for nc in snap.ec2nodeclasses if nc.name in used and nodeclass_failing(snap, nc)}
            new = (reach | pod_scope.pools_using(failing, pools)) - self.pools
            if new:
                self.pools |= new
                self._read_pools(new)
            for r in refs:
                node = idx.node.get(r.name) if r.kind == "Node" else None
                if node is not None and not node.nodepool and not self.all_claims:
                    self._read_all_claims()  # its NodeClaim, if any, is known by providerID only
            if not self.all_nodes:
                # Nodes of the claims in scope that their pool label did not bring (a node relabelled by hand).
                missing = sorted({c.node_name for c in snap.nodeclaims if c.node_name not in idx.node
                                  and pod_scope.object_name(c.node_name)
                                  and (c.nodepool in self.pools or c.name in self.named_claims)})
                if len(missing) > MAX_NAMED:
                    self._read_all_nodes()
                for n in missing:
                    self._list("nodes", field=f"metadata.name={n}")
                # A check looks for the Node of a launched, unregistered claim by providerID: one that joined
                # without labels. Only claims whose findings stay (named, or of the chain's pools) matter.
                providers = {n.provider_id for n in snap.nodes}
                if not looked_up and any(c.provider_id not in providers and (c.name in self.named_claims or c.nodepool
                                         in reach or c.node_class in classes)
                                         for c in pod_scope.unregistered(snap.nodeclaims)):
                    looked_up = True
                    self._list("nodes", label=f"!{pod_scope.NODEPOOL_LABEL}")
            if not self._pending:
                return snap
            self._wait()
        self._read_all_nodes()  # still growing: stop guessing
        self._read_all_claims()
        self._wait()
        return freeze(Store(clock=self.now), self.merged, self.failed, self.target)

    def _events(self, pools: list[NodePool] | None) -> Result:
        """The non-pod events as records: only those in scope when nodes or claims were narrowed."""
        assert self._others is not None  # started by `finish` before anything can ask
        items, status = self._others.result()
        if items is None:
            return "events", None, status
        if not (self.all_nodes and self.all_claims) and self.pools is not None:
            claims = [c for c in self.merged.get("nodeclaims", {}).values()
                      if c.nodepool in self.pools or c.meta.name in self.named_claims]
            scope = pod_scope.EventScope(self.pools, (p.name for p in pools or ()),
                                         _names(self.merged.get("nodes", {}).values()), _names(claims))
            items = [o for o in items if scope.keep(o)]
        with gc_paused():
            return "events", [ingest.record("events", o) for o in items], None


def broken_candidates(snap: Snapshot, pod: Pod) -> set[str]:
    """Nodes whose pods decide a pending pod's verdict (at most MAX_NAMED each): GPU nodes that would take it but
    advertise fewer accelerators than they should or are not Ready (whether they explain it depends on their
    room), and nodes only a taint keeps it from (GT401 offers them only if their accelerators are free)."""
    if not pod.pending:
        return set()
    out = []
    for node, claim in snap.index.gpu_nodes:
        if node.ready is True and accelerator_total(node.allocatable) >= node_gpu_total(node, claim):
            continue
        if admits(snap, pod, node, claim):
            out.append(node.name)
    tainted = [f.node.name for f in fit_nodes(snap, pod) if f.kinds == {TAINT}]
    return set(sorted(out)[:MAX_NAMED]) | set(sorted(tainted)[:MAX_NAMED])


def requirements(selector: str) -> frozenset[str]:
    """A label selector's requirements (ANDed), split at the commas outside `in (...)` value lists."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(selector):
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(selector[start:i])
            start = i + 1
    parts.append(selector[start:])
    return frozenset(p.strip() for p in parts if p.strip())


def troubled_daemon_pods(answers: Iterable[Result]) -> list[Pod]:
    """DaemonSet pods (a node's GPU stack) among the pods read on nodes that are not running ready: their
    Warning events (FailedCreatePodSandBox, BackOff) say why, and the whole-cluster run quotes them."""
    out = [p for source, recs, st in answers if st is None for p in recs or ()
           if isinstance(p, Pod) and p.is_daemonset and not p.terminal
           and (p.phase != "Running" or any(not c.ready for c in p.containers))]
    return out[:MAX_NAMED]


def pod_events_selector(name: str) -> str:
    return f"involvedObject.kind=Pod,involvedObject.name={name}"


def _names(records: Iterable[Node | NodeClaim]) -> set[str]:
    return {r.meta.name for r in records}


def _other_events(api: Api) -> tuple[list[dict[str, Any]] | None, SourceStatus | None]:
    """Every event not about a pod, unparsed: which to keep is known only once the nodes are read."""
    res = RESOURCES["events"]

    def whole() -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = []
        for page, _meta in iter_pages(api, res, field_selector="involvedObject.kind!=Pod"):
            items.extend(page)
        return items

    try:
        return retrying(whole), None  # a 5xx, a reset or a 410 on `continue`: read again from the start
    except KubeError as exc:
        return None, status_for_error(res, exc)
