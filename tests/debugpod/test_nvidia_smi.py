"""The nvidia-smi parser over real H100 / H100-MIG captures, in every format, plus sentinels and CSV forms."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from gputui.debugpod.capture import HEALTH_FIELDS, Section, render_log
from gputui.debugpod.nvidia_smi import is_sentinel, normalize_bus_id, parse, to_json

Sectioner = Callable[[str, str, str], str]

UUID0 = "GPU-00000000-0000-0000-0000-000000000000"
NAME = "NVIDIA H100 80GB HBM3"
BUS = "00000000:00:09.0"

FORMATS = {
    # format name in the report -> command of the capture block
    "table": "nvidia-smi",
    "query": "nvidia-smi -q",
    "csv": "nvidia-smi --query-gpu",
}


@pytest.mark.parametrize("capture", ["h100", "h100-mig"])
@pytest.mark.parametrize("phase", ["idle", "load"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
def test_every_gpu_format_of_both_captures_reads_fully(section: Sectioner, capture: str, phase: str, fmt: str) -> None:
    report = parse(section(capture, phase, FORMATS[fmt]))

    assert report.source_format == fmt
    assert report.warnings == ()  # no cell the parser could not interpret
    assert report.errors == ()
    assert len(report.gpus) == 1
    gpu = report.gpus[0]
    assert (gpu.index, gpu.name, normalize_bus_id(gpu.bus_id)) == (0, NAME, "0000:00:09.0")
    assert gpu.memory_total_mib == 81559
    assert gpu.mig_mode == ("Enabled" if capture == "h100-mig" else "Disabled")
    # Every unavailable value is one of nvidia-smi's sentinels, kept as printed
    # (MIG mode prints "On" in the table's ECC column and counts per MIG device instead).
    for field_name, reason in gpu.unavailable.items():
        assert is_sentinel(reason) or (fmt, field_name, reason) == (
            "table",
            "ecc.errors.uncorrected.volatile.total",
            "On",
        ), (field_name, reason)


def test_h100_query_gpu_csv_values(section: Sectioner) -> None:
    report = parse(section("h100", "idle", "nvidia-smi --query-gpu"))

    gpu = report.gpus[0]
    assert report.driver_version == "590.48.01"
    assert (gpu.uuid, gpu.bus_id) == (UUID0, BUS)
    assert (gpu.memory_used_mib, gpu.memory_total_mib) == (0, 81559)
    assert (gpu.utilization_pct, gpu.temperature_c) == (0, 41)
    assert (gpu.power_w, gpu.power_limit_w) == (69.85, 700.0)
    assert (gpu.ecc_mode, gpu.ecc_uncorrected_volatile) == ("Enabled", 0)
    assert (gpu.remapped_rows_pending, gpu.remapped_rows_failure) == (False, False)
    assert (gpu.pcie_gen_current, gpu.pcie_gen_max, gpu.pcie_width_current, gpu.pcie_width_max) == (5, 5, 16, 16)
    assert gpu.clocks_event_reasons == 0x1  # GPU idle
    assert gpu.recovery_action == "None"
    # Page retirement is pre-Ampere: an H100 prints [N/A], which is kept as the reason.
    assert gpu.retired_pages_pending is None
    # ... and so is the fan of a passively cooled datacenter card.
    assert gpu.unavailable == {"retired_pages.pending": "[N/A]", "fan.speed": "[N/A]"}
    # raw keeps every cell of the 200-odd field query, sentinels as printed.
    assert gpu.raw["count"] == "1"
    assert gpu.raw["fan.speed"] == "[N/A]"
    assert gpu.raw["display_mode"] == "[Requested functionality has been deprecated]"
    assert gpu.raw["memory.total"] == "81559 MiB"


def test_h100_table_and_q_agree_with_the_csv(section: Sectioner) -> None:
    csv = parse(section("h100", "load", "nvidia-smi --query-gpu")).gpus[0]
    table = parse(section("h100", "load", "nvidia-smi"))
    query = parse(section("h100", "load", "nvidia-smi -q"))

    assert (table.driver_version, table.cuda_version) == ("590.48.01", "13.1")
    assert (query.driver_version, query.cuda_version) == ("590.48.01", "13.1")
    t, q = table.gpus[0], query.gpus[0]
    for gpu in (t, q):
        assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.utilization_pct) == (19818, 81559, 100)
        assert gpu.ecc_uncorrected_volatile == 0
        assert gpu.power_limit_w == 700.0
    assert (t.temperature_c, t.power_w) == (59, 629.0)  # the table rounds to whole watts
    assert q.uuid == csv.uuid == UUID0
    assert (q.pcie_gen_current, q.pcie_width_current, q.pcie_width_max) == (5, 16, 16)
    assert (q.remapped_rows_pending, q.remapped_rows_failure) == (False, False)
    assert q.unavailable["retired_pages.pending"] == "N/A"  # -q prints N/A without brackets


def test_h100_processes_from_table_q_and_compute_apps(section: Sectioner) -> None:
    expected = [(11327, "/root/tools/memhog", 2566), (11328, "/root/tools/memhog", 1542), (11345, "./gpu_burn", 15690)]
    for command in ("nvidia-smi", "nvidia-smi -q", "nvidia-smi --query-compute-apps"):
        report = parse(section("h100", "load", command))
        assert [(p.pid, p.name, p.used_memory_mib) for p in report.processes] == expected, command
    apps = parse(section("h100", "load", "nvidia-smi --query-compute-apps"))
    assert apps.source_format == "compute-apps"
    assert {p.gpu_uuid for p in apps.processes} == {UUID0}
    table = parse(section("h100", "load", "nvidia-smi"))
    assert [p.pid for p in table.gpus[0].processes] == [11327, 11328, 11345]
    assert {(p.type, p.gpu_instance_id, p.compute_instance_id) for p in table.processes} == {("C", None, None)}
    assert parse(section("h100", "idle", "nvidia-smi")).processes == ()


MIG_DEVICES = [
    # (MIG dev, GI, CI, used MiB, total MiB, SMs) from the load-phase table
    (0, 2, 0, 11091, 40448, 60),
    (1, 3, 0, 17, 20096, 32),
    (2, 9, 0, 9, 9984, 16),
    (3, 10, 0, 9, 9984, 16),
]


@pytest.mark.parametrize("command", ["nvidia-smi", "nvidia-smi -q"])
def test_mig_capture_lists_mig_devices_and_na_cells(section: Sectioner, command: str) -> None:
    report = parse(section("h100-mig", "load", command))

    gpu = report.gpus[0]
    assert gpu.mig_mode == "Enabled"
    assert [
        (m.index, m.gpu_instance_id, m.compute_instance_id, m.memory_used_mib, m.memory_total_mib, m.sm_count)
        for m in gpu.mig_devices
    ] == MIG_DEVICES
    assert all(m.ecc_uncorrected_volatile == 0 for m in gpu.mig_devices)
    # GPU utilisation is not reported per physical GPU in MIG mode.
    assert gpu.utilization_pct is None
    assert gpu.unavailable["utilization.gpu"] == "N/A"
    assert [(p.pid, p.gpu_instance_id, p.compute_instance_id) for p in gpu.processes] == [
        (21180, 2, 0),
        (21181, 2, 0),
        (21198, 2, 0),
    ]


def test_mig_list_gives_profiles_and_uuids(section: Sectioner) -> None:
    report = parse(section("h100-mig", "capabilities", "nvidia-smi -L"))

    assert report.source_format == "list"
    gpu = report.gpus[0]
    assert (gpu.index, gpu.name, gpu.uuid) == (0, NAME, UUID0)
    assert [(m.index, m.profile, m.uuid) for m in gpu.mig_devices] == [
        (0, "3g.40gb", "MIG-00000000-0000-0000-0000-000000000000"),
        (1, "2g.20gb", "MIG-00000001-0000-0000-0000-000000000001"),
        (2, "1g.10gb", "MIG-00000002-0000-0000-0000-000000000002"),
        (3, "1g.10gb", "MIG-00000003-0000-0000-0000-000000000003"),
    ]


def test_mig_csv_keeps_na_for_utilization_and_row_remapping(section: Sectioner) -> None:
    gpu = parse(section("h100-mig", "load", "nvidia-smi --query-gpu")).gpus[0]

    assert gpu.utilization_pct is None and gpu.remapped_rows_pending is None
    assert {k: gpu.unavailable[k] for k in ("utilization.gpu", "remapped_rows.pending", "remapped_rows.failure")} == {
        "utilization.gpu": "[N/A]",
        "remapped_rows.pending": "[N/A]",
        "remapped_rows.failure": "[N/A]",
    }


@pytest.mark.parametrize(("capture", "mig_devices"), [("h100", 0), ("h100-mig", 4)])
def test_whole_capture_file_is_read_from_its_latest_sections(
    capture_text: Callable[[str], str], capture: str, mig_devices: int
) -> None:
    report = parse(capture_text(capture))

    assert (report.source_format, report.warnings, report.errors) == ("capture", (), ())
    assert [(g.index, g.uuid, g.memory_total_mib) for g in report.gpus] == [(0, UUID0, 81559)]
    assert len(report.gpus[0].mig_devices) == mig_devices
    assert len(report.gpus[0].processes) == 3  # the load phase


def _csv_with(section: Sectioner, **cells: str) -> str:
    """The real H100 idle query-gpu CSV (header + row) with some cells replaced."""
    header, row = section("h100", "idle", "nvidia-smi --query-gpu").splitlines()[:2]
    names = [h.strip().split(" [")[0] for h in header.split(",")]
    values = [v.strip() for v in row.split(",")]
    for name, value in cells.items():
        values[names.index(name.replace("__", "."))] = value
    return header + "\n" + ", ".join(values) + "\n"


@pytest.mark.parametrize(
    "sentinel",
    [
        "[N/A]",
        "N/A",
        "[Not Supported]",
        "[Unknown Error]",
        "[Requested functionality has been deprecated]",
        "[Insufficient Permissions]",
        "[GPU requires reset]",
    ],
)
def test_sentinels_become_none_with_the_reason_kept(section: Sectioner, sentinel: str) -> None:
    report = parse(_csv_with(section, **{"temperature__gpu": sentinel, "power__draw": sentinel}))

    gpu = report.gpus[0]
    assert gpu.temperature_c is None and gpu.power_w is None
    assert gpu.unavailable["temperature.gpu"] == sentinel
    assert gpu.unavailable["power.draw"] == sentinel
    assert report.warnings == ()
    assert gpu.memory_total_mib == 81559  # the rest of the row is unaffected


def test_an_unreadable_cell_is_reported_not_guessed(section: Sectioner) -> None:
    report = parse(_csv_with(section, **{"temperature__gpu": "hot"}))

    assert report.gpus[0].temperature_c is None
    assert report.gpus[0].unavailable["temperature.gpu"] == "hot"
    assert any("temperature.gpu" in w and "'hot'" in w for w in report.warnings)


def test_header_with_units_and_noheader_nounits_read_the_same(section: Sectioner) -> None:
    with_units = parse(section("h100", "load", "nvidia-smi --query-gpu")).gpus[0]
    noheader = "0, NVIDIA H100 80GB HBM3, GPU-00000000-0000-0000-0000-000000000000, 00000000:00:09.0, 19818, 81559, 100, 59, 631.95"
    fields = ("index", "name", "uuid", "pci.bus_id", "memory.used", "memory.total", "utilization.gpu", "temperature.gpu", "power.draw")
    log = render_log([Section("query-gpu", noheader, 0, fields=fields)])

    plain = parse(log).gpus[0]

    for attr in ("index", "name", "uuid", "bus_id", "memory_used_mib", "memory_total_mib", "utilization_pct", "temperature_c", "power_w"):
        assert getattr(plain, attr) == getattr(with_units, attr), attr
    assert with_units.raw["power.draw"] == "631.95 W" and plain.raw["power.draw"] == "631.95"


def test_units_are_stripped_from_a_small_headed_csv() -> None:
    text = (
        "index, memory.used [MiB], memory.total [MiB], utilization.gpu [%], power.draw [W], pcie.link.width.current\n"
        "0, 1024 MiB, 15360 MiB, 37 %, 27.52 W, 8\n"
        "1, 0 MiB, 15360 MiB, 0 %, [N/A], 16\n"
    )
    report = parse(text)

    assert report.source_format == "csv"
    assert [(g.index, g.memory_used_mib, g.memory_total_mib, g.utilization_pct, g.power_w, g.pcie_width_current) for g in report.gpus] == [
        (0, 1024, 15360, 37, 27.52, 8),
        (1, 0, 15360, 0, None, 16),
    ]


def test_pasted_noheader_csv_with_unknown_fields_says_so() -> None:
    report = parse("0, NVIDIA H100 80GB HBM3, 81559, 41\n")

    assert report.gpus == ()
    assert any("field list is unknown" in w and "--format=csv" in w for w in report.warnings)


def test_pasted_noheader_csv_in_gputui_field_order_is_recognised() -> None:
    cells = dict.fromkeys(HEALTH_FIELDS, "[N/A]") | {"index": "0", "uuid": UUID0, "memory.total": "81559"}
    report = parse(", ".join(cells[f] for f in HEALTH_FIELDS) + "\n")

    assert report.gpus[0].memory_total_mib == 81559
    assert any("assumed gputui's debug pod field list" in w for w in report.warnings)


def test_renamed_and_aliased_fields_map_to_one_name() -> None:
    text = (
        "gpu_name, gpu_uuid, gpu_bus_id, clocks_throttle_reasons.active\n"
        "Tesla T4, GPU-1, 00000000:00:1E.0, 0x0000000000000004\n"
    )
    gpu = parse(text).gpus[0]

    assert (gpu.name, gpu.uuid, gpu.bus_id) == ("Tesla T4", "GPU-1", "00000000:00:1E.0")
    assert gpu.clocks_event_reasons == 0x4  # SW power cap
    assert gpu.raw["clocks_throttle_reasons.active"] == "0x0000000000000004"


def test_q_from_an_older_driver_with_throttle_reasons_and_double_bit_ecc() -> None:
    # Shape of a 4xx-driver `-q` (old ECC schema, "Clocks Throttle Reasons", "Power Readings").
    text = """
