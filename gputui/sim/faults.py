"""Request-level fault injection: error answers, throttling, latency and forced watch expiry.

Stream-level faults (dropping watches, an apiserver restart) live on `SimCluster`, which owns the store.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Literal

from gputui.sim.status import ApiError

_MESSAGES = {
    401: ("Unauthorized", "Unauthorized"),
    429: ("Too many requests, please try again later.", "TooManyRequests"),
    500: ("Internal error occurred: injected fault", "InternalError"),
    503: ("The server is currently unable to handle the request", "ServiceUnavailable"),
    504: ("Timeout: request did not complete within requested timeout - context deadline exceeded", "Timeout"),
}


Breakage = Literal["reset", "truncated", "html", "malformed", "list-for-get"]
"""Broken answers (not error Statuses) a client meets behind proxies and load balancers:
`reset` closes the connection before any answer; `truncated` sends the headers and half the body,
then closes (urllib3's IncompleteRead); `html` is a 200 text/html login page; `malformed` is a 200
application/json body cut in half (complete HTTP, invalid JSON); `list-for-get` answers a GET of one
object with a List holding it."""


@dataclass
class _Breakage:
    remaining: int
    mode: Breakage
    path_contains: str | None


@dataclass
class _Failure:
    remaining: int
    status: int
    path_contains: str | None
    retry_after: int | None
    message: str | None


def fault_error(status: int, retry_after: int | None = None, message: str | None = None) -> ApiError:
    """The Status an apiserver (or its front proxy) sends for `status`."""
    default_msg, reason = _MESSAGES.get(status, (f"injected HTTP {status}", ""))
    details: dict | None = None
    headers: dict[str, str] = {}
    if status == 500:
        details = {"causes": [{"message": message or "injected fault"}]}
    if retry_after is not None:
        details = {**(details or {}), "retryAfterSeconds": retry_after}
        headers["Retry-After"] = str(retry_after)
    return ApiError(status, message or default_msg, reason, details, headers)


class Faults:
    """Thread-safe fault switches, consulted by the server before it handles each request."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: list[_Failure] = []
        self._latency = 0.0
        self._latency_path: str | None = None
        self._expire_next: set[str] = set()
        self._breakages: list[_Breakage] = []
        self._expire_continue = 0
        self._holds: list[tuple[str, str | None, threading.Event]] = []
        self.hits: dict[int, int] = {}  # status -> how many injected answers were sent
        self.broken: dict[str, int] = {}  # breakage mode -> how many broken answers were sent

    def fail_requests(self, n: int, status: int = 500, *, path_contains: str | None = None,
                      retry_after: int | None = None, message: str | None = None) -> None:
        """Answer the next `n` requests (whose path contains `path_contains`) with `status`."""
        with self._lock:
            self._failures.append(_Failure(n, status, path_contains, retry_after, message))

    def break_answers(self, n: int, mode: Breakage, *, path_contains: str | None = None) -> None:
        """Break the next `n` answers (to requests whose path and query contain `path_contains`, e.g.
        `nodes?watch=true` for the watches alone) as `mode` says."""
        with self._lock:
            self._breakages.append(_Breakage(n, mode, path_contains))

    def expire_continue(self, n: int = 1) -> None:
        """The next `n` list requests carrying a `continue` token answer 410 Expired, as an apiserver
        does once etcd compacted the revision the token was issued at."""
        with self._lock:
            self._expire_continue += n

    def throttle(self, n: int, retry_after: int = 1, *, path_contains: str | None = None) -> None:
        """Answer the next `n` requests with 429 TooManyRequests and `Retry-After`."""
        self.fail_requests(n, 429, path_contains=path_contains, retry_after=retry_after)

    def set_latency(self, seconds: float, *, path_contains: str | None = None) -> None:
        """Delay every (matching) request by `seconds` before it is handled; 0 turns it off."""
        with self._lock:
            self._latency = max(0.0, seconds)
            self._latency_path = path_contains

    def hold(self, path_contains: str, *, unless: str | None = None) -> threading.Event:
        """Hold every request whose path and query contain `path_contains` (and not `unless`) until
        the returned event is set: a list that is slow to arrive, for exactly as long as a test needs
        (`hold("/api/v1/pods?", unless="fieldSelector")`: the full pod list, not the pending pods)."""
        gate = threading.Event()
        with self._lock:
            self._holds.append((path_contains, unless, gate))
        return gate

    def expire_next_watch(self, kind: str) -> None:
        """The next watch of `kind` (a KindInfo.kind) gets a 410 Expired ERROR event."""
        with self._lock:
            self._expire_next.add(kind)

    def clear(self) -> None:
        with self._lock:
            self._failures.clear()
            self._latency = 0.0
            self._latency_path = None
            self._expire_next.clear()
            self._breakages.clear()
            self._expire_continue = 0
            for _p, _u, gate in self._holds:
                gate.set()
            self._holds.clear()

    # ---- consulted by the server ---------------------------------------------------------------

    def latency_for(self, path: str) -> float:
        with self._lock:
            if self._latency and (self._latency_path is None or self._latency_path in path):
                return self._latency
        return 0.0

    def held_by(self, path_qs: str) -> threading.Event | None:
        """The gate a request must wait for (see `hold`), None when it may go on."""
        with self._lock:
            for contains, unless, gate in self._holds:
                if not gate.is_set() and contains in path_qs and not (unless and unless in path_qs):
                    return gate
        return None

    def take_failure(self, path: str) -> ApiError | None:
        with self._lock:
            for f in self._failures:
                if f.remaining > 0 and (f.path_contains is None or f.path_contains in path):
                    f.remaining -= 1
                    self.hits[f.status] = self.hits.get(f.status, 0) + 1
                    chosen = f
                    break
            else:
                return None
            self._failures = [f for f in self._failures if f.remaining > 0]
        return fault_error(chosen.status, chosen.retry_after, chosen.message)

    def take_breakage(self, path: str) -> Breakage | None:
        with self._lock:
            for b in self._breakages:
                if b.remaining > 0 and (b.path_contains is None or b.path_contains in path):
                    b.remaining -= 1
                    self.broken[b.mode] = self.broken.get(b.mode, 0) + 1
                    self._breakages = [x for x in self._breakages if x.remaining > 0]
                    return b.mode
        return None

    def take_continue_expiry(self) -> bool:
        with self._lock:
            if self._expire_continue > 0:
                self._expire_continue -= 1
                return True
        return False

    def take_expire(self, kind: str) -> bool:
        with self._lock:
            if kind in self._expire_next:
                self._expire_next.discard(kind)
                return True
        return False

    def pending_failures(self) -> int:
        with self._lock:
            return sum(f.remaining for f in self._failures) + sum(b.remaining for b in self._breakages)
