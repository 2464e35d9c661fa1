"""GET pods/{name}/log: stored lines filtered like the kubelet does, streamed with follow=true."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

from aiohttp import web

from gputui.sim import status as st
from gputui.sim.kinds import KINDS
from gputui.sim.logs import LogBook, LogLine, format_rfc3339_nano, parse_time
from gputui.sim.params import flag, int_param

POD = KINDS.resolve("Pod")
TEXT = "text/plain"  # the official client refuses a log body of any other type


async def serve_log(request: web.Request, pod: dict[str, Any], logs: LogBook) -> web.StreamResponse:
    """Answer one log request for `pod` (already fetched, RBAC already checked)."""
    q = request.query
    ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
    container = pick_container(pod, q.get("container"))
    timestamps = flag(q.get("timestamps"))
    if flag(q.get("previous")):
        # what the previous (crashed) run printed: scenario key "ns/pod/container/previous"
        if not ((container_status(pod, container) or {}).get("lastState") or {}).get("terminated"):
            raise st.bad_request(f'previous terminated container "{container}" in pod "{name}" not found')
        lines = logs.lines(ns, name, f"{container}/previous", exact=True)
        return web.Response(body=render(filter_lines(lines, q), timestamps), content_type=TEXT)
    check_ready(pod, container, logs)
    body = render(filter_lines(logs.lines(ns, name, container), q), timestamps)
    limit_bytes = int_param(q, "limitBytes")
    if limit_bytes is not None and limit_bytes > 0:
        body = body[:limit_bytes]
    if not flag(q.get("follow")) or terminated(pod, container):
        return web.Response(body=body, content_type=TEXT)
    resp = web.StreamResponse(status=200, headers={"Content-Type": TEXT})
    resp.enable_chunked_encoding()
    follower = logs.follow(ns, name, container)
    try:
        await resp.prepare(request)
        if body:
            await resp.write(body)
        while True:
            follower.wakeup.clear()
            if follower.buf:
                more = list(follower.buf)
                follower.buf.clear()
                await resp.write(render(more, timestamps))
                continue
            if follower.ended:
                break
            await follower.wakeup.wait()
    except ConnectionError:
        pass
    finally:
        logs.unfollow(follower)
    return resp


def render(lines: list[LogLine], timestamps: bool) -> bytes:
    if timestamps:
        return "".join(f"{format_rfc3339_nano(ln.ts)} {ln.text}" for ln in lines).encode()
    return "".join(ln.text for ln in lines).encode()


def filter_lines(lines: list[LogLine], q: Any) -> list[LogLine]:
    """sinceSeconds / sinceTime by each line's own time, then tailLines."""
    since_seconds = int_param(q, "sinceSeconds")
    since_time = parse_time(q["sinceTime"]) if q.get("sinceTime") else None
    if since_seconds is not None:
        since_time = datetime.now(timezone.utc) - timedelta(seconds=since_seconds)
    if since_time is not None:
        lines = [ln for ln in lines if ln.ts >= since_time]
    tail = int_param(q, "tailLines")
    if tail is not None and tail >= 0:
        lines = lines[-tail:] if tail else []
    return lines


def pick_container(pod: dict[str, Any], wanted: str | None) -> str:
    spec = pod.get("spec") or {}
    names = [c.get("name") for c in spec.get("containers") or []]
    others = [c.get("name") for key in ("initContainers", "ephemeralContainers") for c in spec.get(key) or []]
    name = pod["metadata"]["name"]
    if wanted:
        if wanted not in names + others:
            raise st.bad_request(f"container {wanted} is not valid for pod {name}")
        return wanted
    if len(names) == 1:
        return str(names[0])
    if not names:
        raise st.bad_request(f"a container name must be specified for pod {name}")
    raise st.bad_request(f"a container name must be specified for pod {name}, choose one of: [{' '.join(names)}]")


def container_status(pod: dict[str, Any], container: str) -> dict[str, Any] | None:
    status = pod.get("status") or {}
    for key in ("containerStatuses", "initContainerStatuses", "ephemeralContainerStatuses"):
        for cs in status.get(key) or []:
            if cs.get("name") == container:
                return cs
    return None


def check_ready(pod: dict[str, Any], container: str, logs: LogBook) -> None:
    """The apiserver's and kubelet's answers for containers that have not started yet (400)."""
    md = pod["metadata"]
    if not (pod.get("spec") or {}).get("nodeName") and (pod.get("status") or {}).get("phase") == "Pending":
        if not logs.has(md["namespace"], md["name"], container):
            raise st.bad_request(f"pod {md['name']} does not have a host assigned")
    cs = container_status(pod, container)
    if cs is None:
        return
    waiting = (cs.get("state") or {}).get("waiting")
    if waiting is not None and not (cs.get("lastState") or {}).get("terminated"):
        reason = waiting.get("reason") or "ContainerCreating"
        text = {"ImagePullBackOff": "trying and failing to pull image",
                "ErrImagePull": "image can't be pulled"}.get(reason, reason)
        raise st.bad_request(f'container "{container}" in pod "{md["name"]}" is waiting to start: {text}')


def terminated(pod: dict[str, Any], container: str) -> bool:
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return True
    cs = container_status(pod, container)
    return bool(cs and "terminated" in (cs.get("state") or {}))
