"""Trainer callbacks that turn training into protocol events, and SIGTERM into a clean stop."""
from __future__ import annotations

import json
import math
import signal
import time
from collections.abc import Mapping
from pathlib import Path

from transformers import TrainerCallback

from .. import events
from . import distributed

_STANDARD_KEYS = {"loss", "learning_rate", "epoch", "total_flos", "train_runtime", "train_samples_per_second",
                  "train_steps_per_second", "train_loss", "num_tokens", "step"}


class TokenCounter:
    """Counts real (non-padding) tokens per training step, whatever the trainer's batch layout: `total` in this
    process since it started, `global_total()` over every rank (tokens per second), `trained()` also those the
    checkpoint it resumed from had counted (a job's trained_tokens, which a checkpoint keeps in FILE). The last two
    are collectives across ranks: call them on every rank at the same point (a callback every rank runs)."""

    FILE = "trained_tokens.json"

    def __init__(self) -> None:
        self.total = 0
        self.before = 0  # counted by the run that saved the checkpoint this one resumed from

    def global_total(self) -> int:
        return distributed.sum_ranks(self.total)

    def trained(self) -> int:
        return self.before + self.global_total()

    def save(self, checkpoint: Path) -> None:
        trained = self.trained()
        if distributed.is_main():
            (checkpoint / self.FILE).write_text(json.dumps({"trained_tokens": trained}) + "\n")

    def resume(self, checkpoint: Path) -> None:
        """A checkpoint saved before this file existed counts as 0 tokens."""
        path = checkpoint / self.FILE
        self.before = json.loads(path.read_text())["trained_tokens"] if path.is_file() else 0

    def count(self, inputs) -> None:
        if not isinstance(inputs, dict):
            return
        masks = [v for k, v in inputs.items() if k.endswith("attention_mask") or k in ("completion_mask",)]
        if masks:
            self.total += int(sum(m.sum().item() for m in masks))
        elif "input_ids" in inputs:  # padding-free batches carry no mask
            self.total += int(inputs["input_ids"].numel())

    def wrap(self, trainer) -> None:
        # compute_loss sees the final batch of every trainer (GRPO: after generation); eval calls are skipped.
        original = trainer.compute_loss

        def compute_loss(model, inputs, *args, **kwargs):
            if model.training:
                self.count(inputs)
            return original(model, inputs, *args, **kwargs)

        trainer.compute_loss = compute_loss


def _announce_tracker_run(args) -> None:
    """MLflow's callback (registered before ours) has started its run by now; say where it is."""
    if "mlflow" not in (args.report_to or []):
        return
    import mlflow

    run = mlflow.active_run()
    if run is None:
        return
    base = mlflow.get_tracking_uri().rstrip("/")
    url = f"{base}/#/experiments/{run.info.experiment_id}/runs/{run.info.run_id}" if base.startswith("http") else base
    events.emit(events.Tracker(provider="mlflow", run_id=run.info.run_id, url=url))


