"""Helpers for the tests: datasets, event capture, running the command line."""
from __future__ import annotations

import io
import json
import os
import re
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

    def said(self, kind: str):
        """`of`, without the stage sentences (events.stage and its heartbeat), which say what runs, not what it found."""
        return [e for e in said(self.events) if e.event == kind]


def run_cli(args: list[str], timeout: float = 300, env: dict | None = None, **popen) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONUNBUFFERED": "1", **(env or {})}
    return subprocess.run([sys.executable, "-m", "ftcore", *args], cwd=CORE, env=env, capture_output=True,
                          text=True, timeout=timeout, **popen)


def stdout_events(stdout: str):
    return [events.parse_event_line(line) for line in stdout.splitlines()]


_STAGE = re.compile(r"(…|: \d+ s so far)$")


def is_stage(event) -> bool:
    """A stage sentence ("loading the ML libraries…", "…: 10 s so far", events.stage): what a command is doing, said
    while it runs (#39), as opposed to what it reports."""
    return event.event == "log" and event.level == "info" and bool(_STAGE.search(event.message))


def said(emitted):
    """The events without the stage sentences."""
    return [e for e in emitted if not is_stage(e)]


def sigterm_at_step(command: list[str], step: int = 3, timeout: float = 180, **env: str) -> tuple[list, int]:
    """Runs a training command (with `env` added), sends it SIGTERM once it reports `step`, and returns every event
    and the exit code."""
    import signal

    process = subprocess.Popen(command, cwd=CORE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                               env={**os.environ, "PYTHONUNBUFFERED": "1", **env})
    seen = []
    for line in process.stdout:
        seen.append(events.parse_event_line(line))
        if seen[-1].event == "progress" and seen[-1].step >= step:
            process.send_signal(signal.SIGTERM)
            break
    rest, _ = process.communicate(timeout=timeout)
    return seen + stdout_events(rest), process.returncode


def sft_spec(tiny_model, train, test, out, **hp):
    """A LoRA SFT spec on the tiny model that memorises QA in a few seconds (fp32, no dropout, no warm-up)."""
    from ftcore.train.spec import Hyperparameters, Options

    hyper = dict(learning_rate=0.02, batch_size=4, gradient_accumulation_steps=1, max_steps=30, logging_steps=5,
                 max_length=128, lora_rank=8, lora_alpha=16, lora_dropout=0.0, save_strategy="no", warmup_ratio=0.0,
                 max_grad_norm=1.0)
    hyper.update(hp)
    return Options(base_model=tiny_model, train_file=train, test_file=test, output_dir=str(out), method="LoRA",
                   hyperparameters=Hyperparameters(**hyper))


TEMPLATES = CORE / "chat_templates"
# make-tiny-model options for a model of each tool-capable family, with the family's published chat template.
TOOL_FAMILIES = {
    "qwen2.5": dict(architecture="qwen2", chat_template_file=str(TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"),
                    added_tokens=["<tool_call>", "</tool_call>"]),
    "llama3": dict(architecture="llama", chat_template_file=str(TEMPLATES / "meta-llama-Llama-3.3-70B-Instruct.jinja"),
                   end_of_turn="<|eot_id|>", bos_token="<|begin_of_text|>"),
}
WEATHER_TOOL = {"type": "function", "function": {
    "name": "get_weather", "description": "The weather in a city",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}


def weather_conversation(city: str, weather: str) -> dict:
    """A training record in OpenAI's format: the user asks, the assistant calls get_weather, the tool answers, the
    assistant says it."""
    call = {"id": f"call_{city.lower()}", "type": "function",
            "function": {"name": "get_weather", "arguments": json.dumps({"city": city})}}
    return {"tools": [WEATHER_TOOL], "messages": [
        {"role": "user", "content": f"What is the weather in {city}?"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": weather},
        {"role": "assistant", "content": f"It is {weather} in {city}."}]}
