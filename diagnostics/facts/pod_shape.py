"""What scheduling reads from a pod, as one shared object per distinct value, so replicas share fit computations.

A thousand pending pods are usually replicas of a handful of workloads: everything NodePool and
node compatibility looks at (tolerations, nodeSelector, required node affinity, requests, limits)
is the same for all of them. Results that name the pod itself (its ref in evidence) must not be
shared by shape.
"""

from __future__ import annotations

import threading
import weakref

from diagnostics.facts.provider import derived
from diagnostics.records import Pod
from diagnostics.snapshot import Snapshot


class Shape:
    """A pod's scheduling-relevant fields. Interned: equal fields give the same object, so it hashes by identity."""

    __slots__ = ("fields", "__weakref__")

    def __init__(self, fields: tuple[object, ...]) -> None:
        self.fields = fields

    def __repr__(self) -> str:
        return f"Shape{self.fields!r}"


_INTERNED: weakref.WeakValueDictionary[tuple[object, ...], Shape] = weakref.WeakValueDictionary()
_LOCK = threading.Lock()


def _intern(fields: tuple[object, ...]) -> Shape:
    with _LOCK:
        shape = _INTERNED.get(fields)
        if shape is None:
            shape = _INTERNED[fields] = Shape(fields)
        return shape


def pod_shape(snap: Snapshot, pod: Pod) -> Shape:
    """The pod's shape; pods with equal scheduling fields get the same Shape object.

    It also holds whether Karpenter ignores the pod for `karpenter.sh/nodepool DoesNotExist` (pod_fit.avoids_karpenter):
    that reads the heaviest *preferred* term too, which the fields above leave out, so two pods equal in them
    may differ there (Pod.preferred_affinity). Worked out once per pod version, not on each fit."""
    return _shape_of(snap, pod)


@derived
def _shape_of(pod: Pod) -> Shape:
    from diagnostics.facts.pod_fit import avoids_karpenter  # pod_fit keys its fits on shapes

    return _intern((pod.tolerations, tuple(pod.node_selector.items()), pod.required_affinity,
                    tuple(pod.requests.items()), tuple(pod.limits.items()), avoids_karpenter(pod)))
