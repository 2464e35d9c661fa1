"""Findings and results: what a check says, with the evidence it read and the fix."""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from diagnostics.wording import counted


EVIDENCE_TEXT_LIMIT = 300


def clip(value: Any, limit: int = EVIDENCE_TEXT_LIMIT) -> Any:
    """Long strings (controllers can write 10k-character messages) cut to what a screen can show."""
    if isinstance(value, str) and len(value) > limit:
        return value[: limit - 1] + "…"
    return value


class Severity(enum.IntEnum):
    """Ordered so that `max()` gives the worst; the CLI maps the worst to an exit code."""

    OK = 0
    INFO = 1
    WARNING = 2
    ERROR = 3
    CRITICAL = 4

    @property
    def label(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        return cls[text.upper()]


@dataclass(frozen=True, slots=True, order=True)
class ObjectRef:
    """Points at a Kubernetes object (or an AWS/GPU subject) the way kubectl names it."""

    kind: str
    name: str
    namespace: str | None = None

    def __str__(self) -> str:
        # kubectl-style: pod/ml/trainer-0, node/ip-10-0-1-2
        prefix = self.kind.lower()
        if self.namespace:
            return f"{prefix}/{self.namespace}/{self.name}"
        return f"{prefix}/{self.name}"

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind, "name": self.name}
        if self.namespace:
            out["namespace"] = self.namespace
        return out


class EvidenceKind(str, enum.Enum):
    FIELD = "field"
    CONDITION = "condition"
    EVENT = "event"
    AWS = "aws"
    METRIC = "metric"
    LOG = "log"
    NVIDIA_SMI = "nvidia-smi"
    ABSENCE = "absence"


@dataclass(frozen=True, slots=True)
class Evidence:
    """One thing a check read, precise enough for a reader to verify it with kubectl/aws/PromQL."""

    kind: EvidenceKind
    subject: ObjectRef | None
    path: str
    """Field path (`status.allocatable`), condition type, event reason, PromQL query or AWS call."""
    value: Any
    """What was seen there (a string, number or small JSON-able structure)."""
    note: str = ""
    sensitive: bool = False
    """True for values that identify a cluster or user; the bundle writer redacts them."""
    count: int | None = None
    age_seconds: float | None = None

    # Constructors keep call sites short and the kinds consistent.
    @classmethod
    def field(cls, subject: ObjectRef | None, path: str, value: Any, note: str = "",
              sensitive: bool = False) -> Evidence:
        return cls(EvidenceKind.FIELD, subject, path, value, note, sensitive)

    @classmethod
    def condition(cls, subject: ObjectRef | None, cond: Mapping[str, Any], age_seconds: float | None = None,
                  note: str = "") -> Evidence:
        value = {k: clip(cond.get(k)) for k in ("status", "reason", "message") if cond.get(k) not in (None, "")}
        return cls(EvidenceKind.CONDITION, subject, f"status.conditions[{cond.get('type')}]", value, note,
                   age_seconds=age_seconds)

    @classmethod
    def event(cls, subject: ObjectRef | None, reason: str, message: str, count: int | None = None,
              age_seconds: float | None = None, note: str = "", type_: str = "") -> Evidence:
        path = f"event {type_}/{reason}" if type_ else f"event {reason}"
        return cls(EvidenceKind.EVENT, subject, path, message, note, count=count, age_seconds=age_seconds)

    @classmethod
    def absence(cls, subject: ObjectRef | None, what: str, note: str = "") -> Evidence:
        return cls(EvidenceKind.ABSENCE, subject, what, None, note)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"kind": self.kind.value, "path": self.path, "value": self.value}
        if self.subject is not None:
            out["subject"] = str(self.subject)
        if self.note:
            out["note"] = self.note
        if self.sensitive:
            out["sensitive"] = True
        if self.count is not None:
            out["count"] = self.count
        if self.age_seconds is not None:
            out["age_seconds"] = round(self.age_seconds)
        return out


@dataclass(frozen=True, slots=True)
class Remediation:
    """The fix: a sentence a tired human can act on, and the commands to run."""

    text: str
    commands: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {"text": self.text, "commands": list(self.commands)}


