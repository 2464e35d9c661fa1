"""Pure: an object's health badge from its own state as well as from the findings about it.

A crash-looping device-plugin pod is often the root cause, yet no check names the pod itself as a
subject: a badge built from findings alone said "✓ ok" above "CrashLoopBackOff (14 restarts)". The
object's own state (pod phase and container states, Node Ready, NodeClaim / NodePool / EC2NodeClass
conditions) is read first; "✓ ok" needs both that state and the findings to be clean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.text import Text

from diagnostics.model import Finding, Severity
from gputui.output.sanitize import visible
from gputui.tui.cells import SEVERITY_MARK, SEVERITY_STYLE, health

BAD_WAITING = frozenset({"CrashLoopBackOff", "ImagePullBackOff", "ErrImagePull", "CreateContainerConfigError",
                         "CreateContainerError", "InvalidImageName", "RunContainerError", "ErrImageNeverPull",
                         "PostStartHookError", "ContainerCannotRun"})
"""Waiting reasons the kubelet reports for a container that cannot start (kubelet's container states)."""
CLAIM_STAGES = ("Launched", "Registered", "Initialized")


def own_state(rec: Any) -> tuple[Severity, str] | None:
    """(severity, words) for what is wrong with the object by its own status, or None when nothing is."""
    if rec is None:
        return None
    kind = getattr(rec, "kind", "")
    if kind == "Pod":
        return _pod(rec)
    if kind == "Node":
        if rec.ready is False:
            return Severity.ERROR, "NotReady"
        if rec.ready is None:
            return Severity.ERROR, "Ready Unknown"
        if rec.unschedulable:
            return Severity.WARNING, "cordoned"
        return None
    if kind == "NodeClaim":
        for stage in CLAIM_STAGES:
            c = rec.condition(stage)
            if c is not None and c.status == "False":
                return Severity.ERROR, f"{stage}=False" + (f" ({c.reason})" if c.reason else "")
        ready = rec.condition("Ready")
        if ready is not None and ready.status != "True":
            return Severity.WARNING, f"Ready={ready.status}" + (f" ({ready.reason})" if ready.reason else "")
        return (Severity.WARNING, "deleting") if rec.meta.deleting else None
    if kind in ("NodePool", "EC2NodeClass"):
        ready = rec.condition("Ready")
        if ready is not None and ready.status != "True":
            return Severity.ERROR, f"Ready={ready.status}" + (f" ({ready.reason})" if ready.reason else "")
        return None
    return None


def _pod(p: Any) -> tuple[Severity, str] | None:
    for c in p.containers:
        if c.state == "waiting" and c.reason in BAD_WAITING:
            return Severity.ERROR, f"{c.reason} ({c.restart_count} restarts)"
        if c.state == "terminated" and c.exit_code not in (None, 0) and p.phase != "Succeeded":
            return Severity.ERROR, f"{c.reason or 'Error'} (exit {c.exit_code})"
    if p.phase == "Failed":
        return Severity.ERROR, "Failed"
    if p.phase == "Pending":
        return Severity.WARNING, "Pending"
    if p.phase == "Unknown":
        return Severity.ERROR, "Unknown"
    if p.phase == "Running":
        unready = [c for c in p.containers if not c.ready]
        if unready:
            c = unready[0]
            if c.restart_count:
                return Severity.WARNING, f"not ready ({c.restart_count} restarts)"
            return Severity.WARNING, "not ready"
    return None


def badge(findings: Sequence[Finding], rec: Any = None, *, missing: bool = False) -> Text:
    """The worse of the object's own state and its findings; `missing`: not in the cache at all."""
    if missing:
        return Text("? not found", style="bold yellow")
    own = own_state(rec)
    worst = max((f.severity or Severity.OK for f in findings), default=Severity.OK)
    if own is None or (findings and worst >= own[0]):
        return health(findings)
    sev, words = own
    text = Text(f"{SEVERITY_MARK[sev]} {visible(words, limit=80)}", style=SEVERITY_STYLE[sev])
    if findings:
        text.append(f" · {findings[0].check}", style=SEVERITY_STYLE[worst] if worst >= Severity.WARNING else "dim")
    return text
