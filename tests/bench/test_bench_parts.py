"""The benchmark's pure parts: the fleet generator, percentiles and lag trends, frame matching."""

from __future__ import annotations

from datetime import datetime, timezone
from types import SimpleNamespace

import orjson
import pytest

from gputui.dev.bench.fleet import Fleet, expected_counts
from gputui.dev.bench.runner import parse_importtime
from gputui.dev.bench.stats import growing, percentile, quarters
from gputui.dev.bench.tui_probe import event_to_screen


NOW = datetime(2026, 8, 21, 10, 0, tzinfo=timezone.utc)


def test_fleet_is_seeded_counted_and_realistically_sized() -> None:
    a = Fleet("S", seed=7, now=NOW).all_objects()
    b = Fleet("S", seed=7, now=NOW).all_objects()
    assert orjson.dumps(a) == orjson.dumps(b)  # a seed and a clock name one fleet, byte for byte
    fleet = Fleet("S", seed=7, now=NOW)
    objs = fleet.all_objects()
    assert fleet.index.counts == expected_counts("S")
    pods = [o for o in objs if o["kind"] == "Pod"]
    mean = sum(len(orjson.dumps(p)) for p in pods) / len(pods)
    assert 4_000 < mean < 9_000  # list cost scales with bytes: pods carry managedFields, env, volumes
    assert all(p["metadata"]["managedFields"] for p in pods)
    pending = [p for p in pods if p["status"]["phase"] == "Pending"]
    assert len(pending) == 20 and all(p["spec"].get("nodeName") is None for p in pending)
    nodes = [o for o in objs if o["kind"] == "Node"]
    assert sum(1 for n in nodes if n["status"]["capacity"].get("nvidia.com/gpu") == "8") >= 38
    assert all(n["status"]["images"] for n in nodes)


def test_percentile_is_nearest_rank() -> None:
    assert percentile([5.0], 99) == 5.0
    assert percentile(list(map(float, range(1, 101))), 99) == 99.0
    assert percentile([], 50) is None


def test_a_ramp_is_growing_lag_but_a_single_stall_is_not() -> None:
    ramp = quarters([(t, 0.01 + t * 0.1) for t in range(20)])
    assert growing(ramp)
    assert not growing([1.0, 7.5, 0.8, 96.0])  # one late stall, then caught up
    assert not growing([2.0, 2.1, 1.9, 2.2])


def test_a_change_shows_in_the_first_frame_cut_after_it() -> None:
    ev = [SimpleNamespace(version=v, emitted=0.0, applied=0.01) for v in (3, 5, 9)]
    frames = [{"version": 4, "painted": 1.0, "build_start": 0.5, "build_end": 0.7, "diag_version": None},
              {"version": 8, "painted": 2.0, "build_start": 1.5, "build_end": 1.7, "diag_version": 6}]
    parts, missing = event_to_screen(ev, frames, t_end=5.0)
    # The third change (version 9) was never painted: it counts as at least 5 s, not as missing data.
    assert parts["total"] == [1.0, 2.0, 5.0] and missing == 1
    assert parts["build"] == pytest.approx([0.2, 0.2]) and parts["cache"] == [0.01, 0.01]
    # Findings: only the second frame carries a diagnosis, of a snapshot with the first two changes.
    findings, missing = event_to_screen(ev, frames, t_end=5.0, version="diag_version")
    assert findings["total"] == [2.0, 2.0, 5.0] and missing == 1


def test_importtime_output_is_parsed_with_nesting() -> None:
    err = ("import time: self [us] | cumulative | imported package\n"
           "import time:        10 |         10 |     orjson\n"
           "import time:       100 |        300 |   gputui.kube.api\n"
           "import time:        50 |        400 | gputui.collect.one_shot\n")
    mods = parse_importtime(err)
    assert mods["gputui.collect.one_shot"] == (400, 0) and mods["gputui.kube.api"] == (300, 1)


