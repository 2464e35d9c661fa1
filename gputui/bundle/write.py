"""Export a diagnostic bundle: collect, read the full objects and logs, redact, write atomically.

`export_bundle` is what `gputui bundle` and the TUI's `e` key call: it runs the same collection as
`gputui diagnose`, so the bundle's report is the one on-call saw, and the files in it replay to the same
findings through `gputui diagnose --bundle`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import orjson

from diagnostics.model import ObjectRef, Report
from diagnostics.snapshot import Snapshot, SourceStatus
from gputui import __version__, clock
from gputui.bundle import judge
from gputui.bundle import manifest as mf
from gputui.bundle.archive import MiB, TargetExists, write_atomic
from gputui.output.files import NotARegularFile
from gputui.bundle.gather import Gathered, from_records, gather
from gputui.bundle.scope import select
from gputui.bundle.logs import LogLimits, LogsResult, gather_logs
from gputui.bundle.redact import RedactPatternError, Redactor, compile_patterns
from gputui.bundle.summary import render as render_summary
from gputui.kube.api import Api, ClusterInfo

_JSON = orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS
_HEADROOM = 256 * 1024
"""Kept free under the total cap for SUMMARY.md and manifest.json, written last."""


class BundleWriteError(Exception):
    """A one-line reason the bundle cannot be written (exists, bad directory, bad option)."""


@dataclass(frozen=True)
class BundleOptions:
    redact: bool = True
    redact_patterns: tuple[str, ...] = ()
    redact_names: bool = False
    """Node names (and their hostnames and addresses) replaced by `redacted-node-NNN` everywhere; the
    mapping is written beside the bundle (`FILE.names.json`), never into it."""
    since: timedelta = timedelta(hours=2)
    max_log_lines: int = 1000
    max_log_bytes: int = MiB
    max_log_files: int = 60
    max_total_bytes: int = 64 * MiB
    with_nvidia_smi: bool = False
    nvidia_smi_max_nodes: int = 4
    nvidia_smi_timeout: int = 120
    namespace: str | None = None
    """Where debug pods go (`-n`); else the context's namespace, else default."""
    read_only: bool = False
    force: bool = False
    prometheus: Any = None
    aws: Any = None
    now: Callable[[], datetime] = clock.now
    on_status: Callable[[str], None] | None = None


@dataclass(frozen=True)
class BundleResult:
    path: Path
    size: int
    manifest: dict[str, Any]
    report: Report
    files: tuple[str, ...] = field(default=())
    names_file: Path | None = None
    """`--redact-names`: where the pseudonym -> node name mapping was written (outside the bundle)."""

    @property
    def redactions(self) -> dict[str, int]:
        return dict((self.manifest.get("redaction") or {}).get("rules") or {})

    @property
    def caps_hit(self) -> list[dict[str, Any]]:
        return list((self.manifest.get("caps") or {}).get("hit") or [])

    @property
    def denied(self) -> list[dict[str, str]]:
        return list(self.manifest.get("denied") or [])


def default_path(now: datetime) -> Path:
    return Path(f"gputui-bundle-{now.astimezone(timezone.utc):%Y%m%dT%H%M%SZ}.tar.gz")


def check_path(path: Path, force: bool) -> Path:
    """Fail before collecting anything: the output exists, is a directory, or its directory is missing."""
    from gputui.output.files import NotARegularFile, refuse_non_regular

    if path.is_dir() and not path.is_symlink():
        raise BundleWriteError(f"{path} is a directory; give a file name such as {path / 'bundle.tar.gz'}")
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise BundleWriteError(f"directory {parent} does not exist")
    try:
        refuse_non_regular(path)
    except NotARegularFile as exc:
        raise BundleWriteError(str(exc)) from None
    if path.exists() and not force:
        raise BundleWriteError(f"{path} already exists; pass --force to overwrite it")
    return path


def export_bundle(api: Api, info: ClusterInfo, target_ref: ObjectRef | None, path: str | Path,
                  **options: Any) -> BundleResult:
    """Collect `target_ref` (None: the whole cluster) and write a bundle to `path`.

    Raises BundleWriteError (one line), collect.TargetNotFound, kubeapi.Unreachable, and
    KeyboardInterrupt untouched - in every case nothing is left at `path` or beside it.
    """
    from gputui.collect.one_shot import collect

    opts = BundleOptions(**options)
    extra = validate_options(opts)
    out = check_path(Path(path), opts.force)
    _say(opts, f"collecting {target_ref or 'the cluster'}")
    snap = collect(api, info, target_ref, now=opts.now, prometheus=opts.prometheus, aws=opts.aws)
    return _export(api, snap, target_ref, out, opts, extra, context=info.context, server=info.server,
                   context_namespace=info.namespace)


