"""A targeted diagnosis reports what the whole-cluster one reports about that object (issue #18).

For every demo scenario in gputui/sim/scenarios (enumerated, never a hand-picked list), every pending
GPU pod and every GPU node (and every NodeClaim and NodePool the whole run reports on):
`gputui diagnose pod/P` (resp. `node/N`), run for real through the CLI and its scoped reads, names the root cause the whole-cluster run links to P (resp. reports every finding
the whole run has about N), and exits the same or worse. A pending pod the whole run cannot explain is
"pending, cause not determined" (exit 4), never "No problems found".
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnostics.records import looks_like_accelerator
from gputui.cli.program import main
from gputui.errors import ExitCode
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import list_scenarios, load_scenario

pytestmark = pytest.mark.slow  # every target of every scenario against the whole-cluster report

SCENARIOS = [s.name for s in list_scenarios()]
BADNESS = {ExitCode.OK: 0, ExitCode.FINDINGS_WARNING: 1, ExitCode.FINDINGS_ERROR: 2}
"""Exit codes by how bad they are: 3 (an error) is worse than 4 (warnings, or not an all-clear)."""
ROOT_ON_A_NODE = ("gke-plugin-crash", "neuron-plugin-missing", "operator-driver-crash")
"""Scenarios whose pending pod nobody nominated: its root cause is the broken node it could run on."""
SEVERITY_EXIT = {"critical": ExitCode.FINDINGS_ERROR, "error": ExitCode.FINDINGS_ERROR,
                 "warning": ExitCode.FINDINGS_WARNING, "info": ExitCode.OK}


def _wants_accelerator(pod: dict[str, Any]) -> bool:
    for c in (pod.get("spec") or {}).get("containers") or ():
        res = c.get("resources") or {}
        if any(looks_like_accelerator(k) for k in {**(res.get("limits") or {}), **(res.get("requests") or {})}):
            return True
    return False


def pending_gpu_pods(sim: SimCluster) -> list[str]:
    return sorted(f"pod/{p['metadata']['namespace']}/{p['metadata']['name']}" for p in sim.objects("Pod")
                  if (p.get("status") or {}).get("phase") == "Pending" and not p["spec"].get("nodeName")
                  and _wants_accelerator(p))


def gpu_nodes(whole: dict[str, Any], sim: SimCluster) -> list[str]:
    """Nodes with accelerators in capacity, or that the whole run says something about."""
    out = {f"node/{n['metadata']['name']}" for n in sim.objects("Node")
           if any(looks_like_accelerator(k) for k in ((n.get("status") or {}).get("capacity") or {}))}
    out |= {f["subject"] for f in whole["findings"] if f["subject"].startswith("node/")}
    return sorted(out)


@pytest.fixture(scope="module", params=SCENARIOS)
def cluster(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[
        tuple[str, SimCluster, Path]]:
    name = request.param
    with SimCluster(name) as sim:
        cfg = tmp_path_factory.mktemp(name) / "kubeconfig"
        sim.write_kubeconfig(cfg)
        yield name, sim, cfg


def diagnose(cfg: Path, target: str | None, capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    code = main(["diagnose", *([target] if target else []), "--kubeconfig", str(cfg), "-o", "json"])
    return code, json.loads(capsys.readouterr().out)


def _key(f: dict[str, Any] | None) -> tuple[str, str] | None:
    return None if f is None else (f["check"], f["subject"])


def test_every_target_reports_what_the_whole_cluster_reports_about_it(
        cluster: tuple[str, SimCluster, Path], capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    name, sim, cfg = cluster
    monkeypatch.setenv("GPUTUI_NOW", load_scenario(name).reference_time.isoformat())
    _code, whole = diagnose(cfg, None, capsys)
    severity = {_key(f): f["severity"] for f in whole["findings"]}

    if name in ROOT_ON_A_NODE:
        assert pending_gpu_pods(sim) and all(p in whole["root_causes"] for p in pending_gpu_pods(sim))
    for pod in pending_gpu_pods(sim):
        code, data = diagnose(cfg, pod, capsys)
        linked = whole["root_causes"].get(pod)
        assert _key(data["root_causes"].get(pod)) == _key(linked), (name, pod)
        assert _key(data["summary"].get("root_cause")) == _key(linked), (name, pod)
        if linked is None:
            assert data["verdict"] == "pending, cause not determined", (name, pod)
            assert code in (ExitCode.FINDINGS_WARNING, ExitCode.FINDINGS_ERROR), (name, pod)
            assert data["summary"]["checked"], (name, pod)
        else:
            assert data["verdict"] == "explained", (name, pod)
            if name in ROOT_ON_A_NODE:
                assert linked["check"] == "gpu-not-advertised" and linked["subject"].startswith("node/"), linked
            want = SEVERITY_EXIT[severity[_key(linked)]]
            assert BADNESS[ExitCode(code)] >= BADNESS[want], (name, pod, code)

    for node in gpu_nodes(whole, sim):
        code, data = diagnose(cfg, node, capsys)
        about = {_key(f): f["severity"] for f in whole["findings"] if f["subject"] == node}
        seen = {_key(f) for f in data["findings"]}
        assert set(about) <= seen, (name, node, set(about) - seen)
        # The same finding, word for word: the node's pods, its stack pods' events, its claim and pool were read.
        titles = {_key(f): f["title"] for f in data["findings"]}
        for f in whole["findings"]:
            if f["subject"] == node:
                assert titles[_key(f)] == f["title"], (name, node)
        worst = max((BADNESS[SEVERITY_EXIT[s]] for s in about.values()), default=0)
        assert BADNESS[ExitCode(code)] >= worst, (name, node, code)
        if about:
            assert data["verdict"] != "no problems found", (name, node)

    # NodeClaims and NodePools the whole run reports on: their own diagnosis reports the same findings.
    for target in sorted({f["subject"] for f in whole["findings"]
                          if f["subject"].split("/")[0] in ("nodeclaim", "nodepool")}):
        code, data = diagnose(cfg, target, capsys)
        about = {_key(f): f["severity"] for f in whole["findings"] if f["subject"] == target}
        assert set(about) <= {_key(f) for f in data["findings"]}, (name, target)
        worst = max(BADNESS[SEVERITY_EXIT[s]] for s in about.values())
        assert BADNESS[ExitCode(code)] >= worst, (name, target, code)


def test_a_pending_pod_reads_its_verdict_first(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """The human output opens with the line a paged engineer acts on: the verdict, the root cause, its radius."""
    sc = load_scenario("gpu-not-advertised")
    monkeypatch.setenv("GPUTUI_NOW", sc.reference_time.isoformat())
    with SimCluster(sc) as sim:
        cfg = sim.write_kubeconfig(tmp_path / "kubeconfig")
        pod = pending_gpu_pods(sim)[0]
        code = main(["diagnose", pod, "--kubeconfig", str(cfg)])
    out = capsys.readouterr().out
    first = out.splitlines()[0]
    assert first.startswith(f"{pod} is pending - root cause: GT201 gpu-not-advertised node/"), first
    assert "GPU" in first and "stalled" in first
    assert "No problems found" not in out and code == ExitCode.FINDINGS_ERROR
    assert "passed:" in out and "(-v lists them)" in out  # the passed part of the checklist is one line
