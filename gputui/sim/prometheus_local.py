"""Run Debian's Prometheus on 127.0.0.1 over a backfilled history (for the demo and the tests).

History is written as OpenMetrics and turned into TSDB blocks by `promtool tsdb create-blocks-from
openmetrics`, which is deterministic, unlike waiting for scrapes (target discovery ticks every 5 s).
Instant queries only see samples younger than the 5-minute lookback, so callers write history up
to "now"; retention is kept long so Prometheus never deletes the blocks.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import socket
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

_EXTRA_PATHS = ("/usr/bin", "/usr/local/bin")


def find_binaries() -> tuple[str, str] | None:
    """(prometheus, promtool) paths, or None when Prometheus is not installed."""
    found = []
    for name in ("prometheus", "promtool"):
        path = shutil.which(name) or next((f"{d}/{name}" for d in _EXTRA_PATHS if os.access(f"{d}/{name}", os.X_OK)),
                                          None)
        if path is None:
            return None
        found.append(path)
    return found[0], found[1]


def _escape(value: str) -> str:
    return value.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _number(v: float) -> str:
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if v != int(v) or abs(v) >= 1e15 else str(int(v))


@dataclass
class OpenMetrics:
    """Collects series and renders an OpenMetrics file promtool can backfill.

    Counters are declared as the family without `_total` (OpenMetrics' rule); gauges as named.
    """

    _families: dict[str, tuple[str, list[str]]] = field(default_factory=dict)

    def add(self, name: str, labels: Mapping[str, str], points: Iterable[tuple[float, float]],
            kind: str = "gauge") -> None:
        """points: (unix seconds, value), ascending."""
        family = name[: -len("_total")] if kind == "counter" and name.endswith("_total") else name
        _kind, lines = self._families.setdefault(family, (kind, []))
        lab = ",".join(f'{k}="{_escape(str(v))}"' for k, v in labels.items())
        sel = f"{name}{{{lab}}}" if lab else name
        for ts, value in points:
            lines.append(f"{sel} {_number(value)} {ts:.3f}")

    def text(self) -> str:
        out: list[str] = []
        for family, (kind, lines) in self._families.items():
            out.append(f"# TYPE {family} {kind}")
            out.extend(lines)
        out.append("# EOF")
        return "\n".join(out) + "\n"


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class LocalPrometheus:
    url: str
    process: subprocess.Popen[bytes]
    workdir: Path

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(timeout=5)

    def log(self) -> str:
        with contextlib.suppress(OSError):
            return (self.workdir / "prometheus.log").read_text(errors="replace")[-4000:]
        return ""


class LocalPrometheusError(RuntimeError):
    pass


def backfill(openmetrics: str, workdir: Path, promtool: str) -> Path:
    """Write the OpenMetrics history and turn it into TSDB blocks under workdir/data."""
    workdir.mkdir(parents=True, exist_ok=True)
    src = workdir / "backfill.om"
    src.write_text(openmetrics)
    data = workdir / "data"
    data.mkdir(exist_ok=True)
    done = subprocess.run([promtool, "tsdb", "create-blocks-from", "openmetrics", str(src), str(data)],
                          capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0:
        raise LocalPrometheusError(f"promtool backfill failed: {(done.stderr or done.stdout).strip()[-800:]}")
    return data


def start(openmetrics: str, workdir: Path, *, web_config: str | None = None,
          extra_args: Sequence[str] = (), ready_timeout: float = 15.0) -> LocalPrometheus:
    """Backfill `openmetrics` and serve it on a free loopback port. Raises LocalPrometheusError."""
    bins = find_binaries()
    if bins is None:
        raise LocalPrometheusError("prometheus/promtool not found (Debian: apt-get install prometheus)")
    prometheus, promtool = bins
    data = backfill(openmetrics, workdir, promtool)
    cfg = workdir / "prometheus.yml"
    cfg.write_text("global: {}\nscrape_configs: []\n")
    args = [prometheus, f"--config.file={cfg}", f"--storage.tsdb.path={data}",
            "--storage.tsdb.retention.time=3650d"]
    if web_config is not None:
        wc = workdir / "web.yml"
        wc.write_text(web_config)
        args.append(f"--web.config.file={wc}")
    args.extend(extra_args)
    last = ""
    for _attempt in range(3):  # the free port can be taken between probing and binding
        port = free_port()
        url = f"http://127.0.0.1:{port}"
        log = open(workdir / "prometheus.log", "wb")  # noqa: SIM115 - handed to the child
        proc = subprocess.Popen([*args, f"--web.listen-address=127.0.0.1:{port}"], stdout=log,
                                stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, cwd=workdir)
        log.close()
        running = LocalPrometheus(url, proc, workdir)
        if _wait_ready(url, proc, ready_timeout, auth=web_config is not None):
            return running
        running.stop()
        last = running.log()
    raise LocalPrometheusError(f"prometheus did not become ready: {last[-800:]}")


def _wait_ready(url: str, proc: subprocess.Popen[bytes], timeout: float, auth: bool) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            return False
        try:
            with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as resp:  # noqa: S310 - loopback
                if resp.status == 200:
                    return True
        except urllib.error.HTTPError as exc:
            if auth and exc.code == 401:  # up, and asking for the credentials it was configured with
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False
