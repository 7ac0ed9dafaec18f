"""The core's output protocol: every stdout line is exactly one of these events, as JSON.

Mirrored by zod schemas in packages/core-client/src/events.ts; tests/fixtures/events.jsonl is parsed by both.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Any, Literal


@dataclass
class Progress:
    step: int
    total_steps: int
    epoch: float
    loss: float | None
    learning_rate: float | None
    tokens_per_second: float | None
    eta_seconds: float | None
    # Other scalars the trainer logged at this step (rewards, reward margins, grad_norm, ...).
    extra: dict[str, float] = field(default_factory=dict)
    event: Literal["progress"] = "progress"


# What a command is doing, by a name a program reads (the words of a stage's log are for people and may change).
Stage = Literal["loading_libraries", "reading_data", "loading_model", "training", "saving", "evaluating", "merging",
                "writing_gguf", "exporting_onnx", "importing", "loading_for_serving"]


@dataclass
class Log:
    level: Literal["debug", "info", "warning", "error"]
    message: str
    # The stage this log announces or reports the time of (events.stage); None for any other log.
    stage: Stage | None = None
    event: Literal["log"] = "log"


@dataclass
class Metrics:
    """Evaluation results; `step` is the training step they were measured at. `final`: the evaluation after training
    (per assistant token over the test split), which at the last step stands beside the trainer's own evaluation of
    that step (eval_strategy), a different measure: a reader must be able to tell the two apart."""

    step: int
    eval_loss: float | None = None
    perplexity: float | None = None
    accuracy: float | None = None
    eval_runtime: float | None = None
    extra: dict[str, float] = field(default_factory=dict)
    final: bool = False
    event: Literal["metrics"] = "metrics"


@dataclass
class Checkpoint:
    step: int
    path: str
    event: Literal["checkpoint"] = "checkpoint"


ArtifactKind = Literal["model", "adapter", "merged", "tokenizer", "generations", "gguf", "onnx", "benchmark", "sweep"]


@dataclass
class Artifact:
    kind: ArtifactKind
    path: str
    event: Literal["artifact"] = "artifact"


ErrorCode = Literal["validation", "cancelled", "runtime"]


@dataclass
class Error:
    code: ErrorCode
    message: str
    # serve: the request this error answers (None: the server itself, or a line that named no id).
    id: str | None = None
    # serve, a cancelled generation: the tokens it had generated when it stopped.
    generated_tokens: int | None = None
    # validation: the dotted path of the field at fault in the spec or request ("grader.source"), when one is.
    field: str | None = None
    event: Literal["error"] = "error"


@dataclass
class Tracker:
    """The experiment tracker's run for this training, so the job can link to it (tracker_url)."""

    provider: Literal["mlflow", "wandb"]
    run_id: str
    url: str
    event: Literal["tracker"] = "tracker"


@dataclass
class Preflight:
    """What the training run will do, told before it runs: tokens, truncation, steps, memory, warnings (the JSON
    report of train/preflight/command.py; its shape is documented there)."""

    report: dict[str, Any]
    # serve: the request this report answers (None from the preflight and train commands).
    id: str | None = None
    event: Literal["preflight"] = "preflight"


@dataclass
class Done:
    command: str
    elapsed_seconds: float
    event: Literal["done"] = "done"


# --- serve: answers to requests, tagged with the request's id ------------------------------------------

@dataclass
class Ready:
    """serve: the server reads requests from now on."""

    pid: int
    event: Literal["ready"] = "ready"


@dataclass
class Generated:
    """serve: the answer to a `generate` request, one text and its new token ids per conversation."""

    id: str
    texts: list[str]
    token_ids: list[list[int]]
    # Seconds spent loading the model for this request: 0 when it was already loaded (warm).
    load_seconds: float
    elapsed_seconds: float
    # Per conversation: "stop" (end of turn or a stop string) or "length" (max_new_tokens). None from older cores.
    finish_reasons: list[Literal["stop", "length"]] | None = None
    # Per conversation: tokens of the prompt, chat template included. None from older cores.
    prompt_tokens: list[int] | None = None
    event: Literal["generated"] = "generated"


@dataclass
class Scored:
    """serve: the answer to an `evaluate` request (see metrics.evaluate): flat scores, a {metric, error} per metric
    that could not be computed, a {metric, note} per score that needs explaining."""

    id: str
    # The metrics asked for (the explicit list, or the task's suite); `scores` holds their sub-scores.
    metrics: list[str]
    scores: dict[str, float]
    warnings: list[dict[str, str]]
    notes: list[dict[str, str]]
    elapsed_seconds: float
    event: Literal["scored"] = "scored"


@dataclass
class Graded:
    """serve: the answer to a `grade` request (graders.grade_batch): per output its reward, its sub-graders' rewards
    (multi), and why it scored 0 when it could not be graded (error, and OpenAI's error flag in error_kind)."""

    id: str
    rewards: list[float]
    sub_rewards: list[dict[str, float]]
    errors: list[str | None]
    error_kinds: list[str | None]
    elapsed_seconds: float
    event: Literal["graded"] = "graded"


