"""Pure diagnostics: a Snapshot in, a Report of checks and findings out. No I/O, no gputui imports."""

from diagnostics.engine import run
from diagnostics.model import (
    CheckResult,
    CheckSkipped,
    CheckStatus,
    Evidence,
    EvidenceKind,
    Finding,
    ObjectRef,
    Remediation,
    Report,
    Severity,
)
from diagnostics.registry import CheckSpec, all_checks, check, find
from diagnostics.snapshot import Snapshot, SourceState, SourceStatus

__all__ = [
    "CheckResult",
    "CheckSkipped",
    "CheckSpec",
    "CheckStatus",
    "Evidence",
    "EvidenceKind",
    "Finding",
    "ObjectRef",
    "Remediation",
    "Report",
    "Severity",
    "Snapshot",
    "SourceState",
    "SourceStatus",
    "all_checks",
    "check",
    "find",
    "run",
]
