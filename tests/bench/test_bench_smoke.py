"""The fleet benchmark end to end at scale S: every measurement yields a number, every cache is complete.

A harness check, not a performance test: it asserts no timings (CI machines vary too much), only
that each client was measured and that what each one listed equals what the simulator holds.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from gputui.dev.bench.report import markdown, render, summarize
from gputui.dev.bench.runner import Bench, Options

pytestmark = pytest.mark.slow  # a benchmark run end to end


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    opts = Options(scale="S", repeat=1, burst_rate=200, burst_seconds=2, models_timeout=120, diag_runs=2,
                   key_rounds=1, workdir=tmp_path_factory.mktemp("bench"))
    res = Bench(opts, log=lambda _msg: None).run()
    res["summary"] = summarize(res)
    return res


def test_every_client_was_measured_without_errors(result: dict[str, Any]) -> None:
    s = result["summary"]
    assert s["errors"] == []
    cold = s["cold_start_s"]
    assert cold["gputui"] > 0 and cold["floor"] > 0 and cold["models"]["median_s"] > 0
    assert cold["ratio_vs_floor"] is not None
    if shutil.which("kubectl"):
        assert cold["kubectl"] > 0 and s["oneshot_s"]["checklist"] > 0
        assert set(s["oneshot_s"]["checklist_steps"]) == {"describe pod", "get nodeclaims -o wide", "describe node",
                                                          "get pods -n gpu-operator", "get events"}
    assert s["oneshot_s"]["gputui_diagnose"] > 0 and s["oneshot_s"]["floor"] > 0
    assert s["tui"]["first_complete_s"] > 0
    assert 0 < s["tui"]["first_useful_s"] <= s["tui"]["first_complete_s"]
    assert all(v > 0 for k, v in s["rss_mb"].items() if k not in ("kubectl",) and v is not None)


def test_every_cache_holds_exactly_what_the_server_holds(result: dict[str, Any]) -> None:
    server = result["fleet"]["server_counts"]
    assert server["pods"] == 1000 and server["nodes"] == 100 and server["events"] == 500
    gputui = result["runs"]["cold_start"]["gputui"][0]
    assert gputui["complete"] and gputui["counts"] == server
    assert result["runs"]["cold_start"]["floor"][0]["counts"] == server
    assert result["runs"]["cold_start"]["models"][0]["counts"] == server
    assert result["summary"]["counts_match"]


def test_diagnostics_ran_every_check_on_the_fleet(result: dict[str, Any]) -> None:
    d = result["summary"]["diagnostics_ms"]
    assert d["warm_median"] > 0 and d["first_run_median"] > 0
    # The fleet is built with known failures: the checks must find them, and none may crash on it.
    assert d["errored"] == {}
    by_check = result["runs"]["cold_start"]["gputui"][0]["diagnostics"]["findings_by_check"]
    assert {"nodeclass-security-groups-not-found", "nodepool-gpu-limit-reached", "gpu-not-advertised"} <= set(by_check)


def test_watch_burst_reached_the_cache_and_the_screen(result: dict[str, Any]) -> None:
    w = result["summary"]["watch"]
    assert w["all_applied"] and w["unshown"] == 0
    assert w["tui_event_to_screen_p99_ms"] is not None and w["tui_cache_lag_p99_ms"] is not None
    assert w["cache_only"] is not None and w["cache_only"]["n"] == 400
    tui = result["runs"]["tui"][0]
    assert tui["watch"]["planned"] == tui["watch"]["applied"] == 400
    assert tui["rows"]["nodes"] == 40 and tui["rows"]["pods"] == 20


def test_one_shot_path_never_imports_textual(result: dict[str, Any]) -> None:
    assert result["summary"]["oneshot_s"]["imports_textual"] is False


def test_the_floor_replays_the_one_shots_own_reads(result: dict[str, Any]) -> None:
    reads = result["runs"]["oneshot_reads"]
    pod = result["runs"]["oneshot"][0]
    # The pod's GET and its narrowed reads, never a cluster-wide pod list; each GET replayed, none failed.
    assert any("/pods/" in r for r in reads) and not any(r.split("?")[0] == "/api/v1/pods" and "fieldSelector" not in r
                                                          for r in reads)
    assert pod["floor"]["requests"] == len(reads) and pod["floor"]["items"] > 0
    # One read per object set: no node list whose nodes another node list already returned.
    from urllib.parse import parse_qs, urlsplit

    from gputui.collect.pod import requirements

    node_lists = [requirements(parse_qs(urlsplit(r).query).get("labelSelector", [""])[0])
                  for r in reads if urlsplit(r).path == "/api/v1/nodes"]
    assert node_lists and not any(a <= b for i, a in enumerate(node_lists) for j, b in enumerate(node_lists) if i != j)


def test_peak_rss_is_each_processs_own(result: dict[str, Any]) -> None:
    rss = result["summary"]["oneshot_s"]["peak_rss_mb"]
    # Forked from the benchmark, every child used to report the benchmark's own size (~170 MB for all).
    assert rss["floor"] < rss["gputui"]
    if shutil.which("kubectl"):
        assert rss["checklist"] != rss["gputui"]


def test_every_key_was_timed_from_posted_events(result: dict[str, Any]) -> None:
    keys = result["summary"]["tui"]["keys"]["by_key"]
    assert {"down", ":nodes Enter", "filter keystroke that narrows", "Esc clearing a filter"} <= set(keys)
    assert all(k["p95_ms"] > 0 for k in keys.values())


def test_rows_named_by_issue_25_print_a_value_and_a_spread(result: dict[str, Any]) -> None:
    text = render(result, result["summary"])
    for name in ("checklist", "floor", "first useful screen", "key"):
        line = next(line for line in text.splitlines() if line.startswith(f"  {name} "))
        # One run decides nothing: the value and its spread print, the verdict says why it waits.
        assert "undecided (1 run, need 5)" in line and "-" in line.split("<=")[0], line


def test_report_renders_and_serializes(result: dict[str, Any], tmp_path: Path) -> None:
    text = render(result, result["summary"])
    assert "Cold start" in text and "Verdicts" in text and "ERROR" not in text
    md = markdown(result, result["summary"])  # the README's table
    assert all(f"| `{name}` |" in md for name in ("checklist", "floor", "first useful screen", "key"))
    machine = result["machine"]
    assert machine["cores"] and machine["python"] and machine["cpu"] and machine["date"]
    (tmp_path / "out.json").write_text(json.dumps(result))
    assert json.loads((tmp_path / "out.json").read_text())["scale"] == "S"
