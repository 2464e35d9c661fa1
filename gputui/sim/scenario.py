"""Scenario files: a header document plus Kubernetes objects, optionally shifted so their times are recent."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from datetime import date, datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import yaml

from gputui.sim.kinds import KINDS

HEADER_API_VERSION = "gputui.dev/v1alpha1"
TIMESTAMP = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$")
_EMBEDDED_TIMESTAMP = re.compile(r"\b\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?Z")
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # same safe semantics, libyaml speed
_UID_NAMESPACE = uuid.UUID("5b1e8f2a-6c0d-4e7a-9f3b-2d4c6a8e0b1f")


class ScenarioError(ValueError):
    """A scenario file that cannot be served (names the file and the offending document)."""


def scenarios_dir() -> Path:
    """Where the shipped scenarios live (package data)."""
    return Path(__file__).resolve().parent / "scenarios"


@dataclass
class Scenario:
    """A loaded scenario: header fields plus objects grouped by kind, in file order."""

    name: str
    description: str = ""
    reference_time: datetime | None = None
    expect: dict[str, Any] = field(default_factory=dict)
    forbidden: list[str] = field(default_factory=list)
    absent: list[str] = field(default_factory=list)
    nvidia_smi: dict[str, dict[str, Any]] = field(default_factory=dict)
    logs: dict[str, str] = field(default_factory=dict)
    objects: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    path: Path | None = None

    def all_objects(self) -> list[dict[str, Any]]:
        return [obj for objs in self.objects.values() for obj in objs]

    def count(self) -> int:
        return sum(len(v) for v in self.objects.values())

    def shifted(self, now: datetime | None = None) -> Scenario:
        """A copy whose timestamps are moved by (now - referenceTime), whole seconds, format kept."""
        if self.reference_time is None:
            return self
        now = (now or datetime.now(timezone.utc)).replace(microsecond=0)
        delta = now - self.reference_time.replace(microsecond=0)
        return replace(
            self,
            reference_time=now,
            objects={kind: [shift_timestamps(o, delta) for o in objs] for kind, objs in self.objects.items()},
            logs={k: shift_text(v, delta) for k, v in self.logs.items()},
        )


@dataclass(frozen=True)
class ScenarioSummary:
    name: str
    description: str
    path: Path


def _format_ts(dt: datetime, frac: str = "") -> str:
    return dt.strftime("%Y-%m-%dT%H:%M:%S") + frac + "Z"


def shift_one(ts: str, delta: timedelta) -> str:
    """Shift one `YYYY-MM-DDTHH:MM:SS[.frac]Z` string, keeping its fractional digits as written."""
    base, frac = ts[:19], ts[19:-1]
    moved = datetime.strptime(base, "%Y-%m-%dT%H:%M:%S") + delta
    return _format_ts(moved, frac)


def shift_timestamps(value: Any, delta: timedelta) -> Any:
    """Walk a JSON-like structure and shift every string that is exactly an RFC3339 UTC timestamp."""
    if isinstance(value, str):
        return shift_one(value, delta) if TIMESTAMP.match(value) else value
    if isinstance(value, dict):
        # A message quotes times too (Karpenter's "All pods will be deleted by <RFC3339>"): moved with the rest,
        # or the demo shows one deadline in the event and another in the NodeClaim's annotation.
        return {k: shift_text(v, delta) if k == "message" and isinstance(v, str) and not TIMESTAMP.match(v)
                else shift_timestamps(v, delta) for k, v in value.items()}
    if isinstance(value, list):
        return [shift_timestamps(v, delta) for v in value]
    return value


def shift_text(text: str, delta: timedelta) -> str:
    """Shift timestamps embedded in free text (log lines)."""
    return _EMBEDDED_TIMESTAMP.sub(lambda m: shift_one(m.group(0), delta), text)


def _plain(value: Any) -> Any:
    """Turn YAML-native dates (unquoted timestamps) back into the strings the apiserver would send."""
    if isinstance(value, datetime):
        if value.tzinfo is not None:
            value = value.astimezone(timezone.utc).replace(tzinfo=None)
        frac = f".{value.microsecond:06d}".rstrip("0") if value.microsecond else ""
        return _format_ts(value.replace(microsecond=0), frac)
    if isinstance(value, date):
        return value.isoformat()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def _parse_reference(value: Any, where: str) -> datetime | None:
    if value is None:
        return None
    text = _plain(value)
    if not isinstance(text, str) or not TIMESTAMP.match(text):
        raise ScenarioError(f"{where}: spec.referenceTime must look like 2026-08-21T10:00:00Z, got {value!r}")
    return datetime.strptime(text[:19], "%Y-%m-%dT%H:%M:%S").replace(tzinfo=timezone.utc)


def _flatten(docs: Iterable[Any]) -> Iterable[tuple[int, dict[str, Any]]]:
    for i, doc in enumerate(docs, start=2):
        if doc is None:
            continue
        if not isinstance(doc, dict):
            raise ScenarioError(f"document {i} is not a mapping")
        if doc.get("kind") == "List" or (str(doc.get("kind", "")).endswith("List") and "items" in doc):
            for item in doc.get("items") or []:
                yield i, item
        else:
            yield i, doc


def _resolve_path(path_or_name: str | Path) -> Path:
    p = Path(path_or_name)
    if isinstance(path_or_name, Path) or p.suffix in (".yaml", ".yml") or "/" in str(path_or_name):
        return p
    return scenarios_dir() / f"{path_or_name}.yaml"


def parse_scenario(text: str, *, source: str = "<string>", path: Path | None = None) -> Scenario:
    """Parse scenario YAML text (first document is the `kind: Scenario` header)."""
    try:
        docs = list(yaml.load_all(text, Loader=_LOADER))
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{source}: invalid YAML: {exc}") from None
    if not docs or not isinstance(docs[0], dict) or docs[0].get("kind") != "Scenario":
        raise ScenarioError(f"{source}: the first document must be the header (apiVersion: {HEADER_API_VERSION}, "
                            "kind: Scenario)")
    header = _plain(docs[0])
    md, spec = header.get("metadata") or {}, header.get("spec") or {}
    name = md.get("name") or (path.stem if path else "scenario")
    scenario = Scenario(
        name=name,
        description=str(md.get("description") or ""),
        reference_time=_parse_reference(spec.get("referenceTime"), source),
        expect=dict(spec.get("expect") or {}),
        forbidden=[str(x) for x in spec.get("forbidden") or []],
        absent=[str(x) for x in spec.get("absent") or []],
        nvidia_smi={str(k): dict(v or {}) for k, v in (spec.get("nvidiaSmi") or {}).items()},
        logs={str(k): str(v) for k, v in (spec.get("logs") or {}).items()},
        path=path,
    )
    for doc_no, raw in _flatten(docs[1:]):
        obj = _plain(raw)
        kind = obj.get("kind")
        info = KINDS.get(str(kind)) if kind else None
        if info is None or info.kind != kind:
            raise ScenarioError(f"{source}: document {doc_no}: unsupported kind {kind!r} "
                                f"(supported: {', '.join(k.kind for k in KINDS.kinds)})")
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict) or not meta.get("name"):
            raise ScenarioError(f"{source}: document {doc_no}: {kind} without metadata.name")
        obj.setdefault("apiVersion", info.api_version)
        if info.namespaced:
            meta.setdefault("namespace", "default")
        ns = meta.get("namespace", "")
        meta.setdefault("uid", str(uuid.uuid5(_UID_NAMESPACE, f"{name}/{kind}/{ns}/{meta['name']}")))
        if scenario.reference_time is not None:
            meta.setdefault("creationTimestamp", _format_ts(scenario.reference_time.replace(tzinfo=None)))
        scenario.objects.setdefault(info.kind, []).append(obj)
    _link_events(scenario)
    return scenario


def _link_events(scenario: Scenario) -> None:
    """Give events the uid of the object they are about (kubectl describe selects events by uid)."""
    uids = {(o["kind"], o["metadata"].get("namespace", ""), o["metadata"]["name"]): o["metadata"]["uid"]
            for o in scenario.all_objects()}
    for ev in scenario.objects.get("Event", []):
        io = ev.get("involvedObject")
        if isinstance(io, dict) and not io.get("uid"):
            info = KINDS.get(str(io.get("kind", "")))
            ns = io.get("namespace", "") if info is None or info.namespaced else ""
            uid = uids.get((io.get("kind"), ns, io.get("name")))
            if uid:
                io["uid"] = uid


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Load a scenario by file path or by the name of a shipped scenario (`incident`)."""
    path = _resolve_path(path_or_name)
    if not path.is_file():
        known = ", ".join(s.name for s in list_scenarios()) or "none"
        raise ScenarioError(f"scenario {str(path_or_name)!r} not found (shipped scenarios: {known})")
    return parse_scenario(path.read_text(encoding="utf-8"), source=str(path), path=path)


