"""`run_debug`: create the nvidia-smi pod on a node, stream its log, parse it, and always delete the pod.

Used by `gputui debug node/NAME` and by the TUI's `d` (in a thread worker, with `on_output` and `cancel`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from datetime import datetime, timezone
from typing import Any

from diagnostics.facts.gpu_count import expected_gpus
from gputui.debugpod import failures, launch
from gputui.debugpod.failures import DebugFailure
from gputui.debugpod.health import count_unknown_flag, health_flags
from gputui.debugpod.launch import DebugUsageError
from gputui.debugpod.nvidia_smi import parse
from gputui.debugpod.pod_spec import CONTAINER, DEFAULT_IMAGE, PodOptions, build_pod, debug_pod_manifest, pod_name
from gputui.debugpod.render import display_line
from gputui.debugpod.result import DEBUG_POD_FAILED, DebugResult
from gputui.debugpod.signals import cleanup_shielded
from gputui.kube.api import Api, KubeError, Unreachable

__all__ = [
    "DEBUG_POD_FAILED",
    "DEFAULT_IMAGE",
    "DebugResult",
    "DebugUsageError",
    "debug_pod_manifest",
    "run_debug",
]

OutputFn = Callable[[str], None]
END_MARKER = "=== gputui:end ==="
"""The script's last line (capture.py protocol)."""
_QUIET_READ = 0.5
"""Longest blocking read on the log stream before gputui checks the pod and `cancel` again."""


class _Cancelled(Exception):
    pass


