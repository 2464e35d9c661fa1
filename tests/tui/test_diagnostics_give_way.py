"""The checks step aside while a frame waits to be painted: the tables come first, findings follow."""

from __future__ import annotations

import threading
import time
from pathlib import Path

from gputui.tui.app import GputuiApp
from tests.builders import snapshot

SMALL = (Path(__file__).resolve().parents[1] / "sim" / "data" / "small.yaml").read_text()


def run_in_thread(fn: object) -> tuple[threading.Thread, list[float]]:
    done: list[float] = []

    def target() -> None:
        fn()  # type: ignore[operator]
        done.append(time.monotonic())

    t = threading.Thread(target=target)
    t.start()
    return t, done


def test_checks_wait_for_the_pending_frame_to_be_painted() -> None:
    app = GputuiApp(snapshot=snapshot(SMALL))
    app._diag_yield_until = time.monotonic() + 10
    app._unpainted_since = time.monotonic()  # a frame was posted, the screen has not painted it
    t, done = run_in_thread(app._make_way)
    time.sleep(0.2)
    assert not done  # still waiting: the frame goes first
    painted = time.monotonic()
    app._painted()
    t.join(2)
    assert done and done[0] >= painted


def test_checks_give_way_for_a_bounded_time_only() -> None:
    app = GputuiApp(snapshot=snapshot(SMALL))
    app._frame_busy = True  # a frame that never ends must not starve the findings
    start = time.monotonic()
    app._diag_yield_until = start + 0.3
    t, done = run_in_thread(app._make_way)
    t.join(3)
    assert done and 0.25 <= done[0] - start < 2


def test_time_spent_giving_way_does_not_delay_the_next_run() -> None:
    app = GputuiApp(snapshot=snapshot(SMALL))
    app._diag_started = time.monotonic()
    app._diag_yield_until = app._diag_started + 10
    app._frame_busy = True
    t, done = run_in_thread(app._make_way)
    time.sleep(0.6)  # the checks wait for the frame...
    app._frame_busy = False
    t.join(2)
    app._rest_after_run()  # ...and then finish at once: their own cost was ~0, so is the rest
    assert app._diag_yielded >= 0.55
    assert app._diag_rest_until - time.monotonic() < 0.3  # not 2 x 0.6 s
