"""The debug pod's shell script, its marker-line log protocol, and logs built from real captures."""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "APPS_FIELDS",
    "CAPTURES_DIR",
    "DEBUG_SCRIPT",
    "EXIT_MEANINGS",
    "HEALTH_FIELDS",
    "PROTOCOL_VERSION",
    "SECTION_ORDER",
    "CaptureSection",
    "DebugLog",
    "Section",
    "canonical_field",
    "capture_query",
    "capture_sections",
    "debug_log_for",
    "load_capture",
    "read_log",
    "render_log",
    "split_sections",
]

PROTOCOL_VERSION = 1

HEALTH_FIELDS: tuple[str, ...] = (
    "index",
    "name",
    "uuid",
    "pci.bus_id",
    "driver_version",
    "memory.used",
    "memory.total",
    "utilization.gpu",
    "temperature.gpu",
    "power.draw",
    "power.limit",
    "ecc.mode.current",
    "ecc.errors.uncorrected.volatile.total",
    "retired_pages.pending",
    "remapped_rows.pending",
    "remapped_rows.failure",
    "pcie.link.gen.current",
    "pcie.link.gen.max",
    "pcie.link.width.current",
    "pcie.link.width.max",
    "mig.mode.current",
    "clocks_event_reasons.active",
    "gpu_recovery_action",
    "reset_status.reset_required",
    "reset_status.drain_and_reset_recommended",
    "fan.speed",
)
"""`--query-gpu` fields the debug pod asks for (names as in `nvidia-smi --help-query-gpu`, driver 590).

`gpu_recovery_action` exists from the 570s on; `reset_status.*` is how drivers before it (535-570, most
production fleets) say a GPU needs a reset. A driver that knows only one of them rejects the other
and the script drops it (the section marker says which), so both are always asked for.

Order matters only for reading `noheader` output, and the log's section marker carries the list the
driver actually accepted, so parsers never rely on this tuple for that.
"""

APPS_FIELDS: tuple[str, ...] = ("gpu_uuid", "pid", "process_name", "used_memory")
"""`--query-compute-apps` fields (`used_memory` is the old, still accepted alias of `used_gpu_memory`)."""

SECTION_ORDER: tuple[str, ...] = ("nvidia-smi", "query-gpu", "query-compute-apps", "list")
"""Sections in the order the script runs them: default table, health CSV, processes CSV, `-L`."""

EXIT_MEANINGS: dict[int, str] = {
    0: "success",
    2: "invalid argument or field",
    3: "operation not available on this device",
    4: "no permission",
    6: "query to find the object failed",
    8: "external power cables not attached",
    9: "NVIDIA driver not loaded",
    10: "kernel detected an interrupt issue with a GPU",
    12: "NVML shared library not found or not loadable",
    13: "local NVML lacks a function this nvidia-smi needs",
    14: "infoROM is corrupted",
    15: "GPU fell off the bus or is otherwise inaccessible",
    18: "driver/library version mismatch",
    124: "nvidia-smi timed out (killed by the debug pod's `timeout`)",
    126: "nvidia-smi found but not executable",
    127: "nvidia-smi not found in the debug pod",
    255: "other error or internal driver error",
}
"""nvidia-smi exit codes (man page RETURN VALUE, mirrored by NVML's nvmlReturn_t), plus the shell's own."""

_MARKER_RE = re.compile(r"^=== gputui:(?P<verb>[a-z-]+)(?: (?P<args>.*?))? ===\s*$")


# --------------------------------------------------------------------------------------------
# The script


