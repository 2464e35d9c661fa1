"""nvidia-smi, run on a node by a gputui debug pod, reports a broken driver, a lost GPU or failing GPU memory."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from diagnostics.facts.gpu_count import ExpectedGpus, expected_gpus
from diagnostics.gpu_health import GpuHealth, HealthFlag
from diagnostics.model import Evidence, EvidenceKind, Finding, ObjectRef, Remediation, Severity
from diagnostics.facts.node_health import blast_radius, clip
from diagnostics.records import Node, NodeClaim
from diagnostics.registry import check
from diagnostics.snapshot import Snapshot
from diagnostics.timeutil import human_age

# What this check reads is diagnostics.gpu_health.GpuHealth, from `snapshot.gpu_reports[node]`.

_SEVERITY = {"warning": Severity.WARNING, "error": Severity.ERROR, "critical": Severity.CRITICAL}

# Flag codes (gputui.debugpod.health) -> what the title says and which fix applies.
_REPLACE, _RESET, _WATCH, _SCHEDULE, _RERUN, _COUNT = "replace", "reset", "watch", "schedule", "rerun", "count"
_FLAGS: Mapping[str, tuple[str, str]] = {
    "driver-not-loaded": ("the NVIDIA driver is not loaded (nvidia-smi exit 9): no GPU pod can run here", _REPLACE),
    "driver-library-mismatch": ("the NVIDIA driver and its library differ in version (upgraded without a reboot)",
                                _RESET),
    "gpu-lost": ("{gpus} fell off the bus (GPU is lost): unusable until the node reboots", _REPLACE),
    "gpu-inaccessible": ("nvidia-smi cannot open {gpus}", _RESET),
    "gpu-requires-reset": ("{gpus} need a GPU reset before use", _RESET),
    "ecc-uncorrected": ("{gpus} reported uncorrectable ECC errors since the driver loaded", _RESET),
    "row-remap-failure": ("{gpus}: row remapping failed, the memory can no longer be repaired (RMA)", _REPLACE),
    "row-remap-pending": ("{gpus}: a memory row remap is pending until the GPU is reset", _SCHEDULE),
    "retired-pages-pending": ("{gpus}: memory pages are waiting to be retired until the GPU is reset", _RESET),
    "recovery-action": ("the driver asks for a recovery action on {gpus}", _RESET),
    "inforom-corrupted": ("a GPU's infoROM is corrupted (nvidia-smi exit 14): replace the GPU", _REPLACE),
    "nvidia-smi-internal-error": ("nvidia-smi hit an internal driver error (exit 255)", _RESET),
    "nvidia-smi-timeout": ("nvidia-smi hung: a GPU fell off the bus or the driver is wedged", _REPLACE),
    "nvidia-smi-failed": ("nvidia-smi failed", _RESET),
    "pcie-link-degraded": ("{gpus}: PCIe link narrower than its maximum (degraded slot, riser or GPU)", _WATCH),
    "clocks-slowdown": ("{gpus}: clocks cut by a hardware or thermal slowdown", _WATCH),
    # From a privileged pod (host nvidia-smi) these are the node's fault, not the pod's way in:
    "nvml-init-failure": ("NVML cannot initialise even with host access: the driver is unusable", _REPLACE),
    "no-devices": ("nvidia-smi finds no GPU even with host access: GPUs unbound from the driver or lost", _REPLACE),
    "nvidia-smi-not-found": ("no nvidia-smi on the host: the NVIDIA driver is not installed", _REPLACE),
    "nvml-library-missing": ("the NVML library is missing on the host: the driver install is broken", _REPLACE),
    "unreadable-field": ("nvidia-smi could not read some values of {gpus}", _WATCH),
    "gpu-error-state": ("nvidia-smi prints ERR! for {gpus}: the GPU is in an error state", _RESET),
    "memory-unrepairable": ("{gpus}: memory the GPU can no longer repair (RMA)", _REPLACE),
    "memory-repair-pending": ("{gpus}: a memory channel repair is pending until the GPU is reset", _RESET),
    "pcie-gen-downgraded": ("{gpus}: PCIe link below its generation while busy", _WATCH),
    "kernel-xid": ("the kernel logged an Xid for {gpus}", _RESET),
    "gpus-missing": ("nvidia-smi does not list every GPU of the node ({gpus} missing)", _REPLACE),
    # What the reading could not see: no GPU problem, but no all-clear either.
    "health-unreadable": ("nvidia-smi could not read the health of {gpus} ([N/A] / [Insufficient Permissions]): "
                          "unknown, not healthy", _RERUN),
    "health-not-shown": ("the last nvidia-smi reading does not show {value}: no verdict on them", _RERUN),
    "gpu-count-unknown": ("nothing says how many GPUs the node has: a GPU missing from nvidia-smi's list "
                          "could not be noticed", _COUNT),
}
_ROUTE_FLAGS = frozenset({"nvml-init-failure", "no-devices", "nvidia-smi-not-found", "nvml-library-missing"})
"""Flags that, from an unprivileged debug pod, say more about the pod's access than about the GPUs."""