def write_bundle(path: str | Path, *, snapshot: Snapshot, api: Api | None = None, report: Report | None = None,
                 options: BundleOptions | None = None) -> BundleResult:
    """Bundle a snapshot already on screen (the TUI's `e`); full objects and logs come from `api` when given.

    `report` is the one the user is looking at (reused unless nvidia-smi adds to it). Without an API
    (a bundle opened offline, exported again) the snapshot's own records are written: pods are then
    the projected ones gputui keeps in memory, and there are no logs.
    """
    opts = options or BundleOptions()
    extra = validate_options(opts)
    out = check_path(Path(path), opts.force)
    target = _parse_target(snapshot.target)
    cluster = snapshot.cluster
    return _export(api, snapshot, target, out, opts, extra, context=str(cluster.get("context") or ""),
                   server=str(cluster.get("server") or ""), context_namespace=None, report=report)


def _parse_target(text: str) -> ObjectRef | None:
    from gputui.targets import TargetError, parse_target

    try:
        return parse_target(text).ref
    except TargetError:
        return None


def validate_options(opts: BundleOptions) -> tuple[Any, ...]:
    if opts.with_nvidia_smi and opts.read_only:
        raise BundleWriteError("--with-nvidia-smi starts a debug pod, which --read-only forbids")
    for name in ("max_log_lines", "max_log_bytes", "max_total_bytes", "max_log_files"):
        if getattr(opts, name) <= 0:
            raise BundleWriteError(f"--{name.replace('_', '-')} must be positive")
    try:
        return compile_patterns(opts.redact_patterns)
    except RedactPatternError as exc:
        raise BundleWriteError(str(exc)) from None


def _say(opts: BundleOptions, message: str) -> None:
    if opts.on_status is not None:
        opts.on_status(message)


def _dump(data: Any) -> bytes:
    return orjson.dumps(data, option=_JSON) + b"\n"


def _iso(dt: datetime) -> str:
    return dt.astimezone(timezone.utc).isoformat().replace("+00:00", "Z")


def _go_duration(td: timedelta) -> str:
    s = int(td.total_seconds())
    h, rest = divmod(s, 3600)
    m, sec = divmod(rest, 60)
    return "".join(f"{v}{u}" for v, u in ((h, "h"), (m, "m"), (sec, "s")) if v) or "0s"


def _root_name(path: Path) -> str:
    name = re.sub(r"(\.tar\.gz|\.tgz|\.gz|\.tar)$", "", path.name) or "gputui-bundle"
    return re.sub(r"[^A-Za-z0-9._-]", "_", name)


