"""`gputui debug --parse` on every class of input a ticket holds: no false "healthy", right verdict and exit code.

Inputs are real nvidia-smi outputs from tests/fixtures/nvidia-smi (sources in its README); where a fault
has no public capture, one value of a real capture is flipped and the test says which.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from gputui.cli.program import main
from gputui.debugpod.capture import HEALTH_FIELDS, Section, capture_query, debug_log_for, render_log
from gputui.debugpod.nvidia_smi import parse
from tests.debugpod.conftest import FIXTURES, section_body

Capsys = pytest.CaptureFixture[str]

DRIVER_610 = FIXTURES / "linux-x86_64__nvidia-geforce-rtx-2080-super__610.57.04.load.txt"
DRIVER_595 = FIXTURES / "linux-x86_64__nvidia-geforce-rtx-2080-super__595.71.05.load.txt"
ADA_595 = FIXTURES / "linux-x86_64__nvidia-geforce-rtx-4080-super__595.71.05.load.txt"
WINDOWS_610 = FIXTURES / "windows-x86_64__nvidia-geforce-rtx-2080-super__610.62.load.txt"
H100_545_Q = FIXTURES / "linux-x86_64__nvidia-h100-80gb-hbm3__545.23.08.q.txt"
DMESG = FIXTURES / "dmesg-xid.txt"
HEALTHY = "no GPU health problems found"


def _parse(capsys: Capsys, tmp_path: Path, text: str, *extra: str) -> tuple[int, str, str]:
    saved = tmp_path / "pasted.txt"
    saved.write_text(text)
    code = main(["debug", "--parse", str(saved), *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _json(capsys: Capsys, tmp_path: Path, text: str) -> tuple[int, dict[str, object]]:
    code, out, _ = _parse(capsys, tmp_path, text, "-o", "json")
    return code, json.loads(out)


def _block(path: Path, command: str) -> str:
    """One command's output from an excerpt file (the load phase)."""
    from gputui.debugpod.capture import capture_sections

    return next(s.body for s in capture_sections(path.read_text()) if (s.command or "").strip() == command)


# --- input that holds no (complete) reading ---------------------------------------------------------


@pytest.mark.parametrize(("text", "said"), [
    ("", "the input is empty"),
    ("Hi team, the job on node 7 died again, see the attached screenshot.\n", "no nvidia-smi output in it"),
])
def test_empty_or_unrelated_text_is_could_not_read(capsys: Capsys, tmp_path: Path, text: str, said: str) -> None:
    code, out, _ = _parse(capsys, tmp_path, text)
    assert code == 6
    assert "could not read GPU health" in out and said in out
    assert HEALTHY not in out and "✓" not in out


def test_dmesg_xid_lines_are_not_csv_and_not_healthy(capsys: Capsys, tmp_path: Path) -> None:
    code, out, _ = _parse(capsys, tmp_path, DMESG.read_text())
    assert code == 3  # Xid 79 is fatal whatever else the paste lacks
    assert "could not read GPU health" in out and "only kernel log lines (1 Xid line(s))" in out
    assert "kernel-xid" in out and "Xid 79 on 0000:01:00" in out
    assert HEALTHY not in out


def test_quoted_table_is_read(capsys: Capsys, tmp_path: Path) -> None:
    quoted = "".join(f"> {line}\n" for line in section_body("h100", "load", "nvidia-smi").splitlines())
    code, data = _json(capsys, tmp_path, quoted)
    assert code == 4  # read, but a table shows no remapped rows, retired pages or reset state
    (gpu,) = data["report"]["gpus"]  # type: ignore[index]
    assert (gpu["name"], gpu["memory_total_mib"], gpu["temperature_c"]) == ("NVIDIA H100 80GB HBM3", 81559, 59)


@pytest.mark.parametrize("prefix", [
    # `kubectl logs --timestamps` (RFC3339Nano before every line, blank ones too), `kubectl logs --prefix`,
    # both at once, and Ray's per-task prefix (as in a public SkyPilot/Ray log of `nvidia-smi`).
    lambda i: f"2026-11-26T20:1{i % 10}:0{i % 6}.{i:09d}Z ",
    lambda i: "[pod/gputui-debug-7f3k2/nvidia-smi] ",
    lambda i: f"[pod/gputui-debug-7f3k2/nvidia-smi] 2026-11-26T20:15:00.{i:06d}+00:00 ",
    lambda i: "(task, pid=7059) ",
])
def test_log_line_prefixes_are_read(capsys: Capsys, tmp_path: Path, prefix) -> None:  # type: ignore[no-untyped-def]
    log = debug_log_for("h100")
    plain_code, plain = _json(capsys, tmp_path, log)
    prefixed = "".join(f"{prefix(i)}{line}\n" for i, line in enumerate(log.splitlines()))
    code, data = _json(capsys, tmp_path, prefixed)
    assert (code, data["worst"], data["report"]["gpus"]) == (plain_code, plain["worst"], plain["report"]["gpus"])  # type: ignore[index]
    assert data["report"]["source_format"] == "debug-pod"  # type: ignore[index]


