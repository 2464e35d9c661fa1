"""The bundle layout and `manifest.json`: what was collected, denied, redacted and capped, and every file's hash.

Layout (inside one top-level directory named like the file):

    manifest.json            this description; written first so a reader checks the version early
    SUMMARY.md               for the ticket: what is wrong, evidence, what to do, the checklist
    report.json              the diagnostics report as `gputui diagnose -o json` prints it
    resources/<source>.json  full objects per gputui source (nodes, pods, events, ...), a kubectl List
    resources/owners.json    the owner chain of the affected pods (ReplicaSet, Deployment, Job, ...)
    logs/<ns>/<pod>/<container>[.previous].log
    metrics.json             the Prometheus samples the checks read (when Prometheus was queried)
    aws.json                 the AWS facts the checks read (when the AWS source ran)
    nvidia-smi/<node>.json   debug pod results (`--with-nvidia-smi`), and <node>.log the raw output
"""

from __future__ import annotations

import hashlib
from typing import Any

from gputui.kube.resources import RESOURCES

FORMAT = "gputui-bundle"
FORMAT_VERSION = 1
"""Bump when a reader of the previous version would misread a bundle; add an upgrade step in read.py."""
MIN_FORMAT_VERSION = 1
"""Oldest version this gputui still opens."""

MANIFEST = "manifest.json"
SUMMARY = "SUMMARY.md"
REPORT = "report.json"
METRICS = "metrics.json"
AWS = "aws.json"
RESOURCES_DIR = "resources"
OWNERS = f"{RESOURCES_DIR}/owners.json"
LOGS_DIR = "logs"
NVIDIA_SMI_DIR = "nvidia-smi"
RESOURCE_CLAIMS = f"{RESOURCES_DIR}/resourceclaims.json"
"""The DRA ResourceClaims pending pods wait on, by namespace/name (or the reason one could not be read)."""


def resources_path(source: str) -> str:
    return f"{RESOURCES_DIR}/{source}.json"


def sha256_hex(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def server_digest(server: str) -> str:
    """How a redacted bundle names the API server: stable per cluster, useless to an attacker."""
    return "sha256:" + sha256_hex(server.encode()) if server else ""


def file_entries(files: list[tuple[str, bytes]]) -> dict[str, dict[str, Any]]:
    return {name: {"sha256": sha256_hex(data), "size": len(data)} for name, data in files}


def context_entry(name: str, server: str, version: str, redacted: bool) -> dict[str, Any]:
    """The cluster, named so a reader can tell bundles of one cluster apart without seeing its endpoint."""
    out: dict[str, Any] = {"name": name, "server_sha256": server_digest(server)}
    if not redacted:
        out["server"] = server
    if version:
        out["version"] = version
    return out


def resource_name(source: str) -> str:
    res = RESOURCES.get(source)
    return res.qualified if res is not None else ""


def source_gaps(sources: dict[str, dict[str, Any]]) -> tuple[list[dict[str, str]], list[dict[str, str]]]:
    """(denied, absent) entries for sources RBAC hid (403) or whose CRD is not installed (404)."""
    denied, absent = [], []
    for name, st in sorted(sources.items()):
        detail = str(st.get("detail") or "")
        if st.get("state") == "forbidden":
            verb, _, resource = detail.partition(" ")
            denied.append({"verb": verb if resource else "list", "resource": resource or detail,
                           "what": f"source {name}"})
        elif st.get("state") == "not installed":
            # The resource's own name, not one parsed out of the status text (which explains, and changes).
            absent.append({"resource": resource_name(name) or detail.removeprefix("CRD ").split(" ", 1)[0],
                           "what": f"source {name}"})
    return denied, absent