@check(code="GT801", slug="gpu-health-nvidia-smi", title="nvidia-smi finds the GPUs healthy",
       severity=Severity.ERROR, requires=("nvidia-smi",), optional=("nodes", "pods", "nodeclaims"))
def gpu_health_nvidia_smi(snap: Snapshot) -> Iterator[Finding | int]:
    """nvidia-smi, run on a node by a gputui debug pod, reports a GPU or driver problem.

    Why it matters:
    Kubernetes only sees what the device plugin tells it: a node can stay Ready and keep
    advertising GPUs while its driver is gone, a GPU has fallen off the bus, or GPU memory has
    uncorrectable ECC errors and pending row remaps. Pods scheduled there crash or compute wrong
    results, and Karpenter keeps the node because nothing in the API says it is broken. A GPU that
    fell off the bus is often simply absent from nvidia-smi's list, so the GPUs listed are counted
    against what the node has (its GPU count labels or instance type): the ones still visible being
    fine is no verdict on the node. Nor is a reading that could not see every health value (only the
    table, without remapped rows, retired pages or reset state; a GPU whose values are all [N/A] or
    [Insufficient Permissions]): a warning says what was not seen, never a pass.

    Fix:
    Follow the finding: a lost GPU, a failed row remap, a missing driver or a corrupted infoROM
    means cordon, drain and replace the node (delete its NodeClaim; Karpenter launches a new one).
    Pending row remaps, retired pages and uncorrectable ECC errors need a GPU reset (or a reboot)
    after draining. A degraded PCIe link or clock slowdown is a warning: watch it and replace the
    node if it persists. Re-run `gputui debug node/NAME` to confirm the fix.
    """
    idx = snap.index
    for name, raw in sorted(snap.gpu_reports.items()):
        result = GpuHealth.from_json(name, raw)
        if result is None:
            continue
        yield 1
        node = idx.node.get(result.node)
        claim = idx.nodeclaim_by_node.get(result.node)
        route_only = result.stage == "route"
        groups: dict[str, list[HealthFlag]] = {}
        for f in result.flags:
            if f.code in _ROUTE_FLAGS and not result.privileged:
                route_only = route_only or not result.gpus
                continue
            groups.setdefault(f.code, []).append(f)
        if route_only and not result.gpus:
            yield _route_finding(snap, result)
            continue
        if result.stage == "pod" and not result.gpus:
            yield _inconclusive_finding(snap, result)  # killed mid-way: 0 GPUs read is not a pass
            continue
        if not groups and result.failure is not None and result.failure.stage == "gpu":
            # A failure with no flag behind it (nvidia-smi hung past gputui's timeout): a flag of its own.
            failure = result.failure
            code = "nvidia-smi-timeout" if failure.code == "nvidia-smi-hung" else "nvidia-smi-failed"
            groups[code] = [HealthFlag(None, code, "error", failure.title or failure.detail, "nvidia-smi",
                                       failure.code or None)]
        missing = groups.pop("gpus-missing", [])
        for code, flags in groups.items():
            yield _flag_finding(snap, result, node, claim, code, flags)
        expected = expected_gpus(node.labels) if node is not None else None
        if node is not None and expected and result.sees_all_gpus and 0 < len(result.gpus) < expected.count:
            yield _count_finding(snap, result, node, claim, expected)
        elif missing:  # the debug pod counted against the node as it was then; this snapshot cannot say
            yield _flag_finding(snap, result, node, claim, "gpus-missing", missing)


def _gpus_text(flags: list[HealthFlag]) -> str:
    indexes = sorted({f.gpu_index for f in flags if f.gpu_index is not None})
    if not indexes:
        return "a GPU"
    return ("GPU " if len(indexes) == 1 else "GPUs ") + ", ".join(str(i) for i in indexes)


def _ref(result: GpuHealth) -> ObjectRef:
    return ObjectRef("Node", result.node)


def _read_note(snap: Snapshot, result: GpuHealth) -> str:
    age = snap.age(result.taken_at)
    by = f" by debug pod {result.pod}" if result.pod else ""
    return f"read {human_age(age)} ago{by}" if age is not None else f"read{by}"


