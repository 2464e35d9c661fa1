"""Why a debug pod did not give nvidia-smi output: the pod's own state, or nvidia-smi's failure, explained."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any, Literal

from diagnostics.gpu_health import DebugFailure, HealthFlag
from gputui.debugpod.nvidia_smi.report import GpuReport

__all__ = [
    "DebugFailure",
    "Stage",
    "from_api_error",
    "from_create_error",
    "from_cut_output",
    "from_pod",
    "from_report",
    "from_start_error",
    "from_timeout",
    "kubelet_silent",
]

Stage = Literal["pod", "route", "gpu", "input"]
"""pod: the pod never ran nvidia-smi; route: it ran but could not reach the GPUs this way; gpu: the GPUs' fault;
input: saved output (`--parse`) that does not hold a complete nvidia-smi reading (empty, other text, cut off)."""

_PULL = ("ImagePullBackOff", "ErrImagePull", "InvalidImageName", "ErrImageNeverPull")
_CREATE = ("CreateContainerError", "CreateContainerConfigError", "RunContainerError", "ContainerCannotRun")
_START = ("StartError", "ContainerCannotRun")
"""Terminated reasons of a container the runtime could not start (a failed NVIDIA hook, with restartPolicy Never)."""
HUNG_AFTER = 15.0
"""Seconds nvidia-smi must have been running before a timeout calls it hung (a healthy run takes a few)."""
_MAX = 600


def _trim(text: str | None) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= _MAX else text[: _MAX - 1] + "…"


def _event_text(events: Sequence[dict[str, Any]], *reasons: str) -> str:
    """Message of the newest Warning event with one of `reasons` (events come oldest first)."""
    for ev in reversed(list(events)):
        if ev.get("reason") in reasons and ev.get("type", "Warning") == "Warning":
            return str(ev.get("message") or "")
    return ""


def _container_state(pod: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """('waiting'|'running'|'terminated'|'', state body) of the debug container."""
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        for key in ("terminated", "running", "waiting"):
            body = (cs.get("state") or {}).get(key)
            if body is not None:
                return key, body
    return "", {}


def _condition(pod: dict[str, Any], type_: str) -> dict[str, Any] | None:
    return next((c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") == type_), None)


def from_pod(pod: dict[str, Any], events: Sequence[dict[str, Any]], *, node: str, image: str,
             gpus: int = 0, runtime_class: str | None = None) -> DebugFailure | None:
    """A failure the pod is stuck in (no point waiting), or None while it may still start."""
    status = pod.get("status") or {}
    scheduled = _condition(pod, "PodScheduled")
    if scheduled is not None and scheduled.get("status") == "False" and scheduled.get("reason") == "Unschedulable":
        message = scheduled.get("message") or _event_text(events, "FailedScheduling")
        hints = [f"The scheduler will not place the pod on {node}: `kubectl describe node {node}` shows its "
                 "taints, conditions and free resources."]
        if gpus:
            hints.append("No free nvidia.com/gpu on the node: drop --gpus to reach the GPUs without a request.")
        return DebugFailure("unschedulable", "pod", f"the debug pod cannot be scheduled on {node}",
                            _trim(message), "Unschedulable", tuple(hints))
    state, body = _container_state(pod)
    reason = str(body.get("reason") or "")
    if state == "waiting" and reason in _PULL:
        # The kubelet's "Failed to pull image ...: <registry error>" event says why; the waiting message
        # of ImagePullBackOff only says "Back-off pulling image".
        pulls = [str(e.get("message") or "") for e in events if e.get("reason") == "Failed"
                 and str(e.get("message") or "").startswith("Failed to pull image")]
        message = pulls[-1] if pulls else str(body.get("message") or "")
        return DebugFailure(
            "image-pull", "pod", f"image {image} cannot be pulled on {node} ({reason})", _trim(message), reason,
            ("In an air-gapped cluster or behind a private registry, mirror the image and pass "
             "--image REGISTRY/nvidia/cuda:12.4.1-base-ubuntu22.04 (a fully tagged reference).",
             "With --privileged any image with /bin/sh works (nvidia-smi then comes from the host): e.g. one "
             "already on the node, like the GPU Operator's validator or driver image."))
    if state == "waiting" and reason in _CREATE:
        return _runtime_refused(pod, node, reason, str(body.get("message") or _event_text(events, "Failed")))
    sandbox = _event_text(events, "FailedCreatePodSandBox")
    if state in ("", "waiting") and sandbox and ("no runtime for" in sandbox or "runtime handler" in sandbox.lower()):
        return DebugFailure(
            "runtime-class-unavailable", "pod",
            f"node {node} has no container runtime handler for RuntimeClass {runtime_class or '(default)'}",
            _trim(sandbox), "FailedCreatePodSandBox",
            ("Retry with --runtime-class none only where nvidia is containerd's default runtime, or name the "
             "right RuntimeClass: `kubectl get runtimeclass`.",
             "containerd on the node has no such handler: with the GPU Operator its container toolkit adds it "
             "(see its nvidia-container-toolkit-daemonset pod on the node, and `gputui diagnose node/" + node + "`); "
             "GPU pods scheduled there fail the same way.",))
    if status.get("phase") in ("Failed", "Succeeded") and state != "terminated":
        return _failed_without_running(pod, node, gpus)
    return None


def _runtime_refused(pod: dict[str, Any], node: str, reason: str, message: str) -> DebugFailure:
    hints = []
    lowered = message.lower()
    if "driver not loaded" in lowered:
        hints.append("The NVIDIA runtime hook found no loaded driver: the node's NVIDIA driver is down "
                     "(the same fault nvidia-smi reports as exit 9). Check the driver pod or the AMI; replace the "
                     "node if it does not recover.")
    elif "nvidia" in lowered or "libnvidia-container" in lowered:
        hints.append("The NVIDIA container toolkit hook failed while creating the container: the node's GPU "
                     "runtime is broken (check the nvidia-container-toolkit and driver pods on the node).")
    if "nvidia" in lowered:
        hints.append("Retry with --runtime-class none, or with --privileged to read nvidia-smi from the host.")
    else:
        md = pod.get("metadata") or {}
        hints.append(f"`kubectl describe pod -n {md.get('namespace')} {md.get('name')}` shows the runtime's full "
                     "error.")
    verb = "start" if reason in _START else "create"
    return DebugFailure("create-container-error", "pod",
                        f"the container runtime on {node} cannot {verb} the debug container ({reason})",
                        _trim(message), reason, tuple(hints))


def from_start_error(pod: dict[str, Any], *, node: str) -> DebugFailure | None:
    """The container 'ran' but the runtime never started it (terminated StartError, exit 128): its words say why."""
    state, body = _container_state(pod)
    reason = str(body.get("reason") or "")
    if state != "terminated" or reason not in _START:
        return None
    return _runtime_refused(pod, node, reason, str(body.get("message") or ""))


def from_cut_output(pod: dict[str, Any] | None, *, node: str, complete: bool) -> DebugFailure:
    """nvidia-smi read no GPU and said nothing gputui knows: the pod was killed mid-way, or printed nothing usable.

    Never a pass: 0 GPUs checked is not 'healthy'.
    """
    state, body = _container_state(pod or {})
    status = (pod or {}).get("status") or {}
    why = str(body.get("reason") or status.get("reason") or "") if state == "terminated" or status.get("reason") \
        else ""
    code = body.get("exitCode")
    detail = " ".join(x for x in (f"container {why}" if why else "", f"exit {code}" if code is not None else "",
                                  _trim(str(body.get("message") or status.get("message") or ""))) if x)
    hints: list[str] = []
    if why == "OOMKilled":
        hints.append("The debug container ran out of memory: the node may be under memory pressure; retry, and "
                     "check `kubectl describe node` for MemoryPressure.")
    elif why in ("Evicted", "DeadlineExceeded") or status.get("reason") == "Evicted":
        hints.append("The kubelet stopped the pod before the script finished; retry, or look at the node's "
                     "conditions.")
    hints.append("No GPU was checked: this is not a clean bill of health. Retry (with a longer --timeout if the "
                 "node is slow).")
    if complete:
        title = f"nvidia-smi on {node} printed nothing gputui could read as GPUs"
    else:
        title = f"the debug pod on {node} stopped before nvidia-smi finished" + (f" ({why})" if why else "")
    return DebugFailure("incomplete-output", "pod", title, detail, why or "incomplete", tuple(hints))


def _failed_without_running(pod: dict[str, Any], node: str, gpus: int) -> DebugFailure:
    status = pod.get("status") or {}
    reason = str(status.get("reason") or status.get("phase") or "")
    message = str(status.get("message") or "")
    hints: list[str] = []
    if reason.startswith("OutOf") or reason == "UnexpectedAdmissionError":
        hints.append("The kubelet rejected the pod for lack of resources." +
                     (" Drop --gpus: without a GPU request the pod fits on a full node." if gpus else ""))
    elif reason == "DeadlineExceeded":
        hints.append("The pod's activeDeadlineSeconds ran out before its container started.")
    return DebugFailure("pod-rejected", "pod", f"the debug pod on {node} stopped before it ran ({reason})",
                        _trim(message), reason, tuple(hints))


def from_create_error(status: int, message: str, *, namespace: str, privileged: bool,
                      host_pid: bool) -> DebugFailure:
    """The API refused to create the pod (RBAC, Pod Security admission, quota, webhooks)."""
    hints: list[str] = []
    lowered = message.lower()
    if "PodSecurity" in message or "violates" in message:
        hints.append(f"Namespace {namespace} enforces a Pod Security level that refuses this pod. Run it in a "
                     "namespace labelled pod-security.kubernetes.io/enforce=privileged (e.g. -n gpu-operator)"
                     + (", or drop --privileged/--host-pid." if privileged or host_pid else "."))
    elif "quota" in lowered:  # a 403 too, but not a permission: e.g. "must specify limits.cpu"
        hints.append(f"A ResourceQuota in {namespace} refuses the pod (`kubectl describe quota -n {namespace}`); "
                     "pick another namespace with -n.")
    elif "admission webhook" in lowered or "denied the request" in lowered:
        hints.append(f"An admission policy (webhook, Gatekeeper, Kyverno) refuses the pod in {namespace}: its "
                     "message above says which rule; use a namespace it exempts with -n, or ask for an exception "
                     "for pods labelled app.kubernetes.io/managed-by=gputui.")
    elif status == 403:
        hints.append(f"Your credentials may not create pods in {namespace}: `kubectl auth can-i create pods "
                     f"-n {namespace}`. Try -n with a namespace you may use.")
    code = "create-forbidden" if status == 403 else "create-failed"
    return DebugFailure(code, "pod", f"the API server refused to create the debug pod in {namespace} ({status})",
                        _trim(message), str(status), tuple(hints))


def kubelet_silent(node_obj: dict[str, Any] | None, *, node: str) -> DebugFailure | None:
    """Ready=Unknown: the node's kubelet stopped posting status, so no pod would ever start there."""
    ready = next((c for c in ((node_obj or {}).get("status") or {}).get("conditions") or []
                  if c.get("type") == "Ready"), None)
    if ready is None or ready.get("status") != "Unknown":
        return None
    said = _trim(str(ready.get("message") or ready.get("reason") or ""))
    return DebugFailure(
        "node-not-ready", "pod",
        f"node {node} is not Ready (Ready=Unknown): its kubelet stopped reporting, so a debug pod cannot start there",
        said, str(ready.get("reason") or "Unknown"),
        (f"Check the instance (`kubectl describe node {node}`, the EC2 console's status checks); nvidia-smi needs a "
         "running kubelet. Replace the node if it does not come back.",))


