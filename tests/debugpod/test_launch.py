"""run_debug against the simulator with the official client: the pod it creates, what it reads, how it fails,
and that the pod is gone afterwards every time."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from diagnostics import CheckStatus, Severity, run
from gputui.debugpod import failures
from gputui.debugpod.launch import DebugUsageError, cleanup
from gputui.debugpod.pod_spec import PodOptions, build_pod, label_value, pod_name
from gputui.debugpod.run import DEBUG_POD_FAILED, run_debug
from gputui.kube.api import Api
from gputui.sim import SimCluster
from gputui.collect.store import Store
from tests.debugpod import sim_helpers as sh


Cluster = tuple[SimCluster, Api, list[dict[str, Any]]]
"""The simulator, an Api on it, and every pod it stored on create."""


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    sim, kubeconfig = sh.start(tmp_path_factory.mktemp("sim"))
    created = sh.record_created_pods(sim)
    sh.hang_after_first_section(sim)
    try:
        yield sim, sh.api_for(kubeconfig), created
    finally:
        sim.stop()


@pytest.fixture
def fresh(tmp_path: Path) -> Iterator[Cluster]:
    """A simulator of its own, for tests that change RBAC or objects."""
    sim, kubeconfig = sh.start(tmp_path)
    created = sh.record_created_pods(sim)
    try:
        yield sim, sh.api_for(kubeconfig), created
    finally:
        sim.stop()


def debug(api: Api, node: str, **kw: Any) -> tuple[Any, list[str], list[str]]:
    out: list[str] = []
    status: list[str] = []
    kw.setdefault("timeout", 10)
    result = run_debug(api, node, on_output=out.append, on_status=status.append, **kw)
    return result, out, status


# --- the pod ---------------------------------------------------------------------------------


def test_pod_manifest_is_pinned_tolerant_short_lived_and_labelled() -> None:
    pod = build_pod("ip-10-0-1-11.ec2.internal", "default", "gputui-debug-ip-10-0-1-11-abcde", PodOptions(timeout=90))
    spec = pod["spec"]
    (c,) = spec["containers"]
    assert spec["nodeName"] == "ip-10-0-1-11.ec2.internal"
    assert spec["tolerations"] == [{"operator": "Exists"}]
    assert spec["restartPolicy"] == "Never"
    assert spec["activeDeadlineSeconds"] == 150
    assert spec["automountServiceAccountToken"] is False
    assert pod["metadata"]["labels"] == {"app.kubernetes.io/managed-by": "gputui",
                                         "gputui.dev/debug-node": "ip-10-0-1-11.ec2.internal"}
    assert c["image"] == "nvidia/cuda:12.4.1-base-ubuntu22.04"
    assert c["command"][:2] == ["/bin/sh", "-c"]
    assert {"name": "NVIDIA_VISIBLE_DEVICES", "value": "all"} in c["env"]
    assert {"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"} in c["env"]
    assert {"name": "NVIDIA_DISABLE_REQUIRE", "value": "true"} in c["env"]  # nvidia-smi needs no CUDA
    # BestEffort: the kubelet admits it on a node whose CPU and memory GPU jobs requested in full.
    assert c["resources"] == {}
    assert "privileged" not in c["securityContext"] and "hostPID" not in spec and "volumes" not in spec
    assert "runtimeClassName" not in spec


def test_gpus_privileged_and_host_pid_only_when_asked() -> None:
    options = PodOptions(gpus=2, privileged=True, host_pid=True, runtime_class="nvidia")
    pod = build_pod("n", "gpu-operator", "x", options)
    spec = pod["spec"]
    (c,) = spec["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "2"
    assert not any(e["name"] == "NVIDIA_VISIBLE_DEVICES" for e in c["env"])  # the device plugin sets it
    assert c["securityContext"] == {"privileged": True}
    assert spec["hostPID"] is True
    assert spec["runtimeClassName"] == "nvidia"
    assert spec["volumes"] == [{"name": "host", "hostPath": {"path": "/", "type": "Directory"}}]
    assert c["volumeMounts"][0]["mountPath"] == "/host" and c["volumeMounts"][0]["readOnly"] is True


def test_names_and_labels_stay_valid_for_long_node_names() -> None:
    long = "gke-" + "a" * 80 + ".c.my-project.internal"
    name = pod_name(long)
    assert len(name) <= 63 and name.startswith("gputui-debug-gke-aaaa") and name[-6] == "-"
    assert pod_name("ip-10-0-1-11.ec2.internal", "abcde") == "gputui-debug-ip-10-0-1-11-abcde"
    value = label_value(long)
    assert len(value) <= 63 and value.startswith("gke-aaa") and value != label_value(long + "x")
    assert label_value("ip-10-0-1-11.ec2.internal") == "ip-10-0-1-11.ec2.internal"


def test_kubelet_rejection_and_missing_runtime_handler_are_explained() -> None:
    # Real texts: kubelet device manager admission, containerd without the nvidia handler.
    admission = ("Pod was rejected: Allocate failed due to requested number of devices unavailable for "
                 "nvidia.com/gpu. Requested: 1, Available: 0, which is unexpected")
    rejected = {"metadata": {"name": "p", "namespace": "default"},
                "status": {"phase": "Failed", "reason": "UnexpectedAdmissionError", "message": admission}}
    f = failures.from_pod(rejected, [], node="n1", image="i", gpus=1)
    assert f is not None and f.code == "pod-rejected" and "UnexpectedAdmissionError" in f.title
    assert "Requested: 1, Available: 0" in f.detail and "Drop --gpus" in f.hints[0]
    pending = {"metadata": {"name": "p", "namespace": "default"}, "status": {"phase": "Pending"}}
    sandbox = [{"type": "Warning", "reason": "FailedCreatePodSandBox",
                "message": 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to get sandbox '
                           'runtime: no runtime for "nvidia" is configured'}]
    f = failures.from_pod(pending, sandbox, node="n1", image="i", runtime_class="nvidia")
    assert f is not None and f.code == "runtime-class-unavailable"
    assert "RuntimeClass nvidia" in f.title and "--runtime-class none" in f.hints[0]
    assert failures.from_pod(pending, [], node="n1", image="i") is None  # still starting: keep waiting


# --- reading GPUs --------------------------------------------------------------------------------


def test_h100_capture_is_streamed_parsed_and_the_pod_deleted(cluster: Cluster) -> None:
    sim, api, created = cluster
    result, out, status = debug(api, sh.H100, timeout=30)
    assert result.exit_code == 0 and result.failure is None and result.flags == ()
    assert [g.name for g in result.report.gpus] == ["NVIDIA H100 80GB HBM3"]
    assert result.report.driver_version == "590.48.01"
    assert result.pod.startswith("gputui-debug-ip-10-0-1-11-") and result.namespace == "default"
    assert result.deleted is True
    assert sh.gputui_pods(sim) == []
    # Streamed live, markers turned into headers.
    assert "$ nvidia-smi -L" in out and not any(line.startswith("=== gputui:") for line in out)
    assert any("GPU 0: NVIDIA H100 80GB HBM3 (UUID: GPU-" in line for line in out)
    assert status[0].startswith(f"creating pod default/{result.pod} on node {sh.H100}")
    assert status[-1] == f"deleted pod default/{result.pod}"
    # The pod as the API server stored it.
    pod = next(p for p in created if p["metadata"]["name"] == result.pod)
    assert pod["spec"]["nodeName"] == sh.H100
    assert pod["spec"]["activeDeadlineSeconds"] == 90
    assert pod["spec"]["runtimeClassName"] == "nvidia"  # the scenario has RuntimeClass nvidia
    assert pod["metadata"]["labels"]["gputui.dev/debug-node"] == sh.H100
    assert pod["spec"]["tolerations"] == [{"operator": "Exists"}]


def test_mig_capture_shows_mig_devices(cluster: Cluster) -> None:
    _, api, _ = cluster
    result, _, _ = debug(api, sh.MIG)
    (gpu,) = result.report.gpus
    assert gpu.mig_mode == "Enabled"
    assert [m.profile for m in gpu.mig_devices] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    # The table's process rows keep their MIG instance (needs the exact log, blank lines included).
    assert {(p.gpu_instance_id, p.compute_instance_id) for p in gpu.processes} == {(2, 0)}
    assert result.exit_code == 0


def test_result_json_feeds_the_store_and_gt801(cluster: Cluster) -> None:
    _, api, _ = cluster
    store = Store()
    result, _, _ = debug(api, sh.NO_DRIVER, store=store)
    assert store.gpu_reports[sh.NO_DRIVER] == result.as_json()
    snap = store.snapshot()
    (check,) = run(snap, only=["GT801"]).results
    assert check.status is CheckStatus.FAILED
    (f,) = check.findings
    assert f.severity is Severity.CRITICAL and "NVIDIA driver is not loaded" in f.title


# --- failures ------------------------------------------------------------------------------------


@pytest.mark.parametrize("node, code, exit_code, words", [
    (sh.NO_DRIVER, "driver-not-loaded", 3, ["driver is not loaded", "exit 9", "couldn't communicate"]),
    (sh.GPU_LOST, "gpu-lost", 3, ["fell off the bus", "GPU is lost", "reboot"]),
    (sh.HANDLE_ERROR, "device-handle-error", 3, ["cannot open a GPU", "exit 255", "Unknown Error"]),
    (sh.NVML_UNKNOWN, "nvml-unknown-error", DEBUG_POD_FAILED,
     ["Failed to initialize NVML: Unknown Error", "--privileged", "does not prove them broken"]),
    (sh.NO_DEVICES, "no-devices", DEBUG_POD_FAILED, ["No devices were found", "--privileged"]),
    (sh.IMAGE_PULL_BACKOFF, "image-pull", DEBUG_POD_FAILED,
     ["nvidia/cuda:12.4.1-base-ubuntu22.04 cannot be pulled", "registry-1.docker.io", "--image"]),
    (sh.ERR_IMAGE_PULL, "image-pull", DEBUG_POD_FAILED, ["ErrImagePull", "i/o timeout", "air-gapped"]),
    (sh.CREATE_CONTAINER_ERROR, "create-container-error", DEBUG_POD_FAILED,
     ["CreateContainerError", "/run/nvidia/driver", "NVIDIA container toolkit"]),
    (sh.UNSCHEDULABLE, "unschedulable", DEBUG_POD_FAILED, ["cannot be scheduled", "0/12 nodes are available"]),
])
def test_failure_states_are_explained(cluster: Cluster, node: str, code: str, exit_code: int,
                                      words: list[str]) -> None:
    sim, api, _ = cluster
    started = time.monotonic()
    result, _, status = debug(api, node)
    assert time.monotonic() - started < 5  # an explanation, not a timeout
    assert result.failure is not None and result.failure.code == code
    assert result.exit_code == exit_code
    text = " ".join([result.failure.title, result.failure.detail, *result.failure.hints])
    for word in words:
        assert word in text
    assert result.deleted is True and sh.gputui_pods(sim) == []
    assert status[-1].startswith("deleted pod default/gputui-debug-")


@pytest.mark.slow
def test_hung_nvidia_smi_times_out_with_a_reason(cluster: Cluster) -> None:
    sim, api, _ = cluster
    started = time.monotonic()
    result, out, _ = debug(api, sh.HANGS, timeout=1)
    assert 1 <= time.monotonic() - started < 4
    assert result.failure.code == "nvidia-smi-hung" and result.phase == "Running"
    assert "did not finish within 1s" in result.failure.title
    assert "Xid 79" in " ".join(result.failure.hints)
    assert out == ["# running nvidia-smi", "$ nvidia-smi"]
    assert result.report is not None and result.report.complete is False
    assert result.exit_code == 3
    assert sh.gputui_pods(sim) == []


def test_cancel_from_another_thread_deletes_the_pod(cluster: Cluster) -> None:
    sim, api, _ = cluster
    cancel = threading.Event()

    def status(message: str) -> None:
        if message == "running nvidia-smi":
            threading.Timer(0.2, cancel.set).start()

    started = time.monotonic()
    result = run_debug(api, sh.HANGS, timeout=30, cancel=cancel, on_status=status)
    assert time.monotonic() - started < 5
    assert result.failure.code == "cancelled" and result.deleted is True
    assert sh.gputui_pods(sim) == []


def test_pod_deleted_by_someone_else_mid_run(cluster: Cluster) -> None:
    sim, api, _ = cluster
    names: list[str] = []

    def status(message: str) -> None:
        if message.startswith("creating pod default/"):
            names.append(message.split()[2].split("/")[1])
        if message == "running nvidia-smi":
            threading.Timer(0.2, sim.delete, ("Pod", names[0], "default")).start()

    result = run_debug(api, sh.HANGS, timeout=30, on_status=status)
    assert result.failure.code == "pod-deleted" and result.exit_code == DEBUG_POD_FAILED
    assert result.deleted is True and sh.gputui_pods(sim) == []


def test_unknown_node_and_namespace_are_usage_errors(cluster: Cluster) -> None:
    sim, api, _ = cluster
    with pytest.raises(DebugUsageError, match='^node "nope" not found$'):
        run_debug(api, "nope")
    with pytest.raises(DebugUsageError, match='^namespace "nope" not found$'):
        run_debug(api, sh.H100, namespace="nope")
    assert sh.gputui_pods(sim) == []


def test_namespaces(cluster: Cluster) -> None:
    sim, api, created = cluster
    result, _, _ = debug(api, sh.H100, namespace="gpu-operator")
    assert result.namespace == "gpu-operator" and result.exit_code == 0
    # A context namespace that does not exist falls back to default, and says so.
    result, _, status = debug(api, sh.H100, context_namespace="team-a")
    assert result.namespace == "default"
    assert 'namespace "team-a" of the current context does not exist: using "default"' in status


# --- routes and RBAC -----------------------------------------------------------------------------


def test_runtime_class_auto_none_and_forbidden(fresh: Cluster) -> None:
    sim, api, created = fresh

    def spec_of(result: Any) -> dict[str, Any]:
        return next(p for p in created if p["metadata"]["name"] == result.pod)["spec"]

    r, _, _ = debug(api, sh.H100, runtime_class="none")
    assert "runtimeClassName" not in spec_of(r)
    r, _, _ = debug(api, sh.H100, runtime_class="nvidia-cdi")
    assert spec_of(r)["runtimeClassName"] == "nvidia-cdi"
    sim.forbid("runtimeclasses.node.k8s.io")
    r, _, status = debug(api, sh.H100)
    assert "runtimeClassName" not in spec_of(r)
    assert any("cannot list runtimeclasses (forbidden)" in s for s in status)
    sim.allow("runtimeclasses.node.k8s.io")
    sim.delete("RuntimeClass", "nvidia")
    r, _, _ = debug(api, sh.H100)
    assert "runtimeClassName" not in spec_of(r) and r.exit_code == 0


def test_gpu_request_and_privileged_routes(fresh: Cluster) -> None:
    sim, api, created = fresh
    r, _, _ = debug(api, sh.H100, gpus=1, privileged=True, host_pid=True, namespace="gpu-operator")
    pod = next(p for p in created if p["metadata"]["name"] == r.pod)
    (c,) = pod["spec"]["containers"]
    assert c["resources"]["limits"]["nvidia.com/gpu"] == "1"
    assert c["securityContext"]["privileged"] is True and pod["spec"]["hostPID"] is True
    assert r.as_json()["route"] == {"image": "nvidia/cuda:12.4.1-base-ubuntu22.04", "gpus": 1,
                                    "runtime_class": "nvidia", "privileged": True, "host_pid": True}


def test_a_pod_killed_before_nvidia_smi_printed_is_never_healthy(fresh: Cluster) -> None:
    # OOMKilled (or evicted) mid-script: the log has only the script's first lines. 0 GPUs read is
    # not "no problems found".
    sim, api, _ = fresh
    sim.set_nvidia_smi(sh.H100, {"capture": "h100", "killed": "OOMKilled"})
    r, _, _ = debug(api, sh.H100)
    assert r.failure is not None and r.failure.code == "incomplete-output"
    assert r.exit_code == DEBUG_POD_FAILED
    assert "stopped before nvidia-smi finished (OOMKilled)" in r.failure.title
    assert "container OOMKilled exit 137" in r.failure.detail
    assert "not a clean bill of health" in " ".join(r.failure.hints)
    assert r.deleted is True and sh.gputui_pods(sim) == []


def test_runtime_hook_that_refuses_to_start_the_container_is_explained(fresh: Cluster) -> None:
    # containerd + restartPolicy Never: a failed NVIDIA prestart hook is a terminated StartError (exit
    # 128) with the hook's words, not an empty log.
    sim, api, _ = fresh
    sim.set_nvidia_smi(sh.H100, {"state": "StartError"})
    started = time.monotonic()
    r, _, _ = debug(api, sh.H100)
    assert time.monotonic() - started < 5
    assert r.failure.code == "create-container-error" and r.exit_code == DEBUG_POD_FAILED
    assert "cannot start the debug container (StartError)" in r.failure.title
    assert "nvml error: driver not loaded" in r.failure.detail
    assert "driver is down" in r.failure.hints[0]
    assert r.deleted is True and sh.gputui_pods(sim) == []


@pytest.mark.slow
def test_a_slow_start_is_not_blamed_on_the_gpus(fresh: Cluster) -> None:
    # Most of the time went to starting the pod (a slow pull): nvidia-smi had no time to hang.
    sim, api, _ = fresh
    sim.set_nvidia_smi(sh.H100, {"state": "Running", "startDelay": 2.2})
    r, _, _ = debug(api, sh.H100, timeout=3)
    assert r.failure.code == "timeout" and r.failure.stage == "pod"
    assert r.exit_code == DEBUG_POD_FAILED  # not 3: nothing says the GPUs are broken
    assert "had run only" in r.failure.title and "longer --timeout" in r.failure.hints[0]
    assert sh.gputui_pods(sim) == []


@pytest.mark.parametrize("message, hint", [
    ('pods "gputui-debug-x" is forbidden: failed quota: compute: must specify limits.cpu for: nvidia-smi',
     "A ResourceQuota in default refuses the pod"),
    ('admission webhook "validation.gatekeeper.sh" denied the request: [require-team-label] you must provide '
     'labels: {"team"}', "An admission policy (webhook, Gatekeeper, Kyverno) refuses the pod"),
    ('pods is forbidden: User "dev" cannot create resource "pods" in API group "" in the namespace "default"',
     "kubectl auth can-i create pods -n default"),
])
def test_each_kind_of_403_gets_its_own_hint(message: str, hint: str) -> None:
    f = failures.from_create_error(403, message, namespace="default", privileged=False, host_pid=False)
    assert f.code == "create-forbidden" and hint in " ".join(f.hints)


def test_no_permission_to_read_the_log_is_explained_not_a_crash(fresh: Cluster) -> None:
    # RBAC allows creating pods but not pods/log: a one-line reason and exit 6, and the pod is deleted.
    sim, api, _ = fresh
    sim.forbid("pods/log", {"get"})
    r, _, _ = debug(api, sh.H100)
    assert r.failure.code == "api-error" and r.exit_code == DEBUG_POD_FAILED
    assert "answered 403" in r.failure.title
    assert "kubectl auth can-i get pods/log -n default" in " ".join(r.failure.hints)
    assert r.deleted is True and sh.gputui_pods(sim) == []


def test_a_node_whose_kubelet_stopped_reporting_fails_at_once(fresh: Cluster) -> None:
    sim, api, created = fresh
    node = next(n for n in sim.objects("Node") if n["metadata"]["name"] == sh.H100)
    for c in node["status"]["conditions"]:
        if c["type"] == "Ready":
            c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.")
    sim.apply(node)
    started = time.monotonic()
    r, _, _ = debug(api, sh.H100, timeout=30)
    assert time.monotonic() - started < 3  # not after the whole --timeout
    assert r.failure.code == "node-not-ready" and r.exit_code == DEBUG_POD_FAILED
    assert "Kubelet stopped posting node status." in r.failure.detail
    assert not created and r.deleted is None  # nothing was created


def test_forbidden_create_is_explained_and_nothing_is_left(fresh: Cluster) -> None:
    sim, api, _ = fresh
    sim.forbid("pods", {"create"})
    r, _, _ = debug(api, sh.H100)
    assert r.failure.code == "create-forbidden" and r.exit_code == DEBUG_POD_FAILED
    assert "kubectl auth can-i create pods -n default" in " ".join(r.failure.hints)
    assert r.deleted is None and sh.gputui_pods(sim) == []


def test_cleanup_removes_only_gputui_debug_pods_in_all_namespaces(fresh: Cluster) -> None:
    sim, api, _ = fresh
    for ns, name, labels in (
        ("default", "gputui-debug-ip-10-0-1-11-aaaaa", {"app.kubernetes.io/managed-by": "gputui",
                                                        "gputui.dev/debug-node": sh.H100}),
        ("gpu-operator", "gputui-debug-ip-10-0-1-12-bbbbb", {"app.kubernetes.io/managed-by": "gputui",
                                                             "gputui.dev/debug-node": sh.MIG}),
        ("default", "node-debugger-ip-10-0-1-11-ccccc", {"app.kubernetes.io/managed-by": "kubectl-debug"}),
    ):
        sim.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": ns, "labels": labels},
                    "spec": {"nodeName": sh.H100, "containers": [{"name": "c", "image": "busybox:1.36"}]}})
    done = cleanup(api, "default")
    assert sorted(done.deleted) == ["default/gputui-debug-ip-10-0-1-11-aaaaa",
                                    "gpu-operator/gputui-debug-ip-10-0-1-12-bbbbb"]
    assert done.scope == "all namespaces" and done.failed == []
    assert [p["metadata"]["name"] for p in sim.objects("Pod", "default")] == ["node-debugger-ip-10-0-1-11-ccccc"]
    assert cleanup(api, "default").deleted == []


def test_delete_retries_through_an_api_blip(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A 503 at the moment of cleanup must not leave the debug pod behind."""
    from gputui.debugpod.launch import delete_pod
    from gputui.kube.api import Api, load
    from gputui.sim.cluster import SimCluster

    with SimCluster("healthy") as sim:
        sim.apply({"apiVersion": "v1", "kind": "Pod",
                   "metadata": {"name": "gputui-debug-x", "namespace": "default",
                                "labels": {"app.kubernetes.io/managed-by": "gputui"}},
                   "spec": {"containers": [{"name": "c", "image": "i"}]}})
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(cfg)
        client, _info = load(str(cfg))
        sim.fail_requests(2, 503, path_contains="/pods/gputui-debug-x")
        assert delete_pod(Api(client), "default", "gputui-debug-x", attempts=(0.0, 0.05, 0.05))
        assert sim.get("Pod", "gputui-debug-x", "default") is None
