"""gpu-health-nvidia-smi: findings from debug pod results, built by gputui's own parser from the real captures."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from diagnostics import CheckResult, CheckStatus, ObjectRef, Severity, run
from diagnostics.model import EvidenceKind
from diagnostics.snapshot import SourceState
from gputui.debugpod.capture import HEALTH_FIELDS, debug_log_for
from gputui.debugpod.health import health_flags
from gputui.debugpod.nvidia_smi import parse
from gputui.debugpod.pod_spec import PodOptions
from gputui.debugpod.result import DebugResult
from gputui.debugpod.failures import from_cut_output, from_report
from tests.builders import NOW, snapshot

NODE_NAME = "ip-10-0-12-34.ec2.internal"

NODE = f"""
apiVersion: v1
kind: Node
metadata:
  name: {NODE_NAME}
  labels:
    karpenter.sh/nodepool: gpu
    node.kubernetes.io/instance-type: p5.4xlarge
    karpenter.k8s.aws/instance-gpu-count: "1"
spec:
  providerID: aws:///us-west-2a/i-0abc123def4567890
status:
  conditions: [{{type: Ready, status: "True", reason: KubeletReady}}]
  capacity: {{cpu: "16", memory: 256Gi, pods: "110", nvidia.com/gpu: "1"}}
  allocatable: {{cpu: 15890m, memory: 250Gi, pods: "110", nvidia.com/gpu: "1"}}
"""

CLAIM = f"""
apiVersion: karpenter.sh/v1
kind: NodeClaim
metadata:
  name: gpu-7xk2q
  labels: {{karpenter.sh/nodepool: gpu}}
status:
  nodeName: {NODE_NAME}
  providerID: aws:///us-west-2a/i-0abc123def4567890
  conditions:
  - {{type: Initialized, status: "True", reason: Initialized}}
"""

TRAINER = f"""
apiVersion: v1
kind: Pod
metadata: {{name: trainer-0, namespace: ml}}
spec:
  nodeName: {NODE_NAME}
  containers:
  - name: trainer
    image: nvcr.io/nvidia/pytorch:24.05-py3
    resources: {{limits: {{nvidia.com/gpu: "1"}}}}