def from_api_error(status: int, message: str, *, namespace: str, pod: str, node: str) -> DebugFailure:
    """The API server refused a read while the pod ran (its log, its status): say which and what to check."""
    lowered = message.lower()
    hints: list[str] = []
    if status == 403 and "log" in lowered:
        hints.append(f"Your credentials may create the pod but not read its log: `kubectl auth can-i get pods/log "
                     f"-n {namespace}`.")
    elif status == 403:
        hints.append(f"Your credentials may not read the pod: `kubectl auth can-i get pods -n {namespace}`.")
    elif status >= 500 and ("10250" in lowered or "kubelet" in lowered or "tls" in lowered or "dial" in lowered):
        hints.append(f"The API server cannot reach the kubelet on {node} (port 10250): a NotReady node, a security "
                     "group that blocks the control plane, or a kubelet serving certificate not yet approved "
                     "(`kubectl get csr`).")
    else:
        hints.append("The API server refused or failed the request; retry in a moment.")
    return DebugFailure("api-error", "pod", f"the API server answered {status} while gputui read debug pod "
                                            f"{namespace}/{pod}", _trim(message), str(status), tuple(hints))


def from_timeout(pod: dict[str, Any] | None, events: Sequence[dict[str, Any]], node_obj: dict[str, Any] | None,
                 *, node: str, waited: float, running: bool, ran: float | None = None) -> DebugFailure:
    """What the pod was doing when gputui stopped waiting (instead of a bare 'timed out').

    `running`: the container had started; `ran`: for how long. nvidia-smi is called hung only when it
    had HUNG_AFTER seconds (or half the wait): a pod that took most of the time to start is not the GPUs' fault.
    """
    seconds = f"{waited:.0f}s"
    if running and ran is not None and ran < min(HUNG_AFTER, waited / 2):
        return DebugFailure(
            "timeout", "pod", f"nvidia-smi on {node} had run only {ran:.0f}s when the {seconds} timeout ran out",
            f"The debug pod took {waited - ran:.0f}s to start (image pull or sandbox setup).", "timeout",
            ("Retry with a longer --timeout, or use an image already on the node with --image.",))
    if running:
        return DebugFailure(
            "nvidia-smi-hung", "gpu", f"nvidia-smi on {node} did not finish within {seconds}",
            "The container is running but nvidia-smi never completed its queries.", "timeout",
            ("A hanging nvidia-smi usually means a GPU fell off the bus or the driver is wedged: look for "
             "Xid 79 in the node's kernel log and reboot the node (cordon and drain first).",
             "If the node is merely slow, retry with a longer --timeout."))
    ready = next((c for c in ((node_obj or {}).get("status") or {}).get("conditions") or []
                  if c.get("type") == "Ready"), None)
    state, body = _container_state(pod or {})
    warnings = [f"{e.get('reason')}: {e.get('message')}" for e in events if e.get("type") == "Warning"]
    detail = "; ".join(warnings[-3:])
    hints: list[str] = []
    if ready is not None and ready.get("status") != "True":
        title = f"node {node} is not Ready (Ready={ready.get('status')}): its kubelet never started the debug pod"
        detail = detail or _trim(str(ready.get("message") or ready.get("reason") or ""))
        hints.append(f"Check the node: `kubectl describe node {node}`. nvidia-smi cannot run on a node whose "
                     "kubelet is down; replace the node if it does not recover.")
    elif state == "waiting":
        title = (f"the debug container on {node} was still waiting ({body.get('reason') or 'ContainerCreating'}) "
                 f"after {seconds}")
        detail = detail or _trim(str(body.get("message") or ""))
        hints.append("A large image may still be pulling: retry with a longer --timeout, or use an image already "
                     "on the node with --image.")
    else:
        phase = ((pod or {}).get("status") or {}).get("phase") or "unknown"
        title = f"the debug pod on {node} did not start within {seconds} (phase {phase})"
        hints.append("Retry with a longer --timeout; `kubectl get events` in the pod's namespace may say why.")
    return DebugFailure("timeout", "pod", title, detail, "timeout", tuple(hints))


