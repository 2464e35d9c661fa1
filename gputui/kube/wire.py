"""Typed structs msgspec decodes a pod's conditions and container statuses into.

Every pod carries ~5 conditions and a status per container; parsed into dicts and then read key
by key into records, with each timestamp parsed in Python, they were a third of building a pod
record. Decoded into these structs, the parsing (timestamps included) happens in C and the
builders in `gputui.kube.ingest` only copy attributes.

`ConditionShape` is decode-only: `gputui.kube.shapes` turns each into the one Condition type
(`diagnostics.records.Condition`) as the page is decoded, so nothing past the decoder sees it.
Decoding straight into that dataclass was measured and is slower: msgspec fills a dataclass ~2.5x
slower than a gc-free Struct, and interning its strings needs a `__post_init__` call per condition
(+110 ms per 60k pods on conditions alone, +10% on a whole 60k-pod list).

The types are strict where a lax parse would change a record: a null string, a timestamp without
a zone or one msgspec cannot read, a non-integer exit code, a null state. Such a body does not fit
and is parsed again whole with orjson (see `gputui.kube.shapes`), so the builders' dict path - the
reference - answers for it.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

import msgspec

Timestamp = Annotated[datetime, msgspec.Meta(tz=True)]
"""RFC 3339 with a zone, as the API writes them; a naive one takes the dict path (assumed UTC)."""


class ConditionShape(msgspec.Struct, frozen=True, gc=False):
    type: str = ""
    status: str = ""
    reason: str = ""
    message: str = ""
    lastTransitionTime: Timestamp | None = None  # noqa: N815 - the API's own field names
    lastHeartbeatTime: Timestamp | None = None  # noqa: N815


class StateDetail(msgspec.Struct, frozen=True, gc=False):
    """One of state.running / waiting / terminated (each reads only some of these)."""

    reason: str = ""
    message: str = ""
    exitCode: int | None = None  # noqa: N815
    startedAt: Timestamp | None = None  # noqa: N815


class State(msgspec.Struct, frozen=True, gc=False):
    """Absent keys are UNSET (a null one does not fit): the dict path tells them apart too."""

    running: StateDetail | msgspec.UnsetType = msgspec.UNSET
    waiting: StateDetail | msgspec.UnsetType = msgspec.UNSET
    terminated: StateDetail | msgspec.UnsetType = msgspec.UNSET


class ContainerStatus(msgspec.Struct, frozen=True, gc=False):
    name: str = ""
    ready: bool = False
    restartCount: int = 0  # noqa: N815
    state: State | None = None
    lastState: State | None = None  # noqa: N815
