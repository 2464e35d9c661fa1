"""Query-parameter parsing shared by the request handlers."""

from __future__ import annotations

from typing import Any

from gputui.sim import status as st


def flag(value: str | None) -> bool:
    """`true`/`True`/`1` (kubernetes_asyncio sends `watch=True`)."""
    return value is not None and value.lower() in ("true", "1")


def int_param(query: Any, name: str) -> int | None:
    raw = query.get(name)
    if raw in (None, ""):
        return None
    try:
        return int(raw)
    except ValueError:
        raise st.bad_request(f"invalid value for {name}: {raw!r}") from None