# nvidia-smi failure code (nvidia_smi.SmiFailure.code) -> (title, what the debug pod route means for it)
_SMI_TITLES = {
    "driver-not-loaded": "the NVIDIA driver is not loaded on {node} (nvidia-smi exit 9)",
    "driver-library-mismatch": "the NVIDIA driver and its library differ in version on {node}",
    "gpu-lost": "a GPU on {node} fell off the bus (nvidia-smi: GPU is lost)",
    "device-handle-error": "nvidia-smi cannot open a GPU on {node}",
    "internal-error": "nvidia-smi hit an internal driver error on {node} (exit 255)",
    "inforom-corrupted": "a GPU's infoROM is corrupted on {node}",
    "timeout": "nvidia-smi timed out on {node}",
    "nvml-unknown-error": "nvidia-smi could not initialise NVML on {node} (Failed to initialize NVML: Unknown Error)",
    "nvml-insufficient-permissions": "nvidia-smi was refused access to the GPUs on {node}",
    "nvml-init-failed": "nvidia-smi could not initialise NVML on {node}",
    "no-devices": "nvidia-smi found no GPUs on {node} (No devices were found)",
    "nvidia-smi-not-found": "the debug pod on {node} has no nvidia-smi",
    "nvml-library-missing": "the debug pod on {node} has no NVML library (libnvidia-ml.so)",
}
_VERBATIM_PREFIX = re.compile(r"^`.*?`(?: \([^)]*\))?\.\s*", re.DOTALL)
"""A health flag's message starts with nvidia-smi's own words, already shown as the failure's detail."""
_ROUTE_CODES = frozenset({"nvml-unknown-error", "nvml-insufficient-permissions", "nvml-init-failed", "no-devices",
                          "nvidia-smi-not-found", "nvml-library-missing"})
