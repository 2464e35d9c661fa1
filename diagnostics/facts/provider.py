"""Facts providers: derived data declared once with what it reads, cached by the seam on exactly those reads.

A check (or a helper) that wants data several checks share, or data worth keeping between snapshots of
the live cache, writes it as a provider:

    @facts(reads=("nodes", "nodeclaims"))
    def short_nodes(snap: Snapshot) -> tuple[int, list[Node]]:
        ...

and calls `short_nodes(snap)`. The value is computed once and reused for later snapshots while every
declared source holds the same record objects (identity, never equality: see diagnostics.carry). The
function is handed a view of the snapshot that raises UndeclaredRead on anything it did not declare:
another source, the clock (`taken_at`, `age`), source statuses, the target. So a declared input is a
checked promise, not a comment; what depends on the time is worked out by the caller from the value.

Besides the sources (`KUBE_SOURCES`, and `aws`, `prometheus`, `nvidia-smi`, `pod_logs`,
`resource_claims`), two parts of the index may be declared on their own because they change far less
often than the source they come from: `pending` (the pending pods: unchanged while only bound pods
change) and `gpu_nodes` (the GPU nodes with their NodeClaims).

Four shapes, all cached in diagnostics.carry (the one cache module; `forget()` empties it):
- `@facts(reads=...)`: `fn(snap, *key, **extra) -> T`, one value per key (hashable values such as a pool
  name or an interned pod shape; keyword arguments are not part of the key: pass there only what the key
  determines, e.g. one pod of the shape).
- `@per_node(reads=...)`: `fn(snap, item, pods_on_its_node) -> T` over a list of nodes (or tuples led by
  a node); when a snapshot changes the pods of a few nodes, only those items are computed again.
- `@derived`: `fn(*objects, **extra) -> T` of objects alone (a PodFit replicas share, a triaged pod), kept
  per object identity while snapshots keep asking for it. Keyword arguments are not compared: a helper
  that needs the snapshot to look up what its objects stand for takes it as `within=` and lists every
  object it reads there among its arguments (its events list, the index's source tuples). That promise is
  not enforced: prefer `@facts` when the value can be declared on sources.
- `@per_snapshot`: `fn(snap, *key) -> T` once per snapshot, for what reads the time or source statuses
  (and so cannot be carried); a carried provider may not call one.
Values nobody asked for during the last two snapshots are dropped. Inside a provider, `previous(snap)` is
the value it computed last time (for the same key), to patch rather than rebuild.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, Concatenate, Generic, ParamSpec, TypeVar, cast

from diagnostics.carry import CARRIED, Generations, PerItem, forget
from diagnostics.snapshot import KUBE_SOURCES, Snapshot

if TYPE_CHECKING:
    from diagnostics.records import Node, Pod

__all__ = ["Provider", "UndeclaredRead", "derived", "facts", "forget", "per_node", "per_snapshot", "previous"]

P = ParamSpec("P")
T = TypeVar("T")
Item = TypeVar("Item")


class UndeclaredRead(AttributeError):
    """A provider read something it did not declare: its cached value would go stale silently."""


_OTHER = {"aws": "aws", "prometheus": "metrics", "nvidia-smi": "gpu_reports", "pod_logs": "pod_logs",
          "resource_claims": "resource_claims"}
"""Non-Kubernetes sources: the Snapshot attribute each one names."""
_DERIVED: dict[str, Callable[[Any], object]] = {
    "pending": lambda idx: idx.pending,
    "gpu_nodes": lambda idx: idx.gpu_nodes,
}
"""Index parts that may be declared as sources of their own (see the module docstring)."""
SOURCES = frozenset(KUBE_SOURCES) | frozenset(_OTHER) | frozenset(_DERIVED)

_INDEX_NEEDS: dict[str, tuple[frozenset[str], ...]] = {}
"""Index attribute -> the declarations that allow reading it (any one of them)."""
for _attrs, _needs in (
        (("node", "nodes_by_pool"), ({"nodes"},)),
        (("nodeclaim", "nodeclaim_by_provider", "nodeclaims_by_pool"), ({"nodeclaims"},)),
        (("nodeclaim_by_node",), ({"nodeclaims", "nodes"},)),
        (("nodepool", "pools_by_class"), ({"nodepools"},)),
        (("nodeclass",), ({"ec2nodeclasses"},)),
        (("pod", "pods_by_node", "first_pod", "gpus_requested_on", "nodes_with_changed_pods"), ({"pods"},)),
        (("pending", "pending_gpu_pods"), ({"pods"}, {"pending"})),
        (("events_by_object", "events"), ({"events"},)),
        (("gpu_nodes",), ({"nodes", "nodeclaims"}, {"gpu_nodes"}))):
    for _attr in _attrs:
        _INDEX_NEEDS[_attr] = tuple(frozenset(n) for n in _needs)


def _implied(reads: frozenset[str]) -> frozenset[str]:
    """What declaring `reads` lets a provider read, derived parts included (nodes and NodeClaims give the GPU nodes)."""
    out = set(reads)
    if "pods" in reads:
        out.add("pending")
    if {"nodes", "nodeclaims"} <= reads:
        out.add("gpu_nodes")
    return frozenset(out)


class _Declared:
    """What one provider may read, worked out once from its declaration."""

    def __init__(self, name: str, reads: tuple[str, ...]) -> None:
        unknown = [r for r in reads if r not in SOURCES]
        if unknown:
            raise ValueError(f"{name}: unknown source(s) {unknown} (known: {sorted(SOURCES)})")
        self.name = name
        self.reads = reads
        self.allowed = _implied(frozenset(reads))
        self.snap_attrs = frozenset(r for r in reads if r in KUBE_SOURCES) | frozenset(
            _OTHER[r] for r in reads if r in _OTHER)
        self.index_attrs = frozenset(a for a, needs in _INDEX_NEEDS.items() if any(n <= self.allowed for n in needs))

    def tokens(self, snap: Snapshot) -> tuple[object, ...]:
        """The objects standing for the declared sources: the same objects mean the same records."""
        idx = snap.index
        out: list[object] = []
        for r in self.reads:
            if r in KUBE_SOURCES:
                out.append(idx.sources[r])
            elif r in _DERIVED:
                out.append(_DERIVED[r](idx))
            else:
                out.append(getattr(snap, _OTHER[r]))
        return tuple(out)

    def covers(self, inner: _Declared) -> None:
        """An outer provider may call `inner` only if it declared all `inner` reads (else its value goes stale)."""
        missing = [r for r in inner.reads if r not in self.allowed]
        if missing:
            raise UndeclaredRead(f"{self.name} calls {inner.name}, which reads {missing}: declare them in "
                                 f"{self.name}'s reads")


class _IndexView:
    """The snapshot's index, limited to what the provider declared (an allowed attribute is looked up once)."""

    def __init__(self, index: Any, declared: _Declared) -> None:
        self._index = index
        self._declared = declared

    def __getattr__(self, name: str) -> Any:
        if name in self._declared.index_attrs:
            value = getattr(self._index, name)
            self.__dict__[name] = value
            return value
        raise UndeclaredRead(f"{self._declared.name} read index.{name}, which its reads "
                             f"{list(self._declared.reads)} do not cover")