def list_scenarios(directory: Path | None = None) -> list[ScenarioSummary]:
    """The shipped scenarios (or those in `directory`), read from their header documents only."""
    out = []
    for path in sorted((directory or scenarios_dir()).glob("*.yaml")):
        try:
            with path.open(encoding="utf-8") as fh:
                header = next(iter(yaml.load_all(fh, Loader=_LOADER)), None)
        except yaml.YAMLError:
            continue
        if isinstance(header, dict) and header.get("kind") == "Scenario":
            md = header.get("metadata") or {}
            out.append(ScenarioSummary(str(md.get("name") or path.stem), str(md.get("description") or ""), path))
    return out


def implied_namespaces(objects: Iterable[dict[str, Any]], creation: str | None = None) -> list[dict[str, Any]]:
    """Namespace objects for every namespace the objects use but do not define (plus the system ones)."""
    objects = list(objects)
    defined = {o["metadata"]["name"] for o in objects if o.get("kind") == "Namespace"}
    wanted = ["default", "kube-system", "kube-public", "kube-node-lease"]
    for o in objects:
        ns = (o.get("metadata") or {}).get("namespace")
        if ns and ns not in wanted:
            wanted.append(ns)
    out = []
    for ns in wanted:
        if ns in defined:
            continue
        md: dict[str, Any] = {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}}
        if creation:
            md["creationTimestamp"] = creation
        out.append({"apiVersion": "v1", "kind": "Namespace", "metadata": md,
                    "spec": {"finalizers": ["kubernetes"]}, "status": {"phase": "Active"}})
    return out