==============NVSMI LOG==============

Driver Version                            : 450.66
CUDA Version                              : 11.0

Attached GPUs                             : 1
GPU 00000000:00:1E.0
    Product Name                          : Tesla T4
    GPU UUID                              : GPU-aaaa
    Clocks Throttle Reasons
        Idle                              : Not Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Active
    ECC Errors
        Volatile
            Single Bit
                Device Memory             : 0
                Total                     : 0
            Double Bit
                Device Memory             : 2
                Total                     : 2
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 1
        Pending Page Blacklist            : Yes
    Remapped Rows                         : N/A
    Power Readings
        Power Draw                        : 27.52 W
        Power Limit                       : 70.00 W
    Processes                             : None
"""
    report = parse(text)

    gpu = report.gpus[0]
    assert (report.source_format, report.driver_version) == ("query", "450.66")
    assert (gpu.name, gpu.ecc_uncorrected_volatile, gpu.retired_pages_pending) == ("Tesla T4", 2, True)
    assert gpu.clocks_event_reasons == 0x8 | 0x40
    assert (gpu.power_w, gpu.power_limit_w) == (27.52, 70.0)
    assert gpu.unavailable["remapped_rows.pending"] == "N/A"


def test_old_table_layout_without_mig_column() -> None:
    # The 384-driver layout (2-line GPU block, no GI/CI process columns).
    text = """\
