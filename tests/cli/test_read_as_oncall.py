"""What an on-call engineer reads in `gputui diagnose` on the demo scenarios (found by reading every line, #QA)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.sim.cluster import SimCluster
from gputui.sim.scenario import load_scenario


def _diagnose(name: str, tmp: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
              *args: str) -> str:
    monkeypatch.setenv("GPUTUI_NOW", load_scenario(name).reference_time.isoformat())
    monkeypatch.setenv("COLUMNS", "160")
    with SimCluster(name) as sim:
        cfg = tmp / "kubeconfig"
        sim.write_kubeconfig(cfg)
        main(["diagnose", *args, "--kubeconfig", str(cfg)])
    return capsys.readouterr().out


@pytest.fixture(scope="module")
def module_tmp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("oncall")


def test_selector_terms_read_as_labels_not_python(module_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    out = _diagnose("subnets-not-found", module_tmp, capsys, monkeypatch)
    line = next(ln for ln in out.splitlines() if "spec.subnetSelectorTerms =" in ln)
    assert "{tags={karpenter.sh/discovery=ml-prod, network-tier=private-gpu}}" in line
    assert "{'" not in out  # a dict's repr: quotes and colons a user cannot paste into a selector
    empty = next(ln for ln in out.splitlines() if "status.subnets =" in ln)
    assert "status.subnets = (empty)" in empty


def test_a_dra_pod_is_explained_by_the_finding_about_its_claim(module_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    # It said "is pending, cause not determined: no finding explains it", then printed GT407 about the same pod.
    pod = "pod/ml/asr-dra-7c8d9f6b5-r2m4x"
    out = _diagnose("dra-node", module_tmp, capsys, monkeypatch, pod)
    first = out.splitlines()[0]
    assert first.startswith(f"{pod} is pending - root cause: GT407 pod-resourceclaim-unallocated {pod}"), first
    assert "not determined" not in out
    whole = _diagnose("dra-node", module_tmp, capsys, monkeypatch)
    assert f"top root cause: GT407 pod-resourceclaim-unallocated {pod} (1 pod blocked)" in whole.splitlines()[0]


def test_a_node_target_names_its_own_problem_not_its_pools(module_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # incident's ip-10-0-45-177 stopped reporting (GT204); its NodePool's spot shortage (GT104) is shown beside it,
    # but the verdict named GT104 "top root cause" of the node.
    node = "node/ip-10-0-45-177.ec2.internal"
    first = _diagnose("incident", module_tmp, capsys, monkeypatch, node).splitlines()[0]
    assert first.startswith(f"{node}: 2 errors - top root cause: GT204 gpu-node-not-ready {node}"), first


def test_a_node_without_findings_of_its_own_says_so(module_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    # spot-shortage's healthy inference node: only its NodePool's practice (GT502, info) concerns it.
    node = "node/ip-10-0-12-34.ec2.internal"
    first = _diagnose("spot-shortage", module_tmp, capsys, monkeypatch, node).splitlines()[0]
    assert first == (f"{node}: 1 info - none about the node itself; top: GT502 gpu-nodepool-practices "
                     "nodepool/gpu-inference-spot"), first


def test_a_shifted_demo_quotes_the_deadline_it_shows_elsewhere(capsys: pytest.CaptureFixture[str],
                                                               tmp_path: Path) -> None:
    # gputui demo --serve shifts the scenario to now; Karpenter's TerminationGracePeriodExpiring message kept the
    # scenario's own date (2026-08-21T11:58:41Z) beside the shifted nodeclaim-termination-timestamp.
    with SimCluster("expiry-kills-training", shift_to_now=True) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        main(["diagnose", "node/ip-10-0-60-33.ec2.internal", "--kubeconfig", str(cfg)])
    out = capsys.readouterr().out
    deadline = next(ln for ln in out.splitlines() if "nodeclaim-termination-timestamp] =" in ln).split("= ")[1][:20]
    said = next(ln for ln in out.splitlines() if "All pods will be deleted by" in ln)
    assert f"All pods will be deleted by {deadline}" in said, (deadline, said)


def test_a_log_tail_shows_its_last_lines_not_its_head(module_tmp: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    # gke-plugin-crash's plugin log was one line with literal \\n, cut after 300 characters: the fatal
    # "failed to initialize nvml" at its end was the part left out.
    out = _diagnose("gke-plugin-crash", module_tmp, capsys, monkeypatch)
    lines = out.splitlines()
    at = next(i for i, ln in enumerate(lines) if "logs[nvidia-gpu-device-plugin] --previous" in ln)
    tail = [ln.strip() for ln in lines[at + 1:at + 7] if ln.strip().startswith("│")]
    assert tail and tail[-1].endswith("failed to initialize nvml: Driver/library version mismatch"), tail
    assert "\\n" not in lines[at] and "more characters" not in lines[at]


@pytest.mark.slow
def test_a_reopened_bundle_names_the_plugins_logged_cause_as_live(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    # incident's p5 ip-10-0-31-203: live, GT201 ends with the plugin log's "Failed to initialize NVML: Driver Not
    # Loaded"; the bundle carried that log, but `diagnose --bundle` did not read it and showed only the back-off.
    monkeypatch.setenv("COLUMNS", "200")
    archive = tmp_path / "x.tar.gz"
    with SimCluster("incident", shift_to_now=True) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        main(["diagnose", "node/ip-10-0-31-203.ec2.internal", "--kubeconfig", str(cfg)])
        live = capsys.readouterr().out
        assert main(["bundle", "-o", str(archive), "--kubeconfig", str(cfg)]) == 0
    capsys.readouterr()
    main(["diagnose", "--bundle", str(archive), "node/ip-10-0-31-203.ec2.internal"])
    reopened = capsys.readouterr().out
    cause = "Failed to initialize NVML: Driver Not Loaded - the NVIDIA kernel module is not loaded"
    assert cause in live.splitlines()[5]
    title = next(ln for ln in reopened.splitlines() if "advertises 0 GPUs" in ln)
    assert cause in title, title


def test_a_reopened_bundle_reads_the_dra_claim_as_live(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    # dra-node: live, GT407 shows the claim unallocated; the bundle carried no ResourceClaim, so the reopened
    # GT407 said "(status unknown) ... only `gputui diagnose` reads ResourceClaims" - to a user running diagnose.
    monkeypatch.setenv("COLUMNS", "200")
    archive = tmp_path / "x.tar.gz"
    with SimCluster("dra-node", shift_to_now=True) as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        assert main(["bundle", "-o", str(archive), "--kubeconfig", str(cfg)]) == 0
    capsys.readouterr()
    main(["diagnose", "--bundle", str(archive)])
    reopened = capsys.readouterr().out
    assert "status unknown" not in reopened and "only `gputui diagnose` reads" not in reopened
    assert "claim asr-dra-7c8d9f6b5-r2m4x-gpu-889rb (gpu: gpu.nvidia.com x1) is not allocated" in reopened
