"""Which pod holds a GPU, read off a DCGM series' labels as the different exporter setups write them."""

from __future__ import annotations

import pytest

from diagnostics.facts.metric_facts import GpuLabels
from diagnostics.model import ObjectRef

GPU = {"gpu": "3", "UUID": "GPU-1f2e", "modelName": "NVIDIA H100 80GB HBM3", "Hostname": "ip-10-0-1-2.ec2.internal"}


@pytest.mark.parametrize("labels", [
    {"pod": "train-0", "namespace": "ml", "container": "main"},  # dcgm-exporter's default names
    # Scraped without honorLabels: `pod` is the exporter, the workload was renamed exported_*.
    {"exported_pod": "train-0", "exported_namespace": "ml", "exported_container": "main",
     "pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator"},
    # dcgm-exporter --use-old-namespace: pod_name / pod_namespace / container_name.
    {"pod_name": "train-0", "pod_namespace": "ml", "container_name": "main",
     "pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator"},
])
def test_the_workload_pod_is_found_in_every_exporter_setup(labels: dict[str, str]) -> None:
    g = GpuLabels.of(GPU | labels)
    assert g.pod_ref == ObjectRef("Pod", "train-0", "ml")
    assert g.container == "main" and g.host == "ip-10-0-1-2.ec2.internal"


def test_a_gpu_no_pod_holds_names_no_pod() -> None:
    assert GpuLabels.of(GPU | {"pod": "nvidia-dcgm-exporter-x7k2p", "namespace": "gpu-operator"}).pod_ref is None
    assert GpuLabels.of(GPU).pod_ref is None
