"""Raw-JSON access to the Kubernetes API through the official client's configuration and HTTP pool.

Deliberately below the generated API classes: their per-object pydantic models cost 5-18x more
than orjson on dicts (see README, performance), and gputui needs control of watch streams.
"""

from __future__ import annotations

import http.client
import logging
import os
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import orjson
import urllib3
import yaml
from kubernetes import client, config
from kubernetes.config.config_exception import ConfigException

from gputui.kube.wide_reads import widen


class KubeError(Exception):
    """An API answer gputui turns into a source status or a one-line CLI error."""

    def __init__(self, status: int, reason: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(message or reason)
        self.status = status
        self.reason = reason
        self.message = message or reason
        self.retry_after = retry_after
        """Seconds the server asked to wait (429/503 `Retry-After`), if it said."""


class Unreachable(KubeError):
    def __init__(self, message: str) -> None:
        super().__init__(0, "Unreachable", message)


class BrokenAnswer(Unreachable):
    """The server (or a proxy in front of it) answered, but the answer broke: the connection was reset,
    the body ended early (IncompleteRead), or it is not the JSON asked for (an HTML page, a cut body,
    the wrong kind). Passing more often than not: idempotent reads try again before giving up."""


class Unauthorized(KubeError):
    """401: the API server rejected the credentials (expired token, wrong user) - a usage error."""


class ConfigError(Exception):
    """Kubeconfig missing/unreadable, unknown context: a usage error (exit 2)."""


@dataclass(frozen=True, slots=True)
class ClusterInfo:
    context: str
    server: str
    namespace: str


def load(kubeconfig: str | None = None, context: str | None = None) -> tuple[client.ApiClient, ClusterInfo]:
    """Like kubectl: --kubeconfig, then $KUBECONFIG (every file of a `a:b` list, merged), then
    ~/.kube/config, then in-cluster."""
    path = kubeconfig or os.environ.get("KUBECONFIG", "") or os.path.expanduser("~/.kube/config")
    if kubeconfig and not os.path.exists(kubeconfig):
        raise ConfigError(f"kubeconfig {kubeconfig!r} does not exist")
    files = [os.path.expanduser(p) for p in path.split(os.pathsep) if p] if not kubeconfig else [kubeconfig]
    if any(os.path.exists(f) for f in files):
        try:
            contexts, active = config.list_kube_config_contexts(config_file=path)
            if len(files) > 1:  # the merger lets the last file's current-context win; kubectl the first's
                active = _first_current_context(files, contexts) or active
        except (ConfigException, OSError, ValueError, TypeError, AttributeError, KeyError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read kubeconfig {path!r}: {_first_line(exc)}") from None
        names = [c["name"] for c in contexts or []]
        if context and context not in names:
            raise ConfigError(f"context {context!r} not found in {path} (have: {', '.join(names) or 'none'})")
        chosen = next((c for c in contexts or [] if c["name"] == context), active) if context else active
        if not chosen:
            raise ConfigError(f"no current context in {path}; pass --context")
        cfg = client.Configuration()
        errors = _LoggedErrors()
        logging.getLogger().addHandler(errors)
        try:
            config.load_kube_config(config_file=path, context=chosen["name"], client_configuration=cfg,
                                    persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, AttributeError, KeyError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot use context {chosen['name']!r}: {_first_line(exc)}") from None
        finally:
            logging.getLogger().removeHandler(errors)
        if errors.messages and not cfg.api_key.get("authorization") and not cfg.cert_file:
            # The client logs a failed exec credential plugin (`aws eks get-token` without AWS credentials)
            # and goes on without credentials: every request would then look like missing RBAC.
            raise ConfigError(f"context {chosen['name']!r}: its credential plugin failed: "
                              f"{_first_line(Exception(errors.messages[0]))}")
        ns = (chosen.get("context") or {}).get("namespace") or "default"
        info = ClusterInfo(chosen["name"], cfg.host, ns)
    else:
        cfg = client.Configuration()
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException:
            raise ConfigError(f"no kubeconfig at {path} and not running in a cluster") from None
        ns = "default"
        try:
            with open("/var/run/secrets/kubernetes.io/serviceaccount/namespace") as fh:
                ns = fh.read().strip() or ns
        except OSError:
            pass
        info = ClusterInfo("in-cluster", cfg.host, ns)
    cfg.retries = 0  # gputui handles retry and backoff itself; urllib3 retries would hide outages
    api_client = client.ApiClient(cfg)
    widen(api_client.rest_client.pool_manager)
    return api_client, info


class _LoggedErrors(logging.Handler):
    """Collects what the kubernetes client logs at ERROR while loading a kubeconfig."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def _first_current_context(files: list[str], contexts: list[dict[str, Any]] | None) -> dict[str, Any] | None:
    """kubectl's current context for a KUBECONFIG list: the first file that sets one wins (the client's merger
    lets the last one win)."""
    for f in files:
        if not os.path.exists(f):
            continue
        with open(f, encoding="utf-8") as fh:
            name = (yaml.safe_load(fh) or {}).get("current-context")
        if name:
            return next((c for c in contexts or [] if c["name"] == name), None)
    return None


def innermost(exc: BaseException) -> BaseException:
    """The error at the bottom of urllib3's (and requests') wrappers: MaxRetryError -> NewConnectionError."""
    for _ in range(6):
        inner = getattr(exc, "reason", None)
        if not isinstance(inner, BaseException):
            inner = exc.args[0] if exc.args and isinstance(exc.args[0], BaseException) else None
        if inner is None:
            return exc
        exc = inner
    return exc


def reason_of(exc: BaseException) -> str:
    """The innermost reason of a urllib3 error ("Connection refused", "Name or service not known",
    "CERTIFICATE_VERIFY_FAILED"), not the pool's wrapper text that a one-line cut would keep instead."""
    exc = innermost(exc)
    text = _first_line(exc)
    # "WideHTTPConnection(host='h', port=1): Failed to establish a new connection: [Errno 111] Connection refused"
    return text.split("): ", 1)[1] if "): " in text else text


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


class Api:
    """GET/stream/POST/DELETE raw JSON with the official client's auth and connection pool."""

    def __init__(self, api_client: client.ApiClient, timeout: float = 10.0) -> None:
        self.client = api_client
        self.timeout = timeout

    def _request(self, method: str, path: str, query: list[tuple[str, Any]] | None = None,
                 body: Any = None, timeout: float | tuple[float, float] | None = None,
                 accept: str = "application/json") -> urllib3.BaseHTTPResponse:
        headers = {"Accept": accept}
        if body is not None:
            headers["Content-Type"] = "application/json"
        _method, url, hdrs, _body, _post = self.client.param_serialize(
            method=method, resource_path=path, query_params=query or [], header_params=headers,
            body=body, auth_settings=["BearerToken"])
        try:
            resp = self.client.call_api(method, url, header_params=hdrs, body=_body,
                                        _request_timeout=timeout or self.timeout)
        except urllib3.exceptions.HTTPError as exc:
            if _broken_off(exc):
                raise BrokenAnswer(f"{self.client.configuration.host}: {_broken_reason(exc)}") from None
            raise Unreachable(f"{self.client.configuration.host}: {reason_of(exc)}") from None
        except OSError as exc:
            raise Unreachable(f"{self.client.configuration.host}: {_first_line(exc)}") from None
        raw: urllib3.BaseHTTPResponse = resp.response
        if not 200 <= raw.status < 300:
            data = raw.read()
            raw.release_conn()
            raise status_error(raw.status, data, raw.headers.get("Retry-After"))
        return raw

    def get(self, path: str, query: list[tuple[str, Any]] | None = None, timeout: float | None = None) -> Any:
        raw = self._request("GET", path, query, timeout=timeout)
        try:
            return _json(self._body(raw, path), self.client.configuration.host, raw.headers.get("Content-Type"))
        finally:
            raw.release_conn()

    def get_bytes(self, path: str, query: list[tuple[str, Any]] | None = None, timeout: float | None = None) -> bytes:
        raw = self._request("GET", path, query, timeout=timeout, accept="*/*")
        try:
            data = self._body(raw, path)
            content_type = raw.headers.get("Content-Type") or ""
            if "html" in content_type:
                raise BrokenAnswer(f"{path}: answered {content_type}, not JSON (a proxy's login or error page?)")
            return data
        finally:
            raw.release_conn()

    def _body(self, raw: urllib3.BaseHTTPResponse, path: str) -> bytes:
        """The whole body, or BrokenAnswer when the connection drops before it is all there."""
        try:
            return bytes(raw.read())
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise BrokenAnswer(f"{path}: {_broken_reason(exc)}") from None

    def post(self, path: str, body: Any) -> Any:
        raw = self._request("POST", path, body=body)
        try:
            return _json(raw.read(), self.client.configuration.host, raw.headers.get("Content-Type"))
        finally:
            raw.release_conn()

    def delete(self, path: str, body: Any = None) -> Any:
        raw = self._request("DELETE", path, body=body)
        try:
            return orjson.loads(raw.read() or b"{}")
        finally:
            raw.release_conn()

    def stream(self, path: str, query: list[tuple[str, Any]], read_timeout: float,
               keep_blank: bool = False, on_open: Callable[[], None] | None = None) -> Iterator[bytes]:
        """Lines of a chunked response (watch events, followed logs). Closes the connection when done.

        Watch streams skip blank lines; logs keep them (`keep_blank`): nvidia-smi's tables need them.
        """
        raw = self._request("GET", path, query, timeout=(self.timeout, read_timeout), accept="*/*")
        if "html" in (raw.headers.get("Content-Type") or ""):
            raw.release_conn()
            raise BrokenAnswer(f"stream {path}: answered {raw.headers.get('Content-Type')}, not a stream "
                               "(a proxy's login or error page?)")
        if on_open is not None:
            on_open()  # the server accepted the request (200): what follows is the stream itself
        buf = b""
        try:
            for chunk in raw.stream(65536, decode_content=True):
                buf += chunk
                while True:
                    nl = buf.find(b"\n")
                    if nl < 0:
                        break
                    line, buf = buf[:nl], buf[nl + 1:]
                    if keep_blank or line.strip():
                        yield line
            if buf.strip():
                yield buf
        except (urllib3.exceptions.HTTPError, OSError) as exc:
            raise Unreachable(f"stream {path}: {_first_line(exc)}") from None
        finally:
            raw.release_conn()
            raw.close()


def _broken_off(exc: BaseException) -> bool:
    """A connection the server closed or reset mid-request (not one that could not be opened)."""
    inner = innermost(exc)
    return isinstance(exc, urllib3.exceptions.ProtocolError) or isinstance(
        inner, (ConnectionResetError, ConnectionAbortedError, http.client.RemoteDisconnected,
                http.client.IncompleteRead, urllib3.exceptions.ProtocolError))


def _broken_reason(exc: BaseException) -> str:
    """What broke, in words (urllib3 nests the cause in tuples: `('Connection aborted.', RemoteDisconnected(...))`)."""
    seen: list[BaseException] = [exc]
    while len(seen) < 8:
        cur = seen[-1]
        nxt = getattr(cur, "reason", None)
        if not isinstance(nxt, BaseException):
            nxt = next((a for a in cur.args if isinstance(a, BaseException)), None)
        if nxt is None:
            break
        seen.append(nxt)
    for e in reversed(seen):
        if isinstance(e, http.client.IncompleteRead):
            return (f"the answer broke off after {len(e.partial)} bytes"
                    + (f" ({e.expected} more expected)" if e.expected else ""))
        if isinstance(e, http.client.RemoteDisconnected):
            return "the server closed the connection without an answer"
        if isinstance(e, (ConnectionResetError, ConnectionAbortedError)):
            return "the connection was reset"
    return f"the answer broke off ({reason_of(exc)})"


def _json(data: bytes, host: str, content_type: str | None) -> Any:
    """A 200 that is not JSON (an auth proxy's login page, a wrong server URL) is not a Kubernetes API."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        raise BrokenAnswer(f"{host}: answered {content_type or 'a body'} that is not JSON: not a Kubernetes API "
                          "server (a login page of an auth proxy? check the kubeconfig server URL)") from None


def status_error(code: int, data: bytes, retry_after: str | None = None) -> KubeError:
    if code == 401:
        return Unauthorized(401, "Unauthorized", "the API server rejected the credentials (401 Unauthorized): "
                            "refresh the token or check the kubeconfig user")
    reason, message = "", ""
    wait = float(retry_after) if retry_after and retry_after.strip().isdigit() else None
    try:
        body = orjson.loads(data)
        if isinstance(body, dict):
            reason, message = str(body.get("reason") or ""), str(body.get("message") or "")
            details = body.get("details")
            if wait is None and isinstance(details, dict) and isinstance(details.get("retryAfterSeconds"), int):
                wait = float(details["retryAfterSeconds"])
    except orjson.JSONDecodeError:
        message = data[:200].decode("utf-8", "replace")
    return KubeError(code, reason or {403: "Forbidden", 404: "NotFound", 410: "Expired"}.get(code, "Error"),
                     message, wait)
