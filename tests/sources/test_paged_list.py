"""Paged lists: the next page is on its way while the caller builds records from this one."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.kube.api import Api, KubeError, load
from gputui.kube.resources import RESOURCES
from gputui.sim.cluster import SimCluster
from gputui.kube.informer import iter_pages, list_objects
from tests.sources.test_kube_informer import DATA, wait_for


@pytest.fixture()
def cluster(tmp_path: Path) -> Iterator[tuple[SimCluster, Api]]:
    with SimCluster(DATA / "small.yaml") as sim:
        cfg = tmp_path / "kubeconfig"
        sim.write_kubeconfig(str(cfg))
        yield sim, Api(load(str(cfg))[0])


def _node_list_requests(sim: SimCluster) -> list[str]:
    return [p for m, p in list(sim.server.requests) if m == "GET" and p.startswith("/api/v1/nodes?")]


def test_next_page_is_requested_before_the_caller_asks_for_it(cluster: tuple[SimCluster, Api]) -> None:
    sim, api = cluster
    pages = iter_pages(api, RESOURCES["nodes"], page_size=2)
    first, _meta = next(pages)
    assert len(first) == 2
    wait_for(lambda: len(_node_list_requests(sim)) == 2)  # without a next() from us
    assert "continue=" in _node_list_requests(sim)[1]
    rest = [o for page, _ in pages for o in page]
    names = [o["metadata"]["name"] for o in first + rest]
    assert sorted(names) == sorted(o["metadata"]["name"] for o in sim.objects("Node"))
    assert len(_node_list_requests(sim)) == -(-len(names) // 2)  # one request per page, none twice


def test_a_failed_next_page_raises_where_the_caller_asks_for_it(cluster: tuple[SimCluster, Api]) -> None:
    sim, api = cluster
    sim.set_latency(0.5, path_contains="/api/v1/nodes")
    pages = iter_pages(api, RESOURCES["nodes"], page_size=2)
    first, _meta = next(pages)
    sim.fail_requests(1, 500, path_contains="/api/v1/nodes", message="etcd is down")  # the page now in flight
    assert len(first) == 2
    with pytest.raises(KubeError, match="etcd is down"):
        next(pages)


def test_records_from_small_pages_equal_one_big_page(cluster: tuple[SimCluster, Api]) -> None:
    _sim, api = cluster
    small, _ = list_objects(api, RESOURCES["pods"], page_size=1)
    whole, _ = list_objects(api, RESOURCES["pods"], page_size=500)
    assert len(small) >= 3 and small == whole