@dataclass
class TinkerResult:
    """tinker-session: the answer to one request (its id and op), what the op returned as JSON data."""

    id: str
    op: str
    result: dict[str, Any]
    elapsed_seconds: float
    event: Literal["tinker_result"] = "tinker_result"


CoreEvent = (Progress | Log | Metrics | Checkpoint | Artifact | Error | Tracker | Preflight | Done | Ready | Generated
             | Scored | Graded | TinkerResult)
EVENT_TYPES: dict[str, type] = {
    "progress": Progress, "log": Log, "metrics": Metrics, "checkpoint": Checkpoint,
    "artifact": Artifact, "error": Error, "tracker": Tracker, "preflight": Preflight, "done": Done,
    "ready": Ready, "generated": Generated, "scored": Scored, "graded": Graded, "tinker_result": TinkerResult,
}

_lock = threading.Lock()
# The real stdout, captured at import: libraries that print are redirected to stderr (see cli.main).
_out = sys.stdout


def set_output(stream) -> None:
    global _out
    _out = stream


@contextmanager
def muted():
    """Events emitted inside are dropped (a measurement that runs the training path is not the job's training)."""
    global _out
    previous, _out = _out, open(os.devnull, "w")
    try:
        yield
    finally:
        _out.close()
        _out = previous


def emit(event: CoreEvent) -> None:
    global _out, _last_emit
    line = json.dumps(asdict(event), allow_nan=False, default=str)
    with _lock:
        _last_emit = time.monotonic()
        try:
            _out.write(line + "\n")
            _out.flush()
        except (BrokenPipeError, ValueError):
            # Nobody reads our events any more: the worker died (maybe before the stdin watch noticed).
            from .parent_watch import detach_from_parent

            _out = open(os.devnull, "w")
            detach_from_parent()


# --- what the command is doing now (#39: no wait over 10 s without a word) -----------------------------------------

_last_emit = time.monotonic()
_stage: dict[str, Any] = {"name": None, "key": None, "since": 0.0}


def stage(key: Stage, name: str) -> None:
    """The command now does `name` ("loading the base model"; `key` names it for programs): said at once, and while
    it lasts every FTCORE_PROGRESS_INTERVAL seconds (5; the worker sets it from PROGRESS_INTERVAL_S) with the time so
    far, unless another event went out meanwhile (start_heartbeat)."""
    _stage.update(name=name, key=key, since=time.monotonic())
    emit(Log(level="info", message=f"{name}…", stage=key))


def stage_label(name: str) -> None:
    """The same stage, said differently from now on ("training, step 7 of 30"), its time running on."""
    _stage["name"] = name


def end_stage() -> None:
    _stage["name"] = None


def start_heartbeat() -> None:
    """A daemon thread that says the current stage and its time so far whenever the command has been silent for an
    interval: a worker, and the person behind it, hears from the core at least that often."""
    interval = float(os.environ.get("FTCORE_PROGRESS_INTERVAL", "5"))

    def beat() -> None:
        while True:
            time.sleep(interval / 2)
            name, key, since = _stage["name"], _stage["key"], _stage["since"]
            if name and time.monotonic() - _last_emit >= interval:
                emit(Log(level="info", message=f"{name}: {round(time.monotonic() - since)} s so far", stage=key))

    threading.Thread(target=beat, name="stage-heartbeat", daemon=True).start()


def parse_event_line(line: str) -> CoreEvent:
    """Parses one stdout line strictly (unknown kind, missing or extra field, wrong type → ValueError)."""
    try:
        data = json.loads(line)
    except json.JSONDecodeError as e:
        raise ValueError(f"not JSON: {e}") from e
    if not isinstance(data, dict) or data.get("event") not in EVENT_TYPES:
        raise ValueError(f"unknown event kind: {data.get('event') if isinstance(data, dict) else data!r}")
    cls = EVENT_TYPES[data["event"]]
    try:
        event = cls(**data)
    except TypeError as e:
        raise ValueError(f"{data['event']}: {e}") from e
    _check_types(event)
    return event


def _check_types(event) -> None:
    import typing

    hints = typing.get_type_hints(type(event))
    for name, hint in hints.items():
        if not _matches(getattr(event, name), hint):
            raise ValueError(f"{event.event}.{name}: {getattr(event, name)!r} is not {hint}")


def _matches(value, hint) -> bool:
    import types
    import typing

    if hint is typing.Any:
        return True
    origin = typing.get_origin(hint)
    if origin in (typing.Union, types.UnionType):
        return any(_matches(value, h) for h in typing.get_args(hint))
    if origin is Literal:
        return value in typing.get_args(hint)
    if origin is list:
        (it,) = typing.get_args(hint)
        return isinstance(value, list) and all(_matches(v, it) for v in value)
    if origin is dict:
        _, vt = typing.get_args(hint)
        return isinstance(value, dict) and all(isinstance(k, str) and _matches(v, vt) for k, v in value.items())
    if hint is type(None):
        return value is None
    if hint is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if hint is int:
        return isinstance(value, int) and not isinstance(value, bool)
    return isinstance(value, hint)
