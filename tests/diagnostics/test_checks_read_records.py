"""Checks read typed record fields, never a record's raw `obj` (issue #23: one typed domain per thing).

`obj` is the projected object kept for the views (YAML, bundles); a check that digs in it re-parses
what ingest already parsed and, for a pod, rebuilds the dict on every read. What a check needs is a
field of the record (diagnostics/records.py), filled by gputui.kube.ingest.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

CHECKS = Path(__file__).resolve().parents[2] / "diagnostics" / "checks"


def _obj_reads(path: Path) -> list[int]:
    tree = ast.parse(path.read_text(), str(path))
    return [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "obj"]


@pytest.mark.parametrize("path", sorted(CHECKS.glob("*.py")), ids=lambda p: p.name)
def test_check_reads_no_raw_object(path: Path) -> None:
    assert _obj_reads(path) == [], f"{path.name} reads `.obj` at lines {_obj_reads(path)}: add a record field"


def test_the_guard_sees_an_obj_read(tmp_path: Path) -> None:
    sample = tmp_path / "sample.py"
    sample.write_text("def f(pool):\n    return (pool.obj.get('spec') or {}).get('limits')\n")
    assert _obj_reads(sample) == [2]
