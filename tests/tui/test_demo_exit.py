"""`gputui demo` cleans up however it ends (issue #22): `q`, SIGTERM and SIGHUP (the terminal closed)
all stop its Prometheus and remove its temp dirs. Closing the terminal used to leak both every time.

Runs the real command on a pseudo-terminal, with TMPDIR pointing at the test's own directory so
every temp dir and the Prometheus command line (its data path) can be found afterwards.
"""

from __future__ import annotations

import os
import pty
import signal
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.prometheus.conftest import require_prometheus

pytestmark = pytest.mark.slow  # `gputui demo` started and stopped as a process, once per way to leave

ROOT = Path(__file__).resolve().parents[2]


def _processes_under(path: Path) -> list[int]:
    """Processes whose command line names `path` (the demo's Prometheus: --storage.tsdb.path=...)."""
    out = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                cmd = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
            if str(path) in cmd and "prometheus" in cmd:
                out.append(int(entry.name))
    return out


def _start_demo(tmp: Path) -> tuple[int, int, bytearray]:
    env = dict(os.environ, TMPDIR=str(tmp), TERM="xterm-256color", COLUMNS="120", LINES="40",
               PYTHONPATH=str(ROOT))
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real command on a terminal
        os.execvpe(sys.executable, [sys.executable, "-m", "gputui", "demo"], env)
    screen = bytearray()

    def drain() -> None:
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:
                return
            if not chunk:
                return
            screen.extend(chunk)

    threading.Thread(target=drain, daemon=True).start()
    return pid, fd, screen


def _wait_exit(pid: int, timeout: float) -> int | None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.1)
    return None


@pytest.mark.parametrize("how", ["q", "SIGHUP", "SIGTERM"])
def test_the_demo_leaves_nothing_behind(tmp_path: Path, how: str) -> None:
    require_prometheus()
    pid, fd, screen = _start_demo(tmp_path)
    code: int | None = None
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not (b"Findings" in screen and _processes_under(tmp_path)):
            time.sleep(0.2)
        assert b"Findings" in screen, screen[-2000:].decode(errors="replace")
        assert _processes_under(tmp_path), "the demo's Prometheus did not start"
        assert any(p.name.startswith("gputui-") for p in tmp_path.iterdir())
        if how == "q":
            os.write(fd, b"q")
        else:
            os.kill(pid, getattr(signal, how))
        code = _wait_exit(pid, 30)
        assert code is not None, "the demo did not exit"
        assert code == (0 if how == "q" else 143), code
    finally:
        if code is None:
            os.kill(pid, signal.SIGKILL)
            _wait_exit(pid, 5)
        os.close(fd)
    assert not _processes_under(tmp_path), "the demo's Prometheus outlived it"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith("gputui-")]
