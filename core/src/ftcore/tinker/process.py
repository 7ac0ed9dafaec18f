"""tinker-session: one TrainingSession (session.py) in a long-lived process, for the Tinker-compatible service.

Created from the command line's options; then requests arrive on stdin, one JSON object a line with an `id` and an
`op` (forward_backward, optim_step, sample, save_state, load_state, save_weights_for_sampler, info), and each is
answered on stdout by a `tinker_result` event carrying that id, or an `error` event. Field names are Tinker's
(data, loss_fn, loss_fn_config, adam_params, sampling_params, ...); tensors travel as (nested) lists. Requests run
one at a time in arrival order, which is the order a Tinker model executes them (by seq_id); `cancel` drops a queued
one, as in serve. stdin closing ends the process.
"""
from __future__ import annotations

import os
import secrets
import time
from dataclasses import asdict, dataclass, field
from typing import Literal

from .. import events
from ..errors import Cancelled, SpecError
from ..serve import RequestReader
from .lora import LoraSpec
from .sampling import SamplingParams
from .session import AdamParams, Datum, TrainingSession


@dataclass
class Options:
    """Hold a base model with a LoRA adapter and its optimizer, answering Tinker's training primitives read from stdin."""

    base_model: str = field(metadata={"help": "local HF model folder"})
    rank: int = field(default=32, metadata={"help": "LoRA rank"})
    train_mlp: bool = field(default=True, metadata={"help": "adapt the MLP layers"})
    train_attn: bool = field(default=True, metadata={"help": "adapt the attention layers"})
    train_unembed: bool = field(default=True, metadata={"help": "adapt the output layer"})
    seed: int | None = field(default=None, metadata={
        "help": "seed of the adapter's initialisation and of unseeded samples (none: a random one, said by info)"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda"})
    from_state: str | None = field(default=None, metadata={
        "help": "a save_state folder to start from: its LoRA settings replace rank and the train_* flags"})
    with_optimizer: bool = field(default=False, metadata={"help": "with from_state: restore the optimizer too"})
    max_batch_tokens: int = field(default=8192, metadata={
        "help": "padded tokens per forward pass; a forward_backward over more runs in several, adding gradients"})


@dataclass
class ForwardBackwardRequest:
    id: str
    op: Literal["forward_backward"]
    data: list[Datum]
    loss_fn: str
    loss_fn_config: dict[str, float] | None = None
    forward_only: bool = False


@dataclass
class OptimStepRequest:
    id: str
    op: Literal["optim_step"]
    adam_params: AdamParams = field(default_factory=AdamParams)


@dataclass
class SampleRequest:
    id: str
    op: Literal["sample"]
    prompt: list[int]
    num_samples: int = 1
    sampling_params: SamplingParams = field(default_factory=SamplingParams)
    prompt_logprobs: bool = False
    # A folder a save_weights_for_sampler wrote (a sampling client's weights); none: the current weights.
    weights: str | None = None


@dataclass
class SaveRequest:
    id: str
    op: Literal["save_state", "save_weights_for_sampler"]
    path: str


@dataclass
class LoadStateRequest:
    id: str
    op: Literal["load_state"]
    path: str
    optimizer: bool = True


@dataclass
class InfoRequest:
    id: str
    op: Literal["info"]


def _forward_backward(session: TrainingSession, r: ForwardBackwardRequest) -> dict:
    out = session.forward_backward(r.data, r.loss_fn, r.loss_fn_config, r.forward_only)
    return {"loss_fn_outputs": [{k: v.tolist() for k, v in o.items()} for o in out.loss_fn_outputs],
            "metrics": out.metrics}


def _load_state(session: TrainingSession, r: LoadStateRequest) -> dict:
    session.load_state(r.path, r.optimizer)
    return {"path": r.path, "step": session.step}


OPS = {
    "forward_backward": (ForwardBackwardRequest, _forward_backward),
    "optim_step": (OptimStepRequest, lambda s, r: {"metrics": s.optim_step(r.adam_params)}),
    "sample": (SampleRequest, lambda s, r: asdict(s.sample(r.prompt, r.num_samples, r.sampling_params,
                                                           r.prompt_logprobs, r.weights))),
    "save_state": (SaveRequest, lambda s, r: {"path": s.save_state(r.path)}),
    "save_weights_for_sampler": (SaveRequest, lambda s, r: {"path": s.save_weights_for_sampler(r.path)}),
    "load_state": (LoadStateRequest, _load_state),
    "info": (InfoRequest, lambda s, r: s.info()),
}


def parse_request(raw: dict):
    from ..specs import from_dict

    if not isinstance(raw.get("id"), str) or not raw["id"]:
        raise SpecError('every request needs an "id" (a non-empty string) to tag its answer with')
    if raw.get("op") not in OPS:
        raise SpecError.at("op", f"request op {raw.get('op')!r} is unknown; valid: {', '.join(OPS)}, cancel")
    return from_dict(OPS[raw["op"]][0], raw, where=f"request {raw['id']}")


def handle(session: TrainingSession, reader: RequestReader, raw: dict | str) -> None:
    request_id = raw.get("id") if isinstance(raw, dict) and isinstance(raw.get("id"), str) else None
    try:
        if isinstance(raw, str):
            raise SpecError(raw)
        request = parse_request(raw)
        if reader.closed.is_set():
            raise Cancelled("stdin closed, so the session stops without answering")
        if reader.stop_requested(request.id):
            raise Cancelled("cancelled before it started")
        started = time.monotonic()
        result = OPS[request.op][1](session, request)
        events.emit(events.TinkerResult(request.id, request.op, result, round(time.monotonic() - started, 4)))
    except SpecError as e:
        events.emit(events.Error(code="validation", message=str(e), id=request_id, field=e.field))
    except Cancelled as e:
        events.emit(events.Error(code="cancelled", message=str(e), id=request_id))
    except Exception as e:  # noqa: BLE001 - one failed request must not end the session
        import logging

        logging.getLogger("ftcore.tinker").exception("request %s failed", request_id)
        events.emit(events.Error(code="runtime", message=f"{type(e).__name__}: {e}", id=request_id))
    finally:
        if request_id is not None:
            reader.cancelled.discard(request_id)


def create_session(options: Options) -> TrainingSession:
    if options.from_state:
        return TrainingSession.from_state(options.from_state, options.base_model, options.with_optimizer,
                                          options.device, options.max_batch_tokens)
    seed = options.seed if options.seed is not None else secrets.randbelow(2**31)
    spec = LoraSpec(base_model=options.base_model, rank=options.rank, train_mlp=options.train_mlp,
                    train_attn=options.train_attn, train_unembed=options.train_unembed, seed=seed)
    return TrainingSession.create(spec, options.device, options.max_batch_tokens)


def run(options: Options) -> None:
    events.stage("loading_model", f"loading {options.base_model} with a LoRA adapter")
    session = create_session(options)
    events.end_stage()
    reader = RequestReader(os.dup(0))
    events.emit(events.Ready(pid=os.getpid()))
    while (request := reader.pending.get()) is not None:
        handle(session, reader, request)
