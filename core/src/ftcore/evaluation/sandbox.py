"""User code (a python grader's `grade(sample, item)`) run as untrusted code: in a bubblewrap sandbox of its own, with
no network (a network namespace with nothing in it), none of the machine's files but the system libraries and the
Python standard library (read-only; no data folder, no model, no core), an empty environment, a small /tmp, and limits
on CPU time and memory. One sandbox process grades a batch; a sample that raises or runs out of time scores 0 with
the reason (line and exception), and one that takes the process down with it (a limit hit, a timer swallowed) costs
only itself: the rest of the batch goes on in a new process. Where bubblewrap cannot make such a sandbox, user code is
refused with the reason, never run bare."""
from __future__ import annotations

import functools
import json
import os
import resource
import selectors
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass

from ..errors import SpecError

CPU_SECONDS = float(os.environ.get("GRADER_CPU_SECONDS", "5"))
"""CPU time one sample's grade() may take."""
MEMORY_BYTES = int(os.environ.get("GRADER_MEMORY_MB", "512")) * 2**20
"""Address space of the sandbox process (Python itself takes ~30 MB of it)."""
TMP_BYTES = 16 * 2**20
START_SECONDS = 10.0
"""Wall time a sandbox gets to start and read the source, beyond its samples' time."""
MAX_ERROR_CHARS = 500
WALL_SLACK_SECONDS = 3.0
"""The least wall time a sample gets beyond its CPU time before the parent ends the sandbox: on a machine whose cores
are all busy, a looping grade() gets a share of one, and its own CPU timer must still be what stops it (#55: a 1 s
grader ran past a 2 s wall limit in the suite, three processes on two cores)."""


def _wall_seconds(cpu_seconds: float) -> float:
    """A sample's wall time: its CPU time, and as much again (at least WALL_SLACK_SECONDS)."""
    return cpu_seconds + max(cpu_seconds, WALL_SLACK_SECONDS)


# Runs inside the sandbox with the standard library only: the source on the first line of stdin, then one
# {"sample", "item"} per line; one {"score"} or {"error"} per line on stdout ({"fatal"} when the source itself fails).
# A sample's CPU time is bounded by a profiling timer that raises in it; the parent's wall clock backs it up.
_RUNNER = r'''
import json, math, signal, sys, traceback
limit = float(sys.argv[1])

class GraderTimeout(BaseException):
    pass

def expired(signum, frame):
    raise GraderTimeout(f"grade() used more than {limit:g} s of CPU time")

signal.signal(signal.SIGPROF, expired)

def where(error):
    if isinstance(error, SyntaxError) and error.filename == "<grader>":
        return f"line {error.lineno}: "
    frames = [f for f in traceback.extract_tb(error.__traceback__) if f.filename == "<grader>"]
    return f"line {frames[-1].lineno}: " if frames else ""

def say(answer):
    sys.stdout.write(json.dumps(answer) + "\n")
    sys.stdout.flush()

namespace = {"__name__": "grader"}
try:
    exec(compile(json.loads(sys.stdin.readline()), "<grader>", "exec"), namespace)
    if not callable(namespace.get("grade")):
        raise NameError("the source defines no grade(sample, item) function")
except BaseException as error:
    say({"fatal": f"{where(error)}{type(error).__name__}: {error}"})
    sys.exit(0)
grade = namespace["grade"]
for line in sys.stdin:
    pair = json.loads(line)
    try:
        signal.setitimer(signal.ITIMER_PROF, limit)
        try:
            score = grade(pair["sample"], pair["item"])
        finally:
            signal.setitimer(signal.ITIMER_PROF, 0)
        score = float(score)
        if not math.isfinite(score):
            raise ValueError(f"grade() returned {score}, not a finite number")
        say({"score": score})
    except BaseException as error:
        say({"error": f"{where(error)}{type(error).__name__}: {error}"})
'''


@dataclass(frozen=True)
class Grade:
    score: float
    error: str | None = None


def _base_python() -> tuple[str, str]:
    """The interpreter and the prefix of its standard library: the sandbox sees these, not the core's packages."""
    prefix = sys.base_prefix
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    for candidate in (os.path.join(prefix, "bin", version), os.path.join(prefix, "bin", "python3")):
        if os.path.isfile(candidate):
            return candidate, prefix
    raise SpecError(f"no Python interpreter under {prefix} for the grader sandbox")


def _command(cpu_seconds: float) -> list[str]:
    python, prefix = _base_python()
    binds = ["--ro-bind", "/usr", "/usr"]
    if not prefix.startswith("/usr/"):
        binds += ["--ro-bind", prefix, prefix]
    links = [arg for name in ("lib", "lib64", "bin", "sbin") if os.path.islink(f"/{name}")
             for arg in ("--symlink", os.readlink(f"/{name}"), f"/{name}")]
    return ["bwrap", "--unshare-all", "--die-with-parent", "--new-session", "--clearenv", *binds, *links,
            "--proc", "/proc", "--dev", "/dev", "--size", str(TMP_BYTES), "--tmpfs", "/tmp", "--chdir", "/tmp",
            python, "-I", "-S", "-c", _RUNNER, str(cpu_seconds)]


