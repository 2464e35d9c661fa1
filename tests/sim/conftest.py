"""Shared fixtures for the simulator tests: a running SimCluster and official clients pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from kubernetes import client, config

from gputui.sim import SimCluster

DATA = Path(__file__).parent / "data"
SMALL = DATA / "small.yaml"


@pytest.fixture
def sim() -> Iterator[SimCluster]:
    """The small scenario, times shifted to now, debug pods instant, bookmarks every 0.2 s."""
    with SimCluster(SMALL, shift_to_now=True, debug_pod_delay=0, bookmark_interval=0.2) as cluster:
        yield cluster


@pytest.fixture
def kubeconfig(sim: SimCluster, tmp_path: Path) -> Path:
    return sim.write_kubeconfig(tmp_path / "kubeconfig")


@pytest.fixture
def api(kubeconfig: Path) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(kubeconfig))
    yield api_client
    api_client.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)
