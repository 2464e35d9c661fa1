"""Pure parts of issue #22: what the header may claim, badges from an object's own state, sorting and
fitting columns, kubectl's describe layout. No Textual, no cluster."""

from __future__ import annotations

from datetime import timedelta

import yaml

from diagnostics import run
from diagnostics.model import ObjectRef, Severity
from diagnostics.snapshot import SourceState
from gputui.output import rows
from gputui.tui import badges, cells, honesty
from gputui.tui.cells import TableRow
from gputui.tui.describe import describe, smart_label
from gputui.tui.table_view import Sort, age_seconds, fit_widths, sort_rows
from tests.builders import NOW, snapshot
from tests.tui.test_model import CHAIN

CRASHING = """
apiVersion: v1
kind: Pod
metadata: {name: nvidia-device-plugin-x, namespace: gpu-operator, creationTimestamp: "2026-08-21T09:00:00Z"}
spec: {nodeName: n1, containers: [{name: plugin, image: nvcr.io/nvidia/k8s-device-plugin:v0.17.0}]}
status:
  phase: Running
  containerStatuses:
  - name: plugin
    ready: false
    restartCount: 14
    state: {waiting: {reason: CrashLoopBackOff, message: back-off 5m0s restarting failed container}}
"""


def test_no_all_clear_when_checks_were_kept_from_looking() -> None:
    blind = snapshot(CHAIN, sources={"pods": SourceState.FORBIDDEN, "nodes": SourceState.UNREACHABLE})
    text = honesty.findings_summary(run(blind), blind).plain
    assert "no problems found" not in text and "✓" not in text
    seen = honesty.sight(blind)
    assert seen.level == honesty.BAD and seen.mark == "● unreachable"
    assert any("API server unreachable" in r for r in seen.reasons)
    fine = snapshot(CHAIN)
    assert honesty.sight(fine).mark == "● live"


def test_a_crash_looping_pod_is_never_ok() -> None:
    snap = snapshot(CRASHING)
    pod = snap.index.pod[("gpu-operator", "nvidia-device-plugin-x")]
    assert badges.own_state(pod) == (Severity.ERROR, "CrashLoopBackOff (14 restarts)")
    assert badges.badge([], pod).plain == "✗ CrashLoopBackOff (14 restarts)"
    assert badges.badge([], None, missing=True).plain == "? not found"


def test_a_not_ready_node_without_a_finding_is_not_ok_in_the_nodes_table() -> None:
    row = rows.Row("n1", ObjectRef("Node", "n1"), ("n1", "p5.48xlarge", "H100", "8", "8", "0", "on-demand", "gpu",
                                                    "us-east-1a", "1d", "NotReady", ""))
    health = cells.node_cells(row, [])[cells.NODE_COLUMNS.index("HEALTH")]
    assert health.plain == "✗ NotReady"


def test_sort_cycles_and_widths_give_way() -> None:
    cols = ("NAME", "AGE")
    rs = [TableRow(k, None, (cells.Text(k), cells.Text(a))) for k, a in (("b", "2d"), ("a", "5m"), ("c", "3h"))]
    assert [r.key for r in sort_rows(rs, cols, Sort().next("name"))] == ["a", "b", "c"]
    assert [r.key for r in sort_rows(rs, cols, Sort().next("age"))] == ["a", "c", "b"]
    assert Sort().next("age").next("age").next("age") == Sort()
    assert age_seconds("2d5h") == 2 * 86400 + 5 * 3600
    # A long FINDING gives way so CHECK and SUBJECT fit; HEALTH never does.
    assert fit_widths(("SEVERITY", "FINDING", "CHECK", "SUBJECT"), [10, 150, 40, 30], 120) == [None, 32, None, None]
    assert fit_widths(("NAME", "HEALTH"), [30, 40], 40) == [None, None]


def test_describe_reads_like_kubectl() -> None:
    text = describe(yaml.safe_load(CRASHING), [], NOW + timedelta(minutes=5))  # the object as the API returns it
    assert text.startswith("Name:        nvidia-device-plugin-x\nNamespace:   gpu-operator\n")
    assert "Kind:        Pod" in text and "Container Statuses:" in text and "Restart Count: 14" in text
    assert text.endswith("Events:       <none>")
    assert [smart_label(k) for k in ("apiVersion", "providerID", "nodeClassRef")] == \
        ["API Version", "Provider ID", "Node Class Ref"]
