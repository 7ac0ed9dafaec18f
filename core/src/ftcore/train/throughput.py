"""Tokens per second of the real training path on this machine, measured by a few optimizer steps of a copy of the
spec: the pre-flight report's one measured figure (the rest of the report is counted, see preflight)."""
from __future__ import annotations

from .. import events
from .spec import Options as TrainOptions


def measure_throughput(spec: TrainOptions, train_records, test_records, mode,
                       memory: dict | None = None) -> dict | None:
    """Tokens per second of the real training path on this machine, with the memory plan training would take for
    `memory` (the report's estimate; memory.memory_plan): 4 optimizer steps of a copy of the spec (no
    checkpoints, evaluation or tracker, in a temporary folder that is removed), timed over steps 2 to 4 (step 1
    pays for warm-up and kernel selection), tokens counted as TokenCounter counts them; and `steps_seconds`, what
    all 4 steps would take at that speed. Its events are dropped:
    the measurement is not the job's training. test_records are not used (no evaluation is timed)."""
    import copy
    import tempfile
    import time

    import torch
    from transformers import TrainerCallback

    from .device import device_is_cuda
    from .memory import memory_plan
    from .setup import setup

    cuda = device_is_cuda(spec)

    probe = copy.deepcopy(spec)
    probe.hyperparameters.max_steps = 4
    probe.hyperparameters.logging_steps = 1
    probe.hyperparameters.save_strategy = "no"
    probe.eval_config.eval_strategy = "no"
    probe.eval_config.early_stopping_patience = None
    probe.eval_config.load_best_model_at_end = False
    probe.tracker_config.provider = "none"
    probe.resume_from_checkpoint = False
    with tempfile.TemporaryDirectory(prefix="ftcore-throughput-") as folder, events.muted():
        probe.output_dir = folder
        trainer, _, protocol = setup(probe, train_records, None, mode, memory_plan(probe, memory))
        tokens, marks = protocol.tokens, {}

        class Clock(TrainerCallback):
            def on_step_end(self, args, state, control, **kwargs):
                if cuda:  # the step's kernels run asynchronously: time them done
                    torch.cuda.synchronize()
                marks[state.global_step] = (time.monotonic(), tokens.total)

        trainer.add_callback(Clock())
        # the probe times steps, it does not learn: rows that teach nothing (a NaN loss) cost the same time
        trainer.remove_callback(protocol.diverged)
        trainer.train()
        del trainer
    free_memory()
    steps = sorted(marks)
    if len(steps) < 2:  # a dataset smaller than two optimizer steps: nothing to time after the warm-up step
        return None
    (start, before), (end, after) = marks[steps[0]], marks[steps[-1]]
    device = f"cuda:{torch.cuda.get_device_name()}" if cuda else "cpu"
    timed = steps[-1] - steps[0]
    # What every step the probe ran would take at the timed speed: the rest of the probe's time (process start,
    # loading, preparing the data, warm-up) is what a job spends around its steps, which the worker records.
    return {"tokens_per_second": round((after - before) / max(end - start, 1e-9), 2), "device": device,
            "steps": timed, "steps_seconds": round((end - start) / timed * steps[-1], 3)}


def free_memory() -> None:
    """Gives back what a model left behind (its garbage, CUDA's cached blocks) before the next one is loaded."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
