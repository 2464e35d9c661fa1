"""The benchmark path: tens of thousands of pods loaded fast and paged through cheaply."""

from __future__ import annotations

import http.client
import json
import time
import urllib.parse

import orjson
import pytest

from gputui.sim import SimCluster

pytestmark = pytest.mark.slow  # tens of thousands of pods through the simulator


def _pods(n: int) -> list[dict]:
    return [{"apiVersion": "v1", "kind": "Pod",
             "metadata": {"name": f"job-{i:06d}", "namespace": f"team-{i % 40:02d}",
                          "labels": {"app": f"a{i % 7}"}, "creationTimestamp": "2026-08-21T09:00:00Z"},
             "spec": {"nodeName": f"ip-10-0-{i % 250}-1.ec2.internal",
                      "containers": [{"name": "main", "image": "nvcr.io/nvidia/pytorch:24.05-py3",
                                      "resources": {"limits": {"nvidia.com/gpu": "1"}}}]},
             "status": {"phase": "Running" if i % 10 else "Pending"}} for i in range(n)]


def test_sixty_thousand_pods_load_and_page_quickly() -> None:
    n = 60_000
    pods = _pods(n)
    with SimCluster() as sim:
        start = time.perf_counter()
        assert sim.bulk_load(pods) == n
        load_s = time.perf_counter() - start
        del pods  # the store holds bytes now; fewer live dicts means cheaper GC while parsing pages
        conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=30)
        names: list[str] = []
        token, pages = "", 0
        start = time.perf_counter()
        while True:
            query = "limit=500" + (f"&continue={urllib.parse.quote(token)}" if token else "")
            conn.request("GET", f"/api/v1/pods?{query}")
            page = orjson.loads(conn.getresponse().read())
            names += [p["metadata"]["name"] for p in page["items"]]
            pages += 1
            token = page["metadata"].get("continue", "")
            if not token:
                break
        page_s = time.perf_counter() - start
        assert pages == n // 500 and len(names) == n == len(set(names))
        conn.request("GET", "/api/v1/pods?fieldSelector=" + urllib.parse.quote("spec.nodeName=ip-10-0-7-1.ec2.internal"))
        assert len(json.loads(conn.getresponse().read())["items"]) == n // 250
        conn.close()
    # generous bounds (2-core CI): measured ~1 s and ~1.5 s; these catch accidental quadratic paths
    assert load_s < 15, load_s
    assert page_s < 15, page_s


def test_one_change_fans_out_to_many_watchers() -> None:
    with SimCluster() as sim:
        sim.bulk_load(_pods(50))
        rv = sim.resource_version
        conns = []
        for _ in range(20):
            conn = http.client.HTTPConnection("127.0.0.1", sim.port, timeout=10)
            conn.request("GET", f"/api/v1/pods?watch=true&resourceVersion={rv}&timeoutSeconds=1")
            conns.append(conn)
        assert sim.wait_for(lambda: sim.watch_count("pods") == 20)
        for i in range(200):
            sim.patch("pods", f"job-{i % 50:06d}", {"metadata": {"labels": {"i": str(i)}}}, namespace=f"team-{i % 50 % 40:02d}")
        for conn in conns:
            lines = conn.getresponse().read().splitlines()
            assert len(lines) == 200 and json.loads(lines[-1])["object"]["metadata"]["labels"]["i"] == "199"
