"""Helpers for the tests: datasets, event capture, running the command line."""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path

from ftcore import events

CORE = Path(__file__).resolve().parents[1]

QA = [
    ("What is the capital of France?", "Paris."),
    ("What color is the sky?", "Blue."),
    ("How many legs has a cat?", "Four."),
    ("Say hi.", "Hello there!"),
]


def conversation(question: str, answer: str) -> dict:
    return {"messages": [{"role": "user", "content": question}, {"role": "assistant", "content": answer}]}


def write_jsonl(path: Path, records: list[dict]) -> str:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return str(path)


class captured_events:
    """Context manager: events emitted inside are parsed back (strictly) into `.events`."""

    def __enter__(self):
        self.buffer = io.StringIO()
        events.set_output(self.buffer)
        return self

    def __exit__(self, *exc):
        import sys as _sys

        events.set_output(_sys.stdout)

    @property
    def events(self):
        return [events.parse_event_line(line) for line in self.buffer.getvalue().splitlines()]

    def of(self, kind: str):
        return [e for e in self.events if e.event == kind]


def run_cli(args: list[str], timeout: float = 300, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    return subprocess.run([sys.executable, "-m", "ftcore", *args], cwd=CORE, env=env, capture_output=True,
                          text=True, timeout=timeout, **popen)


def stdout_events(stdout: str):
    return [events.parse_event_line(line) for line in stdout.splitlines()]