status: {{phase: Running}}
"""

OK = {"nvidia-smi": SourceState.OK}


def with_cells(log: str, cells: dict[str, str]) -> str:
    """The debug pod log with `--query-gpu` cells replaced: a synthesised fault on top of the real H100
    capture (no public capture shows these counters non-zero)."""
    lines = log.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("=== gputui:section query-gpu"))
    row = [c.strip() for c in lines[start + 1].split(",")]
    for name, value in cells.items():
        row[HEALTH_FIELDS.index(name)] = value
    lines[start + 1] = ", ".join(row)
    return "\n".join(lines) + "\n"


def result_json(log: str, *, privileged: bool = False, gpus: int = 0, node: str = NODE_NAME,
                age: timedelta = timedelta(minutes=3)) -> dict[str, Any]:
    """What the TUI stores after a debug run (DebugResult.as_json), from a log the simulator would serve."""
    report = parse(log)
    flags = tuple(health_flags(report))
    failure = from_report(report, flags, node=node, privileged=privileged, gpus=gpus, runtime_class=None)
    result = DebugResult(node=node, namespace="default", pod="gputui-debug-ip-10-0-12-34-x7k2q", phase="Succeeded",
                         log=log, report=report, flags=flags, failure=failure,
                         options=PodOptions(gpus=gpus, privileged=privileged), finished_at=NOW - age, deleted=True)
    return result.as_json()


def gt801(*docs: str, reports: dict[str, Any], sources: dict[str, SourceState] | None = None) -> CheckResult:
    (result,) = run(snapshot(*docs, sources=sources if sources is not None else OK, gpu_reports=reports),
                    only=["gpu-health-nvidia-smi"]).results
    return result


def test_passes_on_the_healthy_h100_capture() -> None:
    result = gt801(NODE, reports={NODE_NAME: result_json(debug_log_for("h100"))})
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1


def test_passes_on_the_mig_capture() -> None:
    # MIG mode prints [N/A] for utilization and remapped rows: unknown, not a fault.
    result = gt801(NODE, reports={NODE_NAME: result_json(debug_log_for("h100-mig"))})
    assert result.status is CheckStatus.PASSED


def test_pending_row_remap_is_a_reset_to_schedule() -> None:
    log = with_cells(debug_log_for("h100"), {"remapped_rows.pending": "Yes"})
    result = gt801(NODE, CLAIM, TRAINER, reports={NODE_NAME: result_json(log)})
    (f,) = result.findings
    assert f.severity is Severity.WARNING
    assert "not urgent" in f.remediation.text.lower() and "next reset" in f.remediation.text
    assert any(c.endswith("nvidia-smi -r -i 0") for c in f.remediation.commands)


def test_failed_row_remap_is_critical_and_names_the_gpu_and_the_pods() -> None:
    log = with_cells(debug_log_for("h100"), {"remapped_rows.failure": "Yes",
                                             "ecc.errors.uncorrected.volatile.total": "2"})
    result = gt801(NODE, CLAIM, TRAINER, reports={NODE_NAME: result_json(log)})
    assert result.status is CheckStatus.FAILED
    by_title = {f.title: f for f in result.findings}
    remap = next(f for f in result.findings if "row remapping failed" in f.title)
    assert remap.code == "GT801"
    assert remap.severity is Severity.CRITICAL
    assert remap.subject == ObjectRef("Node", NODE_NAME)
    assert remap.title.startswith(f"{NODE_NAME}: GPU 0")
    paths = {e.path: e for e in remap.evidence}
    assert paths["gpu[0].remapped_rows.failure"].value == "Yes"
    assert paths["gpu[0].remapped_rows.failure"].kind is EvidenceKind.NVIDIA_SMI
    assert paths["gpu[0]"].value["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert paths["gpu[0]"].note == "read 3m ago by debug pod default/gputui-debug-ip-10-0-12-34-x7k2q"
    assert "kubectl delete nodeclaim gpu-7xk2q" in remap.remediation.commands
    assert ObjectRef("Pod", "trainer-0", "ml") in remap.related
    assert ObjectRef("NodeClaim", "gpu-7xk2q") in remap.related
    # The ECC errors are a separate finding with a reset (not a replacement) as the fix.
    ecc = next(f for f in by_title.values() if "uncorrectable ECC" in f.title)
    assert ecc.severity is Severity.ERROR
    assert {e.path: e.value for e in ecc.evidence}["gpu[0].ecc.errors.uncorrected.volatile.total"] == "2"
    assert any("nvidia-smi -r -i 0" in c for c in ecc.remediation.commands)
    # Worst first: the engine sorts findings by severity.
    assert result.findings[0] is remap


def test_driver_not_loaded_is_critical() -> None:
    log = debug_log_for(None, exit_code=9)
    result = gt801(NODE, CLAIM, reports={NODE_NAME: result_json(log)})
    (f,) = result.findings
    assert f.severity is Severity.CRITICAL
    assert "NVIDIA driver is not loaded" in f.title
    (first, *_) = f.evidence
    assert "couldn't communicate with the NVIDIA driver" in first.value


def test_nvml_unknown_error_from_an_unprivileged_pod_is_inconclusive() -> None:
    # The device cgroup may just keep the debug pod out: warn and suggest the other routes.
    log = debug_log_for(None, exit_code=255, output="Failed to initialize NVML: Unknown Error\n")
    (f,) = gt801(NODE, reports={NODE_NAME: result_json(log)}).findings
    assert f.severity is Severity.WARNING
    assert "health is unknown" in f.title
    assert "Failed to initialize NVML: Unknown Error" in f.title
    assert f"gputui debug node/{NODE_NAME} --privileged -n gpu-operator" in f.remediation.commands


def test_no_devices_from_a_privileged_pod_is_the_nodes_fault() -> None:
    log = debug_log_for(None, exit_code=6, output="No devices were found\n")
    (f,) = gt801(NODE, reports={NODE_NAME: result_json(log, privileged=True)}).findings
    assert f.severity is Severity.ERROR
    assert "finds no GPU even with host access" in f.title


def test_fewer_gpus_than_the_instance_has() -> None:
    eight = NODE.replace('instance-gpu-count: "1"', 'instance-gpu-count: "8"')
    (f,) = gt801(eight, reports={NODE_NAME: result_json(debug_log_for("h100"))}).findings
    assert f.title == (f"{NODE_NAME}: nvidia-smi sees 1 of 8 GPUs (missing: GPUs 1, 2, 3, 4, 5, 6, 7): "
                       "7 missing from the PCIe bus or unbound from the driver")
    assert {e.path: e.value for e in f.evidence}["metadata.labels[karpenter.k8s.aws/instance-gpu-count]"] == "8"


def test_mig_single_strategy_gpu_count_label_counts_slices_not_gpus() -> None:
    # GPU Feature Discovery, MIG "single": nvidia.com/gpu.count is the number of MIG devices (7 on
    # one H100 cut into 1g.10gb), and nvidia-smi lists the one physical GPU.
    gfd = NODE.replace('    karpenter.k8s.aws/instance-gpu-count: "1"\n',
                       '    nvidia.com/mig.strategy: single\n    nvidia.com/gpu.count: "7"\n'
                       '    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3-MIG-1g.10gb\n')
    assert gfd != NODE
    assert gt801(gfd, reports={NODE_NAME: result_json(debug_log_for("h100-mig"))}).status is CheckStatus.PASSED
    # Without MIG the same label counts physical GPUs.
    plain = gfd.replace("    nvidia.com/mig.strategy: single\n", "").replace("-MIG-1g.10gb", "")
    (f,) = gt801(plain, reports={NODE_NAME: result_json(debug_log_for("h100"))}).findings
    assert "nvidia-smi sees 1 of 7 GPUs" in f.title


def test_a_run_killed_before_any_gpu_was_read_is_not_a_pass() -> None:
    log = debug_log_for("h100")
    cut = "".join(log.splitlines(keepends=True)[:3])  # the container was OOMKilled this early
    pod = {"status": {"phase": "Failed", "containerStatuses": [
        {"name": "nvidia-smi", "state": {"terminated": {"reason": "OOMKilled", "exitCode": 137}}}]}}
    report = parse(cut)
    failure = from_cut_output(pod, node=NODE_NAME, complete=report.complete)
    result = DebugResult(node=NODE_NAME, namespace="default", pod="gputui-debug-ip-10-0-12-34-x7k2q",
                         phase="Failed", log=cut, report=report, flags=(), failure=failure, options=PodOptions(),
                         finished_at=NOW - timedelta(minutes=3), deleted=True)
    result_ = gt801(NODE, reports={NODE_NAME: result.as_json()})
    assert result_.status is CheckStatus.FAILED
    (f,) = result_.findings
    assert f.severity is Severity.WARNING and "read no GPU" in f.title and "OOMKilled" in f.title
    assert f"gputui debug node/{NODE_NAME}" in f.remediation.commands


def test_gpu_request_route_sees_only_its_gpus() -> None:
    # With --gpus 1 the device plugin hands the pod one GPU: seeing 1 of 8 is expected.
    eight = NODE.replace('instance-gpu-count: "1"', 'instance-gpu-count: "8"')
    result = gt801(eight, reports={NODE_NAME: result_json(debug_log_for("h100"), gpus=1)})
    assert result.status is CheckStatus.PASSED


def test_pod_that_never_ran_and_odd_entries_are_not_judged() -> None:
    never_ran = {"kind": "GpuHealth", "node": "a", "report": None, "flags": [],
                 "failure": {"code": "image-pull", "stage": "pod", "title": "image cannot be pulled"}}
    odd = {"kind": "GpuHealth", "report": {"gpus": [None, 3, {"index": "x"}]},
           "flags": [None, {"code": "ecc-uncorrected", "severity": "bogus"}, {"severity": "error"}],
           "failure": "huh", "route": [], "taken_at": "yesterday"}
    result = gt801(reports={"a": never_ran, "b": odd, "c": None, "d": [1, 2]})
    assert result.status is CheckStatus.PASSED
    assert result.examined == 1  # only "b" holds nvidia-smi output


def test_skipped_until_a_debug_pod_ran() -> None:
    result = gt801(NODE, reports={}, sources={})
    assert result.status is CheckStatus.SKIPPED
    assert result.reason == "nvidia-smi: not configured"


def test_missing_gpus_counted_by_the_debug_pod_when_the_node_is_not_in_the_snapshot() -> None:
    # The debug pod held the run to the node's 8 GPUs; this snapshot has no such node to count against.
    log = debug_log_for("h100", gpus=8, lost=(7,))
    report = parse(log)
    result = DebugResult(node=NODE_NAME, log=log, report=report, flags=tuple(health_flags(report, 8, "label")),
                         finished_at=NOW - timedelta(minutes=1), expected_gpus=8, expected_from="label")
    findings = {f.title: f.severity for f in gt801(reports={NODE_NAME: result.as_json()}).findings}
    assert findings == {
        f"{NODE_NAME}: GPU 7 fell off the bus (GPU is lost): unusable until the node reboots": Severity.CRITICAL,
        f"{NODE_NAME}: nvidia-smi does not list every GPU of the node (GPU 7 missing)": Severity.ERROR,
    }


def test_a_run_whose_csv_failed_is_no_pass() -> None:
    # The debug pod read the table, but its --query-gpu section was refused (exit 2): ECC count yes,
    # remapped rows, retired pages and reset state no. Before, no flag meant "passed".
    from gputui.debugpod.capture import Section, read_log, render_log

    table = read_log(debug_log_for("h100")).sections["nvidia-smi"].text
    log = render_log([Section("nvidia-smi", table, 0),
                      Section("query-gpu", 'Field "reset_status.reset_required" is not a valid field to query.', 2,
                              fields=HEALTH_FIELDS)])
    result = gt801(NODE, CLAIM, reports={NODE_NAME: result_json(log)})
    assert result.status is CheckStatus.FAILED
    (f,) = result.findings
    assert f.severity is Severity.WARNING
    assert f.title == (f"{NODE_NAME}: the last nvidia-smi reading does not show remapped rows, retired pages, "
                       "reset required: no verdict on them")
    assert f"gputui debug node/{NODE_NAME}" in f.remediation.commands


def test_a_reading_of_a_node_whose_gpu_count_nothing_states_is_a_warning_not_a_pass() -> None:
    """`gputui debug` adds gpu-count-unknown when no label or known instance type gives the node's GPU count:
    the node's verdict says so (and how to count them) instead of passing on the GPUs nvidia-smi happened to list."""
    from gputui.debugpod.health import count_unknown_flag

    import dataclasses

    from gputui.debugpod.health import count_unknown_flag

    unlabelled = NODE.replace('    karpenter.k8s.aws/instance-gpu-count: "1"\n', "").replace("p5.4xlarge", "dell-xe9680")
    report = result_json(debug_log_for("h100"))
    report["flags"].append(dataclasses.asdict(count_unknown_flag(parse(debug_log_for("h100")), NODE_NAME)))
    (f,) = gt801(unlabelled, reports={NODE_NAME: report}).findings
    assert f.severity is Severity.WARNING
    assert "nothing says how many GPUs the node has" in f.title
    assert any("lspci -d 10de:" in c for c in f.remediation.commands)