class _Run:
    """One debug pod's lifecycle; `run_debug` wraps it so cleanup is guaranteed."""

    def __init__(self, api: Api, node: str, namespace: str, options: PodOptions, node_obj: dict[str, Any] | None,
                 on_output: OutputFn | None, on_status: OutputFn | None, cancel: threading.Event | None) -> None:
        self.api = api
        self.node = node
        self.namespace = namespace
        self.options = options
        self.node_obj = node_obj
        self.on_output = on_output
        self.on_status = on_status
        self.cancel = cancel
        self.name = pod_name(node)
        self.created = False
        self.phase: str | None = None
        self.lines: list[str] = []
        """Non-blank log lines as streamed (and shown)."""
        self.full_log: str | None = None
        self.started = time.monotonic()
        self.deadline = self.started + options.timeout
        self.running_since: float | None = None
        """When gputui first saw the container running (a timeout before nvidia-smi had time is not a hang)."""
        self.pod: dict[str, Any] | None = None
        """The pod as last read: how it ended, when the log alone does not say."""

    # ---- helpers ----------------------------------------------------------------------------

    def status(self, message: str) -> None:
        if self.on_status is not None:
            self.on_status(message)

    def _check_cancel(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise _Cancelled()

    def _sleep(self, seconds: float) -> None:
        if self.cancel is not None:
            if self.cancel.wait(seconds):
                raise _Cancelled()
        else:
            time.sleep(seconds)

    def _gone(self) -> DebugFailure:
        return DebugFailure("pod-deleted", "pod", f"the debug pod {self.namespace}/{self.name} disappeared",
                            "Something else deleted it (`gputui debug --cleanup` elsewhere, an operator, or the "
                            "node's garbage collection).", "NotFound")

    def _failure(self, pod: dict[str, Any] | None, events: list[dict[str, Any]]) -> DebugFailure | None:
        if pod is None:
            return None
        return failures.from_pod(pod, events, node=self.node, image=self.options.image, gpus=self.options.gpus,
                                 runtime_class=self.options.runtime_class)

    # ---- stages -----------------------------------------------------------------------------

    def create(self) -> DebugFailure | None:
        pod = build_pod(self.node, self.namespace, self.name, self.options)
        route = f"RuntimeClass {self.options.runtime_class}" if self.options.runtime_class else "no RuntimeClass"
        if self.options.privileged:
            route += ", privileged"
        self.status(f"creating pod {self.namespace}/{self.name} on node {self.node} "
                    f"(image {self.options.image}, {route})")
        self.created = True  # the name is ours even if the answer is lost: always try to delete it
        try:
            launch.create_pod(self.api, pod)
        except Unreachable:
            raise
        except KubeError as exc:
            self.created = False
            return failures.from_create_error(exc.status, exc.message, namespace=self.namespace,
                                              privileged=self.options.privileged, host_pid=self.options.host_pid)
        return None

    def wait_started(self) -> dict[str, Any] | DebugFailure:
        """Poll until the container runs or ran, or the pod is stuck in a state worth explaining."""
        interval, said = 0.1, (None, "")
        events: list[dict[str, Any]] = []
        events_at = 0.0
        pod: dict[str, Any] | None = None
        while True:
            self._check_cancel()
            pod = self.pod = launch.get_pod(self.api, self.namespace, self.name)
            if pod is None:
                return self._gone()
            status = pod.get("status") or {}
            self.phase = status.get("phase")
            cs: dict[str, Any] = next(iter(status.get("containerStatuses") or []), {})
            state = cs.get("state") or {}
            if "running" in state or "terminated" in state:
                self.running_since = time.monotonic()
                return failures.from_start_error(pod, node=self.node) or pod
            failure = self._failure(pod, events)
            if failure is not None:
                # Re-read with the pod's events: they hold the registry's or scheduler's exact words.
                return self._failure(pod, launch.pod_events(self.api, self.namespace, self.name)) or failure
            waiting = (state.get("waiting") or {}).get("reason") or ""
            if (self.phase, waiting) != said:
                said = (self.phase, waiting)
                self.status(f"pod {self.phase or 'Pending'}" + (f": {waiting}" if waiting else ""))
            now = time.monotonic()
            if now >= self.deadline:
                events = launch.pod_events(self.api, self.namespace, self.name)
                return failures.from_timeout(pod, events, self.node_obj, node=self.node, waited=now - self.started,
                                             running=False)
            if now - events_at > 3.0:
                # Sandbox errors (a RuntimeClass handler the node lacks) only show as events.
                events, events_at = launch.pod_events(self.api, self.namespace, self.name), now
            self._sleep(min(interval, max(0.0, self.deadline - now)))
            interval = min(interval * 1.5, 1.0)

    def follow(self) -> DebugFailure | None:
        """Stream the log until the container stops; reconnect (skipping lines seen) if the stream goes quiet."""
        self.status("running nvidia-smi")
        while True:
            self._check_cancel()
            remaining = self.deadline - time.monotonic()
            if remaining <= 0:
                self._finish()
                now = time.monotonic()
                return failures.from_timeout(None, [], self.node_obj, node=self.node, waited=now - self.started,
                                             running=True, ran=now - (self.running_since or self.started))
            read = min(remaining, _QUIET_READ) if self.cancel is not None else remaining
            seen = 0
            try:
                for line in launch.stream_log(self.api, self.namespace, self.name, read):
                    seen += 1
                    if seen > len(self.lines):
                        self._line(line)
                        if line.strip() == END_MARKER:
                            self._finish()
                            return None  # the script is done; no need to wait for the container to exit
                    self._check_cancel()
            except Unreachable:
                pass  # a quiet stream (read timeout) or a dropped connection: look at the pod, then go on
            except KubeError as exc:
                if exc.status not in (400, 404):  # 400: the container cannot serve logs yet; 404: pod gone
                    raise
                self._sleep(0.2)
            pod = self.pod = launch.get_pod(self.api, self.namespace, self.name)
            if pod is None:
                return self._gone()
            self.phase = (pod.get("status") or {}).get("phase")
            if self.phase in ("Succeeded", "Failed") or _container_terminated(pod):
                self._finish()
                return None

    def _finish(self) -> None:
        """Read the whole log once more: the parser needs it exactly (the live stream drops blank lines, which
        separate the boxes of nvidia-smi's table), and lines after the last stream ended are shown too."""
        try:
            text = self.api.get_bytes(f"/api/v1/namespaces/{self.namespace}/pods/{self.name}/log",
                                      [("container", CONTAINER)]).decode("utf-8", "replace")
        except KubeError:
            return
        self.full_log = text
        lines = [ln for ln in text.splitlines() if ln.strip()]
        for line in lines[len(self.lines):]:
            self._line(line)

    def _line(self, line: str) -> None:
        self.lines.append(line)
        if self.on_output is not None:
            shown = display_line(line)
            if shown is not None:
                self.on_output(shown[0])

    def delete(self) -> bool | None:
        if not self.created:
            return None
        gone = launch.delete_pod(self.api, self.namespace, self.name)
        self.status(f"deleted pod {self.namespace}/{self.name}" if gone else
                    f"could not delete pod {self.namespace}/{self.name}: run `gputui debug --cleanup`")
        return gone


def _killed(pod: dict[str, Any] | None) -> bool:
    """The container was stopped from outside (OOMKilled, evicted), not ended by its own script."""
    status = (pod or {}).get("status") or {}
    if status.get("reason") in ("Evicted", "DeadlineExceeded"):
        return True
    return any(((cs.get("state") or {}).get("terminated") or {}).get("reason") not in (None, "", "Error", "Completed")
               for cs in status.get("containerStatuses") or [])


def _container_terminated(pod: dict[str, Any]) -> bool:
    return any("terminated" in (cs.get("state") or {})
               for cs in (pod.get("status") or {}).get("containerStatuses") or [])


def run_debug(
    api: Api,
    node: str,
    *,
    namespace: str | None = None,
    context_namespace: str | None = None,
    image: str = DEFAULT_IMAGE,
    gpus: int = 0,
    runtime_class: str = "auto",
    privileged: bool = False,
    host_pid: bool = False,
    timeout: int = 120,
    on_output: OutputFn | None = None,
    on_status: OutputFn | None = None,
    cancel: threading.Event | None = None,
    store: Any = None,
) -> DebugResult:
    """Run nvidia-smi on `node` in a short-lived pod and return what it found; the pod is always deleted.

    `namespace` must exist; without it the context's namespace (if it exists) or `default` is used.
    `runtime_class` is a name, `auto` (the cluster's `nvidia` RuntimeClass if any) or `none`.
    `on_output` gets each log line as shown live, `on_status` progress lines. Setting `cancel` stops the
    run (the result then carries a `cancelled` failure). With `store`, the result is put into it
    (`store.set_gpu_report(node, result.as_json())`) when nvidia-smi produced output.

    Raises DebugUsageError (unknown node/namespace, bad option) and kubeapi.Unreachable.
    """
    if gpus < 0:
        raise DebugUsageError("--gpus must be 0 or more")
    if timeout <= 0:
        raise DebugUsageError("--timeout must be a positive number of seconds")
    if not image.strip():
        raise DebugUsageError("--image must not be empty")
    started_at = datetime.now(timezone.utc)
    notes: list[str] = []
    node_obj, note = launch.get_node(api, node)
    if node_obj is not None and (other := launch.not_nvidia(node, node_obj)):
        raise DebugUsageError(other)
    ns, ns_note = launch.resolve_namespace(api, namespace, context_namespace)
    rc, rc_note = launch.resolve_runtime_class(api, runtime_class)
    for n in (note, ns_note, rc_note):
        if n:
            notes.append(n)
            if on_status is not None:
                on_status(n)
    options = PodOptions(image=image, gpus=gpus, runtime_class=rc, privileged=privileged, host_pid=host_pid,
                         timeout=int(timeout))
    run = _Run(api, node, ns, options, node_obj, on_output, on_status, cancel)
    failure: DebugFailure | None = failures.kubelet_silent(node_obj, node=node)
    interrupted = False
    deleted: bool | None = None
    try:
        if failure is None:  # a node whose kubelet stopped reporting would never start the pod: say so now
            failure = run.create()
        if failure is None:
            started = run.wait_started()
            if isinstance(started, DebugFailure):
                failure = started
            else:
                failure = run.follow()
    except _Cancelled:
        failure = DebugFailure("cancelled", "pod", f"debug run on {node} cancelled", reason="cancelled")
    except Unreachable:
        raise
    except KubeError as exc:  # refused mid-run (no pods/log, kubelet unreachable, throttled): explained, exit 6
        failure = failures.from_api_error(exc.status, str(exc), namespace=ns, pod=run.name, node=node)
    except KeyboardInterrupt:
        interrupted = True
        raise
    finally:
        with cleanup_shielded(reraise=not interrupted):
            deleted = run.delete()
    log = run.full_log if run.full_log is not None else "\n".join(run.lines) + ("\n" if run.lines else "")
    report = parse(log) if log.strip() else None
    # Only a pod that saw every GPU (no --gpus request) can be held to the node's count.
    expected = expected_gpus(((node_obj or {}).get("metadata") or {}).get("labels") or {}) if not gpus else None
    flags = tuple(health_flags(report, expected.count if expected else None,
                               expected.source if expected else "")) if report is not None else ()
    if report is not None and report.gpus and not gpus and expected is None:
        flags += (count_unknown_flag(report, node),)
    if report is not None and failure is None:
        failure = failures.from_report(report, flags, node=node, privileged=privileged, gpus=gpus, runtime_class=rc)
        if failure is None and not report.gpus:  # killed mid-way, or nothing readable: never "0 GPUs, healthy"
            failure = failures.from_cut_output(run.pod, node=node, complete=report.complete)
        elif failure is None and not report.complete and not any(f.severity != "warning" for f in flags):
            # The script never reached its end marker: the sections it did not print may hold the fault.
            failure = failures.from_cut_output(run.pod, node=node, complete=False)
    elif report is None and failure is None and _killed(run.pod):
        failure = failures.from_cut_output(run.pod, node=node, complete=False)
    elif report is None and failure is None:
        failure = DebugFailure("no-output", "pod", f"the debug pod on {node} ended without any output",
                               f"Pod phase {run.phase or 'unknown'}.", run.phase or "",
                               (f"`kubectl describe pod -n {ns} {run.name}` while it runs may say why; "
                                "retry with --privileged if the image cannot run /bin/sh.",))
    result = DebugResult(node=node, namespace=ns, pod=run.name, phase=run.phase, log=log, report=report,
                         flags=flags, failure=failure, options=options, started_at=started_at,
                         finished_at=datetime.now(timezone.utc), deleted=deleted, notes=tuple(notes),
                         expected_gpus=expected.count if expected else None,
                         expected_from=expected.source if expected else "")
    if store is not None and report is not None:
        store.set_gpu_report(node, result.as_json())
    return result
