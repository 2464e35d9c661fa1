"""User errors and exit codes: a contract with scripts (documented in README).

Every module that rejects input raises UsageError from here, so nothing imports the CLI back.
"""

from __future__ import annotations

import enum

from diagnostics.model import Severity


class UsageError(Exception):
    """A one-line user error (exit 2)."""


class ExitCode(enum.IntEnum):
    OK = 0
    """Nothing at warning or above."""
    INTERNAL = 1
    """A bug in gputui (please report it)."""
    USAGE = 2
    """Bad target, flag, kubeconfig, context, or bundle file."""
    FINDINGS_ERROR = 3
    """At least one error or critical finding."""
    FINDINGS_WARNING = 4
    """Warnings, but nothing worse."""
    UNREACHABLE = 5
    """The cluster (API server) could not be reached."""
    DEBUG_POD_FAILED = 6
    """`gputui debug`: the debug pod could not run nvidia-smi or could not reach the GPUs."""
    INTERRUPTED = 130
    """SIGINT (Ctrl-C)."""
    TERMINATED = 143
    """SIGTERM."""


def for_severity(worst: Severity) -> ExitCode:
    if worst >= Severity.ERROR:
        return ExitCode.FINDINGS_ERROR
    if worst >= Severity.WARNING:
        return ExitCode.FINDINGS_WARNING
    return ExitCode.OK
