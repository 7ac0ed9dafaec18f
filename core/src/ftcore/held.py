"""FTCORE_TEST_HOLD=<point>=<seconds>: the core waits that long at that point, so that a test sees what happens there.
Points: a command's name (before it starts: a slow stage's messages while it runs, #39), `load` (serve, before a
model loads) and `trained` (train, after the last step and before saving: a worker killed there, #56). A hold ends
early when the worker that started the core is gone (parent_watch), as the run would. Unset, nothing happens."""
from __future__ import annotations

import os
import time

from . import parent_watch


def for_a_test(point: str) -> None:
    name, _, seconds = os.environ.get("FTCORE_TEST_HOLD", "").partition("=")
    if name != point or not seconds:
        return
    until = time.monotonic() + float(seconds)
    while time.monotonic() < until and not parent_watch.detached():
        time.sleep(0.1)
