"""Scheduled budget windows: remembered cron hits give the answers croniter gives, in any order."""

from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

from croniter import croniter

from diagnostics.timeutil import budget_active

UTC = timezone.utc


def _direct(schedule: str, seconds: float, now: datetime) -> bool:
    """Karpenter's Budget.IsActive (core pkg/apis/v1/nodepool.go): !schedule.Next(now - duration).After(now)."""
    return croniter(schedule, now - timedelta(seconds=seconds)).get_next(datetime) <= now


def test_a_time_right_on_a_hit_does_not_hide_that_hit_from_later_times() -> None:
    monthly = "0 0 1 * *"
    # The hit instant itself: Next(now - 8h) is now, which is not after now, so Karpenter counts it active.
    assert budget_active(monthly, "8h", datetime(2026, 12, 1, tzinfo=UTC)) is True
    assert budget_active(monthly, "8h", datetime(2026, 12, 1, 4, 44, tzinfo=UTC)) is True  # 4h44m into the window
    assert budget_active(monthly, "8h", datetime(2026, 11, 30, 23, 0, tzinfo=UTC)) is False  # November's is over


def test_answers_equal_croniters_at_random_times_in_random_order() -> None:
    rng = random.Random(7)
    schedules = ["0 9 * * mon-fri", "*/15 * * * *", "0 0 1 * *", "@daily", "30 2 * * 0", "0 0 29 2 *"]
    durations = {"30s": 30.0, "10m": 600.0, "1h": 3600.0, "8h": 28800.0}
    base = datetime(2026, 11, 1, tzinfo=UTC)
    for _ in range(3000):
        schedule, (duration, seconds) = rng.choice(schedules), rng.choice(list(durations.items()))
        now = base + timedelta(seconds=rng.randrange(0, 60 * 86400))
        if rng.random() < 0.3:  # on the quarter hour: often exactly a hit
            now = now.replace(minute=now.minute // 15 * 15, second=0)
        assert budget_active(schedule, duration, now) == _direct(schedule, seconds, now), (schedule, duration, now)


def test_what_cannot_be_evaluated_says_so() -> None:
    now = datetime(2026, 11, 1, tzinfo=UTC)
    assert budget_active("not a cron", "1h", now) is None
    assert budget_active("@daily", "forever", now) is None
    assert budget_active("", "1h", now) is None


def test_schedules_karpenters_cron_parser_rejects_fail_closed() -> None:
    # robfig/cron v3 ParseStandard (what Karpenter's IsActive uses): exactly 5 fields, day-of-week 0-6, no L/W/#,
    # ranges that go forwards; '?' is '*'. croniter accepts several of these, Karpenter does not (0 allowed).
    now = datetime(2024, 1, 7, tzinfo=UTC)
    for schedule in ("0 0 * * tue-mon", "0 0 * * 7", "0 0 * * 1-7", "0 9 L * *", "0 9 * * 5#3", "0 0 * * * *",
                     "0 0 1W * *", "0 0 0 * *", "@every 1h", "0 24 * * *", "*/0 * * * *"):
        assert budget_active(schedule, "6h", now) is None, schedule
    for schedule in ("0 9 ? * *", "0 9 * * MON-FRI", "0 0 * JAN,jul *", "@midnight", "@annually", "30 6 * * SUN"):
        assert budget_active(schedule, "6h", now) is not None, schedule
