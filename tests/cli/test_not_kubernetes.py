"""A server that answers 200 with a web page (an auth proxy's login, a wrong URL) is not a Kubernetes API."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml

from gputui.cli.program import main
from gputui.errors import ExitCode


class _LoginPage(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - http.server's name
        body = b"<html><body>Sign in to continue</body></html>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _kubeconfig(tmp_path: Path, server: str) -> Path:
    kc = tmp_path / "kubeconfig"
    kc.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "c",
        "clusters": [{"name": "c", "cluster": {"server": server}}], "users": [{"name": "c", "user": {"token": "t"}}],
        "contexts": [{"name": "c", "context": {"cluster": "c", "user": "c"}}]}), encoding="utf-8")
    return kc


@pytest.mark.slow
@pytest.mark.parametrize("target", [[], ["pod/ml/trainer-0"]])
def test_a_login_page_is_unreachable_with_a_reason_not_a_crash(tmp_path: Path, target: list[str],
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _LoginPage)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    kc = _kubeconfig(tmp_path, f"http://127.0.0.1:{server.server_port}")
    try:
        code = main(["diagnose", *target, "--kubeconfig", str(kc)])
    finally:
        server.shutdown()
    err = capsys.readouterr().err
    assert code == ExitCode.UNREACHABLE
    assert "not a Kubernetes API server" in err and "internal error" not in err


def test_an_unreachable_server_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    kc = _kubeconfig(tmp_path, f"http://127.0.0.1:{port}")
    code = main(["diagnose", "--kubeconfig", str(kc)])
    err = capsys.readouterr().err
    assert code == ExitCode.UNREACHABLE
    # The reason itself, not the connection pool's wrapper text cut before it.
    assert "Connection refused" in err and "Max retries exceeded" not in err