def _evidence(snap: Snapshot, result: GpuHealth, flags: list[HealthFlag]) -> list[Evidence]:
    ev: list[Evidence] = []
    # No age_seconds: renderers read it as "for how long"; the note says how old the reading is.
    for f in flags:
        where = f"gpu[{f.gpu_index}]." if f.gpu_index is not None else ""
        ev.append(Evidence(EvidenceKind.NVIDIA_SMI, _ref(result), f"{where}{f.field or 'nvidia-smi'}", clip(f.value or ""),
                           note=clip(f.message)))
    for i in sorted({f.gpu_index for f in flags if f.gpu_index is not None}):
        gpu = result.gpu(i)
        if gpu is not None:
            ident = {k: v for k, v in (("name", gpu.name), ("uuid", gpu.uuid), ("bus_id", gpu.bus_id)) if v}
            ev.append(Evidence(EvidenceKind.NVIDIA_SMI, _ref(result), f"gpu[{i}]", ident,
                               note=_read_note(snap, result)))
    if not any(f.gpu_index is not None for f in flags):
        ev.append(Evidence(EvidenceKind.NVIDIA_SMI, _ref(result), "gpus", len(result.gpus),
                           note=_read_note(snap, result)))
    return ev


def _drain_commands(node: str) -> list[str]:
    return [f"kubectl cordon {node}", f"kubectl drain {node} --ignore-daemonsets --delete-emptydir-data"]


def _flag_finding(snap: Snapshot, result: GpuHealth, node: Node | None, claim: NodeClaim | None, code: str,
                  flags: list[HealthFlag]) -> Finding:
    text, fix = _FLAGS.get(code, (f"{code} on {{gpus}}", _RESET))
    gpus = _gpus_text(flags)
    severity = max(_SEVERITY[f.severity] for f in flags)
    radius = blast_radius(snap, node, claim) if node is not None else None
    impact = f" Blast radius of draining: {radius.describe()}." if radius is not None else ""
    commands = _drain_commands(result.node)
    if fix == _REPLACE:
        how = ("delete its NodeClaim so Karpenter launches a replacement" if claim is not None
               else "replace the instance (terminate it; its node group or Karpenter brings a new one)")
        remedy = f"Cordon and drain {result.node}, then {how}.{impact}"
        if claim is not None:
            commands.append(f"kubectl delete nodeclaim {claim.name}")
    elif fix == _RESET:
        indexes = sorted({f.gpu_index for f in flags if f.gpu_index is not None})
        remedy = (f"Cordon and drain {result.node}, then reset {gpus if indexes else 'the GPUs'} (no process may "
                  f"hold it) or reboot the node; replace the node if the problem comes back.{impact}")
        for i in indexes:
            commands.append(f"kubectl debug node/{result.node} -it --profile=sysadmin --image=busybox -- "
                            f"chroot /host nvidia-smi -r -i {i}")
    elif fix == _SCHEDULE:
        # NVIDIA: a pending row remap is applied at the next reset; error containment and dynamic page
        # offlining keep the row out of use until then (NVML nvmlDeviceGetRemappedRows).
        indexes = sorted({f.gpu_index for f in flags if f.gpu_index is not None})
        remedy = (f"Not urgent: jobs on {gpus if indexes else 'the GPUs'} keep running correctly, the bad row is kept "
                  f"out of use until the next reset. When the GPU is free (or at the next maintenance), drain "
                  f"{result.node} and reset it (or reboot the node) to apply the remap; remaps that keep coming "
                  f"make the GPU an RMA candidate (gpu-rma-candidate).{impact}")
        for i in indexes:
            commands.append(f"kubectl debug node/{result.node} -it --profile=sysadmin --image=busybox -- "
                            f"chroot /host nvidia-smi -r -i {i}")
    elif fix == _RERUN:
        remedy = (f"Read it again: `gputui debug node/{result.node}` asks nvidia-smi for every health value; where an "
                  "unprivileged pod reads [N/A] or [Insufficient Permissions], run it privileged (host nvidia-smi).")
        commands = [f"gputui debug node/{result.node} --privileged -n gpu-operator"]
    elif fix == _COUNT:
        remedy = (f"Count the NVIDIA devices on {result.node}'s PCIe bus and compare with the {clip(flags[0].value or '')} "
                  "nvidia-smi listed; GPU Feature Discovery (GPU Operator, or the device plugin's gfd) labels the node "
                  "with nvidia.com/gpu.count, which gputui then holds every reading to.")
        commands = [f"kubectl debug node/{result.node} -it --profile=sysadmin --image=busybox -- chroot /host lspci -d 10de:"]
    else:
        remedy = (f"Not urgent on its own: re-check later with `gputui debug node/{result.node}` and replace the "
                  "node if it persists or jobs on it run slow.")
        commands = []
    commands.append(f"gputui debug node/{result.node}")
    return Finding(
        subject=_ref(result),
        title=f"{result.node}: " + text.format(gpus=gpus, value=clip(flags[0].value or "")),
        evidence=tuple(_evidence(snap, result, flags)),
        remediation=Remediation(remedy, tuple(dict.fromkeys(commands))),
        severity=severity,
        related=((claim.ref,) if claim is not None else ()) + (radius.refs if radius is not None else ()),
    )