def test_a_reset_puts_back_what_bursts_finished_so_every_run_sees_one_cluster() -> None:
    import time
    from pathlib import Path

    from gputui.dev.bench.serve import Burst
    from gputui.sim.cluster import SimCluster

    data = Path(__file__).resolve().parents[1] / "sim" / "data" / "small.yaml"
    with SimCluster(data) as sim:
        running = [(p["metadata"]["namespace"], p["metadata"]["name"]) for p in sim.objects("Pod")
                   if p.get("status", {}).get("phase") == "Running" and p["spec"].get("nodeName")]
        assert len(running) >= 2
        burst = Burst(sim, [(ns, n, True) for ns, n in running])

        def phases() -> list[str]:
            return [sim.get("Pod", n, ns)["status"]["phase"] for ns, n in running]  # type: ignore[index]

        burst.start(rate=1000, seconds=(len(running) + 1) / 1000)  # each pod once, the first twice
        deadline = time.monotonic() + 10
        while burst.status()["running"] and time.monotonic() < deadline:
            time.sleep(0.01)
        assert phases().count("Succeeded") == len(running) - 1
        assert burst.reset() == {"restored": len(running) - 1}
        assert phases() == ["Running"] * len(running)
        assert burst.reset() == {"restored": 0}


def test_a_verdict_needs_five_pairs_and_says_noise_when_its_spread_crosses_the_target() -> None:
    from gputui.dev.bench.stats import paired_ratios, verdict
    from gputui.dev.bench.stats import spread as spread_of

    # Two identical bench runs gave 1.14x then 1.54x against a 1.3x target: that is noise, not a verdict.
    assert verdict([1.14, 1.54], 1.3)["verdict"] == "undecided (2 runs, need 5)"
    noisy = verdict([1.1, 1.2, 1.35, 1.4, 1.5], 1.3)
    assert noisy["verdict"] == "undecided (noise)" and noisy["spread"] == [1.1, 1.5] and noisy["median"] == 1.35
    assert verdict([1.0, 1.1, 1.15, 1.2, 1.25], 1.3)["verdict"] == "met"
    assert verdict([1.4, 1.5, 1.6, 1.7, 1.35], 1.3)["verdict"] == "missed"
    # One slow pair makes a verdict undecided, never flips it: the spread is the median's 90 % interval.
    assert verdict([1.0, 1.1, 1.15, 1.2, 2.5], 1.3)["verdict"] == "undecided (noise)"
    assert spread_of(list(range(1, 11))) == (2, 9)  # 10 pairs: the 2nd to the 9th (98 %; 3rd-8th is 89 %)
    # Ratios are taken per pair, never as a ratio of medians; a failed side drops its pair.
    assert paired_ratios([2.0, 1.0, None, 3.0], [1.0, 2.0, 1.0, 0.0]) == [2.0, 0.5]


def test_the_first_useful_screen_waits_for_findings_about_every_gpu_node_and_pending_pod() -> None:
    from gputui.dev.bench.tui_probe import first_useful

    frames = [{"version": 3, "gpu_nodes": 40, "pending_pods": 0, "diag_version": None, "painted": 1.0},
              {"version": 5, "gpu_nodes": 40, "pending_pods": 20, "diag_version": 3, "painted": 2.0},
              {"version": 6, "gpu_nodes": 40, "pending_pods": 20, "diag_version": 5, "painted": 3.0}]
    # The second frame shows the pods but findings from before they arrived.
    assert first_useful(frames, 40, 20) is frames[2]
    assert first_useful(frames, 41, 20) is None


def test_peak_rss_of_a_child_is_its_own_not_the_benchmarks(tmp_path: pytest.TempPathFactory) -> None:
    import sys

    from gputui.dev.bench.procs import run_timed

    ballast = bytearray(300 * 1024 * 1024)
    ballast[::4096] = b"\x01" * len(ballast[::4096])  # resident, not just reserved
    small = run_timed([sys.executable, "-c", "pass"], timeout=60)
    big = run_timed([sys.executable, "-c", "b = bytearray(120 * 1024 * 1024); b[::4096] = b'1' * len(b[::4096])"],
                    timeout=60)
    del ballast
    assert small.returncode == 0 and small.maxrss_mb < 60, small.maxrss_mb
    assert 120 < big.maxrss_mb < 250, big.maxrss_mb
    assert run_timed([sys.executable, "-c", "raise SystemExit(3)"], timeout=60).returncode == 3


def test_selector_requirements_split_outside_value_lists() -> None:
    from gputui.collect.pod import requirements

    term = requirements("karpenter.sh/nodepool in (a,b),nvidia.com/gpu.present in (true),!spot")
    assert term == {"karpenter.sh/nodepool in (a,b)", "nvidia.com/gpu.present in (true)", "!spot"}
    assert requirements("karpenter.sh/nodepool in (a,b)") <= term  # the pool's list holds the term's nodes