def test_headerless_csv_with_unknown_columns_is_could_not_read(capsys: Capsys, tmp_path: Path) -> None:
    # `--format=csv,noheader` of a field list gputui cannot know: the columns cannot be named.
    rows = capture_query("h100", "query-gpu", ("index", "name", "temperature.gpu", "memory.used")) + "\n"
    code, out, _ = _parse(capsys, tmp_path, rows)
    assert code == 6
    assert "could not read GPU health" in out and "its field list is unknown" in out
    assert HEALTHY not in out


def test_debug_pod_log_cut_after_the_table(capsys: Capsys, tmp_path: Path) -> None:
    # The table section finished, the CSV (ECC, remapped rows) never came: not an all-clear.
    log = debug_log_for("h100")
    cut = log[: log.index("=== gputui:section query-gpu")]
    code, data = _json(capsys, tmp_path, cut)
    assert code == 6
    failure = data["failure"]
    assert failure["stage"] == "input" and "stops before its end marker" in failure["title"]  # type: ignore[index]
    assert failure["detail"] == "sections finished: nvidia-smi"  # type: ignore[index]
    code, out, _ = _parse(capsys, tmp_path, cut)
    assert code == 6 and HEALTHY not in out


def test_a_gpu_list_is_no_health_reading(capsys: Capsys, tmp_path: Path) -> None:
    # `nvidia-smi -L` names the GPUs and says nothing about their health: no check mark for it.
    code, out, _ = _parse(capsys, tmp_path, section_body("h100", "capabilities", "nvidia-smi -L") + "\n")
    assert code == 6
    assert "it lists 1 GPU(s) but no health value" in out and HEALTHY not in out


def test_truncated_query_of_eight_gpus(capsys: Capsys, tmp_path: Path) -> None:
    # The real H100 `-q` with "Attached GPUs : 8": what an 8-GPU node's -q looks like when a ticket
    # kept only its first GPU section.
    import re

    cut = re.sub(r"(Attached GPUs\s+:) 1", r"\1 8", section_body("h100", "load", "nvidia-smi -q"))
    assert re.search(r"Attached GPUs\s+: 8", cut)
    code, out, _ = _parse(capsys, tmp_path, cut)
    assert code == 6
    assert "could not read GPU health of 7 of 8 GPUs" in out and "says 8 GPUs are attached but holds 1" in out
    assert HEALTHY not in out


# --- drivers the parser had not seen ----------------------------------------------------------------


def test_610_query_renames(capsys: Capsys, tmp_path: Path) -> None:
    # 610: `Driver Version : 610.57.04 [Deprecated; ...]`, `KMD Version`, `Average Power Draw : N/A` beside
    # the instantaneous reading, and `Current Power Limit` moved under `GPU Ceiling Power Limit`.
    report = parse(_block(DRIVER_610, "nvidia-smi -q"))
    assert (report.driver_version, report.cuda_version) == ("610.57.04", "13.3")
    (gpu,) = report.gpus
    assert (gpu.power_w, gpu.power_limit_w) == (97.75, 250.0)
    code, _ = _json(capsys, tmp_path, _block(DRIVER_610, "nvidia-smi -q"))
    assert code == 0


def test_610_table_header(capsys: Capsys, tmp_path: Path) -> None:
    # `| NVIDIA-SMI 610.57.04   KMD Version: 610.57.04   CUDA UMD Version: 13.3 |`
    code, data = _json(capsys, tmp_path, _block(DRIVER_610, "nvidia-smi"))
    assert code == 4  # a table: no remapped rows, retired pages or reset state (see test_a_table_alone_...)
    report = data["report"]
    assert (report["driver_version"], report["cuda_version"]) == ("610.57.04", "13.3")  # type: ignore[index]


def test_470_table(capsys: Capsys, tmp_path: Path) -> None:
    # The oldest driver branch gputui reads: narrow table, `Persistence-M` glued to the name column.
    code, data = _json(capsys, tmp_path, (FIXTURES / "linux-x86_64__nvidia-geforce-gtx-680__470.256.02.table.txt")
                       .read_text())
    assert code == 4  # a table: no remapped rows, retired pages or reset state (see test_a_table_alone_...)
    (gpu,) = data["report"]["gpus"]  # type: ignore[index]
    assert (data["report"]["driver_version"], gpu["fan_speed_pct"], gpu["memory_total_mib"]) == (  # type: ignore[index]
        "470.256.02", 37, 2000)


