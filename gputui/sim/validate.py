"""Check objects against the official client's models, which reject what a real apiserver never sends."""

from __future__ import annotations

from typing import Any

import orjson

from gputui.sim.kinds import KINDS
from gputui.sim.scenario import Scenario


def model_error(obj: dict[str, Any]) -> str | None:
    """Why `kubernetes` 37's pydantic model refuses `obj` (e.g. a required field missing), or None."""
    from kubernetes import client  # lazy: only tests and scenario authors need it

    info = KINDS.get(str(obj.get("kind", "")))
    if info is None or not info.model:
        return None
    try:
        client.ApiClient().deserialize(orjson.dumps(obj).decode(), info.model, "application/json")
    except Exception as exc:  # noqa: BLE001 - pydantic's ValidationError and friends
        errors = getattr(exc, "errors", None)
        if callable(errors):
            title = getattr(exc, "title", "")
            return f"{title}: " + "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors()[:5])
        return str(exc).splitlines()[0]
    return None


def scenario_errors(scenario: Scenario) -> list[str]:
    """`Kind ns/name: error` for every object the official client could not deserialize."""
    out = []
    for obj in scenario.all_objects():
        err = model_error(obj)
        if err:
            md = obj["metadata"]
            where = f"{md.get('namespace')}/{md['name']}" if md.get("namespace") else md["name"]
            out.append(f"{obj['kind']} {where}: {err}")
    return out
