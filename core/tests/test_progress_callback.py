"""The progress events the trainer's callback emits, on hand-built trainer states (no training): a run resumed from
its last step that steps past max_steps (#56: step 51 of 50) reports a total that counts that step and no negative ETA."""
import time

import pytest
from transformers import TrainerControl, TrainerState

from ftcore.train.callbacks import ProtocolCallback, TokenCounter
from helpers import captured_events


@pytest.mark.parametrize("resumed_from", [0, 50])
def test_a_step_past_max_steps_reports_eta_zero_and_a_total_that_counts_it(resumed_from):
    callback = ProtocolCallback(TokenCounter(), compute_eval_metrics=False)
    callback.start_step = resumed_from
    callback.started = time.monotonic() - 10  # ten seconds into the run: an ETA that rounds to 0 would hide a sign
    state = TrainerState(global_step=51, max_steps=50, epoch=1.02)
    with captured_events() as captured:
        callback.on_log(None, state, TrainerControl(), logs={"loss": 0.1, "learning_rate": 1e-4})
    (progress,) = captured.of("progress")
    assert progress.step == 51
    assert progress.total_steps >= progress.step
    assert progress.eta_seconds is not None and progress.eta_seconds >= 0


def test_a_step_before_max_steps_keeps_its_total_and_a_positive_eta():
    callback = ProtocolCallback(TokenCounter(), compute_eval_metrics=False)
    callback.started = time.monotonic() - 10
    state = TrainerState(global_step=10, max_steps=50, epoch=0.2)
    with captured_events() as captured:
        callback.on_log(None, state, TrainerControl(), logs={"loss": float("nan")})
    (progress,) = captured.of("progress")
    assert (progress.step, progress.total_steps) == (10, 50)
    assert progress.eta_seconds > 0
    assert progress.loss is None  # a NaN loss is no figure (the protocol has no NaN)