def _script() -> str:
    fields = ",".join(HEALTH_FIELDS)
    apps = ",".join(APPS_FIELDS)
    # POSIX sh only (dash, busybox ash): no arrays, no `local`, no `[[`, no pipefail; printf, not echo
    # (dash's echo interprets backslashes).
    # Each command's output is captured with $(...) so the exit code survives and a missing
    # trailing newline cannot glue output to the next marker.
    return f"""\
# gputui debug pod: read-only nvidia-smi queries, one marker-delimited section each.
# A failing command never stops the script: every section records its own exit code.
GPUTUI_FIELDS='{fields}'
GPUTUI_APPS_FIELDS='{apps}'

# Where is nvidia-smi? Injected by the NVIDIA runtime (PATH), or on the host mounted at /host
# (privileged route): host driver, GPU Operator's containerised driver, or GKE COS.
if [ -n "${{GPUTUI_NVIDIA_SMI:-}}" ]; then SMI="$GPUTUI_NVIDIA_SMI"
elif command -v nvidia-smi >/dev/null 2>&1; then SMI=nvidia-smi
elif [ -x /host/run/nvidia/driver/usr/bin/nvidia-smi ]; then SMI="chroot /host/run/nvidia/driver nvidia-smi"
elif [ -x /host/usr/bin/nvidia-smi ]; then SMI="chroot /host /usr/bin/nvidia-smi"
elif [ -x /host/home/kubernetes/bin/nvidia/bin/nvidia-smi ]; then
  SMI="env LD_LIBRARY_PATH=/host/home/kubernetes/bin/nvidia/lib64 /host/home/kubernetes/bin/nvidia/bin/nvidia-smi"
else SMI=nvidia-smi
fi
# A lost GPU can hang nvidia-smi for minutes: bound each call when `timeout` works here.
if timeout 5 true >/dev/null 2>&1; then SMI="timeout ${{GPUTUI_TIMEOUT:-60}} $SMI"; fi

printf '%s\\n' "=== gputui:begin {PROTOCOL_VERSION} ==="
printf '%s\\n' "=== gputui:info command $SMI ==="

run() {{
  out=$($SMI "$@" 2>&1)
  rc=$?
}}

emit() {{
  printf '%s\\n' "=== gputui:section $1$3 ==="
  if [ -n "$out" ]; then printf '%s\\n' "$out"; fi
  printf '%s\\n' "=== gputui:exit $1 $2 ==="
}}

# query NAME SWITCH FIELDS: run `nvidia-smi SWITCH=FIELDS` as noheader/nounits CSV. A driver that
# does not know one field fails the whole query ('Field "x" is not a valid field to query.'),
# so drop that field (or swap clocks_event_reasons.* for its old name clocks_throttle_reasons.*)
# and try again; the section marker lists the fields finally used and those dropped.
query() {{
  qf=$3
  dropped=''
  tries=0
  while :; do
    run "$2=$qf" --format=csv,noheader,nounits
    case "$out" in
      *'is not a valid field to query'*) ;;
      *) break ;;
    esac
    tries=$((tries + 1))
    if [ "$tries" -gt 40 ]; then break; fi
    bad=${{out#*Field \\"}}
    bad=${{bad%%\\"*}}
    case ",$qf," in
      *",$bad,"*) ;;
      *) break ;;
    esac
    case "$bad" in
      clocks_event_reasons.*) alt="clocks_throttle_reasons.${{bad#clocks_event_reasons.}}" ;;
      *) alt='' ;;
    esac
    padded=",$qf,"
    qf="${{padded%%,$bad,*}},${{alt:+$alt,}}${{padded#*,$bad,}}"
    qf=${{qf#,}}
    qf=${{qf%,}}
    dropped="$dropped${{dropped:+,}}$bad"
    if [ -z "$qf" ]; then break; fi
  done
  emit "$1" "$rc" " fields=$qf${{dropped:+ dropped=$dropped}}"
}}

run
emit nvidia-smi "$rc" ''
query query-gpu --query-gpu "$GPUTUI_FIELDS"
query query-compute-apps --query-compute-apps "$GPUTUI_APPS_FIELDS"
run -L
emit list "$rc" ''
printf '%s\\n' "=== gputui:end ==="
"""


DEBUG_SCRIPT: str = _script()
"""Run as `["/bin/sh", "-c", DEBUG_SCRIPT]`; set GPUTUI_NVIDIA_SMI to force a command (e.g. a chroot)."""