def _export(api: Api | None, snap: Snapshot, target: ObjectRef | None, path: Path, opts: BundleOptions,
            extra: tuple[Any, ...], *, context: str, server: str, context_namespace: str | None,
            report: Report | None = None) -> BundleResult:
    sel = select(snap, target)
    if api is not None:
        _say(opts, "reading the full objects")
        got = gather(api, snap, target, sel)
    else:
        got = from_records(snap, sel)
    snap = judge.rebuild(snap, got, judge.statuses(snap, got))
    smi = None
    if opts.with_nvidia_smi and api is not None:
        snap, smi = judge.with_nvidia_smi(api, snap, sel, max_nodes=opts.nvidia_smi_max_nodes,
                                          namespace=opts.namespace, context_namespace=context_namespace,
                                          timeout=opts.nvidia_smi_timeout, on_status=opts.on_status)
    if report is None or smi is not None:
        report = judge.report_for(snap, target)

    literals = {"cluster-server": server} if server else {}
    prom_url = str(getattr(snap.metrics, "url", "") or "")
    if prom_url:  # it is also in source details and error texts, not only in metrics.json's url
        literals["prometheus-url"] = prom_url
    names = _node_names(got, snap) if opts.redact and opts.redact_names else {}
    red = Redactor(enabled=opts.redact, extra=extra, literals=literals, names=names)
    files, counts = _object_files(got, red)
    files += _evidence_files(report, snap, smi, red, server)
    essential = sum(len(d) for _n, d in files)
    budget = opts.max_total_bytes - essential - _HEADROOM
    caps: list[dict[str, Any]] = []
    if budget <= 0:
        caps.append({"cap": "max-total-bytes", "limit": opts.max_total_bytes,
                     "detail": f"objects and report take {essential} bytes; they are kept in full "
                               "(the bundle must reopen), logs are left out"})
    logs = LogsResult()
    if api is not None and "pods" in got.objects:
        _say(opts, "reading logs")
        limits = LogLimits(since=opts.since, max_lines=opts.max_log_lines, max_bytes=opts.max_log_bytes,
                           max_files=opts.max_log_files)
        logs = gather_logs(api, got.objects["pods"], sel, limits, now=snap.taken_at, cluster_wide=target is None,
                           redact=red.lines, budget=max(budget, 0))
        files += [(f.path, f.text.encode()) for f in logs.files]
        caps += logs.caps

    sources = {name: _status_json(st, red) for name, st in sorted(snap.sources.items())}
    denied, absent = mf.source_gaps(sources)
    manifest: dict[str, Any] = {
        "format": mf.FORMAT,
        "format_version": mf.FORMAT_VERSION,
        "gputui_version": __version__,
        "created_at": _iso(opts.now()),
        "taken_at": _iso(snap.taken_at),
        "context": mf.context_entry(context, server, str(snap.cluster.get("version") or ""), opts.redact),
        "target": str(target) if target else "cluster",
        "options": {"since": _go_duration(opts.since), "max_log_lines": opts.max_log_lines,
                    "max_log_bytes": opts.max_log_bytes, "max_log_files": opts.max_log_files,
                    "max_total_bytes": opts.max_total_bytes, "with_nvidia_smi": opts.with_nvidia_smi,
                    "redact": opts.redact, "source": "live" if api is not None else "snapshot records"},
        "sources": sources,
        "scope": sel.scope,
        "collected": {"resources": counts, "owners": len(got.owners),
                      "logs": [{"path": f.path, **f.info} for f in logs.files],
                      "nvidia_smi": sorted(smi.results) if smi else [],
                      "metrics": any(n == mf.METRICS for n, _d in files), "aws": any(n == mf.AWS for n, _d in files)},
        "denied": red.obj(denied + got.denied + logs.denied),
        "absent": red.obj(absent + got.absent),
        "missing": red.obj(got.missing),
        "errors": red.obj(got.errors + logs.errors + (smi.errors if smi else [])),
        "skipped": {"logs": red.obj(logs.skipped), "nvidia_smi": list(smi.skipped) if smi else []},
        "redaction": {"enabled": opts.redact, "rules": {}, "custom_patterns": len(extra),
                      "node_names": "pseudonyms (mapping kept outside the bundle)" if names else "as in the cluster",
                      "policy": REDACTION_POLICY if opts.redact else "off (--no-redact)"},
        "caps": {"max_log_lines": opts.max_log_lines, "max_log_bytes": opts.max_log_bytes,
                 "max_total_bytes": opts.max_total_bytes, "hit": caps},
    }
    # Counted last: everything that could be masked has been by now (SUMMARY.md reads redacted data).
    manifest["redaction"]["rules"] = dict(sorted(red.counts.items()))
    report_data = orjson.loads(dict(files)[mf.REPORT])
    files.insert(0, (mf.SUMMARY, render_summary(report_data, manifest, filename=path.name).encode()))
    manifest["files"] = mf.file_entries(files)
    members = [(mf.MANIFEST, _dump(manifest)), *files]
    root = _root_name(path)
    _say(opts, f"writing {path}")
    try:
        size = write_atomic(path, ((f"{root}/{n}", d) for n, d in members), mtime=snap.taken_at, force=opts.force)
    except TargetExists:
        raise BundleWriteError(f"{path} already exists; pass --force to overwrite it") from None
    except NotARegularFile as exc:
        raise BundleWriteError(str(exc)) from None
    except OSError as exc:
        raise BundleWriteError(f"cannot write {path}: {exc.strerror or exc}") from None
    names_file = _write_names(path, names, force=opts.force) if names else None
    return BundleResult(path=path, size=size, manifest=manifest, report=report, files=tuple(n for n, _d in members),
                        names_file=names_file)


def _node_names(got: Gathered, snap: Snapshot) -> dict[str, str]:
    """Pseudonyms for every node the bundle can name: the nodes read, and those only referred to."""
    from gputui.bundle.redact import node_pseudonyms

    seen = [n.name for n in snap.nodes]
    for o in got.objects.get("pods", []):
        seen.append(str((o.get("spec") or {}).get("nodeName") or ""))
    for o in got.objects.get("nodeclaims", []):
        seen.append(str((o.get("status") or {}).get("nodeName") or ""))
    return node_pseudonyms(got.objects.get("nodes", []), also=seen)


def names_path(path: Path) -> Path:
    return path.with_name(path.name + ".names.json")