class SnapshotView:
    """What a provider sees: the snapshot's declared sources and the index parts built from them, nothing else."""

    def __init__(self, snap: Snapshot, declared: _Declared) -> None:
        self._snap = snap
        self._declared = declared
        self.index = _IndexView(snap.index, declared)

    def __getattr__(self, name: str) -> Any:
        if name in self._declared.snap_attrs:
            value = getattr(self._snap, name)
            self.__dict__[name] = value
            return value
        why = ("a carried value may not depend on the time or on source statuses" if name in (
            "taken_at", "age", "status", "sources", "all_pods_read_on", "pods_read_on", "target", "cluster")
               else f"its reads {list(self._declared.reads)} do not cover it")
        raise UndeclaredRead(f"{self._declared.name} read snapshot.{name}: {why}")


def _real(snap: Snapshot, inner: _Declared) -> Snapshot:
    """The snapshot behind a view (checking the outer provider declared what `inner` reads)."""
    if isinstance(snap, SnapshotView):
        snap._declared.covers(inner)
        return snap._snap
    return snap


def _view(snap: Snapshot, declared: _Declared) -> Snapshot:
    """The view a provider is handed, typed as the Snapshot it stands for (it answers the same reads or raises)."""
    return cast(Snapshot, SnapshotView(snap, declared))


