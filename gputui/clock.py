"""The clock gputui measures ages with; GPUTUI_NOW freezes it (tests, screenshots, bundle replays)."""

from __future__ import annotations

import os
from datetime import datetime, timezone


def frozen() -> bool:
    """GPUTUI_NOW is set: every source should answer as of then (Prometheus is asked at that time)."""
    return bool(os.environ.get("GPUTUI_NOW"))


def now() -> datetime:
    fixed = os.environ.get("GPUTUI_NOW")
    if fixed:
        dt = datetime.fromisoformat(fixed.replace("Z", "+00:00"))
        return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)
    return datetime.now(timezone.utc)
