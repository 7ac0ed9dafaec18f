"""A CORE_PYTHON that records what the worker hands the ML core, then runs it (test/gpu-job-capture.test.ts).

The worker spawns `CORE_PYTHON -m ftcore <command> [--spec FILE] [flags]` (packages/core-client/src/run-core.ts). This
script stands in as that python: it writes the command line, the spec file's JSON and, for `serve`, every request line
the worker writes to its stdin into a numbered JSON file under $FTP_CORE_RECORD, then runs the core in this process
(its shebang is the core's own python, written by the test), so signals, exit codes and stdout stay the core's.
"""
import json
import os
import runpy
import sys
import threading
import time
from pathlib import Path

record = Path(os.environ["FTP_CORE_RECORD"])
record.mkdir(parents=True, exist_ok=True)
args = sys.argv[1:]
if args[:2] != ["-m", "ftcore"]:
    sys.exit(f"record_core.py: expected `-m ftcore …`, got {args}")
args = args[2:]
entry = {"argv": args}
if "--spec" in args:
    entry["spec"] = json.loads(Path(args[args.index("--spec") + 1]).read_text())
    # The data files it names (train_file, test_file): the worker removes its work folder once the job ends.
    entry["files"] = {value: Path(value).read_text() for key, value in entry["spec"].items()
                      if key.endswith("_file") and isinstance(value, str) and Path(value).is_file()}
name = record / f"{time.time_ns()}-{os.getpid()}.json"


def save() -> None:
    name.write_text(json.dumps(entry, indent=1))


if args and args[0] == "serve":
    # The requests arrive on descriptor 0: a thread copies them into the record and on into a pipe that becomes the
    # core's descriptor 0; the pipe closes when the worker closes stdin, so the core sees the same end.
    entry["requests"] = []
    lock = threading.Lock()
    read_end, write_end = os.pipe()
    real_stdin = os.dup(0)
    os.dup2(read_end, 0)
    os.close(read_end)

    def pump() -> None:
        buffer = b""
        while chunk := os.read(real_stdin, 65536):
            buffer += chunk
            *lines, buffer = buffer.split(b"\n")
            with lock:
                entry["requests"] += [json.loads(line) for line in lines if line.strip()]
                save()
            os.write(write_end, chunk)
        os.close(write_end)

    threading.Thread(target=pump, daemon=True).start()
save()
sys.argv = ["ftcore", *args]
runpy.run_module("ftcore", run_name="__main__", alter_sys=True)
