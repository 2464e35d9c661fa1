"""Lifecycle of gputui debug pods: scheduled -> running -> completed, or stuck the way real nodes get stuck.

What happens on each node comes from the scenario's `spec.nvidiaSmi` entry for the pod's node
(key "default" for the rest): `capture`, `exitCode`, `output`, optional `state`
(ImagePullBackOff | ErrImagePull | CreateContainerError | Unschedulable | Running = hangs |
StartError = the runtime's hook failed as the container started | SandboxError = the node's containerd has no
handler for the pod's RuntimeClass, FailedCreatePodSandBox) and `message`; `startDelay`
(seconds in ContainerCreating, a slow image pull); `killed` (a container termination reason such as
OOMKilled: the log stops before nvidia-smi's first output and the pod fails with exit 137).
A `capture` of one GPU is shown as many GPUs as the node has (its GPU count labels, or instance type);
`lostGpus` (indexes that fell off the bus) and `remapPendingGpus` put faults on some of them;
`queryGpuError` makes the `--query-gpu` section print that text and exit 2 (only the table is read);
`unreadableGpus` print no health value (N/A, [Insufficient Permissions]).
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from gputui.sim.kinds import KINDS
from gputui.sim.logs import LogBook
from gputui.sim.store import Store, now_rfc3339

MANAGED_BY = "app.kubernetes.io/managed-by"
DEBUG_NODE_LABEL = "gputui.dev/debug-node"
POD = KINDS.resolve("Pod")
NODE = KINDS.resolve("Node")
EVENT = KINDS.resolve("Event")
PULL_STATES = ("ImagePullBackOff", "ErrImagePull")
STUCK_STATES = (*PULL_STATES, "CreateContainerError", "SandboxError", "Unschedulable", "Running")
_START_ERROR = ("failed to create containerd task: failed to create shim task: OCI runtime create failed: runc create "
                "failed: unable to start container process: error during container init: error running prestart "
                "hook #0: exit status 1, stdout: , stderr: Auto-detected mode as 'legacy'\nnvidia-container-cli: "
                "initialization error: nvml error: driver not loaded: unknown")

_CREATE_ERROR = ('failed to generate container "{cid}" spec: failed to generate spec: path "/run/nvidia/driver" '
                 'is mounted on "/run/nvidia/driver" but it is not a shared or slave mount')
_PULL_ERROR = ('failed to pull and unpack image "{ref}": failed to resolve reference "{ref}": failed to do request: '
               'Head "https://registry-1.docker.io/v2/{repo}/manifests/{tag}": dial tcp: lookup registry-1.docker.io: '
               "i/o timeout")
# kubelet's words when containerd has no runtime for the RuntimeClass's handler (a GPU Operator whose toolkit never
# configured containerd: driver or toolkit down, the validator-stuck scenario's events).
_SANDBOX_ERROR = ('Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox runtime: '
                  'no runtime for "{handler}" is configured')
_DEADLINE = "Pod was active on the node longer than the specified deadline"
_event_seq = itertools.count()
log = logging.getLogger(__name__)


def debug_log(entry: dict[str, Any], exit_code: int) -> str:
    """The debug pod's log, from gputui.debugpod.capture when available (written by another module).

    An entry without capture, output or exit code (e.g. `state: Running`, nvidia-smi hanging) has printed
    nothing yet, so its log is empty.
    """
    output = entry.get("output")
    capture = entry.get("capture")
    if capture is None and output is None and exit_code == 0:
        return ""
    try:
        from gputui.debugpod.capture import debug_log_for
    except ImportError:
        return str(output or "")
    kwargs: dict[str, Any] = {"exit_code": exit_code, "output": output}
    if entry.get("phase"):
        kwargs["phase"] = entry["phase"]
    if capture is not None and output is None and exit_code == 0:
        kwargs.update(gpus=int(entry.get("gpus") or 1), lost=tuple(entry.get("lostGpus") or ()),
                      remap_pending=tuple(entry.get("remapPendingGpus") or ()))
        if entry.get("queryGpuError"):
            kwargs["query_gpu_error"] = str(entry["queryGpuError"])
        if entry.get("unreadableGpus"):
            kwargs["unreadable"] = tuple(entry["unreadableGpus"])
    try:
        return debug_log_for(capture, **kwargs)
    except (ValueError, KeyError, OSError) as exc:
        log.warning("debug pod log for %r failed: %s", entry, exc)
        return str(output or "")


def _hex(*parts: str, n: int = 64) -> str:
    return hashlib.sha256("/".join(parts).encode()).hexdigest()[:n]


def _full_image(image: str) -> tuple[str, str, str]:
    """`nvidia/cuda:12.4.1-base-ubuntu22.04` -> docker.io reference, repo path, tag."""
    name, _, tag = image.rpartition(":") if ":" in image.split("/")[-1] else (image, "", "latest")
    first = name.split("/")[0]
    if "." in first or ":" in first or first == "localhost":
        return f"{name}:{tag}", name.split("/", 1)[1] if "/" in name else name, tag
    repo = name if "/" in name else f"library/{name}"
    return f"docker.io/{repo}:{tag}", repo, tag


def _cond(type_: str, status: str, ts: str, reason: str | None = None, message: str | None = None) -> dict[str, Any]:
    c: dict[str, Any] = {"type": type_, "status": status, "lastProbeTime": None, "lastTransitionTime": ts}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


class DebugPods:
    """Watches pod creation and drives gputui debug pods through their phases on the event loop."""

    def __init__(self, store: Store, logs: LogBook, nvidia_smi: dict[str, dict[str, Any]] | None = None,
                 *, delay: float = 0.3) -> None:
        self.store = store
        self.logs = logs
        self.nvidia_smi: dict[str, dict[str, Any]] = dict(nvidia_smi or {})
        self.delay = delay
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: dict[tuple[str, str], asyncio.Task[None]] = {}
        self._pending: list[dict[str, Any]] = []
        store.add_hook("Pod", self._on_pod)

    # ---- wiring --------------------------------------------------------------------------------

    def attach(self, loop: asyncio.AbstractEventLoop) -> None:
        """Start driving pods on `loop` (pods created before the server started are picked up now)."""
        self._loop = loop
        pending, self._pending = self._pending, []
        for pod in pending:
            self._start(pod)

    def detach(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        self._tasks.clear()
        self._loop = None

    def entry_for(self, node: str) -> dict[str, Any]:
        return dict(self.nvidia_smi.get(node) or self.nvidia_smi.get("default") or {})

    def _on_pod(self, type_: str, pod: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        key = (md.get("namespace", ""), md.get("name", ""))
        if type_ == "DELETED":
            task = self._tasks.pop(key, None)
            if task is not None:
                task.cancel()
            return
        if type_ != "ADDED" or (md.get("labels") or {}).get(MANAGED_BY) != "gputui":
            return
        if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed", "Running"):
            return
        if self._loop is None:
            self._pending.append(pod)
        else:
            self._start(pod)

    def _start(self, pod: dict[str, Any]) -> None:
        assert self._loop is not None
        md = pod["metadata"]
        key = (md["namespace"], md["name"])
        self._tasks[key] = self._loop.create_task(self._run(key, pod))

    # ---- lifecycle -----------------------------------------------------------------------------

    def _target_node(self, pod: dict[str, Any]) -> str:
        spec = pod.get("spec") or {}
        labels = pod["metadata"].get("labels") or {}
        return (spec.get("nodeName") or labels.get(DEBUG_NODE_LABEL)
                or (spec.get("nodeSelector") or {}).get("kubernetes.io/hostname") or "")

    def _set_status(self, key: tuple[str, str], change: Callable[[dict[str, Any]], None]) -> dict[str, Any] | None:
        if self.store.get_entry(POD, key[0], key[1]) is None:
            return None

        def apply(obj: dict[str, Any]) -> dict[str, Any]:
            status = obj.setdefault("status", {})
            change(status)
            return obj

        return self.store.update(POD, key[0], key[1], apply)

    def _event(self, pod: dict[str, Any], type_: str, reason: str, message: str, component: str = "kubelet",
               host: str | None = None, container: str | None = None) -> None:
        md = pod["metadata"]
        now = now_rfc3339()
        involved: dict[str, Any] = {"kind": "Pod", "namespace": md["namespace"], "name": md["name"],
                                    "uid": md.get("uid"), "apiVersion": "v1",
                                    "resourceVersion": md.get("resourceVersion")}
        if container:
            involved["fieldPath"] = f"spec.containers{{{container}}}"
        source: dict[str, Any] = {"component": component}
        if host:
            source["host"] = host
        name = f"{md['name']}.{time.time_ns() + next(_event_seq):x}"
        self.store.create({
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": name, "namespace": md["namespace"], "creationTimestamp": now},
            "involvedObject": involved, "reason": reason, "message": message, "source": source,
            "firstTimestamp": now, "lastTimestamp": now, "count": 1, "type": type_, "eventTime": None,
            "reportingComponent": component, "reportingInstance": host or "",
        }, EVENT)

    async def _sleep(self, fraction: float = 1 / 3) -> None:
        await asyncio.sleep(self.delay * fraction)

    async def _run(self, key: tuple[str, str], pod: dict[str, Any]) -> None:
        try:
            stuck_since = await self._lifecycle(key, pod)
            deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
            if stuck_since is not None and deadline:
                await asyncio.sleep(max(0.0, float(deadline) - (time.monotonic() - stuck_since)))
                self._deadline_exceeded(key)
        except asyncio.CancelledError:
            pass
        except Exception:  # noqa: BLE001 - a simulator bug must be loud but not kill the loop
            log.exception("debug pod %s/%s lifecycle failed", *key)
        finally:
            self._tasks.pop(key, None)

    async def _lifecycle(self, key: tuple[str, str], pod: dict[str, Any]) -> float | None:
        """Drive the pod; returns when it got stuck on a node (for activeDeadlineSeconds), else None."""
        spec = pod.get("spec") or {}
        containers = spec.get("containers") or [{"name": "main", "image": "busybox"}]
        node_name = self._target_node(pod)
        node = self.store.get(NODE, None, node_name) if node_name else None
        entry = self.entry_for(node_name)
        if node is not None and "gpus" not in entry:
            from diagnostics.facts.gpu_count import expected_gpus

            expected = expected_gpus((node.get("metadata") or {}).get("labels") or {})
            entry["gpus"] = expected.count if expected else 1
        state = str(entry.get("state") or "")
        exit_code = int(entry.get("exitCode") or 0)
        started_mono = time.monotonic()

        await self._sleep()
        if node is None or state == "Unschedulable":
            self._unschedulable(key, pod, node, entry)
            return None  # never reaches a kubelet, so activeDeadlineSeconds never starts
        host_ip = next((a.get("address") for a in (node.get("status") or {}).get("addresses") or []
                        if a.get("type") == "InternalIP"), "10.0.0.1")
        pod_ip = f"10.0.{int(_hex(*key, n=2), 16) % 250 + 1}.{int(_hex(key[1], 'ip', n=2), 16) % 250 + 2}"
        scheduled_at = now_rfc3339()

        def scheduled(status: dict[str, Any]) -> None:
            status.update({
                "phase": "Pending", "hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "startTime": scheduled_at,
                "conditions": [
                    _cond("PodReadyToStartContainers", "False", scheduled_at),
                    _cond("Initialized", "True", scheduled_at),
                    _cond("Ready", "False", scheduled_at, "ContainersNotReady",
                          f"containers with unready status: [{' '.join(c['name'] for c in containers)}]"),
                    _cond("ContainersReady", "False", scheduled_at, "ContainersNotReady",
                          f"containers with unready status: [{' '.join(c['name'] for c in containers)}]"),
                    _cond("PodScheduled", "True", scheduled_at),
                ],
                "containerStatuses": [self._cstatus(c, {"waiting": {"reason": "ContainerCreating"}}) for c in containers],
            })

        if self._set_status(key, scheduled) is None:
            return None
        await self._sleep()
        if entry.get("startDelay"):
            await asyncio.sleep(float(entry["startDelay"]))
        first = containers[0]
        if state in PULL_STATES:
            await self._pull_failure(key, pod, node_name, containers, state, entry)
            return started_mono
        if state == "CreateContainerError":
            msg = entry.get("message") or _CREATE_ERROR.format(cid=_hex(*key, first["name"]))
            self._set_status(key, lambda s: s.update(containerStatuses=[
                self._cstatus(c, {"waiting": {"reason": "CreateContainerError", "message": msg}}) for c in containers]))
            self._event(pod, "Normal", "Pulled", f'Container image "{first.get("image")}" already present on machine',
                        host=node_name, container=first["name"])
            self._event(pod, "Warning", "Failed", f"Error: {msg}", host=node_name, container=first["name"])
            return started_mono

        if state == "SandboxError":  # no container is ever created: the pod stays ContainerCreating
            handler = str(spec.get("runtimeClassName") or "nvidia")
            self._event(pod, "Warning", "FailedCreatePodSandBox",
                        str(entry.get("message") or _SANDBOX_ERROR.format(handler=handler)), host=node_name)
            return started_mono
        if state == "StartError":
            self._terminated(key, containers, scheduled_at, now_rfc3339(), 128, "StartError",
                             str(entry.get("message") or _START_ERROR))
            self._event(pod, "Warning", "Failed", f"Error: {entry.get('message') or _START_ERROR}", host=node_name,
                        container=first["name"])
            self.logs.end(*key)
            return None
        running_at = now_rfc3339()
        text = debug_log(entry, exit_code)
        if entry.get("killed"):  # killed before nvidia-smi printed anything: only the script's first lines
            text = "".join(text.splitlines(keepends=True)[:3])
        self.logs.set(key[0], key[1], text, default_ts=datetime.now(timezone.utc))

        def running(status: dict[str, Any]) -> None:
            status.update({
                "phase": "Running", "podIP": pod_ip, "podIPs": [{"ip": pod_ip}],
                "conditions": [
                    _cond("PodReadyToStartContainers", "True", running_at),
                    _cond("Initialized", "True", scheduled_at),
                    _cond("Ready", "True", running_at),
                    _cond("ContainersReady", "True", running_at),
                    _cond("PodScheduled", "True", scheduled_at),
                ],
                "containerStatuses": [self._cstatus(c, {"running": {"startedAt": running_at}}, ready=True, key=key)
                                      for c in containers],
            })

        if self._set_status(key, running) is None:
            return None
        self._event(pod, "Normal", "Pulled", f'Container image "{first.get("image")}" already present on machine',
                    host=node_name, container=first["name"])
        self._event(pod, "Normal", "Created", f"Created container: {first['name']}", host=node_name,
                    container=first["name"])
        self._event(pod, "Normal", "Started", f"Started container {first['name']}", host=node_name,
                    container=first["name"])
        if state == "Running":
            return started_mono  # nvidia-smi hangs (GPU fell off the bus): never completes by itself
        await self._sleep()
        if entry.get("killed"):
            exit_code, why = 137, str(entry["killed"])
        else:
            why = "Error" if exit_code != 0 else "Completed"
        self._terminated(key, containers, scheduled_at, running_at, exit_code, why)
        self.logs.end(*key)
        return None

    def _terminated(self, key: tuple[str, str], containers: list[dict[str, Any]], scheduled_at: str, started_at: str,
                    exit_code: int, why: str, message: str = "") -> None:
        finished_at = now_rfc3339()
        failed = exit_code != 0
        reason = "PodFailed" if failed else "PodCompleted"
        body: dict[str, Any] = {"exitCode": exit_code, "reason": why, "startedAt": started_at,
                                "finishedAt": finished_at}
        if message:
            body["message"] = message

        def terminated(status: dict[str, Any]) -> None:
            status.update({
                "phase": "Failed" if failed else "Succeeded",
                "conditions": [
                    _cond("PodReadyToStartContainers", "False", finished_at),
                    _cond("Initialized", "True", scheduled_at, reason),
                    _cond("Ready", "False", finished_at, reason),
                    _cond("ContainersReady", "False", finished_at, reason),
                    _cond("PodScheduled", "True", scheduled_at),
                ],
                "containerStatuses": [
                    self._cstatus(c, {"terminated": {**body, "containerID": self._cid(key, c["name"])}}, key=key)
                    for c in containers],
            })

        self._set_status(key, terminated)

    def _cid(self, key: tuple[str, str], container: str) -> str:
        return "containerd://" + _hex(*key, container)

    def _cstatus(self, c: dict[str, Any], state: dict[str, Any], ready: bool = False,
                 key: tuple[str, str] | None = None) -> dict[str, Any]:
        image = c.get("image", "")
        out: dict[str, Any] = {"name": c["name"], "state": state, "lastState": {}, "ready": ready,
                               "restartCount": 0, "image": image, "imageID": "",
                               "started": "running" in state}
        if key is not None:
            ref, repo, _ = _full_image(image)
            out["imageID"] = f"{ref.rsplit(':', 1)[0]}@sha256:{_hex(repo)}"
            out["containerID"] = self._cid(key, c["name"])
        return out

    async def _pull_failure(self, key: tuple[str, str], pod: dict[str, Any], node: str,
                            containers: list[dict[str, Any]], state: str, entry: dict[str, Any]) -> None:
        first = containers[0]
        image = first.get("image", "")
        ref, repo, tag = _full_image(image)
        pull_msg = entry.get("message") or _PULL_ERROR.format(ref=ref, repo=repo, tag=tag)
        self._event(pod, "Normal", "Pulling", f'Pulling image "{image}"', host=node, container=first["name"])
        self._set_status(key, lambda s: s.update(containerStatuses=[
            self._cstatus(c, {"waiting": {"reason": "ErrImagePull", "message": pull_msg}}) for c in containers]))
        self._event(pod, "Warning", "Failed", f'Failed to pull image "{image}": {pull_msg}', host=node,
                    container=first["name"])
        self._event(pod, "Warning", "Failed", "Error: ErrImagePull", host=node, container=first["name"])
        if state != "ImagePullBackOff":
            return
        await self._sleep()
        backoff = f'Back-off pulling image "{image}"'
        self._set_status(key, lambda s: s.update(containerStatuses=[
            self._cstatus(c, {"waiting": {"reason": "ImagePullBackOff", "message": backoff}}) for c in containers]))
        self._event(pod, "Normal", "BackOff", backoff, host=node, container=first["name"])
        self._event(pod, "Warning", "Failed", "Error: ImagePullBackOff", host=node, container=first["name"])

    def _unschedulable(self, key: tuple[str, str], pod: dict[str, Any], node: dict[str, Any] | None,
                       entry: dict[str, Any]) -> None:
        total = self.store.count(NODE)
        if entry.get("message"):
            message = str(entry["message"])
        elif node is not None:
            taint = next((t for t in (node.get("spec") or {}).get("taints") or []
                          if t.get("effect") in ("NoSchedule", "NoExecute")),
                         {"key": "node.kubernetes.io/unreachable", "value": ""})
            reasons = [f"1 node(s) had untolerated taint {{{taint.get('key')}: {taint.get('value') or ''}}}"]
            if total > 1:
                reasons.append(f"{total - 1} node(s) didn't match Pod's node affinity/selector")
            message = (f"0/{total} nodes are available: {', '.join(sorted(reasons))}. preemption: 0/{total} nodes "
                       f"are available: {total} Preemption is not helpful for scheduling.")
        else:
            message = (f"0/{total} nodes are available: {total} node(s) didn't match Pod's node affinity/selector. "
                       f"preemption: 0/{total} nodes are available: {total} Preemption is not helpful for scheduling.")
        at = now_rfc3339()
        self._set_status(key, lambda s: s.update(phase="Pending", conditions=[
            _cond("PodScheduled", "False", at, "Unschedulable", message)]))
        self._event(pod, "Warning", "FailedScheduling", message, component="default-scheduler")

    def _deadline_exceeded(self, key: tuple[str, str]) -> None:
        at = now_rfc3339()

        def failed(status: dict[str, Any]) -> None:
            status.update(phase="Failed", reason="DeadlineExceeded", message=_DEADLINE)
            for cs in status.get("containerStatuses") or []:
                state = cs.get("state") or {}
                if "running" in state:
                    cs["state"] = {"terminated": {"exitCode": 137, "reason": "Error",
                                                  "startedAt": state["running"].get("startedAt"), "finishedAt": at}}
                    cs["ready"] = False
                    cs["started"] = False
            for c in status.get("conditions") or []:
                if c.get("type") in ("Ready", "ContainersReady") and c.get("status") == "True":
                    c.update(status="False", reason="PodFailed", lastTransitionTime=at)

        pod = self._set_status(key, failed)
        if pod is not None:
            self._event(pod, "Warning", "DeadlineExceeded", _DEADLINE, host=(pod.get("spec") or {}).get("nodeName"))
            self.logs.end(*key)
