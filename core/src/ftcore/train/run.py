"""train: validate → preflight → load → train (progress events, SIGTERM-safe) → save → final metrics."""
from __future__ import annotations

import dataclasses
from pathlib import Path

from .. import events, held
from ..errors import Cancelled, SpecError, TrainingDiverged
from . import distributed
from .setup import load_for_training, load_processing_class, setup
from .spec import Options  # noqa: F401  (the CLI reads Options from this module)


def run(spec: Options) -> None:
    from .device import liger_undone_after

    with liger_undone_after(spec):
        _run(spec)


def _run(spec: Options) -> None:
    from .validate import validate

    events.stage("reading_data", "reading and checking the data")
    train_records, test_records, mode = validate(spec)
    from .configs import not_applicable
    from .device import device_is_cuda, device_summary
    from .memory import memory_plan

    distributed.start(device_is_cuda(spec))
    made = _preflight(spec, train_records, test_records, mode)
    events.emit(events.Log(level="info", message=device_summary(spec)))
    for note in not_applicable(spec):
        events.emit(events.Log(level="info", message=note))
    plan = memory_plan(spec, made["memory"] if made else None)
    for reason in plan.reasons:
        events.emit(events.Log(level="info", message=reason))
    events.stage("loading_model", "loading the base model and preparing the data")
    trainer, cancel, protocol = setup(spec, train_records, test_records, mode, plan)
    _warn_if_dpo_cannot_teach_stopping(spec, train_records, trainer)
    if world := distributed.world():
        events.emit(events.Log(level="info", message=f"training on {world[0]} processes ({world[1]}): each takes its "
                                                     f"share of every global batch of {world[0]} × batch_size rows"))
    checkpoint = _resume_checkpoint(spec)
    finished = _finished_state(checkpoint) if checkpoint is not None else None
    if finished is not None:
        _load_finished(trainer, protocol, checkpoint, finished)
    else:
        events.stage("training", "training")
        trainer.train(resume_from_checkpoint=checkpoint)
    held.for_a_test("trained")
    if cancel.requested:
        raise Cancelled("cancelled")
    if protocol.diverged.step is not None:
        raise TrainingDiverged(protocol.diverged.message(spec))
    _report_best(spec, trainer)  # the other ranks' events go nowhere (cli.py)
    events.stage("saving", "saving the trained model")
    saved = save(spec, trainer)  # every rank: under FSDP each gives its shards; rank 0 writes
    if not distributed.is_main():
        return  # rank 0 evaluates the model
    model = _whole_model(spec, trainer, saved) if plan.fsdp else trainer.model
    events.stage("evaluating", "evaluating")
    evaluate(spec, trainer, train_records, test_records, mode, model)


def _warn_if_dpo_cannot_teach_stopping(spec: Options, train_records, trainer) -> None:
    """DPO from a model that does not end its turn after the chosen answers (preflight.end_of_turn_warning), measured
    on the model as training starts from it; only informs, as the pre-flight report does."""
    from .preflight.sampled import end_of_turn_probability, end_of_turn_warning

    if spec.trainer_type != "dpo" or spec.hyperparameters.rpo_alpha or not distributed.is_main():
        return
    try:
        warning = end_of_turn_warning(spec, end_of_turn_probability(spec, train_records, trainer.processing_class,
                                                                    trainer.model))
    except Exception as e:  # noqa: BLE001 - a measurement must never cost the training
        events.emit(events.Log(level="warning", message=f"no end-of-turn measurement: {type(e).__name__}: {e}"))
        return
    if warning:
        events.emit(events.Log(level="warning", message=f"pre-flight: {warning['message']}"))


def _preflight(spec: Options, train_records, test_records, mode) -> dict | None:
    """The pre-flight report, the run's first event (from rank 0). Every rank makes it, as each needs its memory
    estimate for the memory plan (memory.memory_plan). It only informs: a report that cannot be made (an architecture
    the meta-device count does not know, say) is logged, and training goes on. A run with nothing to learn stops."""
    from .preflight.command import report

    try:
        made = report(spec, train_records, test_records, mode, load_processing_class(spec))
    except SpecError:
        raise  # a run that cannot learn anything (every trained token truncated away)
    except Exception as e:  # noqa: BLE001 - the report must never cost the training
        import logging

        logging.getLogger("ftcore").exception("pre-flight report failed")
        events.emit(events.Log(level="warning", message=f"no pre-flight report: {type(e).__name__}: {e}"))
        return None
    if distributed.is_main():
        events.emit(events.Preflight(report=made))
    return made



def _resume_checkpoint(spec: Options) -> str | None:
    if not spec.resume_from_checkpoint:
        return None
    from transformers.trainer_utils import get_last_checkpoint

    folder = Path(spec.output_dir) / "checkpoints"
    last = get_last_checkpoint(str(folder)) if folder.is_dir() else None
    if last is None:
        raise SpecError(f"resume_from_checkpoint is true but {folder} holds no checkpoint; "
                        "set resume_from_checkpoint false to start over")
    events.emit(events.Log(level="info", message=f"resuming from {last}"))
    return last