# --------------------------------------------------------------------------------------------
# Reading a log


@dataclass(frozen=True, slots=True)
class Section:
    """One command's output in a debug pod log; `exit_code` is None when the log stops mid-section."""

    name: str
    text: str
    exit_code: int | None
    fields: tuple[str, ...] = ()
    """CSV sections: the field list the driver accepted, in column order."""
    dropped: tuple[str, ...] = ()
    """CSV sections: fields the driver rejected as 'not a valid field to query'."""


@dataclass(frozen=True, slots=True)
class DebugLog:
    """A parsed debug pod log: its sections, `info` lines, and whether the end marker arrived."""

    sections: dict[str, Section]
    info: dict[str, str] = field(default_factory=dict)
    version: int | None = None
    complete: bool = False
    preamble: str = ""
    """Text before the first section (e.g. shell errors before the script's first marker)."""


def _parse_args(args: str) -> tuple[str, dict[str, str]]:
    name, _, rest = args.partition(" ")
    attrs: dict[str, str] = {}
    for token in rest.split():
        key, sep, value = token.partition("=")
        if sep:
            attrs[key] = value
    return name, attrs


def _split_list(value: str | None) -> tuple[str, ...]:
    return tuple(f for f in (value or "").split(",") if f)


def read_log(log: str) -> DebugLog:
    """Read a debug pod log. Tolerant: unknown markers are ignored, a cut-off section is kept."""
    sections: dict[str, Section] = {}
    info: dict[str, str] = {}
    version: int | None = None
    complete = False
    preamble: list[str] = []
    current: tuple[str, dict[str, str]] | None = None
    body: list[str] = []

    def close(exit_code: int | None) -> None:
        nonlocal current, body
        if current is None:
            return
        name, attrs = current
        sections[name] = Section(
            name=name,
            text="\n".join(body),
            exit_code=exit_code,
            fields=_split_list(attrs.get("fields")),
            dropped=_split_list(attrs.get("dropped")),
        )
        current, body = None, []

    for raw_line in log.splitlines():
        line = raw_line.rstrip("\r")
        match = _MARKER_RE.match(line)
        if match is None:
            (body if current is not None else preamble).append(line)
            continue
        verb, args = match["verb"], match["args"] or ""
        if verb == "section":
            close(None)
            name, attrs = _parse_args(args)
            if name:
                current = (name, attrs)
        elif verb == "exit":
            name, _, code = args.partition(" ")
            if current is not None and current[0] == name:
                close(int(code) if code.strip().lstrip("-").isdigit() else None)
        elif verb == "begin":
            version = int(args) if args.isdigit() else None
        elif verb == "info":
            key, _, value = args.partition(" ")
            info[key] = value
        elif verb == "end":
            close(None)
            complete = True
    close(None)
    return DebugLog(
        sections=sections,
        info=info,
        version=version,
        complete=complete,
        preamble="\n".join(preamble).strip("\n"),
    )


def split_sections(log: str) -> dict[str, Section]:
    """Sections of a debug pod log by name (`nvidia-smi`, `query-gpu`, `query-compute-apps`, `list`)."""
    return read_log(log).sections


def render_log(sections: list[Section], *, command: str = "nvidia-smi", complete: bool = True) -> str:
    """Write sections in exactly the format DEBUG_SCRIPT prints (used by the simulator and tests)."""
    lines = [f"=== gputui:begin {PROTOCOL_VERSION} ===", f"=== gputui:info command {command} ==="]
    for section in sections:
        attrs = ""
        if section.fields:
            attrs += " fields=" + ",".join(section.fields)
        if section.dropped:
            attrs += " dropped=" + ",".join(section.dropped)
        lines.append(f"=== gputui:section {section.name}{attrs} ===")
        text = section.text.strip("\n")
        if text:
            lines.append(text)
        if section.exit_code is not None:
            lines.append(f"=== gputui:exit {section.name} {section.exit_code} ===")
    if complete:
        lines.append("=== gputui:end ===")
    return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------------------------
