"""Socket reads of up to READ_BUFFER bytes for the client's HTTP pool, instead of http.client's 8 KB.

Each read releases the GIL and takes it back; while another thread computes (the TUI's checks,
its painting), taking it back waits up to the switch interval (5 ms). A watch stream read 8 KB
(one or two pod events) at a time fell seconds behind a 1,000 events/s burst that way; a wide read
drains what the server sent since the last one in a single wake-up. Large lists need fewer
reads too. Only the plain PoolManager/ProxyManager are widened (SOCKS brings its own classes).
"""

from __future__ import annotations

import http.client
import socket
from typing import Any

import urllib3
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

READ_BUFFER = 1 << 18
"""Bytes per socket read at most (over TLS one read still returns at most one 16 KB record)."""


class WideResponse(http.client.HTTPResponse):
    def __init__(self, sock: socket.socket, debuglevel: int = 0, method: str | None = None,
                 url: str | None = None) -> None:
        super().__init__(sock, debuglevel, method, url)
        self.fp.close()  # nothing read through it yet; closing drops its reference to the socket
        # A BufferedReader; typeshed says so only for buffering -1 or 1.
        self.fp = sock.makefile("rb", buffering=READ_BUFFER)  # type: ignore[assignment]


class WideHTTPConnection(HTTPConnection):
    response_class = WideResponse


class WideHTTPSConnection(HTTPSConnection):
    response_class = WideResponse


class WideHTTPConnectionPool(HTTPConnectionPool):
    ConnectionCls = WideHTTPConnection


class WideHTTPSConnectionPool(HTTPSConnectionPool):
    ConnectionCls = WideHTTPSConnection


def widen(pool_manager: Any) -> bool:
    """Make `pool_manager`'s new connections read wide; False (unchanged) for other managers."""
    if type(pool_manager) not in (urllib3.PoolManager, urllib3.ProxyManager):
        return False
    pool_manager.pool_classes_by_scheme = {"http": WideHTTPConnectionPool, "https": WideHTTPSConnectionPool}
    pool_manager.clear()  # pools made before this keep their classes: drop them
    return True
