"""Exit with the parent: when FTCORE_EXIT_WITH_PARENT=1 (set by the TypeScript worker), a daemon thread
waits for stdin to close, which happens when the worker process dies for any reason (even SIGKILL), and
then sends this process SIGTERM: training saves a checkpoint at the next step and stops, exactly as on
a cancel. Without it, a killed worker would leave an orphaned core training on for nobody."""
from __future__ import annotations

import os
import signal
import sys
import threading


def _wait_for_parent(fd: int) -> None:
    # os.read on the raw descriptor, not sys.stdin: a daemon thread blocked inside the buffered reader
    # holds its lock, and the interpreter aborts at shutdown ("could not acquire lock for <stdin>").
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    os.kill(os.getpid(), signal.SIGTERM)


def start_parent_watch() -> None:
    if os.environ.get("FTCORE_EXIT_WITH_PARENT") != "1":
        return
    fd = os.dup(sys.stdin.fileno())
    threading.Thread(target=_wait_for_parent, args=(fd,), name="parent-watch", daemon=True).start()
