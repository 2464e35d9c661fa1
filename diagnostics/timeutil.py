"""Go durations, cron budget windows and human ages: the time arithmetic checks share."""

from __future__ import annotations

import functools
import re
from datetime import datetime, timedelta

_GO_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)")
_UNIT = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_go_duration(text: str | None) -> float | None:
    """Seconds in a Go duration (`30m`, `1h30m`, `720h`); None for `Never`, empty or malformed.

    Karpenter's consolidateAfter/expireAfter and do-not-disrupt values are Go durations; no
    Python library parses that grammar, and it is tiny. Remembered per text: checks parse the same
    few values (a NodePool's consolidateAfter) for every node on every run.
    """
    return _parse_go_duration(text) if isinstance(text, str) else _parse_go_duration.__wrapped__(text)


@functools.lru_cache(maxsize=1024)
def _parse_go_duration(text: str | None) -> float | None:
    if not text:
        return None
    s = text.strip()
    if s in ("Never", ""):
        return None
    if s == "0":
        return 0.0
    pos = 0
    total = 0.0
    for m in _GO_DURATION.finditer(s):
        if m.start() != pos:
            return None
        total += float(m.group(1)) * _UNIT[m.group(2)]
        pos = m.end()
    return total if pos == len(s) and pos else None


def human_age(seconds: float | None) -> str:
    """kubectl-style age: 45s, 12m, 3h5m, 2d4h."""
    if seconds is None:
        return "?"
    s = int(max(seconds, 0))
    if s < 120:
        return f"{s}s"
    m = s // 60
    if m < 60:
        return f"{m}m"
    h, m = divmod(m, 60)
    if h < 24:
        return f"{h}h{m}m" if m and h < 10 else f"{h}h"
    d, h = divmod(h, 24)
    return f"{d}d{h}h" if h and d < 10 else f"{d}d"


def budget_active(schedule: str, duration: str, now: datetime) -> bool | None:
    """Is a scheduled disruption budget in force at `now` (UTC)? None if it cannot be evaluated.

    Karpenter: the budget is active for `duration` after each time the cron `schedule` hits.
    A malformed schedule fails closed in Karpenter; we return None and let the caller say so.
    """
    dur = parse_go_duration(duration)
    if not schedule or dur is None:
        return None
    last_hit = _last_hit(schedule, now)
    if last_hit is None:
        return None
    return now < last_hit + timedelta(seconds=dur)


_hits: dict[str, tuple[datetime, datetime]] = {}
"""Per schedule: two consecutive hits. Strictly between them the last hit is the first one: every frame and
diagnostics run asks for the same few schedules at nearly the same time, and croniter takes ~0.3 ms."""


def _last_hit(schedule: str, now: datetime) -> datetime | None:
    known = _hits.get(schedule)
    try:
        if known is not None and known[0] < now < known[1] and now.tzinfo == known[0].tzinfo:
            return known[0]
        from croniter import croniter  # ~25 ms to import: only clusters with scheduled budgets pay it

        last_hit = croniter(schedule, now).get_prev(datetime)
        next_hit = croniter(schedule, last_hit).get_next(datetime)  # == now when now is a hit
    except (ValueError, KeyError):
        return None
    if len(_hits) >= 256:
        _hits.clear()
    _hits[schedule] = (last_hit, next_hit)
    return last_hit  # type: ignore[no-any-return]
