"""Kubernetes `Status` error bodies and the exception that carries one to the HTTP layer."""

from __future__ import annotations

from typing import Any

import orjson

from gputui.sim.kinds import KindInfo

_REASONS = {
    400: "BadRequest",
    401: "Unauthorized",
    403: "Forbidden",
    404: "NotFound",
    405: "MethodNotAllowed",
    409: "AlreadyExists",
    410: "Expired",
    415: "UnsupportedMediaType",
    422: "Invalid",
    429: "TooManyRequests",
    500: "InternalError",
    503: "ServiceUnavailable",
    504: "Timeout",
}


def status_body(
    code: int,
    message: str,
    reason: str | None = None,
    details: dict[str, Any] | None = None,
    metadata: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A `v1 Status` failure object as the apiserver writes it."""
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": metadata or {},
        "status": "Failure",
        "message": message,
        "reason": reason if reason is not None else _REASONS.get(code, ""),
    }
    if details is not None:
        body["details"] = details
    body["code"] = code
    return body


class ApiError(Exception):
    """Raised anywhere in the simulator; the server turns it into a Status response."""

    def __init__(
        self,
        code: int,
        message: str,
        reason: str | None = None,
        details: dict[str, Any] | None = None,
        headers: dict[str, str] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.code = code
        self.body = status_body(code, message, reason, details, metadata)
        self.headers = headers or {}

    def to_bytes(self) -> bytes:
        return orjson.dumps(self.body)


def _details(info: KindInfo, name: str | None) -> dict[str, Any]:
    d: dict[str, Any] = {}
    if name:
        d["name"] = name
    if info.group:
        d["group"] = info.group
    d["kind"] = info.plural
    return d


def not_found(info: KindInfo, name: str) -> ApiError:
    return ApiError(404, f'{info.resource} "{name}" not found', "NotFound", _details(info, name))


def already_exists(info: KindInfo, name: str) -> ApiError:
    return ApiError(409, f'{info.resource} "{name}" already exists', "AlreadyExists", _details(info, name))


def conflict(info: KindInfo, name: str) -> ApiError:
    return ApiError(
        409,
        f'Operation cannot be fulfilled on {info.resource} "{name}": the object has been modified; '
        "please apply your changes to the latest version and try again",
        "Conflict",
        _details(info, name),
    )


def forbidden(
    info: KindInfo, verb: str, user: str, namespace: str | None, name: str | None = None, subresource: str = ""
) -> ApiError:
    """403 worded exactly like the RBAC authorizer's denial."""
    resource = f"{info.plural}/{subresource}" if subresource else info.plural
    scope = f'in the namespace "{namespace}"' if namespace else "at the cluster scope"
    who = f'{info.resource} "{name}"' if name else info.resource
    message = (
        f'{who} is forbidden: User "{user}" cannot {verb} resource "{resource}" '
        f'in API group "{info.group}" {scope}'
    )
    return ApiError(403, message, "Forbidden", _details(info, name))


def resource_not_found() -> ApiError:
    """What the apiserver's not-found handler answers for an unknown path or uninstalled CRD."""
    return ApiError(404, "the server could not find the requested resource", "NotFound", {})


def too_old(rv: int, oldest: int) -> ApiError:
    return ApiError(410, f"too old resource version: {rv} ({oldest})", "Expired")


def bad_request(message: str) -> ApiError:
    return ApiError(400, message, "BadRequest")
