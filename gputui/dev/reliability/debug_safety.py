"""Debug pods are never left behind: `gputui debug` interrupted, terminated, crashing, or cut off from the API.

Each case runs the real command (a subprocess, so signals are real) against a simulator whose debug pod
hangs inside nvidia-smi, disturbs it at a chosen phase, and counts the gputui pods the cluster still holds:
right after gputui exits, and after `gputui debug --cleanup` (the documented way out when the API was gone).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from gputui.sim.cluster import SimCluster

MANAGED_BY = "app.kubernetes.io/managed-by"
NODE_LABEL = "gputui.dev/debug-node"
HANGS = "gpu-hangs"
HEALTHY = "gpu-ok"
_PARTIAL = "=== gputui:begin 1 ===\n=== gputui:info command nvidia-smi ===\n=== gputui:section nvidia-smi ===\n"
_NODE_TEMPLATE: dict[str, Any] = {
    "apiVersion": "v1", "kind": "Node",
    "metadata": {"labels": {"node.kubernetes.io/instance-type": "p5.48xlarge", "karpenter.sh/nodepool": "gpu",
                            "karpenter.k8s.aws/instance-gpu-count": "8", "nvidia.com/gpu.present": "true"}},
    "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "true", "effect": "NoSchedule"}]},
    "status": {"capacity": {"nvidia.com/gpu": "8"}, "allocatable": {"nvidia.com/gpu": "8"},
               "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}]},
}


@dataclass
class DebugCase:
    name: str
    disturbance: str
    """sigint | sigterm | sighup | sigquit | sigint-twice | broken-pipe | exception | lost-connection"""
    phase: str
    """When: Pending (waiting for the pod) or Running (streaming nvidia-smi's output)."""
    exit_code: int | None = None
    """As a shell sees it: 128+N when the process died of signal N (see `signal`)."""
    signal: str = ""
    """The signal that killed the process, if one did (not an exit code gputui chose)."""
    seconds: float = 0.0
    pods_left: int = -1
    """gputui debug pods on the cluster right after gputui exited."""
    pods_after_cleanup: int = -1
    """... and after `gputui debug --cleanup` (run only if some were left)."""
    last_line: str = ""
    traceback: bool = False
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error and not self.traceback and self.pods_after_cleanup == 0 and (
            self.pods_left == 0 or self.disturbance == "lost-connection")

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 2) if isinstance(v, float) else v) for k, v in self.__dict__.items()} | {"ok": self.ok}


CASES: tuple[tuple[str, str, str], ...] = (
    ("Ctrl-C while the pod starts", "sigint", "Pending"),
    ("Ctrl-C while nvidia-smi runs", "sigint", "Running"),
    ("Ctrl-C twice (during the cleanup)", "sigint-twice", "Running"),
    ("SIGTERM while the pod starts", "sigterm", "Pending"),
    ("SIGTERM while nvidia-smi runs", "sigterm", "Running"),
    ("SIGHUP (terminal closed) while nvidia-smi runs", "sighup", "Running"),
    ("SIGQUIT (Ctrl-\\) while the pod starts", "sigquit", "Pending"),
    ("SIGQUIT (Ctrl-\\) while nvidia-smi runs", "sigquit", "Running"),
    ("stdout closed mid-stream (piped into head)", "broken-pipe", "Running"),
    ("an exception while showing output", "exception", "Running"),
    ("API server gone mid-run", "lost-connection", "Running"),
)


def gputui_pods(sim: SimCluster) -> list[dict[str, Any]]:
    return [p for p in sim.objects("Pod") if (p["metadata"].get("labels") or {}).get(MANAGED_BY) == "gputui"]


class DebugWorld:
    """A small cluster: a node whose nvidia-smi hangs after its first line, and a healthy H100 node."""

    def __init__(self, delay: float = 1.2) -> None:
        self.sim = SimCluster(None, debug_pod_delay=delay)
        self._tmp = tempfile.TemporaryDirectory(prefix="gputui-debug-safety-")
        self.kubeconfig = Path(self._tmp.name) / "kubeconfig"

    def __enter__(self) -> DebugWorld:
        for name in (HANGS, HEALTHY):
            self.sim.apply({**_NODE_TEMPLATE, "metadata": {**_NODE_TEMPLATE["metadata"], "name": name}})
        self.sim.apply({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "default"}})
        self.sim.start()
        self.sim.set_nvidia_smi("default", {"capture": "h100"})

        def hang(type_: str, pod: dict[str, Any]) -> None:
            md, spec = pod.get("metadata") or {}, pod.get("spec") or {}
            if spec.get("nodeName") == HANGS and (pod.get("status") or {}).get("phase") == "Running":
                self.sim.logs.set(md["namespace"], md["name"], _PARTIAL)

        self.sim.store.add_hook("Pod", hang)
        self.sim.write_kubeconfig(self.kubeconfig)
        return self

    def __exit__(self, *exc: object) -> None:
        self.sim.stop()
        self._tmp.cleanup()

    def phase_reached(self, phase: str, known: set[str]) -> bool:
        for p in gputui_pods(self.sim):
            if p["metadata"]["name"] in known:
                continue
            status = p.get("status") or {}
            if phase == "Pending" or status.get("phase") == phase:
                return True
        return False

    def cleanup(self) -> int:
        """`gputui debug --cleanup`; returns how many gputui pods remain."""
        proc = subprocess.run(_cmd("debug", "--cleanup", "--kubeconfig", str(self.kubeconfig)), env=_env(),
                              capture_output=True, text=True, timeout=60)
        if proc.returncode != 0:
            raise RuntimeError(f"--cleanup exited {proc.returncode}: {proc.stderr.strip()}")
        return len(gputui_pods(self.sim))