_PREVIOUS: ContextVar[Any] = ContextVar("previous", default=None)


def previous(snap: Snapshot) -> Any:
    """Inside a provider: the value it last computed for the same key (None if none, or outside a provider)."""
    return _PREVIOUS.get()


def _computed(fn: Callable[[], T], earlier: Any) -> T:
    """fn() with `previous` answering `earlier` meanwhile (nested providers see their own)."""
    token = _PREVIOUS.set(earlier)
    try:
        return fn()
    finally:
        _PREVIOUS.reset(token)


def _name(fn: Callable[..., Any]) -> str:
    return f"{fn.__module__}.{fn.__qualname__}"


class Provider(Generic[P, T]):
    """A declared computation on a snapshot; call it with the snapshot (and a key) to get its cached value."""

    def __init__(self, fn: Callable[Concatenate[Snapshot, P], T], reads: tuple[str, ...]) -> None:
        self.fn = fn
        self.declared = _Declared(_name(fn), reads)
        self._values: Generations[T] = Generations()
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__

    @property
    def reads(self) -> tuple[str, ...]:
        return self.declared.reads

    def __call__(self, snap: Snapshot, *key: P.args, **kwargs: P.kwargs) -> T:
        snap = _real(snap, self.declared)
        slot: object = key if key else None
        inputs = self.declared.tokens(snap)
        gen = self._values
        found, value = gen.lookup(snap.index, slot, inputs)
        if found:
            return value  # type: ignore[return-value]
        view = _view(snap, self.declared)
        return gen.store(slot, inputs, _computed(lambda: self.fn(view, *key, **kwargs), gen.latest(slot)))


def facts(*, reads: tuple[str, ...]) -> Callable[[Callable[Concatenate[Snapshot, P], T]], Provider[P, T]]:
    """Declare a provider of data derived from the `reads` sources alone (see the module docstring)."""

    def wrap(fn: Callable[Concatenate[Snapshot, P], T]) -> Provider[P, T]:
        return Provider(fn, reads)

    return wrap


class PerNode(Generic[Item, T]):
    """`fn(snap, item, pods on the item's node)` for each item of a list, reused item by item.

    An item is a Node or a tuple led by one ((node, claim)). Each value is kept with its inputs (the item's
    parts, the node's pod list, and what `extra` adds, e.g. its NodePool). While the list and the declared
    sources other than pods are the same objects, only nodes whose pods changed are looked at again; else
    every item's inputs are compared and only those that differ are computed (or patched: `patch(snap, item,
    pods, earlier pods, earlier value)` works a value out from the one the item had with other pods).
    """

    def __init__(self, fn: Callable[[Snapshot, Item, Sequence[Pod]], T], reads: tuple[str, ...],
                 extra: Callable[[Snapshot, Item], tuple[object, ...]] | None,
                 patch: Callable[[Snapshot, Item, Sequence[Pod], Sequence[Pod], T], T] | None) -> None:
        if "pods" not in reads:
            raise ValueError(f"{_name(fn)}: a per-node provider reads pods (it is handed each node's pods)")
        self.fn, self.extra, self.patch = fn, extra, patch
        self.declared = _Declared(_name(fn), reads)
        self._fixed = _Declared(_name(fn), tuple(r for r in reads if r not in ("pods", "pending")))
        self._values: PerItem[Item, str, T] = PerItem()
        self.__doc__ = fn.__doc__

    def __call__(self, snap: Snapshot, key: Hashable, items: Sequence[Item]) -> list[T]:
        """The values for `items`, in order (do not modify the list); `key` names the list (e.g. its NodePool)."""
        snap = _real(snap, self.declared)
        view = _view(snap, self.declared)
        idx = snap.index
        by_node: dict[str, list[Pod]] = idx.pods_by_node
        fn, extra, patch = self.fn, self.extra, self.patch

        def node_of(item: Item) -> Node:
            return cast("Node", item[0] if isinstance(item, tuple) else item)

        def name_of(item: Item) -> str:
            return node_of(item).name

        def inputs_of(item: Item) -> tuple[object, ...]:
            parts = item if isinstance(item, tuple) else (item,)
            pods = by_node.get(node_of(item).name, ())
            return (*parts, pods, *extra(view, item)) if extra is not None else (*parts, pods)

        def compute(item: Item) -> T:
            return fn(view, item, by_node.get(node_of(item).name, ()))

        fix: Callable[[Item, tuple[object, ...], T], T] | None = None
        if patch is not None:
            def fix(item: Item, earlier: tuple[object, ...], was: T) -> T:
                at = len(item) if isinstance(item, tuple) else 1
                return patch(view, item, by_node.get(node_of(item).name, ()),
                             cast("Sequence[Pod]", earlier[at]), was)

        return self._values.values(key, items, self._fixed.tokens(snap), by_node, name_of, idx.nodes_with_changed_pods,
                            inputs_of, compute, fix)