def test_595_query_average_power_na_does_not_hide_the_reading() -> None:
    (gpu,) = parse(_block(DRIVER_595, "nvidia-smi -q")).gpus
    assert (gpu.power_w, gpu.power_limit_w) == (98.55, 250.0)
    assert "power.draw" not in gpu.unavailable


def test_windows_table_does_not_glue_wddm_to_the_name() -> None:
    report = parse(_block(WINDOWS_610, "nvidia-smi"))
    (gpu,) = report.gpus
    assert gpu.name == "NVIDIA GeForce RTX 2080 ..."
    assert gpu.raw["table.TCC/WDDM"] == "WDDM"
    assert report.driver_version == "610.62"


def test_590_memory_repair_fields(capsys: Capsys, tmp_path: Path) -> None:
    query = _block(ADA_595, "nvidia-smi -q")
    assert parse(query).gpus[0].channel_repair_pending is False  # the real value: No
    # Flipped: no public capture has a pending channel repair or unrepairable memory.
    pending = query.replace("Channel Repair Pending                         : No",
                            "Channel Repair Pending                         : Yes")
    code, data = _json(capsys, tmp_path, pending)
    assert code == 3
    assert [(f["code"], f["severity"]) for f in data["flags"]] == [("memory-repair-pending", "error")]  # type: ignore[index]
    broken = query.replace("Unrepairable Memory                            : N/A",
                           "Unrepairable Memory                            : Yes")
    code, data = _json(capsys, tmp_path, broken)
    assert code == 3
    assert [(f["code"], f["severity"]) for f in data["flags"]] == [("memory-unrepairable", "critical")]  # type: ignore[index]


# --- reset required on drivers without gpu_recovery_action (535-570) ---------------------------------


def test_reset_required_in_a_545_query(capsys: Capsys, tmp_path: Path) -> None:
    text = H100_545_Q.read_text()
    code, _ = _json(capsys, tmp_path, text)
    assert code == 0  # the real capture: Reset Required : No
    flipped = text.replace("Reset Required                    : No", "Reset Required                    : Yes")
    code, data = _json(capsys, tmp_path, flipped)
    assert code == 3
    assert [(f["gpu_index"], f["code"], f["field"]) for f in data["flags"]] == [  # type: ignore[index]
        (0, "gpu-requires-reset", "reset_status.reset_required")]


def test_reset_required_in_a_535_debug_pod_log(capsys: Capsys, tmp_path: Path) -> None:
    # A 535 driver refuses gpu_recovery_action, so the script drops it and keeps reset_status.*.
    fields = tuple(f for f in HEALTH_FIELDS if f != "gpu_recovery_action")
    row = capture_query("h100", "query-gpu", fields).split(", ")
    row[fields.index("reset_status.reset_required")] = "Yes"
    row[fields.index("reset_status.drain_and_reset_recommended")] = "No"
    log = render_log([Section("query-gpu", ", ".join(row), 0, fields=fields, dropped=("gpu_recovery_action",))])
    code, data = _json(capsys, tmp_path, log)
    assert code == 3
    assert [(f["code"], f["field"], f["value"]) for f in data["flags"]] == [  # type: ignore[index]
        ("gpu-requires-reset", "reset_status.reset_required", "Yes")]


# --- cells that say the GPU failed ---------------------------------------------------------------------


def test_err_row_is_one_failed_gpu(capsys: Capsys, tmp_path: Path) -> None:
    table = section_body("h100", "load", "nvidia-smi").replace(
        "| N/A   59C    P0            629W /  700W |", "| ERR!  ERR!   P0            ERR! /  ERR! |")
    code, data = _json(capsys, tmp_path, table)
    assert code == 3
    assert [(f["gpu_index"], f["code"]) for f in data["flags"]] == [  # type: ignore[index]
        (0, "gpu-error-state"), (None, "health-not-shown")]