@functools.cache
def unavailable() -> str | None:
    """Why user code cannot be sandboxed on this machine, or None when it can."""
    if sys.platform != "linux":
        return f"python graders run in a Linux sandbox (bubblewrap); this machine runs {sys.platform}"
    if shutil.which("bwrap") is None:
        return ("python graders need bubblewrap (the bwrap command) to run isolated, and this machine has none; "
                "install it (Debian: apt-get install bubblewrap)")
    try:
        grades = _run_batch("def grade(sample, item):\n    return 1.0\n", [({}, {})], CPU_SECONDS)
    except (OSError, SpecError) as error:
        return f"bubblewrap cannot make a sandbox for python graders on this machine: {error}"
    if grades != [Grade(1.0)]:
        return f"bubblewrap's sandbox did not run a probe grader: {grades[0].error}"
    return None


def run_python_grader(source: str, pairs: list[tuple[dict, dict]], cpu_seconds: float | None = None) -> list[Grade]:
    """grade(sample, item) of `source` for each (sample, item), in the sandbox, each sample within `cpu_seconds` of CPU
    time (None: CPU_SECONDS); refused where there is none."""
    cpu_seconds = cpu_seconds or CPU_SECONDS
    reason = unavailable()
    if reason:
        raise SpecError(reason)
    grades: list[Grade] = []
    while len(grades) < len(pairs):
        grades += _run_batch(source, pairs[len(grades):], cpu_seconds)
    return grades


def _limits() -> None:
    """In the child before bwrap starts: inherited by everything inside."""
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_BYTES, MEMORY_BYTES))
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


def _run_batch(source: str, pairs: list[tuple[dict, dict]], cpu_seconds: float) -> list[Grade]:
    """Grades as many of `pairs` as one sandbox process gets through: all, or up to the one that ended it (which
    scores 0 with the reason)."""
    process = subprocess.Popen(_command(cpu_seconds), stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               bufsize=0, env={}, preexec_fn=_limits)
    lines = [json.dumps(source)] + [json.dumps({"sample": s, "item": i}) for s, i in pairs]
    threading.Thread(target=_feed, args=(process, lines), daemon=True).start()
    answers = _Answers(process.stdout.fileno())
    grades: list[Grade] = []
    deadline = time.monotonic() + START_SECONDS + _wall_seconds(cpu_seconds)
    ended = None
    try:
        while len(grades) < len(pairs):
            line = answers.next(deadline)
            if line is None:
                ended = f"it ran past its {cpu_seconds:g} s limit"
                break
            if line == b"":
                process.wait()
                ended = (f"it went past its memory ({MEMORY_BYTES // 2**20} MiB) or CPU limit (exit status "
                         f"{process.returncode})")
                break
            answer = json.loads(line)
            if "fatal" in answer:
                return [Grade(0.0, answer["fatal"][:MAX_ERROR_CHARS])] * len(pairs)
            grades.append(Grade(float(answer["score"])) if "score" in answer
                          else Grade(0.0, answer["error"][:MAX_ERROR_CHARS]))
            deadline = time.monotonic() + _wall_seconds(cpu_seconds)
    finally:
        answers.close()
        process.kill()
        process.wait()
    if ended is not None:
        grades.append(Grade(0.0, f"the grader's sandbox was ended: {ended}"))
    return grades


class _Answers:
    """The sandbox's stdout, a line at a time, each waited for until a deadline (select on the descriptor, with the
    lines read but not yet returned kept here, not in a buffered reader that select cannot see)."""

    def __init__(self, fd: int):
        self.fd, self.pending = fd, b""
        self.selector = selectors.DefaultSelector()
        self.selector.register(fd, selectors.EVENT_READ)

    def next(self, deadline: float) -> bytes | None:
        """The next line; b"" at the end of the output; None when the deadline passes first."""
        while b"\n" not in self.pending:
            if not self.selector.select(timeout=max(0.0, deadline - time.monotonic())):
                return None
            chunk = os.read(self.fd, 65536)
            if not chunk:
                return b""
            self.pending += chunk
        line, self.pending = self.pending.split(b"\n", 1)
        return line

    def close(self) -> None:
        self.selector.close()


def _feed(process: subprocess.Popen, lines: list[str]) -> None:
    try:
        for line in lines:
            process.stdin.write((line + "\n").encode())
        process.stdin.close()
    except (BrokenPipeError, ValueError, OSError):  # the sandbox ended first
        pass