# Real captures (nvidia_gpu_exporter format) -> debug pod logs, for the simulator

CAPTURES_DIR = Path(__file__).resolve().parents[1] / "sim" / "captures"

_RULE = "#" * 80


@dataclass(frozen=True, slots=True)
class CaptureSection:
    """One `#`-headed block of a capture file: `phase` is idle/load/capabilities."""

    phase: str
    title: str
    command: str | None
    body: str


def capture_sections(text: str) -> list[CaptureSection]:
    """Split a capture file at its `####` header blocks (bodies may hold `#` lines themselves)."""
    lines = text.splitlines()
    out: list[CaptureSection] = []
    i = 0
    header: list[str] | None = None
    body_start = 0

    def flush(end: int) -> None:
        if header is None:
            return
        title_line = next((h for h in header if " :: " in h), header[0] if header else "")
        phase, _, title = title_line.partition(" :: ")
        command = next((h[2:].strip() for h in header if h.startswith("$ ")), None)
        out.append(
            CaptureSection(
                phase=phase.strip(),
                title=title.strip(),
                command=command,
                body="\n".join(lines[body_start:end]).strip("\n"),
            )
        )

    while i < len(lines):
        # A header block: rule, one or more "# ..." lines, rule.
        if lines[i] == _RULE and i + 1 < len(lines) and lines[i + 1].startswith("# "):
            j = i + 1
            while j < len(lines) and lines[j].startswith("#") and lines[j] != _RULE:
                j += 1
            if j < len(lines) and lines[j] == _RULE:
                flush(i)
                header = [h[2:] if h.startswith("# ") else h[1:] for h in lines[i + 1 : j]]
                body_start = j + 1
                i = j + 1
                continue
        i += 1
    flush(len(lines))
    return out


def load_capture(name: str) -> str:
    """Text of a shipped capture (`h100`, `h100-mig`) or of a capture file path."""
    path = Path(name)
    if not path.is_file():
        path = CAPTURES_DIR / f"{name}.txt"
    if not path.is_file():
        known = sorted(p.stem for p in CAPTURES_DIR.glob("*.txt"))
        raise FileNotFoundError(f"no nvidia-smi capture {name!r}; shipped captures: {', '.join(known)}")
    return path.read_text(encoding="utf-8")


def _pick(sections: list[CaptureSection], phase: str | None, match: str) -> CaptureSection | None:
    found = [s for s in sections if s.command is not None and _command_kind(s.command) == match]
    if phase is not None:
        found = [s for s in found if s.phase == phase] or found
    return found[-1] if found else None


def _command_kind(command: str) -> str:
    args = command.split()
    if args[:1] != ["nvidia-smi"]:
        return ""
    rest = args[1:]
    if not rest:
        return "nvidia-smi"
    if rest[0].startswith("--query-gpu="):
        return "query-gpu"
    if rest[0].startswith("--query-compute-apps="):
        return "query-compute-apps"
    if rest == ["-L"]:
        return "list"
    return ""


_UNIT_RE = re.compile(r"^(?P<name>.*?)\s*\[(?P<unit>[^\]]*)\]$")

# Same meaning, another spelling: nvidia-smi accepts both (see --help-query-gpu/-compute-apps).
_GPU_ALIASES = {
    "gpu_uuid": "uuid",
    "gpu_name": "name",
    "gpu_bus_id": "pci.bus_id",
    "gpu_serial": "serial",
}
_APPS_ALIASES = {"used_gpu_memory": "used_memory", "name": "process_name"}


def _canonical(name: str, aliases: dict[str, str]) -> str:
    name = aliases.get(name, name)
    if name.startswith("clocks_throttle_reasons"):
        name = "clocks_event_reasons" + name[len("clocks_throttle_reasons") :]
    return name