@pytest.mark.parametrize(("csv_cell", "table_cell", "code"), [
    # The CSV said the GPU needs a reset; the table still printed a number for the same field.
    ("[GPU requires reset]", "19818MiB", "gpu-requires-reset"),
    # The CSV read a number; by the table's turn the GPU answered ERR!.
    ("19818", "ERR!", "gpu-error-state"),
])
def test_sentinel_beats_a_number_from_another_section(capsys: Capsys, tmp_path: Path, csv_cell: str,
                                                      table_cell: str, code: str) -> None:
    log = debug_log_for("h100")
    row = next(line for line in log.splitlines() if line.startswith("0, NVIDIA H100"))
    cells = row.split(", ")
    cells[HEALTH_FIELDS.index("memory.used")] = csv_cell
    log = log.replace(row, ", ".join(cells)).replace("|   19818MiB /  81559MiB |", f"|   {table_cell} /  81559MiB |")
    code_, data = _json(capsys, tmp_path, log)
    assert code_ == 3
    assert code in [f["code"] for f in data["flags"]]  # type: ignore[union-attr]
    (gpu,) = data["report"]["gpus"]  # type: ignore[index]
    assert gpu["memory_used_mib"] is None


@pytest.mark.parametrize("cell", ["[Timeout]", "[Insufficient External Power]", "[Corrupted infoROM]"])
def test_nvml_fault_cells_are_no_reading(capsys: Capsys, tmp_path: Path, cell: str) -> None:
    # nvidia-smi prints a field it could not read as [<nvmlErrorString>]; these NVML errors (strings as in
    # NVIDIA/DCGM sdk/nvidia/nvml/nvml_error_strings.h) say the GPU did not answer, not that it lacks the
    # field. The H100 590 debug pod log, with its temperature and power read as that error.
    log = debug_log_for("h100")
    row = next(line for line in log.splitlines() if line.startswith("0, NVIDIA H100"))
    cells = row.split(", ")
    for name in ("temperature.gpu", "power.draw"):
        cells[HEALTH_FIELDS.index(name)] = cell
    log = log.replace(row, ", ".join(cells))
    code, data = _json(capsys, tmp_path, log)
    # The table of the same log printed numbers for both: the CSV's failure outranks them.
    assert code == 3
    assert "gpu-error-state" in [f["code"] for f in data["flags"]]  # type: ignore[union-attr]
    (gpu,) = data["report"]["gpus"]  # type: ignore[index]
    assert gpu["temperature_c"] is None and gpu["power_w"] is None
    code, out, _ = _parse(capsys, tmp_path, log)
    assert code == 3 and HEALTHY not in out


def test_inforom_warning_under_a_table(capsys: Capsys, tmp_path: Path) -> None:
    # nvidia-smi prints this line after the table of a GPU whose infoROM is corrupted.
    table = section_body("h100", "load", "nvidia-smi") + "\nWARNING: infoROM is corrupted at gpu 0000:00:09.0\n"
    code, data = _json(capsys, tmp_path, table)
    assert code == 3
    assert [(f["gpu_index"], f["code"]) for f in data["flags"]] == [  # type: ignore[index]
        (0, "inforom-corrupted"), (None, "health-not-shown")]


def test_pcie_gen1_under_load_but_not_at_idle(capsys: Capsys, tmp_path: Path) -> None:
    header, row = section_body("h100", "load", "nvidia-smi --query-gpu").splitlines()[:2]
    names = [h.strip().split(" [")[0] for h in header.split(",")]

    def with_cells(**cells: str) -> str:
        values = [v.strip() for v in row.split(",")]
        for name, value in cells.items():
            values[names.index(name)] = value
        return header + "\n" + ", ".join(values) + "\n"

    code, _ = _json(capsys, tmp_path, with_cells(**{"pcie.link.gen.current": "1", "utilization.gpu": "0 %"}))
    assert code == 0
    code, data = _json(capsys, tmp_path, with_cells(**{"pcie.link.gen.current": "1"}))  # the capture: 100 % busy
    assert code == 4
    assert [(f["code"], f["value"]) for f in data["flags"]] == [("pcie-gen-downgraded", "1")]  # type: ignore[index]


# --- a reading that cannot see every health value ------------------------------------------------------


def _gt801(result: dict[str, object]) -> list[tuple[str, str]]:
    """GT801 over the JSON `--parse -o json` printed (what the TUI's debug run stores): (severity, title)."""
    from diagnostics import run
    from diagnostics.snapshot import SourceState
    from tests.builders import snapshot

    snap = snapshot(sources={"nvidia-smi": SourceState.OK}, gpu_reports={"gpu-node-1": result})
    (check,) = run(snap, only=["gpu-health-nvidia-smi"]).results
    return [(f.severity.label if f.severity else "", f.title) for f in check.findings]


