"""Request-level fault injection: error answers, throttling, latency and forced watch expiry.

Stream-level faults (dropping watches, an apiserver restart) live on `SimCluster`, which owns the store.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

from gputui.sim.status import ApiError

_MESSAGES = {
    401: ("Unauthorized", "Unauthorized"),
    429: ("Too many requests, please try again later.", "TooManyRequests"),
    500: ("Internal error occurred: injected fault", "InternalError"),
    503: ("The server is currently unable to handle the request", "ServiceUnavailable"),
    504: ("Timeout: request did not complete within requested timeout - context deadline exceeded", "Timeout"),
}


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
        self.hits: dict[int, int] = {}  # status -> how many injected answers were sent

    def fail_requests(self, n: int, status: int = 500, *, path_contains: str | None = None,
                      retry_after: int | None = None, message: str | None = None) -> None:
        """Answer the next `n` requests (whose path contains `path_contains`) with `status`."""
        with self._lock:
            self._failures.append(_Failure(n, status, path_contains, retry_after, message))

    def throttle(self, n: int, retry_after: int = 1, *, path_contains: str | None = None) -> None:
        """Answer the next `n` requests with 429 TooManyRequests and `Retry-After`."""
        self.fail_requests(n, 429, path_contains=path_contains, retry_after=retry_after)

    def set_latency(self, seconds: float, *, path_contains: str | None = None) -> None:
        """Delay every (matching) request by `seconds` before it is handled; 0 turns it off."""
        with self._lock:
            self._latency = max(0.0, seconds)
            self._latency_path = path_contains

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

    # ---- consulted by the server ---------------------------------------------------------------

    def latency_for(self, path: str) -> float:
        with self._lock:
            if self._latency and (self._latency_path is None or self._latency_path in path):
                return self._latency
        return 0.0

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

    def take_expire(self, kind: str) -> bool:
        with self._lock:
            if kind in self._expire_next:
                self._expire_next.discard(kind)
                return True
        return False

    def pending_failures(self) -> int:
        with self._lock:
            return sum(f.remaining for f in self._failures)