"""Failures that, in an unprivileged pod, may be the pod's way in rather than the GPUs."""


def from_report(report: GpuReport, flags: Sequence[HealthFlag], *, node: str, privileged: bool, gpus: int,
                runtime_class: str | None) -> DebugFailure | None:
    """nvidia-smi ran but read no GPU at all: say why, and whether another route could still get through."""
    if report.gpus or not report.failures:
        return None
    failure = next((f for f in report.failures if f.code != "invalid-field"), None)
    if failure is None:
        return None
    flag = next((f for f in flags if f.value == failure.message), None)
    title = _SMI_TITLES.get(failure.code, "nvidia-smi failed on {node}").format(node=node)
    if failure.exit_code not in (None, 0) and f"exit {failure.exit_code}" not in title:
        title += f" [exit {failure.exit_code}]"
    detail = failure.message if failure.verbatim else ""
    hints: list[str] = []
    route = failure.code in _ROUTE_CODES and not privileged
    if route:
        tried = f"RuntimeClass {runtime_class}" if runtime_class else "no RuntimeClass"
        tried += f", {gpus} GPU(s) requested" if gpus else ", no GPU request"
        hints.append(f"This debug pod ({tried}) may simply not be let in to the GPUs, so this does not prove them "
                     "broken.")
        if not runtime_class:
            hints.append("Retry with --runtime-class nvidia (GPU Operator clusters) so the NVIDIA runtime injects "
                         "the devices.")
        hints.append("Or retry with --privileged (host nvidia-smi through /host; needs a namespace that allows "
                     "privileged pods, e.g. -n gpu-operator).")
        if failure.code == "nvml-unknown-error":
            hints.append("If workload pods on the node print the same error after running fine, a "
                         "`systemctl daemon-reload` reset their device cgroups: restart those pods.")
    elif flag is not None:
        hints.append(_VERBATIM_PREFIX.sub("", flag.message))
    return DebugFailure(failure.code, "route" if route else "gpu", title, detail,
                        f"exit {failure.exit_code}" if failure.exit_code is not None else "", tuple(hints))
