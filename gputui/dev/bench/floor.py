"""`python -m gputui.dev.bench.floor --kubeconfig F`: the floor - the least a Python client can do to list.

Paged raw HTTP GETs (http.client, 500 per page, one thread and connection per kind, as gputui's
informers do) of the same ten lists, parsed with orjson while the cyclic GC stays off for the
whole run. No projection, no records, no watches: what any Python tool must at least pay.
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402
import gc  # noqa: E402
import http.client  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import urllib.parse  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402

import orjson  # noqa: E402
import yaml  # noqa: E402

from gputui.kube.resources import RESOURCES  # noqa: E402


def server_and_token(kubeconfig: str) -> tuple[str, str]:
    """The current context's server URL and bearer token (what the simulator's kubeconfig holds)."""
    with open(kubeconfig, encoding="utf-8") as fh:
        cfg = yaml.safe_load(fh)
    ctx = next(c for c in cfg["contexts"] if c["name"] == cfg["current-context"])["context"]
    cluster = next(c for c in cfg["clusters"] if c["name"] == ctx["cluster"])["cluster"]
    user = next(u for u in cfg["users"] if u["name"] == ctx["user"])["user"]
    return cluster["server"], user.get("token", "")


def list_all(server: str, token: str, path: str, page: int = 500) -> tuple[list[Any], int]:
    """Every item of one list (paged) and the bytes read."""
    url = urllib.parse.urlsplit(server)
    if not url.hostname:
        raise ValueError(f"no host in the kubeconfig's server {server!r}")
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=300)
    headers = {"Accept": "application/json", "Authorization": f"Bearer {token}"}
    items: list[Any] = []
    total = 0
    cont = ""
    try:
        while True:
            query = f"limit={page}" + (f"&continue={urllib.parse.quote(cont)}" if cont else "")
            conn.request("GET", f"{path}?{query}", headers=headers)
            resp = conn.getresponse()
            body = resp.read()
            if resp.status != 200:
                raise RuntimeError(f"GET {path}: HTTP {resp.status}")
            total += len(body)
            doc = orjson.loads(body)
            items.extend(doc.get("items") or ())
            cont = (doc.get("metadata") or {}).get("continue") or ""
            if not cont:
                return items, total
    finally:
        conn.close()


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.floor", description=__doc__.splitlines()[0])
    p.add_argument("--kubeconfig", required=True)
    args = p.parse_args(argv)
    gc.disable()
    server, token = server_and_token(args.kubeconfig)
    results: dict[str, tuple[list[Any], int]] = {}
    errors: dict[str, str] = {}

    def one(source: str) -> None:
        try:
            results[source] = list_all(server, token, RESOURCES[source].path())
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            errors[source] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(s,)) for s in RESOURCES]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    t_done = time.time()
    out = {"t_start": T_START, "t_done": t_done, "counts": {s: len(r[0]) for s, r in results.items()},
           "bytes": sum(r[1] for r in results.values()), "errors": errors}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
