"""A pod's effective requests as kube-scheduler counts them: init containers, sidecars, overhead."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from gputui.kube import ingest, shapes


def _container(name: str, cpu: str, **extra: Any) -> dict[str, Any]:
    return {"name": name, "image": "x", "resources": {"requests": {"cpu": cpu}}, **extra}


@pytest.mark.parametrize("init, expected", [
    # A plain init container runs alone: max(init, app containers).
    ([_container("migrate", "3")], 4.0),
    ([_container("warmup", "6")], 6.0),
    # A sidecar (restartPolicy Always) runs beside the app: its request adds up (4 + 2).
    ([_container("proxy", "2", restartPolicy="Always")], 6.0),
    # An init container after a sidecar runs beside it: 5 + 2 = 7 > 4 + 2.
    ([_container("proxy", "2", restartPolicy="Always"), _container("download", "5")], 7.0),
])
def test_effective_cpu_request(init: list[dict[str, Any]], expected: float) -> None:
    raw = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ml"},
           "spec": {"containers": [_container("main", "4")], "initContainers": init}, "status": {}}
    assert ingest.pod(raw).requests["cpu"] == expected
    # The typed-decode path (lists) keeps restartPolicy and gives the same answer.
    decoded = shapes.list_decoder("pods")(b'{"items": [%s]}' % orjson.dumps(raw))["items"][0]
    assert ingest.pod(decoded).requests["cpu"] == expected
