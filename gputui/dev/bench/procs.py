"""Processes the benchmark times: wall time from spawn to exit and each child's own peak RSS.

Every command runs under `launch.py`, a few-MB process that forks it, reaps it with `os.wait4`
and reports its wall time and rusage: Linux carries the peak RSS of the forking process into its
child, so a command forked from the benchmark itself would report the benchmark's size (and
RUSAGE_CHILDREN would report the largest child so far). A child that overruns its cap is killed
and reported as timed out, never waited for.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, IO

LAUNCHER = Path(__file__).resolve().with_name("launch.py")
LAUNCH_PYTHON = sys.executable


def rss_mb(pid: int | str = "self") -> dict[str, float]:
    """Current (VmRSS) and peak (VmHWM) resident set size of a process, in MB."""
    out: dict[str, float] = {}
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            key, _, rest = line.partition(":")
            if key in ("VmRSS", "VmHWM"):
                out[key] = round(int(rest.split()[0]) / 1024, 1)
    except OSError:
        pass
    return out


@dataclass
class Timed:
    """One timed child process."""

    cmd: list[str]
    wall_s: float
    returncode: int | None
    """None when the child was killed for running past its cap."""
    maxrss_mb: float
    stdout: str = ""
    stderr: str = ""
    spawned_at: float = 0.0
    """time.time() just before the spawn (children report wall-clock times against it)."""
    timed_out: bool = False
    result: dict[str, Any] = field(default_factory=dict)
    """The child's last stdout line, when it is a JSON object (the probes print one)."""


def run_timed(cmd: Sequence[str], *, timeout: float, env: dict[str, str] | None = None,
              stdout_path: str | None = None, cwd: str | None = None, keep_stderr: int | None = 20_000) -> Timed:
    """Spawn, wait (at most `timeout` s), and return wall time, exit status, peak RSS and output.

    stdout goes to `stdout_path` when given (kubectl's big JSON), else it is captured; only the
    last `keep_stderr` characters of stderr are kept (None: all of it).
    """
    out_fh: IO[bytes] | int
    out_fh = open(stdout_path, "wb") if stdout_path else subprocess.PIPE  # noqa: SIM115 - closed below
    report_r, report_w = os.pipe()
    spawned_at = time.time()
    t0 = time.perf_counter()
    try:
        proc = subprocess.Popen([LAUNCH_PYTHON, "-I", "-S", str(LAUNCHER), str(report_w), *cmd], stdout=out_fh,
                                stderr=subprocess.PIPE, env=env, cwd=cwd, start_new_session=True,
                                pass_fds=(report_w,))
    finally:
        os.close(report_w)
    chunks: dict[str, list[bytes]] = {"out": [], "err": []}

    def drain(name: str, stream: IO[bytes] | None) -> None:
        if stream is not None:
            for block in iter(lambda: stream.read(65536), b""):
                chunks[name].append(block)

    readers = [threading.Thread(target=drain, args=("err", proc.stderr), daemon=True)]
    if not stdout_path:
        readers.append(threading.Thread(target=drain, args=("out", proc.stdout), daemon=True))
    for r in readers:
        r.start()
    reaped: dict[str, Any] = {}

    def reap() -> None:
        _pid, status, _usage = os.wait4(proc.pid, 0)
        reaped["end"] = time.perf_counter()
        reaped["status"] = status

    waiter = threading.Thread(target=reap, daemon=True)
    waiter.start()
    waiter.join(timeout)
    timed_out = waiter.is_alive()
    if timed_out:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        waiter.join(30)
    for r in readers:
        r.join(10)
    if not isinstance(out_fh, int):
        out_fh.close()
    end = reaped.get("end", time.perf_counter())
    status = reaped.get("status")
    code = os.waitstatus_to_exitcode(status) if status is not None else None
    proc.returncode = code if code is not None else -9  # reaped by wait4: keep Popen from waiting again
    with os.fdopen(report_r, "rb") as fh:
        report = fh.read().split()
    wall_s, maxrss_kb = end - t0, 0
    if len(report) == 4 and not timed_out:  # the command's own figures, without the launcher's start-up
        spawned_at, wall_s, maxrss_kb = float(report[0]), float(report[1]), int(report[2])
        code = os.waitstatus_to_exitcode(int(report[3]))
    stdout = b"".join(chunks["out"]).decode("utf-8", "replace")
    result: dict[str, Any] = {}
    last = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    if last.startswith("{"):
        try:
            result = json.loads(last)
        except json.JSONDecodeError:
            result = {}
    return Timed(list(cmd), wall_s, None if timed_out else code, maxrss_kb / 1024,
                 stdout if len(stdout) < 100_000 else stdout[-100_000:],
                 _tail(b"".join(chunks["err"]).decode("utf-8", "replace"), keep_stderr), spawned_at, timed_out,
                 result)


def _tail(text: str, keep: int | None) -> str:
    return text if keep is None else text[-keep:]


class ServerProcess:
    """`python -m gputui.dev.bench.serve` as a child: started, read for its ready line, shut down."""

    def __init__(self, scale: str, workdir: Path, *, seed: int = 20260821, python: str = sys.executable,
                 env: dict[str, str] | None = None, ready_timeout: float = 900.0) -> None:
        self.kubeconfig = workdir / "kubeconfig"
        self.proc = subprocess.Popen(
            [python, "-m", "gputui.dev.bench.serve", "--scale", scale, "--seed", str(seed),
             "--kubeconfig-out", str(self.kubeconfig)],
            stdout=subprocess.PIPE, stderr=open(workdir / "serve.log", "wb"), text=True,  # noqa: SIM115
            start_new_session=True, env=env, cwd=str(Path(__file__).resolve().parents[3]))
        self.info: dict[str, Any] = {}
        ready: list[str] = []
        reader = threading.Thread(target=lambda: ready.append(self.proc.stdout.readline() if self.proc.stdout
                                                              else ""), daemon=True)
        reader.start()
        reader.join(ready_timeout)
        if not ready or not ready[0].strip():
            self.stop()
            log = (workdir / "serve.log").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"the benchmark server did not start: {log}")
        self.info = json.loads(ready[0])
        self.control = str(self.info["control"])

    def get(self, path: str) -> Any:
        with urllib.request.urlopen(self.control + path, timeout=30) as resp:
            return json.loads(resp.read())

    def post(self, path: str) -> Any:
        req = urllib.request.Request(self.control + path, data=b"", method="POST")
        with urllib.request.urlopen(req, timeout=30) as resp:
            return json.loads(resp.read())

    def stop(self) -> None:
        if self.proc.poll() is None:
            try:
                self.post("/shutdown")
                self.proc.wait(15)
            except Exception:  # noqa: BLE001 - fall back to a signal
                os.killpg(self.proc.pid, signal.SIGTERM)
                try:
                    self.proc.wait(10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.proc.pid, signal.SIGKILL)
                    self.proc.wait()
