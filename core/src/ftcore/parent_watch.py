"""Exit with the parent: when FTCORE_EXIT_WITH_PARENT=1 (set by the TypeScript worker), a daemon thread
waits for stdin to close, which happens when the worker process dies for any reason (even SIGKILL), and
then detaches from the dead worker: stdout and stderr go to /dev/null (every library write to the dead
pipes would raise and end the run before its checkpoint), then SIGTERM, so training saves a checkpoint at
the next step and stops exactly as on a cancel. A resumed job then continues from there.

The three pipes close together, and the main thread may write to stderr (the Trainer prints each log line,
libraries warn) before this thread has noticed: sys.stderr is wrapped so that such a write detaches too,
instead of raising BrokenPipeError out of the training loop and ending the run without its checkpoint."""
from __future__ import annotations

import os
import signal
import sys
import threading

_detached = threading.Event()


def detached() -> bool:
    """Whether the worker is gone and this process has detached from it."""
    return _detached.is_set()


def detach_from_parent() -> None:
    """Nobody reads our output any more: silence it and stop cleanly (once)."""
    if _detached.is_set():
        return
    _detached.set()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    os.kill(os.getpid(), signal.SIGTERM)


class _DetachOnBrokenPipe:
    """A text stream whose writes, once its reader is gone, detach from the parent instead of raising."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        try:
            return self._stream.write(text)
        except BrokenPipeError:
            detach_from_parent()
            return len(text)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except BrokenPipeError:
            detach_from_parent()

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def _wait_for_parent(fd: int) -> None:
    # os.read on the raw descriptor, not sys.stdin: a daemon thread blocked inside the buffered reader
    # holds its lock, and the interpreter aborts at shutdown ("could not acquire lock for <stdin>").
    try:
        while os.read(fd, 65536):
            pass
    except OSError:
        pass
    detach_from_parent()


def start_parent_watch() -> None:
    if os.environ.get("FTCORE_EXIT_WITH_PARENT") != "1":
        return
    sys.stderr = _DetachOnBrokenPipe(sys.stderr)
    fd = os.dup(sys.stdin.fileno())
    threading.Thread(target=_wait_for_parent, args=(fd,), name="parent-watch", daemon=True).start()
