"""Fault injection for the soak: one fault at a time per resource, on watches and on lists, and a request log.

Watch-side faults use `SimCluster`'s switches. Two things the switches cannot do are added here, on the
soak's own simulator instance only: failing *list* requests (the switches match a path, and a list and a
watch share theirs) and timestamping every request (to measure Retry-After compliance and backoff).
"""

from __future__ import annotations

import enum
import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from gputui.kube.resources import RESOURCES
from gputui.sim.cluster import SimCluster
from gputui.sim.faults import Faults, fault_error


class Fault(str, enum.Enum):
    WATCH_END = "watch stream ended"
    WATCH_CUT = "watch stream cut mid-event"
    GONE = "410 Gone on watch"
    WATCH_500 = "500 on watch"
    WATCH_429 = "429 + Retry-After on watch"
    LIST_500 = "500 on list"
    LIST_429 = "429 + Retry-After on list"
    SLOW = "slow responses"
    RESTART = "apiserver restart, new RV history"


WEIGHTS: dict[Fault, float] = {
    Fault.WATCH_END: 2, Fault.WATCH_CUT: 2, Fault.GONE: 1.5, Fault.WATCH_500: 1.5, Fault.WATCH_429: 1,
    Fault.LIST_500: 1, Fault.LIST_429: 1, Fault.SLOW: 0.6,
}


@dataclass
class RequestRecord:
    at: float
    path: str
    failed: int | None
    """Status of the injected failure answer, None if the request went on to be served."""
    retry_after: int | None = None


class RecordingFaults(Faults):
    """`Faults` that also timestamps every request the simulator handles (it is consulted once per request)."""

    def __init__(self) -> None:
        super().__init__()
        self.log: list[RequestRecord] = []

    def take_failure(self, path: str) -> Any:
        err = super().take_failure(path)
        retry = err.headers.get("Retry-After") if err is not None else None
        self.log.append(RequestRecord(time.monotonic(), path, err.code if err is not None else None,
                                      int(retry) if retry else None))
        return err


class ListFaults:
    """Fail the next list (never watch) requests of a resource; wraps the simulator's list handler."""

    def __init__(self, sim: SimCluster) -> None:
        self._lock = threading.Lock()
        self._pending: dict[str, list[tuple[int, int | None]]] = {}
        self.hits: Counter[int] = Counter()
        self.log: list[tuple[float, str, int, int | None]] = []
        """(when, kind, status, Retry-After) of every failed list."""
        server = sim.server
        inner = server._list

        def _list(request: Any, t: Any) -> Any:
            failure = self._take(t.info.kind)
            if failure is not None:
                status, retry_after = failure
                self.log.append((time.monotonic(), t.info.kind, status, retry_after))
                raise fault_error(status, retry_after)
            return inner(request, t)

        server._list = _list  # type: ignore[method-assign]

    def fail(self, kind: str, n: int, status: int, retry_after: int | None = None) -> None:
        with self._lock:
            self._pending.setdefault(kind, []).extend([(status, retry_after)] * n)

    def clear(self) -> None:
        with self._lock:
            self._pending.clear()

    def _take(self, kind: str) -> tuple[int, int | None] | None:
        with self._lock:
            q = self._pending.get(kind)
            if not q:
                return None
            self.hits[q[0][0]] += 1
            return q.pop(0)


def install(sim: SimCluster) -> tuple[RecordingFaults, ListFaults]:
    """Swap in the recording fault switches and the list-fault hook; call before `sim.start()`."""
    faults = RecordingFaults()
    sim.faults = faults
    sim.server.faults = faults
    return faults, ListFaults(sim)


@dataclass
class Injected:
    fault: Fault
    source: str
    at: float
    detail: dict[str, Any] = field(default_factory=dict)


class Injector:
    """Injects one fault into one resource's informer traffic (or all, for a restart)."""

    def __init__(self, sim: SimCluster, lists: ListFaults, rng: random.Random) -> None:
        self.sim = sim
        self.lists = lists
        self.rng = rng
        self.counts: Counter[Fault] = Counter()
        self.streams_dropped = 0
        self.slow_source: str | None = None

    def choose(self) -> Fault:
        """A random per-resource fault (restarts are scheduled by the soak, when every resource is calm)."""
        options = [f for f in WEIGHTS if f is not Fault.RESTART and (f is not Fault.SLOW or self.slow_source is None)]
        return self.rng.choices(options, weights=[WEIGHTS[f] for f in options])[0]

    def inject(self, fault: Fault, source: str) -> Injected:
        """Inject `fault`; for request faults, also end the current watch so the next request meets it."""
        sim, rng = self.sim, self.rng
        res = RESOURCES[source]
        kind = res.kind
        path = res.path()
        detail: dict[str, Any] = {}
        if fault is Fault.WATCH_END:
            self.streams_dropped += sim.drop_watches(kind=kind)
        elif fault is Fault.WATCH_CUT:
            self.streams_dropped += sim.drop_watches(mid_event=True, kind=kind)
        elif fault is Fault.GONE:
            sim.expire_next_watch(kind)
            self.streams_dropped += sim.drop_watches(kind=kind)
        elif fault in (Fault.WATCH_500, Fault.WATCH_429):
            n = rng.randint(1, 3)
            if fault is Fault.WATCH_500:
                sim.fail_requests(n, rng.choice((500, 500, 503, 504)), path_contains=path)
            else:
                detail["retry_after"] = rng.choice((1, 2))
                sim.throttle(n, detail["retry_after"], path_contains=path)
            detail["answers"] = n
            self.streams_dropped += sim.drop_watches(kind=kind)
        elif fault in (Fault.LIST_500, Fault.LIST_429):
            n = rng.randint(1, 3)
            if fault is Fault.LIST_500:
                self.lists.fail(kind, n, 500)
            else:
                detail["retry_after"] = rng.choice((1, 2))
                self.lists.fail(kind, n, 429, detail["retry_after"])
            detail["answers"] = n
            sim.expire_next_watch(kind)  # the 410 makes the informer relist, and the list meets the fault
            self.streams_dropped += sim.drop_watches(kind=kind)
        elif fault is Fault.SLOW:
            detail["latency"] = rng.choice((0.2, 0.5, 1.0))
            sim.set_latency(detail["latency"], path_contains=path)
            self.slow_source = source
            self.streams_dropped += sim.drop_watches(kind=kind)
        elif fault is Fault.RESTART:
            before = sim.watch_count()
            sim.restart(new_history=True)
            self.streams_dropped += before
        self.counts[fault] += 1
        return Injected(fault, source, time.monotonic(), detail)

    def recovered(self, source: str) -> None:
        """A slow resource recovered: the next slow fault may go elsewhere."""
        if self.slow_source == source:
            self.sim.set_latency(0)
            self.slow_source = None
