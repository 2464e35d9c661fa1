"""A simulator for debug pod tests: the `debug-nodes` scenario (one node per state), its kubeconfig, helpers."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from gputui.kube.api import Api, load
from gputui.sim import SimCluster

REPO = Path(__file__).resolve().parents[2]
SCENARIO = Path(__file__).parent / "data" / "debug-nodes.yaml"

H100 = "ip-10-0-1-11.ec2.internal"
MIG = "ip-10-0-1-12.ec2.internal"
NO_DRIVER = "ip-10-0-2-21.ec2.internal"
GPU_LOST = "ip-10-0-2-22.ec2.internal"
NVML_UNKNOWN = "ip-10-0-2-23.ec2.internal"
NO_DEVICES = "ip-10-0-2-24.ec2.internal"
HANDLE_ERROR = "ip-10-0-2-25.ec2.internal"
IMAGE_PULL_BACKOFF = "ip-10-0-3-31.ec2.internal"
ERR_IMAGE_PULL = "ip-10-0-3-32.ec2.internal"
CREATE_CONTAINER_ERROR = "ip-10-0-3-33.ec2.internal"
UNSCHEDULABLE = "ip-10-0-3-34.ec2.internal"
HANGS = "ip-10-0-3-35.ec2.internal"
"""Its pod runs forever; `hang_after_first_section` makes its log stop inside nvidia-smi's first call."""

PARTIAL_LOG = "=== gputui:begin 1 ===\n=== gputui:info command nvidia-smi ===\n=== gputui:section nvidia-smi ===\n"


def start(tmp: Path, *, delay: float = 0.15) -> tuple[SimCluster, Path]:
    sim = SimCluster(SCENARIO, shift_to_now=True, debug_pod_delay=delay).start()
    return sim, sim.write_kubeconfig(tmp / "kubeconfig")


def api_for(kubeconfig: Path) -> Api:
    client, _ = load(str(kubeconfig))
    return Api(client)


def gputui_pods(sim: SimCluster) -> list[dict[str, Any]]:
    return [p for p in sim.objects("Pod")
            if (p["metadata"].get("labels") or {}).get("app.kubernetes.io/managed-by") == "gputui"]


def record_created_pods(sim: SimCluster) -> list[dict[str, Any]]:
    """Pods as the simulator stored them on create (filled as they come)."""
    created: list[dict[str, Any]] = []
    sim.store.add_hook("Pod", lambda type_, pod: created.append(pod) if type_ == "ADDED" else None)
    return created


def hang_after_first_section(sim: SimCluster) -> None:
    """On the HANGS node, the pod's log stops inside the first nvidia-smi call (a hung nvidia-smi prints nothing
    more). The hook runs on the simulator's loop right after the pod turns Running, so no client sees the
    simulator's full log first."""
    def hook(type_: str, pod: dict[str, Any]) -> None:
        md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
        if spec.get("nodeName") == HANGS and (pod.get("status") or {}).get("phase") == "Running":
            sim.logs.set(md["namespace"], md["name"], PARTIAL_LOG)

    sim.store.add_hook("Pod", hook)


def signal_debug_mid_run(sim: SimCluster, kubeconfig: str, signum: int, phase: str | None,
                         *, settle: float = 0.0) -> tuple[int, str]:
    """Run `gputui debug` on the HANGS node in a child process, send it `signum` once its debug pod exists (and
    is in `phase`, when given), and return its exit code and stderr. Shared by the SIGINT/TERM/HUP and SIGQUIT
    tests so both exercise the same launch-and-interrupt path."""
    proc = subprocess.Popen([sys.executable, "-m", "gputui", "debug", f"node/{HANGS}", "--kubeconfig", kubeconfig],
                            cwd=REPO, env={**os.environ, "PYTHONPATH": str(REPO)},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        def ready() -> bool:
            pods = gputui_pods(sim)
            return bool(pods) and (phase is None or (pods[0].get("status") or {}).get("phase") == phase)

        assert sim.wait_for(ready, timeout=20, interval=0.02), proc.poll()
        if settle:
            time.sleep(settle)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=15)
    finally:
        if proc.poll() is None:
            proc.kill()
    return proc.returncode, err
