"""Reliability and bad-input checks: a seeded fault soak, permission/RBAC, optional-source, CLI, debug-pod and
hostile-input matrices.

Run them all with `python -m gputui.dev.reliability`; tests/reliability runs smaller versions of each.
"""

from __future__ import annotations

__all__ = ["PARTS"]

PARTS = ("soak", "permissions", "rbac", "optional", "bad-input", "cli", "debug", "hostile")
