"""`python -m gputui.dev.bench.oneshot_floor --server URL --paths FILE`: the one-shot's physical floor.

The same GETs `gputui diagnose pod/NS/NAME` made (the simulator's request log of an untimed
run), all at once, one thread each, with urllib and the json module: no kubeconfig, no client,
no records, no checks, no rounds that wait on each other. What reading those objects costs
before anything is concluded from them. The bearer token comes from $GPUTUI_BENCH_TOKEN.
"""

from __future__ import annotations

import time

T_START = time.time()

import argparse  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import sys  # noqa: E402
import threading  # noqa: E402
import urllib.request  # noqa: E402
from collections.abc import Sequence  # noqa: E402
from typing import Any  # noqa: E402


def get(server: str, path: str, token: str) -> tuple[int, int]:
    """One GET, parsed: (bytes read, items or 1 for a single object)."""
    req = urllib.request.Request(server + path, headers={"Accept": "application/json",
                                                         "Authorization": f"Bearer {token}"})
    with urllib.request.urlopen(req, timeout=120) as resp:
        body = resp.read()
    doc = json.loads(body)
    items = doc.get("items") if isinstance(doc, dict) else None
    return len(body), len(items) if isinstance(items, list) else 1


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m gputui.dev.bench.oneshot_floor", description=__doc__.splitlines()[0])
    p.add_argument("--server", required=True)
    p.add_argument("--paths", required=True, help="file with one API path?query per line")
    args = p.parse_args(argv)
    token = os.environ.get("GPUTUI_BENCH_TOKEN", "")
    with open(args.paths, encoding="utf-8") as fh:
        paths = [line.strip() for line in fh if line.strip()]
    results: dict[int, tuple[int, int]] = {}
    errors: dict[str, str] = {}

    def one(i: int, path: str) -> None:
        try:
            results[i] = get(args.server, path, token)
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            errors[path] = f"{type(exc).__name__}: {exc}"

    threads = [threading.Thread(target=one, args=(i, path)) for i, path in enumerate(paths)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    out: dict[str, Any] = {"t_start": T_START, "t_done": time.time(), "requests": len(paths),
                           "bytes": sum(b for b, _n in results.values()),
                           "items": sum(n for _b, n in results.values()), "errors": errors}
    sys.stdout.write(json.dumps(out) + "\n")
    sys.stdout.flush()
    os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
