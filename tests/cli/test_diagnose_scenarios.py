"""`gputui diagnose` against the simulator: each demo scenario's root cause comes first; JSON is a contract."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.dev.pinned_checks import only_args
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import list_scenarios, load_scenario

GOLDEN = Path(__file__).parent / "golden"
SCENARIOS = [s.name for s in list_scenarios()]


@pytest.fixture(scope="module", params=SCENARIOS)
def scenario_cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[str, Path]]:
    name = request.param
    with SimCluster(name) as sim:  # timestamps as written: the clock is frozen at referenceTime below
        cfg = tmp_path_factory.mktemp(name) / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield name, cfg


def diagnose_json(cfg: Path, *args: str, capsys: pytest.CaptureFixture[str],
                  monkeypatch: pytest.MonkeyPatch, now: str) -> tuple[int, dict]:
    monkeypatch.setenv("GPUTUI_NOW", now)
    code = main(["diagnose", *args, "--kubeconfig", str(cfg), "-o", "json"])
    out = capsys.readouterr().out
    return code, json.loads(out)


def test_top_finding_is_the_scenarios_root_cause(scenario_cluster: tuple[str, Path],
                                                 capsys: pytest.CaptureFixture[str],
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    name, cfg = scenario_cluster
    sc = load_scenario(name)
    code, data = diagnose_json(cfg, capsys=capsys, monkeypatch=monkeypatch, now=sc.reference_time.isoformat())
    expect = sc.expect
    if not expect.get("topFinding"):
        worst = {f["severity"] for f in data["findings"]}
        assert not worst & {"error", "critical"}, data["findings"][:1]
        assert code in (ExitCode.OK, ExitCode.FINDINGS_WARNING)
        return
    top = data["findings"][0]
    assert (top["check"], top["subject"]) == (expect["topFinding"], expect["subject"])
    assert code == (ExitCode.FINDINGS_ERROR if top["severity"] in ("error", "critical")
                    else ExitCode.FINDINGS_WARNING)
    assert top["evidence"] and top["remediation"]["commands"]


def _normalise(data: dict) -> dict:
    data["cluster"].pop("server", None)
    return data


def test_json_output_matches_golden(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    sc = load_scenario("gpu-not-advertised")
    with SimCluster(sc) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        # The pinned check set: a new check adds no result to the golden file.
        code, data = diagnose_json(cfg, *only_args(), capsys=capsys, monkeypatch=monkeypatch,
                                   now=sc.reference_time.isoformat())
    data = _normalise(data)
    golden = GOLDEN / "diagnose-gpu-not-advertised.json"
    if os.environ.get("GPUTUI_UPDATE_GOLDEN"):
        golden.parent.mkdir(exist_ok=True)
        golden.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    assert data == json.loads(golden.read_text()), "run with GPUTUI_UPDATE_GOLDEN=1 to accept a deliberate change"
    assert data["version"] == 2
    assert {"version", "target", "cluster", "results", "findings"} <= set(data)
    r0 = data["results"][0]
    assert {"check", "code", "status", "reason", "findings"} <= set(r0)


def test_pod_target_reads_only_what_it_needs(capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    sc = load_scenario("gpu-not-advertised")
    with SimCluster(sc) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        pod = next(p for p in sim.objects("Pod") if p["status"].get("phase") == "Pending")
        target = f"pod/{pod['metadata']['namespace']}/{pod['metadata']['name']}"
        code, data = diagnose_json(cfg, target, capsys=capsys, monkeypatch=monkeypatch,
                                   now=sc.reference_time.isoformat())
        pod_lists = [path for method, path in sim.requests() if method == "GET" and path.startswith("/api/v1/pods")]
    assert data["target"] == target
    assert data["findings"][0]["check"] == "gpu-not-advertised"
    # Never a cluster-wide pod list: every pod list carries a field selector.
    assert pod_lists and all("fieldSelector" in p for p in pod_lists), pod_lists


def test_unknown_pod_is_one_line_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with SimCluster("healthy") as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        code = main(["diagnose", "pod/x", "-n", "y", "--kubeconfig", str(cfg)])
    err = capsys.readouterr().err
    assert code == ExitCode.USAGE
    assert err.strip() == 'gputui: error: pod "x" not found in namespace \'y\''