def _write_names(path: Path, names: dict[str, str], *, force: bool) -> Path:
    """The pseudonym -> real name mapping (for the engineer who exported the bundle, never shared with it):
    mode 0600, beside the bundle, refused over anything but a regular file."""
    import contextlib
    import os
    import tempfile

    from gputui.output.files import NotARegularFile, refuse_non_regular

    out = names_path(path)
    back: dict[str, list[str]] = {}
    for real, pseudo in names.items():
        back.setdefault(pseudo, []).append(real)
    try:
        refuse_non_regular(out)
        if out.exists() and not force:
            raise BundleWriteError(f"{out} already exists; pass --force to overwrite it (the bundle was written)")
        # mkstemp: a fresh name, created exclusively with mode 0600 (a fixed temp name followed a link planted there).
        fd, tmp = tempfile.mkstemp(prefix=f".{out.name}.", suffix=".partial", dir=out.parent)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(_dump({"bundle": path.name, "nodes": dict(sorted(back.items()))}))
            os.replace(tmp, out)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
    except NotARegularFile as exc:
        raise BundleWriteError(f"{exc} (the bundle was written)") from None
    except OSError as exc:
        raise BundleWriteError(f"cannot write {out}: {exc.strerror or exc} (the bundle was written)") from None
    return out


REDACTION_POLICY = ("Secrets never read; env values masked except GPU/runtime settings; the value after a credential "
                    "flag, credential annotations and last-applied-configuration masked; credential patterns "
                    "masked in every string and log line; the API server URL replaced by its sha256")


def _object_files(got: Gathered, red: Redactor) -> tuple[list[tuple[str, bytes]], dict[str, int]]:
    files: list[tuple[str, bytes]] = []
    counts: dict[str, int] = {}

    def as_list(objs: list[dict[str, Any]]) -> bytes:
        # Secrets are never read; the filter is a second lock on the same door.
        return _dump({"apiVersion": "v1", "kind": "List", "metadata": {},
                      "items": [red.obj(o) for o in objs if o.get("kind") != "Secret"]})

    for source in sorted(got.objects):
        counts[source] = len(got.objects[source])
        files.append((mf.resources_path(source), as_list(got.objects[source])))
    if got.owners:
        files.append((mf.OWNERS, as_list(got.owners)))
    return files, counts


def _evidence_files(report: Report, snap: Snapshot, smi: Any, red: Redactor,
                    server: str) -> list[tuple[str, bytes]]:
    """report.json, the Prometheus/AWS facts the checks read, and nvidia-smi results."""
    from gputui.output.json import report_json

    data = report_json(report)
    if red.enabled and isinstance(data.get("cluster"), dict) and data["cluster"].get("server"):
        data["cluster"]["server"] = mf.server_digest(server)  # as the manifest names it
        red.counts["cluster-server"] += 1
    files = [(mf.REPORT, _dump(red.report(data)))]
    for name, facts, rule in ((mf.METRICS, snap.metrics, "prometheus-url"), (mf.AWS, snap.aws, "aws-sensitive")):
        payload = _facts_json(facts, red, rule)
        if payload is not None:
            files.append((name, _dump(payload)))
    if snap.resource_claims:
        files.append((mf.RESOURCE_CLAIMS, _dump({"claims": red.obj(dict(snap.resource_claims))})))
    for node, result in sorted((smi.results if smi else {}).items()):
        shown = red.name(node)
        files.append((f"{mf.NVIDIA_SMI_DIR}/{shown}.json", _dump(red.obj(result.as_json()))))
        if result.log:
            files.append((f"{mf.NVIDIA_SMI_DIR}/{shown}.log", red.lines(result.log).encode()))
    return files


def _facts_json(facts: Any, red: Redactor, rule: str) -> dict[str, Any] | None:
    """`{"type": "diagnostics.x.Facts", "data": ...}`: read back with that type's from_json."""
    if facts is None or not callable(getattr(facts, "to_json", None)):
        return None
    import sys

    module = sys.modules.get(type(facts).__module__)
    sensitive = getattr(type(facts), "SENSITIVE_FIELDS", ()) or getattr(module, "SENSITIVE_FIELDS", ())
    return {"type": f"{type(facts).__module__}.{type(facts).__qualname__}",
            "data": red.obj(red.fields(facts.to_json(), sensitive, rule))}


def _status_json(st: SourceStatus, red: Redactor) -> dict[str, Any]:
    data = st.to_json()
    if "detail" in data:
        data["detail"] = red.text(data["detail"])
    return data
