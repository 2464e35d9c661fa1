"""Pure: an object and its events as `kubectl describe` lays them out (the `d` key, as in k9s).

kubectl describes custom resources (NodeClaim, NodePool, EC2NodeClass) with its generic describer:
Name / Namespace / Labels / Annotations, then API Version, Kind, Metadata, Spec and Status as
indented `Title Case:` keys, then the Events table. gputui uses that layout for every kind, so one
page reads the same for a Pod and a NodeClaim; cluster text is made visible (escapes shown) here.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from diagnostics.records import Event
from diagnostics.timeutil import human_age
from gputui.output.sanitize import visible

SKIP_METADATA = frozenset({"name", "namespace", "labels", "annotations", "managedFields"})
ACRONYMS = {"api": "API", "id": "ID", "uid": "UID", "url": "URL", "ip": "IP", "cpu": "CPU", "gpu": "GPU",
            "ami": "AMI", "http": "HTTP", "https": "HTTPS", "dns": "DNS", "tls": "TLS"}
"""Words kubectl's smartLabelFor keeps upper-case."""
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z])|[A-Z]?[a-z]+|[A-Z]+|\d+")


def smart_label(key: str) -> str:
    """`creationTimestamp` -> `Creation Timestamp`, `providerID` -> `Provider ID` (kubectl's smartLabelFor)."""
    words = _WORD.findall(key) or [key]
    return " ".join(ACRONYMS.get(w.lower(), w if w.isupper() else w[:1].upper() + w[1:]) for w in words)


def _scalar(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, float) and v.is_integer():
        return f"{v:g}"
    return visible(v, limit=2000)


def _block(value: Any, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(value, Mapping):
        for k, v in value.items():
            label = smart_label(str(k)) if indent else str(k)
            _field(label, v, indent, out)
    elif isinstance(value, Sequence) and not isinstance(value, str):
        for item in value:
            if isinstance(item, Mapping):
                lines: list[str] = []
                _block(item, indent + 1, lines)
                out.extend(lines)
                out.append("")  # kubectl separates list items with a blank line
            else:
                out.append(f"{pad}  {_scalar(item)}")
        if out and out[-1] == "":
            out.pop()
    else:
        out.append(f"{pad}{_scalar(value)}")


def _field(label: str, v: Any, indent: int, out: list[str]) -> None:
    pad = "  " * indent
    if isinstance(v, Mapping):
        if not v:
            return
        out.append(f"{pad}{label}:")
        _block(v, indent + 1, out)
    elif isinstance(v, Sequence) and not isinstance(v, str):
        if not v:
            return
        out.append(f"{pad}{label}:")
        _block(v, indent, out)
    else:
        out.append(f"{pad}{label}:{' ' * max(1, 2 - len(pad))}{_scalar(v)}")


def _map_lines(label: str, m: Mapping[str, Any] | None) -> list[str]:
    """`Labels:  a=b` then the rest aligned under the first, `<none>` when empty (kubectl's layout)."""
    items = sorted((m or {}).items())
    head = f"{label + ':':<13}"
    if not items:
        return [f"{head}<none>"]
    return [f"{head if i == 0 else ' ' * 13}{visible(k, limit=300)}={visible(v, limit=500)}"
            for i, (k, v) in enumerate(items)]


def event_lines(events: Iterable[Event], now: datetime) -> list[str]:
    """kubectl's Events table: Type, Reason, Age (`3m (x5 over 10m)`), From, Message."""
    evs = list(events)
    if not evs:
        return ["Events:       <none>"]
    rows = [("Type", "Reason", "Age", "From", "Message"), ("----", "------", "----", "----", "-------")]
    for e in evs:
        last = e.last_seen or e.first_seen
        age = human_age((now - last).total_seconds()) if last else "<unknown>"
        if e.count > 1 and e.first_seen is not None:
            age += f" (x{e.count} over {human_age((now - e.first_seen).total_seconds())})"
        rows.append((visible(e.type, limit=40), visible(e.reason, limit=100), age,
                     visible(e.source or "", limit=100), visible(e.message, limit=2000)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    out = ["Events:"]
    for r in rows:
        out.append("  " + "  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + "  " + r[4])
    return out


def describe(obj: Mapping[str, Any], events: Iterable[Event], now: datetime) -> str:
    """The whole page: header fields, the object's content, then its events (oldest first, as kubectl)."""
    meta = obj.get("metadata") or {}
    out = [f"{'Name:':<13}{visible(meta.get('name', ''), limit=300)}"]
    if meta.get("namespace"):
        out.append(f"{'Namespace:':<13}{visible(meta['namespace'], limit=300)}")
    out += _map_lines("Labels", meta.get("labels"))
    out += _map_lines("Annotations", meta.get("annotations"))
    out.append(f"{'API Version:':<13}{visible(obj.get('apiVersion', ''), limit=200)}")
    out.append(f"{'Kind:':<13}{visible(obj.get('kind', ''), limit=200)}")
    rest = {k: v for k, v in meta.items() if k not in SKIP_METADATA}
    _field("Metadata", rest, 0, out)
    for key, value in obj.items():
        if key in ("apiVersion", "kind", "metadata"):
            continue
        _field(smart_label(key), value, 0, out)
    out += event_lines(events, now)
    return "\n".join(out)