def _route_finding(snap: Snapshot, result: GpuHealth) -> Finding:
    """nvidia-smi ran but could not reach the GPUs from an unprivileged pod: the health is unknown."""
    failure, route = result.failure, result.route
    said = clip((failure.detail or failure.title) if failure is not None else "")
    how = f"RuntimeClass {route.runtime_class}" if route is not None and route.runtime_class else "no RuntimeClass"
    return Finding(
        subject=_ref(result),
        title=f"{result.node}: the debug pod could not reach the GPUs ({said or 'nvidia-smi failed'}); "
              "their health is unknown",
        evidence=(Evidence(EvidenceKind.NVIDIA_SMI, _ref(result), "nvidia-smi", said,
                           note=f"{_read_note(snap, result)}; unprivileged pod, {how}"),),
        remediation=Remediation(
            "Re-run the debug pod with the NVIDIA RuntimeClass or privileged (host nvidia-smi). If workload pods "
            "on the node print the same NVML error, their device cgroups were reset: restart them.",
            (f"gputui debug node/{result.node} --runtime-class nvidia",
             f"gputui debug node/{result.node} --privileged -n gpu-operator")),
        severity=Severity.WARNING,
    )


def _inconclusive_finding(snap: Snapshot, result: GpuHealth) -> Finding:
    """The debug pod stopped before nvidia-smi read any GPU (OOMKilled, evicted): the health is unknown."""
    failure = result.failure
    said = clip((failure.title or failure.detail) if failure is not None else "")
    return Finding(
        subject=_ref(result),
        title=f"{result.node}: the last nvidia-smi run read no GPU ({said or 'the debug pod stopped'}); "
              "their health is unknown",
        evidence=(Evidence(EvidenceKind.NVIDIA_SMI, _ref(result), "nvidia-smi",
                           clip(failure.detail if failure is not None else "") or said,
                           note=_read_note(snap, result)),),
        remediation=Remediation("Run the debug pod again; if it is killed again, look at the node's conditions "
                                "(memory pressure, evictions).",
                                (f"gputui debug node/{result.node}", f"kubectl describe node {result.node}")),
        severity=Severity.WARNING,
    )


def _missing_text(result: GpuHealth, expected: int) -> str:
    """`: GPU 7 missing` from the indexes nvidia-smi listed, when it printed one for every GPU it saw."""
    listed = {g.index for g in result.gpus}
    if None in listed:
        return ""
    gone = sorted(set(range(expected)) - listed)
    lost = {f.gpu_index for f in result.flags if f.code in ("gpu-lost", "gpu-inaccessible")}
    if not gone:
        return ""
    names = ", ".join(f"{i} (lost)" if i in lost else str(i) for i in gone)
    return f" (missing: GPU{'s' if len(gone) > 1 else ''} {names})"


def _count_finding(snap: Snapshot, result: GpuHealth, node: Node, claim: NodeClaim | None,
                   expected: ExpectedGpus) -> Finding:
    seen = len(result.gpus)
    radius = blast_radius(snap, node, claim)
    commands = _drain_commands(node.name)
    if claim is not None:
        commands.append(f"kubectl delete nodeclaim {claim.name}")
    return Finding(
        subject=node.ref,
        title=f"{node.name}: nvidia-smi sees {seen} of {expected.count} GPUs{_missing_text(result, expected.count)}: "
              f"{expected.count - seen} missing from the PCIe bus or unbound from the driver",
        evidence=(
            Evidence.field(node.ref, expected.source, str(expected.count), note="GPUs the instance has"),
            Evidence(EvidenceKind.NVIDIA_SMI, node.ref, "gpus", [g.bus_id or g.uuid for g in result.gpus],
                     note=f"{seen} GPU(s) listed; {_read_note(snap, result)}"),
        ),
        remediation=Remediation(
            f"A GPU that vanished from nvidia-smi does not come back without a reboot, usually not at all: cordon "
            f"and drain the node and replace it. Blast radius of draining: {radius.describe()}.",
            tuple(commands)),
        severity=Severity.ERROR,
        related=((claim.ref,) if claim is not None else ()) + radius.refs,
    )
