"""Container logs the simulator serves: stored text lines with timestamps, and live followers."""

from __future__ import annotations

import asyncio
import re
from collections import deque
from dataclasses import dataclass
from datetime import datetime, timezone

LogKey = tuple[str, str, "str | None"]  # (namespace, pod, container or None for "any container")

_JSON_TIME = re.compile(r'"(?:time|ts|timestamp)"\s*:\s*"([^"]+)"')
_LEADING_TIME = re.compile(r"^\s*(\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:?\d{2})?)")


def parse_time(text: str) -> datetime | None:
    """Parse an RFC3339 timestamp (nanoseconds truncated to microseconds); None if it is not one."""
    m = re.match(r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:?\d{2})?$", text.strip())
    if not m:
        return None
    frac = (m.group(3) or "")[:7]
    tz = m.group(4) or "Z"
    tz = "+00:00" if tz == "Z" else tz
    try:
        dt = datetime.fromisoformat(f"{m.group(1)}T{m.group(2)}{frac}{tz}")
    except ValueError:
        return None
    return dt.astimezone(timezone.utc)


def line_time(line: str) -> datetime | None:
    """The time a log line says it was written (JSON `time`/`ts` field or a leading timestamp)."""
    m = _JSON_TIME.search(line) or _LEADING_TIME.match(line)
    return parse_time(m.group(1)) if m else None


def format_rfc3339_nano(ts: datetime) -> str:
    """The kubelet's `timestamps=true` prefix format."""
    return ts.astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%f") + "000Z"


@dataclass(frozen=True)
class LogLine:
    ts: datetime
    text: str  # includes the trailing newline when the source had one


def split_lines(text: str, default_ts: datetime) -> list[LogLine]:
    out = []
    ts = default_ts
    for raw in text.splitlines(keepends=True):
        ts = line_time(raw) or ts
        out.append(LogLine(ts, raw))
    return out


class Follower:
    """A `follow=true` reader: new lines arrive in `buf`; `ended` once the container stops."""

    def __init__(self, key: LogKey):
        self.key = key
        self.buf: deque[LogLine] = deque()
        self.wakeup = asyncio.Event()
        self.ended = False

    def push(self, lines: list[LogLine]) -> None:
        self.buf.extend(lines)
        self.wakeup.set()

    def end(self) -> None:
        self.ended = True
        self.wakeup.set()


class LogBook:
    """Per-container log text; a `None` container entry serves any container of the pod."""

    def __init__(self) -> None:
        self._logs: dict[LogKey, list[LogLine]] = {}
        self._followers: dict[tuple[str, str], set[Follower]] = {}

    def set(self, namespace: str, pod: str, text: str, container: str | None = None,
            default_ts: datetime | None = None) -> None:
        """Replace a container's log (what a scenario or a debug pod's run produced)."""
        ts = default_ts or datetime.now(timezone.utc)
        self._logs[(namespace, pod, container)] = split_lines(text, ts)

    def append(self, namespace: str, pod: str, text: str, container: str | None = None,
               ts: datetime | None = None) -> None:
        """Add lines and hand them to followers of that container."""
        lines = split_lines(text, ts or datetime.now(timezone.utc))
        self._logs.setdefault((namespace, pod, container), []).extend(lines)
        for f in self._followers.get((namespace, pod), ()):
            fc = f.key[2]
            if fc == container or (container is None and (namespace, pod, fc) not in self._logs):
                f.push(lines)

    def has(self, namespace: str, pod: str, container: str | None) -> bool:
        return (namespace, pod, container) in self._logs or (namespace, pod, None) in self._logs

    def lines(self, namespace: str, pod: str, container: str | None, *, exact: bool = False) -> list[LogLine]:
        """A container's lines; unless `exact`, falls back to the pod-wide (container None) log."""
        found = self._logs.get((namespace, pod, container))
        if found is None and not exact:
            found = self._logs.get((namespace, pod, None))
        return list(found or [])

    def follow(self, namespace: str, pod: str, container: str | None) -> Follower:
        f = Follower((namespace, pod, container))
        self._followers.setdefault((namespace, pod), set()).add(f)
        return f

    def unfollow(self, f: Follower) -> None:
        self._followers.get(f.key[:2], set()).discard(f)

    def end(self, namespace: str, pod: str) -> None:
        """The pod's containers stopped: finish every follow stream."""
        for f in self._followers.pop((namespace, pod), set()):
            f.end()

    def forget(self, namespace: str, pod: str) -> None:
        self.end(namespace, pod)
        for key in [k for k in self._logs if k[0] == namespace and k[1] == pod]:
            del self._logs[key]

    def close_all(self) -> None:
        for key in list(self._followers):
            self.end(*key)