def per_node(*, reads: tuple[str, ...], extra: Callable[[Snapshot, Any], tuple[object, ...]] | None = None,
             patch: Callable[..., Any] | None = None) -> Callable[[Callable[[Snapshot, Item, Sequence[Pod]], T]],
                                                                    PerNode[Item, T]]:
    """Declare a per-node provider (see PerNode); `extra(snap, item)` reads only what `reads` declares."""

    def wrap(fn: Callable[[Snapshot, Item, Sequence[Pod]], T]) -> PerNode[Item, T]:
        return PerNode(fn, reads, extra, patch)

    return wrap


class PerSnapshot(Generic[P, T]):
    """Computed once per snapshot (and key): for what depends on the time or on source statuses."""

    def __init__(self, fn: Callable[Concatenate[Snapshot, P], T]) -> None:
        self.fn = fn
        self.name = _name(fn)
        self.__doc__ = fn.__doc__

    def __call__(self, snap: Snapshot, *key: P.args, **kwargs: P.kwargs) -> T:
        if isinstance(snap, SnapshotView):
            raise UndeclaredRead(f"{snap._declared.name} calls {self.name}, which is worked out per snapshot "
                                 "(it may read the time): a carried value may not depend on it")
        memo = snap.index.memo
        slot = (self, *key)
        if slot in memo:
            return memo[slot]  # type: ignore[return-value]
        last = None if key else CARRIED.previous(self)
        value = _computed(lambda: self.fn(snap, *key, **kwargs), last)
        memo[slot] = value
        if not key:
            CARRIED.put(self, value)
        return value


def per_snapshot(fn: Callable[Concatenate[Snapshot, P], T]) -> PerSnapshot[P, T]:
    """Declare data worked out once per snapshot (see the module docstring); `previous` works without a key."""
    return PerSnapshot(fn)


class Derived(Generic[P, T]):
    """`fn(*objects)` once per objects (by identity), kept while the snapshots that ask for it keep doing so."""

    def __init__(self, fn: Callable[P, T]) -> None:
        self.fn = fn
        self._values: Generations[T] = Generations()
        self.__doc__ = fn.__doc__

    def __call__(self, snap: Snapshot, /, *objects: P.args, **kwargs: P.kwargs) -> T:
        """`snap` only dates the request (values nobody asked for in two snapshots are dropped)."""
        index = (snap._snap if isinstance(snap, SnapshotView) else snap).index
        key = tuple(map(id, objects)) if len(objects) != 1 else id(objects[0])
        found, value = self._values.lookup(index, key, objects)
        if found:
            return value  # type: ignore[return-value]
        return self._values.store(key, objects, self.fn(*objects, **kwargs))


def derived(fn: Callable[P, T]) -> Derived[P, T]:
    """Declare data derived from its arguments alone (objects, compared by identity; see the module docstring)."""
    return Derived(fn)
