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


def parse_timestamp(value: object) -> datetime | None:
    """A Kubernetes/RFC 3339 timestamp (`2026-08-21T09:20:00Z`); None for anything else, so a bad field
    in a cluster object or an nvidia-smi report reads as unknown, not as a crash."""
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


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

    Karpenter (core pkg/apis/v1/nodepool.go Budget.IsActive): active when the cron `schedule` hit in
    (now - duration, now], a hit at `now` included. A schedule its parser (robfig/cron ParseStandard)
    rejects fails closed in Karpenter; we return None and let the caller say so.
    """
    dur = parse_go_duration(duration)
    if not schedule or dur is None:
        return None
    last_hit = last_cron_hit(schedule, now)
    if last_hit is None:
        return None
    return now < last_hit + timedelta(seconds=dur)


_hits: dict[str, tuple[datetime, datetime]] = {}
"""Per schedule: two consecutive hits. From the first up to the second the last hit is the first one: every
frame and diagnostics run asks for the same few schedules at nearly the same time, and croniter takes ~0.3 ms."""

_CRON_FIELDS: tuple[tuple[int, int, dict[str, int]], ...] = ((0, 59, {}), (0, 23, {}), (1, 31, {}),
                (1, 12, {m: i + 1 for i, m in enumerate(("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep",
                                                          "oct", "nov", "dec"))}),
                (0, 6, {d: i for i, d in enumerate(("sun", "mon", "tue", "wed", "thu", "fri", "sat"))}))
_CRON_MACROS = frozenset(("@yearly", "@annually", "@monthly", "@weekly", "@daily", "@midnight", "@hourly"))


def _robfig_standard(schedule: str) -> str | None:
    """The schedule as croniter should read it, None where robfig/cron v3 ParseStandard (Karpenter's parser)
    rejects it: not exactly 5 fields, a value out of range (day-of-week 7), L/W/#, a backwards range. `?` is `*`.
    (`@every` is robfig's too, but the NodePool CRD's pattern refuses it.)"""
    spec = schedule.strip()
    if spec.startswith("@"):
        return spec if spec in _CRON_MACROS else None
    fields = spec.split()
    if len(fields) != 5:
        return None
    out = []
    for text, (low, high, names) in zip(fields, _CRON_FIELDS):
        parts = []
        for expr in (e for e in text.split(",") if e):
            span, _, step = expr.partition("/")
            if "/" in step or (step and not _cron_int(step)):
                return None
            if span in ("*", "?"):
                first, last = low, high
            else:
                ends = span.split("-")
                if len(ends) > 2:
                    return None
                nums = [names[e.lower()] if e.lower() in names else _cron_int(e) for e in ends]
                start, end = nums[0], nums[-1]
                if start is None or end is None:
                    return None
                first, last = start, end
                if step and len(ends) == 1:
                    last = high  # "N/step" means "N-max/step"
            if first < low or last > high or first > last or (step and _cron_int(step) == 0):
                return None
            parts.append(expr.replace("?", "*").replace("+", ""))
        out.append(",".join(parts))
    return " ".join(out)


def _cron_int(text: str) -> int | None:
    """strconv.Atoi's answer for a non-negative number (a sign allowed), else None."""
    body = text[1:] if text[:1] in "+-" else text
    if not body.isascii() or not body.isdigit() or text.startswith("-"):
        return None
    return int(body)


def last_cron_hit(schedule: str, now: datetime) -> datetime | None:
    """The budget schedule's latest hit at or before `now` (a hit at `now` counts, as in Karpenter), None if
    Karpenter's parser rejects the schedule."""
    known = _hits.get(schedule)
    try:
        if known is not None and known[0] <= now < known[1] and now.tzinfo == known[0].tzinfo:
            return known[0]
        spec = _robfig_standard(schedule)
        if spec is None:
            return None
        from croniter import croniter  # ~25 ms to import: only clusters with scheduled budgets pay it

        last_hit = croniter(spec, now).get_prev(datetime)
        next_hit = croniter(spec, last_hit).get_next(datetime)
        if next_hit <= now:  # now is a hit itself: get_prev went one further back
            last_hit, next_hit = next_hit, croniter(spec, next_hit).get_next(datetime)
    except (ValueError, KeyError):
        return None
    if len(_hits) >= 256:
        _hits.clear()
    _hits[schedule] = (last_hit, next_hit)
    return last_hit