class ProtocolCallback(TrainerCallback):
    """progress every logging_steps, checkpoint on save, metrics after each evaluation."""

    def __init__(self, tokens: TokenCounter, compute_eval_metrics: bool) -> None:
        self.tokens = tokens
        self.compute_eval_metrics = compute_eval_metrics
        # Added to the trainer beside this callback (setup); run() reads it after training.
        self.diverged = NonFiniteLossGuard()
        self.started = time.monotonic()
        self.start_step = 0
        self.history: list[dict] = []
        self.eval_rewards: dict[str, float] = {}

    def on_train_begin(self, args, state, control, **kwargs):
        self.started = time.monotonic()
        self.start_step = state.global_step  # > 0 when resuming
        if state.global_step:
            self.tokens.resume(_checkpoint(args, state))
        _announce_tracker_run(args)

    def on_step_end(self, args, state, control, **kwargs):
        # Between two progress events (logging_steps apart: tens of seconds on a CPU) the heartbeat says this.
        events.stage_label(f"training, step {state.global_step} of {state.max_steps}")
        # The last step, and each step that evaluates (early stopping may end the run there), is reported, so the
        # last progress event carries the trained_tokens of the whole run.
        if state.global_step >= state.max_steps or control.should_evaluate:
            control.should_log = True
        return control

    def on_epoch_end(self, args, state, control, **kwargs):
        if control.should_evaluate:
            control.should_log = True
        return control

    def on_log(self, args, state, control, logs=None, **kwargs):
        logs = dict(logs or {})
        # GRPO's evaluation rewards reach only the log, just before on_evaluate reports the evaluation: kept for it.
        self.eval_rewards = {k: float(v) for k, v in logs.items() if k.startswith("eval_reward")
                             and isinstance(v, (int, float)) and math.isfinite(v)}
        if "loss" not in logs and not any(k.startswith("rewards") or k == "reward" for k in logs):
            return  # evaluation and end-of-training summaries are reported elsewhere
        elapsed = max(time.monotonic() - self.started, 1e-9)
        done = state.global_step - self.start_step
        # A run resumed from its last checkpoint can step past max_steps (#56: a worker killed after step 50 of 50
        # ran a step 51): the total counts every step run, and nothing is left to do, never a negative ETA.
        total_steps = max(state.max_steps, state.global_step)
        eta = (total_steps - state.global_step) * elapsed / done if done > 0 else None
        extra = {k: float(v) for k, v in logs.items()
                 if k not in _STANDARD_KEYS and isinstance(v, (int, float)) and math.isfinite(v)}
        total = self.tokens.global_total()
        extra["trained_tokens"] = self.tokens.before + total
        progress = events.Progress(
            step=state.global_step, total_steps=total_steps, epoch=round(float(state.epoch or 0), 4),
            loss=_finite(logs.get("loss")), learning_rate=_finite(logs.get("learning_rate")),
            tokens_per_second=round(total / elapsed, 2), eta_seconds=None if eta is None else round(eta, 2),
            extra=extra)
        self.history.append({"step": progress.step, "loss": progress.loss, **extra})
        events.emit(progress)

    def on_save(self, args, state, control, **kwargs):
        path = _checkpoint(args, state)
        self.tokens.save(path)
        events.emit(events.Checkpoint(step=state.global_step, path=str(path)))

    def on_evaluate(self, args, state, control, metrics=None, **kwargs):
        metrics = metrics or {}
        loss = _finite(metrics.get("eval_loss"))
        report = events.Metrics(step=state.global_step, eval_loss=loss, eval_runtime=_finite(metrics.get("eval_runtime")))
        if self.compute_eval_metrics and loss is not None:
            report.perplexity = _finite(math.exp(min(loss, 700)))
            report.accuracy = _finite(metrics.get("eval_accuracy"))
        # valid_score (train/valid_score.py) under OpenAI's kind of name; transformers needs it as eval_valid_score
        report.extra = {k.removeprefix("eval_") if k.startswith("eval_valid_score") else k: float(v)
                        for k, v in metrics.items() if k not in ("eval_loss", "eval_runtime", "eval_accuracy", "epoch")
                        and isinstance(v, (int, float)) and math.isfinite(v)}
        report.extra.update(self.eval_rewards)
        self.eval_rewards = {}
        events.emit(report)


def _checkpoint(args, state) -> Path:
    """The Trainer's folder for the checkpoint of the current step."""
    return Path(args.output_dir) / f"checkpoint-{state.global_step}"


class CancelOnSigterm(TrainerCallback):
    """SIGTERM → finish the current step, save a checkpoint, stop. The caller then reports `cancelled`."""

    def __init__(self) -> None:
        self.requested = False
        self.previous = signal.signal(signal.SIGTERM, self._on_signal)

    def _on_signal(self, signum, frame):
        self.requested = True

    def on_train_end(self, args, state, control, **kwargs):
        signal.signal(signal.SIGTERM, self.previous)

    def on_step_end(self, args, state, control, **kwargs):
        # Every rank stops at the same step, whichever got the signal first.
        self.requested = distributed.any_rank(self.requested)
        if self.requested:
            control.should_save = True
            control.should_training_stop = True
        return control


