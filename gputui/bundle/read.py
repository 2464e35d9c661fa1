"""Reopen a bundle: verify it, then rebuild the Snapshot through the same ingest as live data.

`open_bundle(path).snapshot()` feeds `gputui diagnose --bundle` and the TUI's `--bundle` mode. Every
problem - unsafe member, bomb, truncation, checksum mismatch, unknown format version - is one
`BundleError` line; nothing is ever written to disk while reading.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from functools import cached_property
from pathlib import Path
from typing import Any

import orjson

from diagnostics.model import ObjectRef
from diagnostics.snapshot import KUBE_SOURCES, Snapshot, SourceState, SourceStatus
from gputui.bundle import manifest as mf
from gputui.bundle.archive import ArchiveError, ReadLimits, read_members
from gputui.output.sanitize import one_line

_KIND_SOURCE = {"Pod": "pods", "Node": "nodes", "NodeClaim": "nodeclaims", "NodePool": "nodepools",
                "EC2NodeClass": "ec2nodeclasses"}


class BundleError(Exception):
    """One line saying why a bundle cannot be opened (the CLI prints it and exits 2).

    The line names members and values from the archive, which anyone can craft: it is kept to one
    line with escapes shown and a bounded length, whatever those names hold.
    """

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message, limit=600))


def _n(name: object) -> str:
    """A member name or value from the archive as an error line shows it (see BundleError)."""
    return one_line(name, limit=120)


@dataclass
class Bundle:
    path: Path
    manifest: dict[str, Any]
    files: Mapping[str, bytes] = field(repr=False)
    """Member contents by path inside the bundle (`report.json`, `resources/nodes.json`, ...)."""

    @property
    def format_version(self) -> int:
        return int(self.manifest.get("format_version", 0))

    @property
    def taken_at(self) -> datetime:
        return _time(self.manifest.get("taken_at"), "taken_at", self.path)

    @property
    def target(self) -> str:
        return str(self.manifest.get("target") or "cluster")

    @property
    def target_ref(self) -> ObjectRef | None:
        """The object the bundle was collected for (None: the whole cluster)."""
        from gputui.targets import TargetError, parse_target

        try:
            return parse_target(self.target).ref
        except TargetError:
            return None

    @cached_property
    def report_json(self) -> dict[str, Any]:
        """The report as written at export time (`gputui diagnose -o json` format, redacted)."""
        data = self._json(mf.REPORT)
        if not isinstance(data, dict):
            raise BundleError(f"{self.path}: corrupt bundle: {mf.REPORT} is not a JSON object")
        return data

    def text(self, name: str) -> str:
        return self.files[name].decode("utf-8", "replace")

    def _json(self, name: str) -> Any:
        try:
            return orjson.loads(self.files[name])
        except KeyError:
            raise BundleError(f"{self.path}: corrupt bundle: {_n(name)} is missing") from None
        except orjson.JSONDecodeError as exc:
            raise BundleError(f"{self.path}: corrupt bundle: {_n(name)} is not valid JSON ({exc})") from None

    def objects(self, source: str) -> list[dict[str, Any]]:
        """Full objects of one source (empty when the source was not collected)."""
        name = mf.resources_path(source)
        if name not in self.files:
            return []
        data = self._json(name)
        items = data.get("items") if isinstance(data, dict) else None
        if not isinstance(items, list) or not all(isinstance(o, dict) for o in items):
            raise BundleError(f"{self.path}: corrupt bundle: {_n(name)} is not a Kubernetes List")
        return items

    def statuses(self) -> dict[str, SourceStatus]:
        out: dict[str, SourceStatus] = {}
        for name, st in (self.manifest.get("sources") or {}).items():
            if not isinstance(st, Mapping):
                continue
            try:
                state = SourceState(st.get("state"))
            except ValueError:
                state = SourceState.UNREACHABLE
            updated = st.get("updated_at")
            out[name] = SourceStatus(name, state, str(st.get("detail") or ""),
                                     _time(updated, "updated_at", self.path) if updated else None,
                                     bool(st.get("partial")))
        return out

    def snapshot(self, target: ObjectRef | None = None) -> Snapshot:
        """The Snapshot the bundle holds, at the bundle's time; `target` names what to diagnose in it."""
        from gputui.collect.one_shot import snapshot_from_objects

        statuses = self.statuses()
        objects = {s: self.objects(s) for s in KUBE_SOURCES}
        if target is not None:
            self._require(target, objects, statuses)
        ctx = self.manifest.get("context") or {}
        cluster = {"context": ctx.get("name", ""), "server": ctx.get("server") or ctx.get("server_sha256", "")}
        if ctx.get("version"):
            cluster["version"] = ctx["version"]
        try:
            snap = snapshot_from_objects(objects, taken_at=self.taken_at, statuses=statuses, cluster=cluster,
                                         target=str(target) if target else self.target)
        except (TypeError, ValueError, AttributeError, KeyError) as exc:
            raise BundleError(f"{self.path}: corrupt bundle: objects cannot be read ({type(exc).__name__})") \
                from None
        sources = dict(snap.sources)
        for name, st in statuses.items():
            if name not in KUBE_SOURCES:
                sources[name] = st
        return replace(snap, sources=sources, metrics=self._facts(mf.METRICS), aws=self._facts(mf.AWS),
                       gpu_reports=self._gpu_reports(), pod_logs=self._pod_logs(),
                       resource_claims=self._resource_claims())

    def _resource_claims(self) -> dict[str, Any]:
        if mf.RESOURCE_CLAIMS not in self.files:
            return {}
        data = self._json(mf.RESOURCE_CLAIMS)
        claims = data.get("claims") if isinstance(data, dict) else None
        if not isinstance(claims, dict):
            raise BundleError(f"{self.path}: corrupt bundle: {_n(mf.RESOURCE_CLAIMS)} holds no claims")
        return {str(k): v for k, v in claims.items() if isinstance(v, dict)}

    def _require(self, target: ObjectRef, objects: dict[str, list[dict[str, Any]]],
                 statuses: dict[str, SourceStatus]) -> None:
        source = _KIND_SOURCE.get(target.kind)
        if source is None or (source in statuses and not statuses[source].state.usable):
            return  # cannot tell; the checks will say what was not readable
        for o in objects.get(source, []):
            md = o.get("metadata") or {}
            if md.get("name") == target.name and (target.namespace is None or md.get("namespace") == target.namespace):
                return
        raise BundleError(f"{self.path}: {_n(target)} is not in this bundle (it was collected for {_n(self.target)}); "
                          "run without a target or export a new bundle")

    def _facts(self, name: str) -> Any:
        if name not in self.files:
            return None
        data = self._json(name)
        if not isinstance(data, dict):
            return None
        kind, payload = str(data.get("type") or ""), data.get("data")
        module_name, _, cls_name = kind.rpartition(".")
        if not module_name.startswith("diagnostics.") or not isinstance(payload, dict):
            return None  # only the pure fact types checks read; never import arbitrary names from a file
        import importlib

        try:
            cls = getattr(importlib.import_module(module_name), cls_name)
            return cls.from_json(payload)
        except (ImportError, AttributeError):
            return None  # written by a build with a source this one lacks: its checks skip
        except (TypeError, ValueError, KeyError) as exc:
            raise BundleError(f"{self.path}: corrupt bundle: {_n(name)} cannot be read ({type(exc).__name__})") \
                from None

    def _pod_logs(self) -> dict[str, str]:
        """The GPU DaemonSet pods' log tails the bundle holds, by `namespace/pod/container` (a crashed container's
        previous run first), as the live `diagnose` reads them: the line naming a plugin's cause is only there."""
        from gputui.collect.stack_logs import TAIL_LINES

        out: dict[str, str] = {}
        prefix = mf.LOGS_DIR + "/"
        for name in sorted(self.files, key=lambda n: not n.endswith(".previous.log")):
            parts = name[len(prefix):].split("/") if name.startswith(prefix) else []
            if len(parts) != 3 or not parts[2].endswith(".log"):
                continue
            container = parts[2].removesuffix(".log").removesuffix(".previous")
            key = f"{parts[0]}/{parts[1]}/{container}"
            lines = self.text(name).splitlines()
            if key not in out and any(ln.strip() for ln in lines):
                out[key] = "\n".join(lines[-TAIL_LINES:]) + "\n"
        return out

    def _gpu_reports(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        prefix = mf.NVIDIA_SMI_DIR + "/"
        for name in self.files:
            if name.startswith(prefix) and name.endswith(".json"):
                data = self._json(name)
                if isinstance(data, dict) and data.get("report") is not None:
                    out[str(data.get("node") or name[len(prefix):-5])] = data
        return out


def _time(value: Any, what: str, path: Path) -> datetime:
    try:
        dt = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        raise BundleError(f"{path}: corrupt bundle: manifest {what} '{_n(value)}' is not a time") from None
    return dt if dt.tzinfo else dt.replace(tzinfo=timezone.utc)


def _strip_root(members: dict[str, bytes], path: Path) -> dict[str, bytes]:
    """Members relative to the bundle's top-level directory (or the archive root when there is none)."""
    if mf.MANIFEST in members:
        return members
    roots = {n.split("/", 1)[0] for n in members}
    candidates = [r for r in roots if f"{r}/{mf.MANIFEST}" in members]
    if len(candidates) != 1:
        raise BundleError(f"{path}: not a gputui bundle (no manifest.json)")
    root = candidates[0] + "/"
    outside = sorted(n for n in members if not n.startswith(root))
    if outside:
        raise BundleError(f"{path}: corrupt bundle: {_n(outside[0])} is outside the bundle's directory {_n(root)}")
    return {n[len(root):]: d for n, d in members.items()}


_LIMITS = ReadLimits()


def open_bundle(path: str | Path, limits: ReadLimits = _LIMITS) -> Bundle:
    """Read and verify a bundle. Raises BundleError (one line) for anything unsafe, damaged or unknown."""
    p = Path(path)
    try:
        members = read_members(p, limits)
    except ArchiveError as exc:
        raise BundleError(f"{p}: {exc}") from None
    files = _strip_root(members, p)
    try:
        manifest = orjson.loads(files[mf.MANIFEST])
    except orjson.JSONDecodeError:
        raise BundleError(f"{p}: corrupt bundle: manifest.json is not valid JSON") from None
    if not isinstance(manifest, dict) or manifest.get("format") != mf.FORMAT:
        raise BundleError(f"{p}: not a gputui bundle (manifest.json has no format {mf.FORMAT!r})")
    version = manifest.get("format_version")
    if not isinstance(version, int):
        raise BundleError(f"{p}: corrupt bundle: manifest.json has no format_version")
    if version > mf.FORMAT_VERSION:
        raise BundleError(f"{p}: bundle format version {_n(version)} is newer than this gputui reads "
                          f"({mf.FORMAT_VERSION}); upgrade gputui to open it")
    if version < mf.MIN_FORMAT_VERSION:
        raise BundleError(f"{p}: bundle format version {version} is too old for this gputui "
                          f"(oldest supported: {mf.MIN_FORMAT_VERSION}); open it with an older gputui")
    manifest = _upgrade(manifest, version)
    listed = manifest.get("files")
    if not isinstance(listed, dict):
        raise BundleError(f"{p}: corrupt bundle: manifest.json lists no files")
    unlisted = sorted(set(files) - set(listed) - {mf.MANIFEST})
    if unlisted:
        raise BundleError(f"{p}: corrupt bundle: {_n(unlisted[0])} is not listed in manifest.json")
    for name, entry in listed.items():
        data = files.get(name)
        if data is None:
            raise BundleError(f"{p}: corrupt bundle: {_n(name)} is listed in manifest.json but missing")
        if not isinstance(entry, dict) or entry.get("size") != len(data) or entry.get("sha256") != mf.sha256_hex(data):
            raise BundleError(f"{p}: corrupt bundle: {_n(name)} does not match its checksum in manifest.json")
    return Bundle(p, manifest, files)


def _upgrade(manifest: dict[str, Any], version: int) -> dict[str, Any]:
    """Bring an older (still supported) manifest to the current shape; one step per version bump."""
    return manifest
