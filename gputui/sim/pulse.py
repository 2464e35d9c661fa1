"""Keep a demo's recent events recent while it runs (`gputui demo`).

A scenario's events (Karpenter's InsufficientCapacityError and Nominated, FailedScheduling, ...)
are stamped once, at start-up: checks that read "the last 30 minutes" of events saw them age out and the
demo changed its story half an hour in (spot-capacity-shortage gone). On a real cluster those
events keep coming while the cause lasts, so the pulse moves each recent event's timestamps forward
by the time elapsed since start-up: its age, count and message stay what the scenario says.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from typing import Any

RECENT = timedelta(minutes=30)
"""Events last seen within this long before start-up keep recurring (the events checks' window)."""
EVERY = 60.0
"""Seconds between beats."""


def _when(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _stamp(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(frozen=True, slots=True)
class _Recurring:
    namespace: str
    name: str
    first: datetime | None
    last: datetime


class EventPulse:
    """`beat(now)` re-stamps the recent events as of `now`; `start()` beats every EVERY seconds."""

    def __init__(self, cluster: Any, start: datetime, recent: timedelta = RECENT) -> None:
        self.cluster = cluster
        self.start_time = start
        self.events: list[_Recurring] = []
        for ev in cluster.objects("Event"):
            last = _when(ev.get("lastTimestamp")) or _when(ev.get("eventTime"))
            if last is None or last < start - recent:
                continue
            meta = ev.get("metadata") or {}
            self.events.append(_Recurring(str(meta.get("namespace") or "default"), str(meta.get("name")),
                                          _when(ev.get("firstTimestamp")), last))
        self._stop = threading.Event()

    def beat(self, now: datetime) -> int:
        """Move every recurring event's timestamps by the time since start-up; returns how many."""
        shift = now - self.start_time
        if shift <= timedelta(0):
            return 0
        done = 0
        for e in self.events:
            patch: dict[str, Any] = {"lastTimestamp": _stamp(e.last + shift)}
            if e.first is not None:
                patch["firstTimestamp"] = _stamp(e.first + shift)
            try:
                self.cluster.patch("Event", e.name, patch, e.namespace)
            except Exception:  # noqa: BLE001 - an event deleted meanwhile is simply not renewed
                continue
            done += 1
        return done

    def start(self, clock: Any, every: float = EVERY) -> EventPulse:
        def loop() -> None:
            while not self._stop.wait(every):
                self.beat(clock())

        if self.events:
            threading.Thread(target=loop, name="demo-event-pulse", daemon=True).start()
        return self

    def stop(self) -> None:
        self._stop.set()