@dataclass(frozen=True, slots=True)
class Impact:
    """A finding's blast radius: the GPUs it keeps from work and the pending pods it blocks."""

    gpus: float = 0.0
    """GPUs stalled (wanted by the pods it blocks, or on a node that cannot serve) or idle."""
    pods: int = 0
    """Pending GPU pods it explains."""
    gpus_what: str = "stalled"
    """`stalled` or `idle`."""

    def text(self) -> str:
        """`8 GPUs stalled, 1 pod blocked`; '' when there is nothing to count."""
        parts = []
        if self.gpus:
            parts.append(f"{counted(self.gpus, 'GPU')} {self.gpus_what}")
        if self.pods:
            parts.append(f"{counted(self.pods, 'pod')} blocked")
        return ", ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"gpus": self.gpus, "gpus_what": self.gpus_what, "pods": self.pods}


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem on one subject. `severity=None` means the check's default severity."""

    subject: ObjectRef
    title: str
    evidence: tuple[Evidence, ...] = ()
    remediation: Remediation | None = None
    severity: Severity | None = None
    related: tuple[ObjectRef, ...] = ()
    """Other objects affected (e.g. the pending pods that depend on a broken EC2NodeClass)."""
    check: str = ""
    """Filled by the engine: slug of the check that produced it."""
    code: str = ""
    explains: tuple[ObjectRef, ...] = ()
    """Filled by the engine (`relations.attribute`): the pending GPU pods this finding explains."""
    impact: Impact | None = None
    """Filled by the engine: its blast radius (orders findings within a severity)."""

    def to_json(self) -> dict[str, Any]:
        out = {
            "check": self.check,
            "code": self.code,
            "severity": (self.severity or Severity.OK).label,
            "subject": str(self.subject),
            "title": self.title,
            "evidence": [e.to_json() for e in self.evidence],
            "remediation": self.remediation.to_json() if self.remediation else None,
            "related": [str(r) for r in self.related],
            "explains": [str(r) for r in self.explains],
        }
        if self.impact is not None:
            out["impact"] = self.impact.to_json()
        return out


class CheckStatus(str, enum.Enum):
    PASSED = "passed"
    FAILED = "failed"
    SKIPPED = "skipped"
    ERRORED = "errored"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One line of the checklist: what ran, on how many subjects, and what it found or why not."""

    check: str
    code: str
    title: str
    status: CheckStatus
    findings: tuple[Finding, ...] = ()
    reason: str = ""
    """Why it was skipped or errored."""
    examined: int = 0
    """How many subjects the check looked at (so 'passed' is not silent about scope)."""
    elsewhere: int = 0
    """Findings about other objects than a diagnosis's target (`relations.focus` keeps them out of view,
    never turns them into a pass)."""
    blind: bool = False
    """Skipped because it was kept from looking (a source forbidden, unreachable or not loaded yet, a query
    that failed), not because something is absent (a CRD not installed, a metric nobody exports). Set by
    the engine from the source states and the skip, so no verdict depends on the wording of a reason."""

    @property
    def worst(self) -> Severity:
        return max((f.severity or Severity.OK for f in self.findings), default=Severity.OK)

    def to_json(self) -> dict[str, Any]:
        return {
            "check": self.check,
            "code": self.code,
            "title": self.title,
            "status": self.status.value,
            "reason": self.reason,
            "examined": self.examined,
            "findings": [f.to_json() for f in self.findings],
            "elsewhere": self.elsewhere,
        }


class CheckSkipped(Exception):
    """Raised by a check that finds, mid-way, that it cannot judge (e.g. its metric is not exported).

    The engine turns it - or any exception with a truthy `skips_check` attribute - into a *skipped*
    result whose reason is the exception's text, kept from looking (`CheckResult.blind`) when the
    exception's `blind` is true.
    """

    skips_check = True
    blind = False

    def __init__(self, reason: str = "", *, blind: bool | None = None) -> None:
        super().__init__(reason)
        if blind is not None:
            self.blind = blind


REPORT_SCHEMA_VERSION = 2
"""2 added `explains`/`impact` per finding, `elsewhere` per result, `verdict` and `root_causes`."""


@dataclass(frozen=True, slots=True)
class Report:
    results: tuple[CheckResult, ...]
    taken_at: datetime
    target: str = "cluster"
    cluster: Mapping[str, Any] = field(default_factory=dict)
    sources: Mapping[str, Any] = field(default_factory=dict)
    """Source statuses as plain data (see `SourceStatus.to_json`)."""
    verdict: Any = None
    """`diagnostics.verdict.Verdict` for a focused report (set by `relations.focus`); None for a whole run."""

    @property
    def findings(self) -> list[Finding]:
        """All findings, worst first; within a severity the biggest blast radius first; then the checklist's order."""
        found = [f for r in self.results for f in r.findings]
        return sorted(found, key=lambda f: (-(f.severity or Severity.OK), *_radius(f)))

    @property
    def worst(self) -> Severity:
        return max((r.worst for r in self.results), default=Severity.OK)

    @property
    def elsewhere(self) -> int:
        """Findings kept out of a focused report because they are about other objects."""
        return sum(r.elsewhere for r in self.results)

    def for_subject(self, ref: ObjectRef) -> list[Finding]:
        return [f for f in self.findings if f.subject == ref or ref in f.related]

    def to_json(self) -> dict[str, Any]:
        return {
            "version": REPORT_SCHEMA_VERSION,
            "target": self.target,
            "taken_at": self.taken_at.isoformat().replace("+00:00", "Z"),
            "cluster": dict(self.cluster),
            "sources": dict(self.sources),
            "worst": self.worst.label,
            "results": [r.to_json() for r in self.results],
        }


def _radius(f: Finding) -> tuple[float, int]:
    """Sort key part: most GPUs, then most pods first."""
    return (-f.impact.gpus, -f.impact.pods) if f.impact is not None else (0.0, 0)