+-----------------------------------------------------------------------------+
| NVIDIA-SMI 384.66                 Driver Version: 384.66                    |
|-------------------------------+----------------------+----------------------+
| GPU  Name        Persistence-M| Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp  Perf  Pwr:Usage/Cap|         Memory-Usage | GPU-Util  Compute M. |
|===============================+======================+======================|
|   0  TITAN Xp            Off  | 00000000:41:00.0  On |                  N/A |
| 29%   47C    P5    28W / 250W |   2789MiB / 12174MiB |      0%      Default |
+-------------------------------+----------------------+----------------------+

+-----------------------------------------------------------------------------+
| Processes:                                                       GPU Memory |
|  GPU       PID  Type  Process name                               Usage      |
|=============================================================================|
|    0      1568    G   /usr/lib/xorg/Xorg                            1850MiB |
+-----------------------------------------------------------------------------+
"""
    report = parse(text)

    gpu = report.gpus[0]
    assert (report.driver_version, report.cuda_version) == ("384.66", None)
    assert (gpu.name, gpu.temperature_c, gpu.power_w, gpu.memory_used_mib, gpu.mig_mode) == ("TITAN Xp", 47, 28.0, 2789, None)
    assert gpu.unavailable == {"ecc.errors.uncorrected.volatile.total": "N/A"}
    assert [(p.pid, p.type, p.name, p.used_memory_mib) for p in gpu.processes] == [(1568, "G", "/usr/lib/xorg/Xorg", 1850)]


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
            "Make sure that the latest NVIDIA driver is installed and running.\n",
            "driver-not-loaded",
        ),
        ("Failed to initialize NVML: Unknown Error\n", "nvml-unknown-error"),
        ("Failed to initialize NVML: Driver/library version mismatch\n", "driver-library-mismatch"),
        ("No devices were found\n", "no-devices"),
        (
            "Unable to determine the device handle for GPU 0000:02:00.0: GPU is lost.  "
            "Reboot the system to recover this GPU\n",
            "gpu-lost",
        ),
    ],
)
def test_failure_messages_become_errors(text: str, code: str) -> None:
    report = parse(text)

    assert report.gpus == ()
    assert report.errors == (text.strip(),)
    assert [f.code for f in report.failures] == [code]


def test_lost_gpu_bus_id_is_kept_for_mapping(section: Sectioner) -> None:
    lost = "Unable to determine the device handle for GPU0000:00:09.0: GPU is lost.  Reboot the system to recover this GPU"
    report = parse(lost + "\n" + section("h100", "idle", "nvidia-smi"))

    assert report.failures[0].bus_id == "0000:00:09.0"
    assert normalize_bus_id(report.failures[0].bus_id) == normalize_bus_id(report.gpus[0].bus_id)


@pytest.mark.parametrize("line", [
    "Unable to determine the device handle for GPU1: 0000:00:09.0: Unknown Error",  # newer drivers name the index
    "Unable to determine the device handle for GPU7: 0000:00:09.0: GPU is lost.  Reboot the system to recover this GPU",
])
def test_lost_gpu_with_its_index_in_the_message_is_still_found(section: Sectioner, line: str) -> None:
    report = parse(line + "\n" + section("h100", "idle", "nvidia-smi"))

    (failure,) = report.failures
    assert failure.code == ("gpu-lost" if "is lost" in line else "device-handle-error")
    assert normalize_bus_id(failure.bus_id) == normalize_bus_id(report.gpus[0].bus_id)


def test_to_json_is_plain_data(section: Sectioner) -> None:
    import json

    data = to_json(parse(section("h100-mig", "load", "nvidia-smi")))

    assert json.loads(json.dumps(data)) == data
    assert data["gpus"][0]["mig_devices"][0]["memory_total_mib"] == 40448
    assert isinstance(data["gpus"][0]["processes"], list)


def test_empty_and_unrelated_text() -> None:
    assert parse("").source_format == "empty"
    unrelated = parse("hello world\n")
    assert unrelated.gpus == () and unrelated.errors == ()
    assert unrelated.warnings == ("no nvidia-smi output recognised in the input",)