def _finished_state(checkpoint: str):
    """The checkpoint's trainer state when it was saved at the run's last step (global_step ≥ max_steps), else None."""
    from transformers.trainer_callback import TrainerState

    state = TrainerState.load_from_json(str(Path(checkpoint) / "trainer_state.json"))
    return state if state.max_steps and state.global_step >= state.max_steps else None


def _load_finished(trainer, protocol, checkpoint: str, state) -> None:
    """A checkpoint at the last step: the training is over and only saving is left (#56: a worker killed between the
    job's last step and `completed` had it run a step 51 of 50, then save and evaluate again). The trainer takes the
    checkpoint's weights and state without a step, and the last step's progress is said again, with the job's
    trained tokens, as a resumed run's first progress would say it."""
    trainer._load_from_checkpoint(checkpoint)  # the Trainer's own loader: a PEFT adapter or the whole model
    trainer.state = state
    if trainer.args.load_best_model_at_end and state.best_model_checkpoint is not None:
        trainer._load_best_model()  # as the end of Trainer.train does
    protocol.tokens.resume(Path(checkpoint))
    events.emit(events.Log(level="info", message=f"the checkpoint of step {state.global_step} is the last step's: "
                                                 "the training is over, only saving is left"))
    last = next((h for h in reversed(state.log_history) if "loss" in h), {})
    events.emit(events.Progress(
        step=state.global_step, total_steps=state.max_steps, epoch=round(float(state.epoch or 0), 4),
        loss=last.get("loss"), learning_rate=last.get("learning_rate"), tokens_per_second=None, eta_seconds=0.0,
        extra={"trained_tokens": float(protocol.tokens.before)}))


def _report_best(spec: Options, trainer) -> None:
    """load_best_model_at_end: the trainer now holds the best checkpoint's weights; say which step that was."""
    best = trainer.state.best_model_checkpoint
    if not spec.eval_config.load_best_model_at_end or not best:
        return
    step = int(Path(best).name.rsplit("-", 1)[-1])
    metric = trainer.state.best_metric
    events.emit(events.Log(level="info", message=f"kept the best checkpoint: step {step} "
                                                 f"({spec.eval_config.metric_for_best} {metric})"))
    events.emit(events.Metrics(step=trainer.state.global_step, extra={"best_step": float(step)}))


def save(spec: Options, trainer) -> Path:
    """LoRA/QLoRA → output_dir/adapter (PEFT adapter); Full → output_dir/model. Tokenizer (with chat template) beside.
    Every rank calls it, and rank 0 writes: under FSDP accelerate gathers the shards onto rank 0 (a collective);
    otherwise every rank holds the same weights."""
    kind = "model" if spec.method == "Full" else "adapter"
    out = Path(spec.output_dir) / kind
    state = trainer.accelerator.get_state_dict(trainer.model) if trainer.is_fsdp_enabled else None
    if not distributed.is_main():
        return out
    if state is None:
        trainer.model.save_pretrained(out)
    else:
        model = trainer.accelerator.unwrap_model(trainer.model)
        model.save_pretrained(out, state_dict=_tied(model, state))
    trainer.processing_class.save_pretrained(out)
    events.emit(events.Artifact(kind=kind, path=str(out)))
    return out


def _tied(model, state: dict) -> dict:
    """The gathered state dict with tied weights (embeddings and LM head) one tensor again, as in the model, so that
    save_pretrained writes them once: gathering made a copy per name."""
    names: dict[int, list[str]] = {}
    for name, parameter in model.named_parameters(remove_duplicate=False):
        names.setdefault(id(parameter), []).append(name)
    for same in names.values():
        for name in same[1:]:
            if name in state and same[0] in state:
                state[name] = state[same[0]]
    return state


def _whole_model(spec: Options, trainer, saved: Path):
    """The saved model whole on rank 0's device, for the final evaluation: under FSDP rank 0 holds a shard of each
    weight, and generating with it would wait for the other ranks."""
    from .device import model_kwargs

    kwargs = {k: v for k, v in model_kwargs(spec).items() if k in ("dtype", "attn_implementation")}
    _, model = load_for_training(dataclasses.replace(spec, base_model=str(saved)), kwargs)
    return model.to(trainer.args.device).eval()


def evaluate(spec: Options, trainer, train_records, test_records, mode, model=None) -> None:
    """The final metrics of `model` (default: the trainer's) on the test split, or on the last 5% of train."""
    from ..data import reference_conversations
    from .metrics import emit_final_metrics

    records = test_records or train_records[-max(1, len(train_records) // 20):]
    conversations = reference_conversations(records, mode)
    step = trainer.state.global_step
    if conversations is None:  # prompt_only (GRPO) has no reference answers: report the rewards instead
        last = next((h for h in reversed(trainer.state.log_history) if "reward" in h), {})
        events.emit(events.Metrics(step=step, final=True, extra={k: float(v) for k, v in last.items()
                                                     if k.startswith("reward") and isinstance(v, (int, float))}))
        return
    encode = None
    if spec.modality == "vision":
        from ..models.vision import VisionChatCollator

        encode = VisionChatCollator(trainer.processing_class, spec.hyperparameters.max_length).encode
    tools = [r.get("tools") for r in records] if mode == "language_modeling" else None
    emit_final_metrics(trainer.model if model is None else model, trainer.processing_class, conversations,
                       spec.hyperparameters.max_length, spec.hyperparameters.batch_size, step, encode, tools)