def canonical_field(name: str, *, apps: bool = False) -> str:
    """One spelling per field: `gpu_uuid`->`uuid`, `clocks_throttle_reasons.*`->`clocks_event_reasons.*`.

    With `apps`, names are read as `--query-compute-apps` fields (`used_gpu_memory`->`used_memory`).
    """
    return _canonical(name.strip(), _APPS_ALIASES if apps else _GPU_ALIASES)


def _csv_columns(body: str, aliases: dict[str, str]) -> tuple[list[tuple[str, str]], list[list[str]]]:
    """(canonical name, unit) per header column, and the data rows, of a `--format=csv` block."""
    lines = [line for line in body.splitlines() if line.strip()]
    if not lines:
        return [], []
    columns = []
    for cell in lines[0].split(","):
        cell = cell.strip()
        match = _UNIT_RE.match(cell)
        name, unit = (match["name"], match["unit"]) if match else (cell, "")
        columns.append((_canonical(name, aliases), unit))
    rows = [[c.strip() for c in line.split(",")] for line in lines[1:]]
    return columns, rows


def _select_noheader(body: str, wanted: tuple[str, ...], aliases: dict[str, str]) -> str:
    """Re-emit a captured headed CSV as `noheader,nounits` rows of exactly `wanted`.

    Only reshapes what the capture holds: a field it lacks becomes `[N/A]` (never a made-up value),
    and units are stripped the way `nounits` does.
    """
    columns, rows = _csv_columns(body, aliases)
    index = {name: i for i, (name, _) in enumerate(columns)}
    out = []
    for row in rows:
        cells = []
        for f in wanted:
            i = index.get(_canonical(f, aliases))
            if i is None or i >= len(row):
                cells.append("[N/A]")
                continue
            value, unit = row[i], columns[i][1]
            if unit and value.endswith(" " + unit):
                value = value[: -len(unit) - 1]
            cells.append(value)
        out.append(", ".join(cells))
    return "\n".join(out)


def _query_rows(
    sections: list[CaptureSection], kind: str, fields: tuple[str, ...], phase: str | None
) -> str | None:
    found = _pick(sections, phase, kind)
    if found is None:
        return None
    return _select_noheader(found.body, fields, _APPS_ALIASES if kind == "query-compute-apps" else _GPU_ALIASES)


def capture_query(capture: str, kind: str, fields: tuple[str, ...], *, phase: str | None = None) -> str:
    """What `nvidia-smi --<kind>=<fields> --format=csv,noheader,nounits` printed, from a capture.

    `kind` is `query-gpu` or `query-compute-apps`. Used by the simulator and by tests that stand a
    fake nvidia-smi in front of DEBUG_SCRIPT.
    """
    rows = _query_rows(capture_sections(load_capture(capture)), kind, fields, phase)
    if rows is None:
        raise KeyError(f"capture {capture!r} has no {kind} section")
    return rows


# Exact failure texts (gpu-health.md 1.3) for scenarios that give an exit code but no output.
_CANNED_OUTPUT = {
    9: "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
    "Make sure that the latest NVIDIA driver is installed and running.",
    18: "Failed to initialize NVML: Driver/library version mismatch",
    255: "Failed to initialize NVML: Unknown Error",
}


def multi_gpu_bus_id(index: int) -> str:
    """Bus id of GPU `index` in a derived multi-GPU log (the captures are of one GPU; 0x53 + 0x11*i
    spaces them as on an 8-GPU HGX board, e.g. 00000000:53:00.0 ... 00000000:CA:00.0)."""
    return f"00000000:{0x53 + 0x11 * index:02X}:00.0"


def _gpu_uuid(uuid: str, index: int) -> str:
    return uuid[: -len(f"{index:x}")] + f"{index:x}" if index else uuid


def _lost_line(index: int) -> str:
    # nvidia-smi's words for a GPU that fell off the bus, in the form newer drivers print (index, then bus id).
    return (f"Unable to determine the device handle for GPU{index}: {multi_gpu_bus_id(index)[4:]}: GPU is lost.  "
            "Reboot the system to recover this GPU")


