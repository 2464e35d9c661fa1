"""Writing bundles: atomic and never clobbering, size caps stated, RBAC gaps recorded, owners, nvidia-smi, the TUI."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from gputui.bundle.archive import write_atomic
from gputui.bundle.read import open_bundle
from gputui.errors import ExitCode
from gputui.sim.scenario import load_scenario
from tests.bundle.helpers import findings, manifest, members, run, served

NODE = "ip-10-0-45-211.ec2.internal"


def test_existing_file_is_kept_unless_force(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    out.write_bytes(b"precious")
    with served("subnets-not-found", tmp_path, monkeypatch) as (sim, cfg):
        code, stdout, err = run(capsys, "bundle", "--kubeconfig", str(cfg), "-o", str(out))
        assert code == ExitCode.USAGE and stdout == ""
        assert err == f"gputui: error: {out} already exists; pass --force to overwrite it\n"
        assert out.read_bytes() == b"precious"
        assert not any(m == "GET" for m, _p in sim.requests())  # refused before touching the cluster
        assert run(capsys, "bundle", "-q", "--force", "--kubeconfig", str(cfg), "-o", str(out))[0] == ExitCode.OK
    assert open_bundle(out).target == "cluster"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["b.tar.gz", "kubeconfig"]  # no temp file left


def test_default_name_in_the_working_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    with served("subnets-not-found", tmp_path, monkeypatch) as (_sim, cfg):
        monkeypatch.chdir(tmp_path)
        code, stdout, _ = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg))
    assert code == ExitCode.OK
    assert (tmp_path / "gputui-bundle-20260821T100000Z.tar.gz").is_file()
    assert oct((tmp_path / "gputui-bundle-20260821T100000Z.tar.gz").stat().st_mode & 0o777) == "0o600"
    assert stdout.startswith("wrote gputui-bundle-20260821T100000Z.tar.gz")


def test_interrupted_write_leaves_nothing(tmp_path: Path) -> None:
    def members():  # the data source fails half-way, as Ctrl-C would
        yield "b/manifest.json", b"{}"
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        write_atomic(tmp_path / "b.tar.gz", members(), mtime=datetime(2026, 8, 21, tzinfo=timezone.utc))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow
def test_ctrl_c_during_export_exits_130_and_writes_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    with served("incident", tmp_path, monkeypatch) as (sim, cfg):
        sim.set_latency(5.0, path_contains="/log")  # hold the export in its log phase
        proc = subprocess.Popen([sys.executable, "-m", "gputui", "bundle", "--kubeconfig", str(cfg),
                                 "-o", str(out_dir / "b.tar.gz")], stderr=subprocess.PIPE, text=True,
                                env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])})
        assert proc.stderr is not None
        deadline = time.monotonic() + 30
        for line in proc.stderr:
            if "reading logs" in line or time.monotonic() > deadline:
                break
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    assert proc.returncode == ExitCode.INTERRUPTED, err
    assert "interrupted" in err
    assert list(out_dir.iterdir()) == []


@pytest.mark.slow
def test_size_caps_are_stated(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                              monkeypatch: pytest.MonkeyPatch) -> None:
    small, tiny = tmp_path / "small.tar.gz", tmp_path / "tiny.tar.gz"
    with served("incident", tmp_path, monkeypatch) as (_sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(small), "--max-log-lines", "3",
                   "--max-log-size", "4Ki")[0] == ExitCode.OK
        code, stdout, _ = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(tiny), "--max-size", "100Ki")
        live = findings(capsys, "--kubeconfig", str(cfg))
    files = members(small)
    logs = {n: d for n, d in files.items() if n.startswith("logs/")}
    assert logs and all(d.count(b"\n") <= 3 and len(d) <= 4096 for d in logs.values())
    hit = manifest(small)["caps"]["hit"]
    assert any(h["cap"] == "max-log-lines" and h["file"] in logs for h in hit)
    assert manifest(small)["caps"]["max_log_lines"] == 3
    # A total cap below what the objects need: logs go, objects stay (the bundle must still reopen).
    assert not any(n.startswith("logs/") for n in members(tiny))
    assert any(h["cap"] == "max-total-bytes" for h in manifest(tiny)["caps"]["hit"])
    assert "size caps hit" in stdout
    assert findings(capsys, "--bundle", str(tiny)) == live


def test_rbac_gaps_are_recorded_and_replayed(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served("gpu-not-advertised", tmp_path, monkeypatch) as (sim, cfg):
        sim.forbid("nodeclaims.karpenter.sh")
        sim.forbid("pods/log")
        sim.set_absent("ec2nodeclasses.karpenter.k8s.aws")
        code, stdout, _ = run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(out))
        _, live_out, _ = run(capsys, "diagnose", "--kubeconfig", str(cfg), "-o", "json")
    assert code == ExitCode.OK
    m = manifest(out)
    denied = {(d["verb"], d["resource"]) for d in m["denied"]}
    assert {("list", "nodeclaims.karpenter.sh"), ("get", "pods/log")} <= denied
    assert [a["resource"] for a in m["absent"]] == ["ec2nodeclasses.karpenter.k8s.aws"]
    assert m["sources"]["nodeclaims"]["state"] == "forbidden"
    assert "resources/nodeclaims.json" not in members(out)
    assert "denied by RBAC: get pods/log, list nodeclaims.karpenter.sh" in stdout
    # Offline, the same checks are skipped for the same reasons.
    _, off_out, _ = run(capsys, "diagnose", "--bundle", str(out), "-o", "json")
    live, off = json.loads(live_out), json.loads(off_out)
    assert [(r["check"], r["status"], r["reason"]) for r in off["results"]] == \
        [(r["check"], r["status"], r["reason"]) for r in live["results"]]
    assert any(r["reason"] == "nodeclaims: forbidden (list nodeclaims.karpenter.sh)" for r in off["results"])


def test_owner_chain_is_collected_and_redacted(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    pod = "whisper-asr-7c9d6f5b8-k2x9p"
    template = {"spec": {"containers": [{"name": "asr", "image": "asr:1",
                                         "env": [{"name": "API_TOKEN", "value": "planted-owner-secret"}]}]}}
    with served("untolerated-taint", tmp_path, monkeypatch) as (sim, cfg):
        sim.apply({"apiVersion": "apps/v1", "kind": "Deployment",
                   "metadata": {"name": "whisper-asr", "namespace": "serving"},
                   "spec": {"replicas": 1, "template": template}})
        sim.apply({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                   "metadata": {"name": "whisper-asr-7c9d6f5b8", "namespace": "serving",
                                "ownerReferences": [{"apiVersion": "apps/v1", "kind": "Deployment",
                                                     "name": "whisper-asr", "controller": True, "uid": "d1"}]},
                   "spec": {"replicas": 1, "template": template}})
        assert run(capsys, "bundle", "-q", f"pod/serving/{pod}", "--kubeconfig", str(cfg), "-o", str(out))[0] == 0
        whole = tmp_path / "whole.tar.gz"
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(whole))[0] == 0
    files = members(out)
    owners = json.loads(files["resources/owners.json"])["items"]
    assert [(o["kind"], o["metadata"]["name"]) for o in owners] == [
        ("ReplicaSet", "whisper-asr-7c9d6f5b8"), ("Deployment", "whisper-asr")]
    assert b"planted-owner-secret" not in b"".join(files.values())
    assert manifest(out)["target"] == f"pod/serving/{pod}"
    assert manifest(out)["absent"] == []
    # The other pending pod's ReplicaSet was never created: a whole-cluster bundle (which walks every
    # pending pod's owners; a pod target reads only that pod) records it as missing, not as absent.
    m = manifest(whole)
    assert any(x["what"] == "replicaset serving/sdxl-worker-5d8c7b9f6" for x in m["missing"])
    assert m["absent"] == []


def test_with_nvidia_smi_runs_the_debug_pod_and_replays_it(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                           monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "b.tar.gz"
    with served("gpu-not-advertised", tmp_path, monkeypatch) as (sim, cfg):
        code, _, err = run(capsys, "bundle", f"node/{NODE}", "--with-nvidia-smi", "--kubeconfig", str(cfg),
                           "-o", str(out))
        leftovers = [p for p in sim.objects("Pod")
                     if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]
    assert code == ExitCode.OK, err
    assert f"running nvidia-smi on {NODE}" in err
    assert leftovers == []  # the debug pod was deleted
    files = members(out)
    assert json.loads(files[f"nvidia-smi/{NODE}.json"])["node"] == NODE
    assert b"NVIDIA-SMI" in files[f"nvidia-smi/{NODE}.log"]
    assert manifest(out)["collected"]["nvidia_smi"] == [NODE]
    snap = open_bundle(out).snapshot()
    assert NODE in snap.gpu_reports and snap.status("nvidia-smi").state.value == "ok"


def test_with_nvidia_smi_is_refused_under_read_only(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(capsys, "bundle", "--read-only", "--with-nvidia-smi", "-o", str(tmp_path / "b.tar.gz"))
    assert code == ExitCode.USAGE and out == ""
    assert err == "gputui: error: --with-nvidia-smi starts a debug pod, which --read-only forbids\n"


@pytest.mark.parametrize(("argv", "message"), [
    (["pod/nope", "-n", "ml"], 'pod "nope" not found in namespace \'ml\''),
    (["--since", "yesterday"], "--since 'yesterday': use a duration"),
    (["--max-size", "lots"], "--max-size 'lots': use a size"),
    (["-o", "/nonexistent-dir/b.tar.gz"], "directory /nonexistent-dir does not exist"),
])
def test_usage_errors_are_one_line(argv: list[str], message: str, tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    with served("subnets-not-found", tmp_path, monkeypatch) as (_sim, cfg):
        args = ["bundle", "-q", "--kubeconfig", str(cfg), *argv]
        if "-o" not in argv:
            args += ["-o", str(tmp_path / "b.tar.gz")]
        code, out, err = run(capsys, *args)
    assert code == ExitCode.USAGE and out == "" and err.count("\n") == 1 and message in err
    assert not (tmp_path / "b.tar.gz").exists()


def test_tui_export_of_an_offline_snapshot(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # The TUI's `e` calls write_bundle(path, snapshot=, api=, report=, options=) in a worker; a bundle
    # opened offline (no API) exports again from its snapshot and still replays the same findings.
    from gputui.bundle.write import BundleOptions, write_bundle

    first, second = tmp_path / "first.tar.gz", tmp_path / "second.tar.gz"
    with served("consolidation-blocked", tmp_path, monkeypatch) as (_sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(first))[0] == 0
    snap = open_bundle(first).snapshot()
    result = write_bundle(second, snapshot=snap, api=None, report=None, options=BundleOptions(read_only=True))
    assert result.path == second and result.size == second.stat().st_size
    assert findings(capsys, "--bundle", str(second)) == findings(capsys, "--bundle", str(first))
    assert manifest(second)["options"]["source"] == "snapshot records"
    assert load_scenario("consolidation-blocked").expect["topFinding"] == result.report.findings[0].check
    # The cache keeps pod and node conditions in the record only; the re-export puts them back, ages included.

    def conditions(path: Path, source: str) -> dict[str, list[tuple[str, str, str]]]:
        items = json.loads(members(path)[f"resources/{source}.json"])["items"]
        return {o["metadata"]["name"]: [(c["type"], c["status"], c.get("lastTransitionTime"))
                                        for c in o["status"].get("conditions") or []] for o in items}

    for source in ("pods", "nodes"):
        again = conditions(second, source)
        assert again and any(again.values())
        assert again == {name: conds for name, conds in conditions(first, source).items() if name in again}


def test_prometheus_and_aws_evidence_travel_with_the_bundle(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    # The facts the metric/AWS checks read are written as data and read back as the same types;
    # the Prometheus URL (it names the cluster) is masked.
    import gzip
    from dataclasses import replace

    from diagnostics import run as run_checks
    from diagnostics.facts.aws_facts import AwsFacts
    from diagnostics.facts.metric_facts import MetricFacts, Sample
    from gputui.bundle.write import BundleOptions, write_bundle

    first, second = tmp_path / "first.tar.gz", tmp_path / "second.tar.gz"
    with served("gpu-not-advertised", tmp_path, monkeypatch) as (_sim, cfg):
        assert run(capsys, "bundle", "-q", "--kubeconfig", str(cfg), "-o", str(first))[0] == 0
    snap = open_bundle(first).snapshot()
    at = snap.taken_at
    query = "avg_over_time(DCGM_FI_DEV_GPU_UTIL[1h])"
    metrics = MetricFacts(queried_at=at, url="http://prometheus.monitoring.svc:9090",
                          samples={"gpu_util": (Sample(query, {"Hostname": NODE, "gpu": "0"}, 0.0, at),)},
                          queries={"gpu_util": (query,)}, absent={"DCGM_FI_DEV_ECC_DBE_VOL_TOTAL": "off by default"})
    aws = AwsFacts(region="us-east-1", fetched_at=at, region_from="--aws-region")
    snap = replace(snap, metrics=metrics, aws=aws)
    write_bundle(second, snapshot=snap, options=BundleOptions(read_only=True))
    back = open_bundle(second).snapshot()
    assert back.aws == aws
    assert back.metrics == replace(metrics, url="[REDACTED:prometheus-url]")
    assert b"prometheus.monitoring.svc" not in gzip.decompress(second.read_bytes())
    assert manifest(second)["collected"]["metrics"] is True and manifest(second)["collected"]["aws"] is True
    expected = [(f.check, str(f.subject)) for f in run_checks(snap).findings]
    assert [(c, s) for c, s, _sev in findings(capsys, "--bundle", str(second))] == expected
