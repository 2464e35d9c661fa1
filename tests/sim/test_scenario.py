"""Scenario loading, validation and time shifting."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

import pytest

import orjson

from gputui.sim import ScenarioError, list_scenarios, load_scenario
from gputui.sim.kinds import KINDS
from gputui.sim.scenario import parse_scenario, shift_one
from gputui.sim.tables import table_for
from gputui.sim.validate import scenario_errors

from .conftest import DATA, SMALL

HEADER = """\
apiVersion: gputui.dev/v1alpha1
kind: Scenario
metadata: {name: tiny, description: Tiny.}
spec:
  referenceTime: "2026-08-21T10:00:00Z"
"""


def test_load_groups_objects_by_kind_and_reads_header() -> None:
    sc = load_scenario(SMALL)
    assert sc.name == "small"
    assert sc.expect == {"topFinding": "gpu-not-advertised", "subject": "node/ip-10-0-12-34.ec2.internal"}
    assert [n["metadata"]["name"] for n in sc.objects["Node"]][:2] == [
        "ip-10-0-12-34.ec2.internal", "ip-10-0-40-2.ec2.internal"]
    assert {p["metadata"]["name"] for p in sc.objects["Pod"]} >= {"trainer-0", "trainer-1"}
    assert sc.nvidia_smi["ip-10-0-12-34.ec2.internal"]["exitCode"] == 9
    assert "failed launching nodeclaim" in sc.logs["kube-system/karpenter-7d9f8b6c5-abcde"]


def test_objects_get_stable_uids_and_events_point_at_them() -> None:
    a, b = load_scenario(SMALL), load_scenario(SMALL)
    pod = next(p for p in a.objects["Pod"] if p["metadata"]["name"] == "trainer-0")
    assert pod["metadata"]["uid"] == next(p for p in b.objects["Pod"]
                                          if p["metadata"]["name"] == "trainer-0")["metadata"]["uid"]
    event = a.objects["Event"][0]
    assert event["involvedObject"]["uid"] == pod["metadata"]["uid"]


def test_shift_to_now_moves_every_timestamp_and_keeps_format() -> None:
    sc = load_scenario(SMALL)
    now = datetime(2030, 1, 2, 3, 4, 5, 999, tzinfo=timezone.utc)
    shifted = sc.shifted(now)
    node = shifted.objects["Node"][0]
    # 09:00 was one hour before the reference time, so it is one hour before "now".
    assert node["metadata"]["creationTimestamp"] == "2030-01-02T02:04:05Z"
    assert node["status"]["conditions"][0]["lastHeartbeatTime"] == "2030-01-02T03:03:55Z"
    log = shifted.logs["kube-system/karpenter-7d9f8b6c5-abcde"]
    assert '"time":"2030-01-02T02:54:05.000Z"' in log  # embedded in log text, fraction kept
    assert sc.objects["Node"][0]["metadata"]["creationTimestamp"] == "2026-08-21T09:00:00Z"  # original untouched


def test_shift_one_keeps_fraction_digits() -> None:
    from datetime import timedelta

    assert shift_one("2026-08-21T23:59:59.123456789Z", timedelta(seconds=2)) == "2026-08-22T00:00:01.123456789Z"


def test_unquoted_yaml_timestamps_become_strings() -> None:
    sc = parse_scenario(HEADER + """---
apiVersion: v1
kind: Namespace
metadata: {name: ml, creationTimestamp: 2026-08-21T09:00:00Z}
""")
    assert sc.objects["Namespace"][0]["metadata"]["creationTimestamp"] == "2026-08-21T09:00:00Z"


def test_unknown_kind_is_an_error_naming_the_document() -> None:
    with pytest.raises(ScenarioError, match=r"document 2: unsupported kind 'Gadget'"):
        parse_scenario(HEADER + "---\napiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n")


def test_missing_header_is_an_error() -> None:
    with pytest.raises(ScenarioError, match="first document must be the header"):
        parse_scenario("apiVersion: v1\nkind: Node\nmetadata: {name: x}\n")


def test_unknown_scenario_name_lists_the_shipped_ones() -> None:
    with pytest.raises(ScenarioError, match="not found"):
        load_scenario("no-such-scenario-xyz")


def test_list_scenarios_reads_headers(tmp_path: Path) -> None:
    (tmp_path / "b.yaml").write_text(HEADER.replace("tiny", "bee"))
    (tmp_path / "a.yaml").write_text(HEADER)
    (tmp_path / "junk.yaml").write_text("kind: Node\n")
    assert [(s.name, s.description) for s in list_scenarios(tmp_path)] == [("tiny", "Tiny."), ("bee", "Tiny.")]
    assert "small" in [s.name for s in list_scenarios(DATA)]


@pytest.mark.slow
def test_every_shipped_scenario_loads_and_fits_the_official_models() -> None:
    """Scenario authors' safety net: kubernetes 37's pydantic models reject incomplete objects."""
    for summary in list_scenarios():
        sc = load_scenario(summary.path)
        assert sc.count() > 0 and sc.reference_time is not None, summary.name
        assert scenario_errors(sc) == [], summary.name
        for kind, objs in sc.objects.items():  # kubectl's table view renders every object
            info = KINDS.resolve(kind)
            table = table_for(info, [orjson.dumps(o) for o in objs], 1, None)
            assert len(table["rows"]) == len(objs), (summary.name, kind)