def test_a_table_alone_says_what_it_cannot_show(capsys: Capsys, tmp_path: Path) -> None:
    # The default `nvidia-smi` screen of the real H100 (590): ECC count, temperature, power, memory, but no
    # remapped rows, retired pages or reset state. A check mark for what it shows, not an all-clear.
    table = section_body("h100", "load", "nvidia-smi")
    code, out, _ = _parse(capsys, tmp_path, table)
    assert code == 4
    assert ("✓ no problem in what the table shows (1 GPU(s)); not shown: remapped rows, retired pages, "
            "reset required") in out
    assert "attach `nvidia-smi -q`" in out
    assert HEALTHY not in out
    code, data = _json(capsys, tmp_path, table)
    assert (code, data["worst"], data["exit_code"]) == (4, "warning", 4)
    assert [(f["code"], f["value"]) for f in data["flags"]] == [  # type: ignore[index]
        ("health-not-shown", "remapped rows, retired pages, reset required")]
    # The checklist reads the same verdict: a warning that says what was not seen, never a pass.
    assert _gt801(data) == [("warning", "gpu-node-1: the last nvidia-smi reading does not show remapped rows, "
                                        "retired pages, reset required: no verdict on them")]
    # The same GPU's `-q` shows them all: that one is an all-clear.
    code, out, _ = _parse(capsys, tmp_path, section_body("h100", "load", "nvidia-smi -q"))
    assert code == 0 and HEALTHY in out and "not shown" not in out


def test_a_debug_pod_log_whose_csv_failed_is_a_table_alone(capsys: Capsys, tmp_path: Path) -> None:
    # The debug pod's --query-gpu section refused (exit 2, nvidia-smi's own message): only its table was read.
    log = render_log([Section("nvidia-smi", section_body("h100", "load", "nvidia-smi"), 0),
                      Section("query-gpu", 'Field "reset_status.reset_required" is not a valid field to query.', 2,
                              fields=HEALTH_FIELDS),
                      Section("list", section_body("h100", "capabilities", "nvidia-smi -L"), 0)])
    code, out, _ = _parse(capsys, tmp_path, log)
    assert code == 4
    assert "not shown: remapped rows, retired pages, reset required" in out and HEALTHY not in out


def _csv_with_second_gpu(**cells: str) -> str:
    """The real H100 `--query-gpu` CSV (header and units), plus a second GPU made from its row: index 1,
    another bus id and UUID, and `cells` replaced."""
    header, row = section_body("h100", "load", "nvidia-smi --query-gpu").splitlines()[:2]
    names = [h.strip().split(" [")[0] for h in header.split(",")]
    values = [v.strip() for v in row.split(",")]
    changed = {"index": "1", "pci.bus_id": "00000000:00:0A.0", "uuid": "GPU-00000000-0000-0000-0000-000000000001",
               **cells}
    for name, value in changed.items():
        values[names.index(name)] = value
    return f"{header}\n{row}\n{', '.join(values)}\n"


def test_a_gpu_whose_every_health_value_is_unreadable_is_not_healthy(capsys: Capsys, tmp_path: Path) -> None:
    from gputui.debugpod.health import HEALTH_VALUES

    header = section_body("h100", "load", "nvidia-smi --query-gpu").splitlines()[0]
    present = [f for f in HEALTH_VALUES if f in [h.strip().split(" [")[0] for h in header.split(",")]]
    assert {"temperature.gpu", "power.draw", "ecc.errors.uncorrected.volatile.total", "remapped_rows.pending",
            "gpu_recovery_action"} <= set(present)
    # Flipped: GPU 1 answers [Insufficient Permissions] (or [N/A]) for every health field, as NVML does for a
    # caller it does not let read them; GPU 0 is the real reading.
    cells = {f: "[Insufficient Permissions]" if i % 2 == 0 else "[N/A]" for i, f in enumerate(present)}
    code, out, _ = _parse(capsys, tmp_path, _csv_with_second_gpu(**cells))
    assert code == 4
    assert "GPU 1 [health-unreadable]" in out and "could not read its health" in out
    assert HEALTHY not in out and "✓" not in out
    code, data = _json(capsys, tmp_path, _csv_with_second_gpu(**cells))
    assert [(f["gpu_index"], f["code"], f["severity"]) for f in data["flags"]] == [  # type: ignore[index]
        (1, "health-unreadable", "warning")]
    assert _gt801(data) == [("warning", "gpu-node-1: nvidia-smi could not read the health of GPU 1 ([N/A] / "
                                        "[Insufficient Permissions]): unknown, not healthy")]
    # [N/A] on some fields is normal (retired pages on any H100, remapped rows on one in MIG mode): not flagged.
    code, out, _ = _parse(capsys, tmp_path, _csv_with_second_gpu(
        **{"remapped_rows.pending": "[N/A]", "remapped_rows.failure": "[N/A]"}))
    assert code == 0 and HEALTHY in out
