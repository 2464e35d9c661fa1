"""Decoders that parse only the fields gputui keeps of an object, for the kinds where that matters.

A pod as the API returns it is mostly what gputui drops (managedFields, env, volumes, probes,
container command lines): parsing all of it into dicts only to drop it was most of a cold list's
cost. msgspec decodes into plain dicts and skips undeclared keys without building them, so a
page of pods parses ~3x faster and the record builders see exactly the dicts they saw before.

The shapes are derived from the builders' own keep-lists (`gputui.kube.ingest`), so a field kept there
is parsed here. Leaves are `Any` (nothing is validated) except a pod's conditions and container
statuses, which decode into typed structs (`gputui.kube.wire`); the conditions become
`diagnostics.records.Condition` right after (`_pod_conditions`), so the one Condition type is all that
leaves the decoder. A body that does not fit the shape (a Status object, a null where a map was
expected, a condition's timestamp without a zone) is parsed again in full with orjson, so the answer is
never worse than orjson's.
"""

from __future__ import annotations

from collections.abc import Callable
from sys import intern
from typing import Any, TypedDict

import msgspec
import orjson

from diagnostics.records import Condition
from gputui.kube import ingest, wire

Decode = Callable[[bytes], Any]

_METADATA_KEYS = ("name", "generateName", "namespace", "selfLink", "uid", "resourceVersion", "generation",
                  "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds", "labels",
                  "annotations", "ownerReferences", "finalizers")
"""ObjectMeta without managedFields (which no view or check reads, and which is ~1/3 of a pod)."""


def _shape(name: str, fields: dict[str, Any]) -> Any:
    return TypedDict(name, fields, total=False)  # type: ignore[operator]


def _leaves(keys: tuple[str, ...] | list[str]) -> dict[str, Any]:
    return {k: Any for k in keys}


_Metadata = _shape("Metadata", _leaves(_METADATA_KEYS))
_Container = _shape("Container", _leaves(ingest.CONTAINER_KEEP))
_PodSpec = _shape("PodSpec", {**_leaves(ingest.POD_SPEC_KEEP), **_leaves(ingest.POD_SPEC_READ),
                              # TypedDicts built at run time (for msgspec): mypy cannot see them as types.
                              "containers": list[_Container],  # type: ignore[valid-type]
                              "initContainers": list[_Container]})  # type: ignore[valid-type]
_TYPED_STATUS = {"conditions": list[wire.ConditionShape], "containerStatuses": list[wire.ContainerStatus],
                 "initContainerStatuses": list[wire.ContainerStatus]}
_PodStatus = _shape("PodStatus", {**_leaves(ingest.POD_STATUS_KEEP),
                                  **{k: _TYPED_STATUS.get(k, Any) for k in ingest.POD_STATUS_READ}})
_Pod = _shape("Pod", {"apiVersion": Any, "kind": Any, "metadata": _Metadata, "spec": _PodSpec,
                      "status": _PodStatus,
                      # a watch ERROR event's object is a Status: keep what the informer reads of it
                      "code": Any, "reason": Any, "message": Any})
_PodList = _shape("PodList", {"metadata": Any, "items": list[_Pod]})  # type: ignore[valid-type]
_PodEvent = _shape("PodEvent", {"type": Any, "object": _Pod})

_SHAPES: dict[str, tuple[Any, Any]] = {"pods": (_PodList, _PodEvent)}
"""Per source: (the list's shape, a watch event's shape). Kinds not here keep the whole object."""


def _pod_conditions(pod: Any) -> None:
    """A decoded pod's conditions as the one Condition type, type/status interned (a handful of distinct
    strings repeated on every pod). A condition without a type is dropped, as ingest drops it."""
    status = pod.get("status") if type(pod) is dict else None
    if type(status) is dict and status.get("conditions"):
        status["conditions"] = [Condition(intern(c.type), intern(c.status), c.reason, c.message,
                                          c.lastTransitionTime or c.lastHeartbeatTime)
                                for c in status["conditions"] if c.type]


def _list_conditions(body: Any) -> None:
    for item in body.get("items") or ():
        _pod_conditions(item)


def _event_conditions(body: Any) -> None:
    _pod_conditions(body.get("object"))


def _with_fallback(shape: Any, finish: Callable[[Any], None]) -> Decode:
    decode = msgspec.json.Decoder(shape).decode

    def parse(raw: bytes) -> Any:
        try:
            body = decode(raw)
        except msgspec.MsgspecError:  # not the shape, or not JSON: orjson answers (or raises) as before
            return orjson.loads(raw)
        finish(body)
        return body

    return parse


def list_decoder(source: str) -> Decode:
    """Parses one page of a list of `source` into what its record builder reads."""
    shapes = _SHAPES.get(source)
    return _with_fallback(shapes[0], _list_conditions) if shapes else orjson.loads


def event_decoder(source: str) -> Decode:
    """Parses one watch event line of `source` into what its record builder reads."""
    shapes = _SHAPES.get(source)
    return _with_fallback(shapes[1], _event_conditions) if shapes else orjson.loads