STOP_FILE_ENV = "FTCORE_STOP_FILE"


class StopWhenAsked(TrainerCallback):
    """Training ends early, as if its last step had come, once the file FTCORE_STOP_FILE names exists (a sweep's
    pruner stopped the trial: the worker writes why into it). The run then saves, evaluates and completes as usual.
    A file, not a signal: torchrun's agent forwards only the signals that end a run, and every rank sees a file."""

    def __init__(self, path: str) -> None:
        self.path = Path(path)
        self.stopped_at: int | None = None

    def on_step_end(self, args, state, control, **kwargs):
        if self.stopped_at is None and distributed.any_rank(self.path.exists()):
            self.stopped_at = state.global_step
            reason = self.path.read_text().strip() if self.path.exists() else ""
            events.emit(events.Log(level="info", message=f"stopping early at step {state.global_step}"
                                                         f"{': ' + reason if reason else ''}; the model is saved there"))
        if self.stopped_at is not None:
            control.should_training_stop = True
        return control


def _finite(value):
    if value is None:
        return None
    value = float(value)
    return value if math.isfinite(value) else None


class NonFiniteLossGuard(TrainerCallback):
    """A NaN or infinite loss stops the run at the end of that optimizer step, before anything is saved from the
    diverged weights: the checkpoints stored so far stay the last good ones. Every trainer's compute_loss is
    watched (each micro-batch), so a divergence between logging steps is not missed."""

    def __init__(self) -> None:
        self.step: int | None = None
        self.value: float | None = None
        # Whether the micro-batch whose loss was not finite had every label masked (-100): nothing to average over,
        # 0/0. Seen in the batch itself, so the message can lead with it instead of guessing.
        self.all_masked = False

    def watch(self, trainer) -> None:
        import torch

        original = trainer.compute_loss

        def compute_loss(*args, **kwargs):
            out = original(*args, **kwargs)
            loss = out[0] if isinstance(out, tuple) else out
            if self.step is None and not torch.isfinite(loss.detach()).all():
                self.step = trainer.state.global_step + 1
                self.value = float(loss.detach().float().mean())
                inputs = args[1] if len(args) > 1 else kwargs.get("inputs")
                labels = inputs.get("labels") if isinstance(inputs, Mapping) else None  # a dict or a BatchEncoding
                self.all_masked = labels is not None and not bool((labels != -100).any())
            return out

        trainer.compute_loss = compute_loss

    def on_step_end(self, args, state, control, **kwargs):
        if distributed.any_rank(self.step is not None) and self.step is None:
            self.step, self.value = state.global_step, float("nan")  # another rank's loss; this one's was finite
        if self.step is not None:
            control.should_save = False
            control.should_evaluate = False
            control.should_log = False
            control.should_training_stop = True
        return control

    def message(self, spec) -> str:
        """The cause the run saw first (a batch with no label to learn), then the likely ones in order: the learning
        rate, a loose gradient clip, an overflow."""
        hp = spec.hyperparameters
        stopped = (f"the training loss became {self.value} at step {self.step}; training stopped there and kept the "
                   "last good checkpoint.")
        if self.all_masked:
            return (f"{stopped} Every label of that batch was masked, so there was no token to learn from: its rows "
                    f"keep no answer token within max_length {hp.max_length} (raise max_length, or drop rows whose "
                    "prompt fills it; the pre-flight report counts them) or have no assistant turn.")
        causes = [f"learning_rate {hp.learning_rate} too high (try a tenth of it)",
                  f"max_grad_norm {hp.max_grad_norm} too loose" if hp.max_grad_norm > 1 else None,
                  "fp16/bf16 overflow (the core uses bf16 only on GPUs that support it; fp32 on CPU)"]
        return f"{stopped} Likely causes: " + "; ".join(c for c in causes if c)
