"""Watch-burst instrumentation on the client side: when each stamped change reached the cache.

The simulator stamps every burst change with its wall-clock emission time (same machine, same
clock). `WatchLog.attach(store)` wraps that Store's `apply` on the instance so each stamped pod
records when it was applied and the store version it produced; frames rendered by the TUI carry
the store version their snapshot was cut at, which maps every change to the first frame showing it.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.request
from dataclasses import dataclass
from typing import Any

from gputui.dev.bench.stats import growing, quarters, summary_ms

EMITTED = "bench.gputui.dev/emitted"
"""Annotation: wall-clock time (time.time()) at which the simulator made the change."""
SEQ = "bench.gputui.dev/seq"
"""Annotation: the change's sequence number (counts up across bursts)."""


@dataclass(slots=True)
class Applied:
    seq: int
    emitted: float
    applied: float
    version: int


class WatchLog:
    def __init__(self) -> None:
        self.events: list[Applied] = []
        self._lock = threading.Lock()

    def attach(self, store: Any) -> None:
        original = store.apply

        def apply(source: str, event_type: str, rec: Any) -> None:
            original(source, event_type, rec)
            if source != "pods":
                return
            ann = rec.meta.annotations
            emitted = ann.get(EMITTED)
            if emitted:
                item = Applied(int(ann.get(SEQ, -1)), float(emitted), time.time(), store.version)
                with self._lock:
                    self.events.append(item)

        store.apply = apply

    def since(self, seq0: int) -> list[Applied]:
        with self._lock:
            return [e for e in self.events if e.seq >= seq0]

    def cache_lag(self, seq0: int) -> dict[str, Any]:
        evs = self.since(seq0)
        lags = [e.applied - e.emitted for e in evs]
        q = quarters([(e.emitted, e.applied - e.emitted) for e in evs])
        return {**summary_ms(lags), "by_quarter_p50_ms": q, "growing": growing(q)}


class GcPauses:
    """Cyclic-GC passes and their durations while attached (a full pass over a big heap stalls every thread)."""

    def __init__(self) -> None:
        self.pauses: list[tuple[int, float]] = []
        self._start = 0.0

    def _callback(self, phase: str, info: dict[str, Any]) -> None:
        if phase == "start":
            self._start = time.perf_counter()
        else:
            self.pauses.append((int(info.get("generation", -1)), time.perf_counter() - self._start))

    def __enter__(self) -> GcPauses:
        import gc

        gc.callbacks.append(self._callback)
        return self

    def __exit__(self, *exc: object) -> None:
        import gc

        gc.callbacks.remove(self._callback)

    def summary(self) -> dict[str, Any]:
        full = [d for g, d in self.pauses if g == 2]
        return {"passes": len(self.pauses), "full_passes": len(full),
                "max_ms": round(max((d for _g, d in self.pauses), default=0.0) * 1000, 1),
                "max_full_ms": round(max(full, default=0.0) * 1000, 1)}


def control(url: str, path: str, method: str = "GET") -> Any:
    req = urllib.request.Request(url + path, data=b"" if method == "POST" else None, method=method)
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def run_burst(url: str, log: WatchLog, rate: float, seconds: float, *, drain_timeout: float = 60.0,
              sleep: Any = time.sleep) -> dict[str, Any]:
    """Start a burst on the server and wait until every change reached `log` (or the drain timeout)."""
    status = control(url, f"/burst?rate={rate}&seconds={seconds}", "POST")
    seq0 = int(status["seq0"])
    planned = int(status["planned"])
    while control(url, "/burst")["running"]:
        sleep(0.25)
    server = control(url, "/burst")
    deadline = time.time() + drain_timeout
    while len(log.since(seq0)) < planned and time.time() < deadline:
        sleep(0.05)
    return {"seq0": seq0, "planned": planned, "server": server}
