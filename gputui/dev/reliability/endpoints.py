"""Misbehaving loopback endpoints for the optional sources: a closed port, a server that answers too late,
and a server that denies every request (403), as an auth proxy in front of Prometheus or EC2 would."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

EC2_DENIED = (b'<?xml version="1.0" encoding="UTF-8"?>\n<Response><Errors><Error><Code>UnauthorizedOperation</Code>'
              b"<Message>You are not authorized to perform this operation. User: arn:aws:iam::123456789012:user/"
              b"gputui is not authorized to perform: ec2:DescribeSubnets because no identity-based policy allows "
              b"the ec2:DescribeSubnets action</Message></Error></Errors>"
              b"<RequestID>0f4b8f7e-1111-4c2a-9e7a-2d9a0c6b5e10</RequestID></Response>")
PROMETHEUS_DENIED = b"Forbidden: RBAC: access denied\n"


def closed_port_url() -> str:
    """A loopback URL nothing listens on: connections are refused at once."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}"


def _handler(mode: str, delay: float, body: bytes, content_type: str) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def _answer(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            if length:
                self.rfile.read(length)
            if mode == "slow":
                time.sleep(delay)
            status = 403 if mode == "forbidden" else 200
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)
            except OSError:
                pass  # the client gave up waiting, as it should

        do_GET = do_POST = _answer

        def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - quiet
            pass

    return Handler


@contextmanager
def misbehaving_server(mode: str, *, delay: float = 30.0, body: bytes = b"", content_type: str = "text/plain"
                       ) -> Iterator[str]:
    """`slow` (sleeps `delay` before answering) or `forbidden` (403 with `body`); yields the base URL."""
    if mode not in ("slow", "forbidden"):
        raise ValueError(f"unknown mode {mode!r}")
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(mode, delay, body, content_type))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