def _cmd(*argv: str) -> list[str]:
    return [sys.executable, "-m", "gputui", *argv]


def _env() -> dict[str, str]:
    root = str(Path(__file__).resolve().parents[3])
    return {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH")) if p)}


def _wait(pred: Callable[[], bool], timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def run_case(world: DebugWorld, name: str, disturbance: str, phase: str) -> DebugCase:
    case = DebugCase(name, disturbance, phase)
    known = {p["metadata"]["name"] for p in gputui_pods(world.sim)}
    started = time.monotonic()
    try:
        if disturbance == "exception":
            _in_process_exception(world, case)
        else:
            _subprocess_case(world, case, known)
    except Exception as exc:  # noqa: BLE001 - the report says what broke
        case.error = f"{type(exc).__name__}: {exc}"
    case.seconds = time.monotonic() - started
    if case.disturbance == "lost-connection":
        world.sim.start()  # the API server comes back (same address): what did gputui leave?
    case.pods_left = len(gputui_pods(world.sim))
    case.pods_after_cleanup = world.cleanup() if case.pods_left else 0
    return case


def _subprocess_case(world: DebugWorld, case: DebugCase, known: set[str]) -> None:
    node = HEALTHY if case.disturbance == "broken-pipe" else HANGS
    proc = subprocess.Popen(_cmd("debug", f"node/{node}", "--kubeconfig", str(world.kubeconfig), "--timeout", "30"),
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        if case.disturbance == "broken-pipe":
            proc.stdout.close()  # type: ignore[union-attr] # the reader (`| head`) went away before the output
        elif not _wait(lambda: world.phase_reached(case.phase, known), 30):
            raise TimeoutError(f"the debug pod never reached {case.phase}")
        else:
            time.sleep(0.3)  # let the client open the log stream / see the phase
            if case.disturbance in ("sigint", "sigint-twice"):
                proc.send_signal(signal.SIGINT)
                if case.disturbance == "sigint-twice":
                    time.sleep(0.05)
                    proc.send_signal(signal.SIGINT)
            elif case.disturbance in ("sigterm", "sighup", "sigquit"):
                proc.send_signal(getattr(signal, case.disturbance.upper()))
            elif case.disturbance == "lost-connection":
                world.sim.stop()
        err = proc.stderr.read()  # type: ignore[union-attr]
        proc.wait(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    case.exit_code = proc.returncode
    if proc.returncode < 0:
        case.signal = signal.Signals(-proc.returncode).name
        case.exit_code = 128 - proc.returncode
    case.traceback = "Traceback" in err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    case.last_line = lines[-1] if lines else ""


def _in_process_exception(world: DebugWorld, case: DebugCase) -> None:
    """A bug in whatever shows the output (the TUI's log view, a plugin) must not leak the pod."""
    from gputui.debugpod.run import run_debug
    from gputui.kube.api import Api, load

    client, _info = load(str(world.kubeconfig))

    def show(line: str) -> None:
        raise RuntimeError("the output widget crashed")

    result: list[BaseException] = []

    def target() -> None:
        try:
            run_debug(Api(client), HANGS, timeout=30, on_output=show)
        except BaseException as exc:  # noqa: BLE001 - expected: the exception must come out, the pod not stay
            result.append(exc)

    t = threading.Thread(target=target)
    t.start()
    t.join(60)
    if not result:
        raise AssertionError("run_debug swallowed the exception or hung")
    case.last_line = f"{type(result[0]).__name__}: {result[0]}"
    case.exit_code = None


def debug_safety_matrix(cases: tuple[tuple[str, str, str], ...] = CASES) -> list[DebugCase]:
    with DebugWorld() as world:
        return [run_case(world, *c) for c in cases]
