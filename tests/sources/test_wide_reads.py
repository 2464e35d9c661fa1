"""A watch backlog is drained in a few wide socket reads, not one per 8 KB (each read re-takes the GIL)."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from gputui.kube.api import Api, load
from gputui.sim.cluster import SimCluster

DATA = Path(__file__).resolve().parents[1] / "sim" / "data"


@pytest.fixture()
def sim() -> Iterator[SimCluster]:
    with SimCluster(DATA / "small.yaml") as cluster:
        yield cluster


def test_a_watch_backlog_arrives_in_reads_far_wider_than_8_kb(sim: SimCluster, tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    cfg = tmp_path / "kubeconfig"
    sim.write_kubeconfig(str(cfg))
    client, _ = load(str(cfg))
    api = Api(client)
    rv = api.get("/api/v1/nodes")["metadata"]["resourceVersion"]
    name = sim.objects("Node")[0]["metadata"]["name"]
    changes = 400
    for i in range(changes):
        sim.patch("Node", name, {"metadata": {"annotations": {"bench/seq": str(i), "bench/pad": "x" * 2000}}})

    reads: list[int] = []
    real = socket.SocketIO.readinto

    def counted(self: socket.SocketIO, buf: bytearray) -> int | None:  # the OS socket, not the client
        n = real(self, buf)
        reads.append(n or 0)
        return n

    monkeypatch.setattr(socket.SocketIO, "readinto", counted)
    seen = 0
    stream = api.stream("/api/v1/nodes", [("watch", "true"), ("resourceVersion", rv)], read_timeout=10)
    for _line in stream:
        seen += 1
        if seen == changes:
            break
    stream.close()
    assert seen == changes
    received = sum(reads)
    assert received > changes * 2000
    # http.client's 8 KB buffer: ~28 KB per read here (the simulator batches a backlog); wide: ~170 KB
    assert received / len(reads) > 64 * 1024, f"{len(reads)} reads for {received} bytes"