_UNREADABLE = "[Insufficient Permissions]"
_HEALTH_CELLS = ("temperature.gpu", "power.draw", "ecc.errors.uncorrected.volatile.total", "retired_pages.pending",
                 "remapped_rows.pending", "remapped_rows.failure", "clocks_event_reasons.active", "gpu_recovery_action",
                 "reset_status.reset_required", "reset_status.drain_and_reset_recommended")
"""The cells an `unreadable` GPU answers with _UNREADABLE (the CSV) or N/A (the table)."""


def _derive(sections: list[Section], gpus: int, lost: Collection[int], remap_pending: Collection[int],
            unreadable: Collection[int] = ()) -> list[Section]:
    """Sections of a one-GPU capture made into `gpus` GPUs: the same readings per GPU, each with its own
    index, bus id and UUID. A `lost` GPU is missing from every listing and named in the failure line
    nvidia-smi prints for it; `remap_pending` GPUs report `remapped_rows.pending` Yes; `unreadable` GPUs
    print no health value at all (N/A in the table, [Insufficient Permissions] in the CSV)."""
    keep = [i for i in range(gpus) if i not in lost]
    failures = "".join(_lost_line(i) + "\n" for i in sorted(lost) if i < gpus)
    out: list[Section] = []
    for section in sections:
        text = section.text
        if section.name == "nvidia-smi":
            text = _derive_table(text, keep, unreadable)
        elif section.name == "query-gpu":
            text = _derive_rows(text, section.fields, keep, remap_pending, unreadable)
        elif section.name == "list":
            first = text.splitlines()[0] if text.strip() else ""
            uuid = first[first.find("(UUID: ") + 7: -1] if "(UUID: " in first else ""
            text = "\n".join(first.replace("GPU 0:", f"GPU {i}:", 1).replace(uuid, _gpu_uuid(uuid, i))
                             for i in keep)
        else:
            out.append(section)
            continue
        out.append(dataclasses.replace(section, text=failures + text))
    return out


def _derive_table(text: str, keep: list[int], unreadable: Collection[int] = ()) -> str:
    lines = text.splitlines()
    head = next((i for i, line in enumerate(lines) if line.startswith("|===")), None)
    if head is None:
        return text
    end = next((i for i in range(head + 1, len(lines)) if lines[i].startswith("+")), len(lines))
    block, rule = lines[head + 1:end], lines[end] if end < len(lines) else ""
    bus = _BUS_IN_TABLE.search(block[0]) if block else None
    rows: list[str] = []
    for n, i in enumerate(keep):
        copy = list(block)
        copy[0] = re.sub(r"^\|\s+0 ", f"|{i:>4} ", copy[0])
        if bus is not None:
            copy[0] = copy[0].replace(bus.group(0), multi_gpu_bus_id(i))
        if i in unreadable and len(copy) > 1:
            copy[0] = re.sub(r"\S+(\s*\|)$", r"N/A\1", copy[0])  # Volatile Uncorr. ECC
            copy[1] = re.sub(r"^(\|\s*\S+\s+)\S+(\s+\S+\s+)\S+(\s*/\s*)\S+", r"\1N/A\2N/A\3N/A", copy[1])
        rows.extend(copy)
        if n < len(keep) - 1:
            rows.append(rule)
    return "\n".join(lines[: head + 1] + rows + lines[end:])


_BUS_IN_TABLE = re.compile(r"[0-9A-F]{8}:[0-9A-F]{2}:[0-9A-F]{2}\.[0-7]")


def _derive_rows(text: str, fields: tuple[str, ...], keep: list[int], remap_pending: Collection[int],
                 unreadable: Collection[int] = ()) -> str:
    names = [_canonical(f, _GPU_ALIASES) for f in fields]
    rows = [line for line in text.splitlines() if line.strip()]
    if not rows:
        return text
    cells = [c.strip() for c in rows[0].split(",")]
    out = []
    for i in keep:
        row = list(cells)
        for name, value in (("index", str(i)), ("pci.bus_id", multi_gpu_bus_id(i)),
                            ("uuid", _gpu_uuid(cells[names.index("uuid")], i) if "uuid" in names else ""),
                            ("remapped_rows.pending", "Yes" if i in remap_pending else None)):
            if name in names and value is not None:
                row[names.index(name)] = value
        for name in _HEALTH_CELLS if i in unreadable else ():
            if name in names:
                row[names.index(name)] = _UNREADABLE
        out.append(", ".join(row))
    return "\n".join(out)


def debug_log_for(
    capture: str | None,
    *,
    exit_code: int = 0,
    output: str | None = None,
    phase: str | None = None,
    gpus: int = 1,
    lost: Collection[int] = (),
    remap_pending: Collection[int] = (),
    query_gpu_error: str | None = None,
    unreadable: Collection[int] = (),
) -> str:
    """The log a gputui debug pod would print on a node, for the simulator.

    With `output` (or a non-zero `exit_code`), every nvidia-smi call prints that output and exits
    with that code, as a broken driver does. Otherwise the sections come from the real capture
    `capture` (`h100`, `h100-mig`); `phase` picks `idle` or `load` (default: the last, `load`).
    `gpus` > 1 (or any `lost` / `remap_pending` index) derives a multi-GPU node from the one-GPU
    capture (see `_derive`): an 8-GPU p5 then lists 8 GPUs, or 7 and the lost one's failure line.
    `query_gpu_error`: the `--query-gpu` section prints this and exits 2 (a driver refusing a field), so only
    the table tells about health. `unreadable` GPUs print no health value (N/A, [Insufficient Permissions]).
    """
    command = "nvidia-smi"
    if output is not None or exit_code != 0:
        text = output if output is not None else _CANNED_OUTPUT.get(exit_code, "")
        return render_log(
            [
                Section("nvidia-smi", text, exit_code),
                Section("query-gpu", text, exit_code, fields=HEALTH_FIELDS),
                Section("query-compute-apps", text, exit_code, fields=APPS_FIELDS),
                Section("list", text, exit_code),
            ],
            command=command,
        )
    if capture is None:
        raise ValueError("debug_log_for needs a capture name, or output/exit_code for a failure")
    sections = capture_sections(load_capture(capture))
    out: list[Section] = []
    # Sections in the script's order, each as the script's command would print it.
    table = _pick(sections, phase, "nvidia-smi")
    if table is not None:
        out.append(Section("nvidia-smi", table.body, 0))
    for name, fields in (("query-gpu", HEALTH_FIELDS), ("query-compute-apps", APPS_FIELDS)):
        kept: tuple[str, ...] = fields
        dropped: tuple[str, ...] = ()
        if name == "query-gpu":
            # Fields the captured driver did not offer are what the script drops after that driver's
            # 'is not a valid field to query' (e.g. reset_status.* on 590).
            found = _pick(sections, phase, name)
            known = {c for c, _ in _csv_columns(found.body, _GPU_ALIASES)[0]} if found is not None else set()
            kept = tuple(f for f in fields if _canonical(f, _GPU_ALIASES) in known) or fields
            dropped = tuple(f for f in fields if f not in kept)
        rows = _query_rows(sections, name, kept, phase)
        if rows is not None:
            out.append(Section(name, rows, 0, fields=kept, dropped=dropped))
    listing = _pick(sections, None, "list")
    if listing is not None:
        out.append(Section("list", listing.body, 0))
    if gpus > 1 or lost or remap_pending or unreadable:
        out = _derive(out, max(gpus, 1), lost, remap_pending, unreadable)
    if query_gpu_error is not None:
        out = [Section("query-gpu", query_gpu_error, 2, fields=HEALTH_FIELDS) if s.name == "query-gpu" else s
               for s in out]
    return render_log(out, command=command)
