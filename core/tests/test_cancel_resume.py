"""SIGTERM stops training at the next step with a checkpoint and a `cancelled` error; resume continues from it."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CORE, sigterm_at_step, stdout_events

from ftcore import events


def _spec(tmp_path, tiny_model, train, max_steps, resume) -> str:
    spec = {"base_model": tiny_model, "train_file": train, "output_dir": str(tmp_path / "run"), "method": "LoRA",
            "resume_from_checkpoint": resume,
            "hyperparameters": {"learning_rate": 0.01, "batch_size": 2, "gradient_accumulation_steps": 1,
                                "max_steps": max_steps, "logging_steps": 1, "max_length": 96, "save_strategy": "no",
                                "warmup_ratio": 0.0, "lora_rank": 4, "lora_alpha": 8}}
    path = tmp_path / f"spec-{resume}.json"
    path.write_text(json.dumps(spec))
    return str(path)


@pytest.mark.slow
def test_sigterm_saves_a_checkpoint_and_resume_continues_from_its_step(tmp_path, tiny_model, sft_files):
    train, _ = sft_files
    seen, returncode = sigterm_at_step([sys.executable, "-m", "ftcore", "train", "--spec", _spec(tmp_path, tiny_model, train, 400, False)])
    assert returncode == 130
    assert seen[-1] == events.Error(code="cancelled", message="cancelled")
    (checkpoint,) = [e for e in seen if e.event == "checkpoint"]
    assert 3 <= checkpoint.step < 400 and Path(checkpoint.path, "trainer_state.json").is_file()
    assert not any(e.event in ("done", "artifact") for e in seen)

    result = subprocess.run([sys.executable, "-m", "ftcore", "train", "--spec",
                             _spec(tmp_path, tiny_model, train, checkpoint.step + 3, True)],
                            cwd=CORE, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stderr[-2000:]
    resumed = stdout_events(result.stdout)
    assert any(e.event == "log" and checkpoint.path in e.message for e in resumed)
    steps = [e.step for e in resumed if e.event == "progress"]
    assert steps and steps[0] > checkpoint.step and steps[-1] == checkpoint.step + 3
    # trained_tokens goes on from the checkpoint's count: one more step adds at most a batch of 2 rows of 96 tokens
    saved = json.loads(Path(checkpoint.path, "trained_tokens.json").read_text())["trained_tokens"]
    assert saved == next(e.extra["trained_tokens"] for e in seen if e.event == "progress" and e.step == checkpoint.step)
    first = next(e for e in resumed if e.event == "progress")
    assert 0 < first.extra["trained_tokens"] - saved <= 2 * 96 * (first.step - checkpoint.step)
    assert resumed[-1].event == "done"


@pytest.mark.slow
def test_a_dead_worker_gets_a_checkpoint_even_when_a_library_write_to_stderr_notices_first(tmp_path, tiny_model, sft_files):
    """The worker's death closes stdin, stdout and stderr at once; the main thread may write to stderr (the
    Trainer prints each log line there) before the stdin watch detaches. That write must stop the run with a
    checkpoint, not end it with BrokenPipeError. Here stderr's reader goes first while stdin stays open."""
    train, _ = sft_files
    process = subprocess.Popen([sys.executable, "-m", "ftcore", "train", "--spec",
                                _spec(tmp_path, tiny_model, train, 400, False)],
                               cwd=CORE, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True, env={**os.environ, "PYTHONUNBUFFERED": "1", "FTCORE_EXIT_WITH_PARENT": "1"})
    for line in process.stdout:
        event = events.parse_event_line(line)
        if event.event == "progress" and event.step >= 2:
            process.stderr.close()
            break
    process.stdout.close()  # and then stdout: the run learns of nothing more but must still save
    assert process.wait(timeout=120) == 130
    process.stdin.close()
    checkpoints = sorted((tmp_path / "run" / "checkpoints").glob("checkpoint-*"))
    assert checkpoints and Path(checkpoints[-1], "trainer_state.json").is_file()


@pytest.mark.slow
def test_a_resume_from_the_last_steps_checkpoint_trains_no_step_and_saves_that_checkpoint(tmp_path, tiny_model,
                                                                                             sft_files):
    """#56: a worker killed between a job's last step and `completed` had its job resumed "from step 50", run a step
    51 of 50, then save and evaluate again. From the last step's checkpoint only saving is left: no step runs, the
    last step's progress is said once with the job's trained tokens, and the model saved is the checkpoint's."""
    import dataclasses

    from helpers import captured_events, sft_spec

    from ftcore.train.run import run

    train, test = sft_files
    spec = sft_spec(tiny_model, train, test, tmp_path / "run", max_steps=4, logging_steps=1, save_strategy="steps",
                    save_steps=2)
    with captured_events() as first:
        run(spec)
    assert [e.step for e in first.events if e.event == "checkpoint"] == [2, 4]
    with captured_events() as resumed:
        run(dataclasses.replace(spec, resume_from_checkpoint=True))
    progress = [e for e in resumed.events if e.event == "progress"]
    assert [(p.step, p.total_steps, p.eta_seconds) for p in progress] == [(4, 4, 0.0)]
    checkpoint = tmp_path / "run" / "checkpoints" / "checkpoint-4"
    saved_tokens = json.loads((checkpoint / "trained_tokens.json").read_text())["trained_tokens"]
    assert progress[0].extra["trained_tokens"] == saved_tokens > 0
    messages = [e.message for e in resumed.events if e.event == "log"]
    assert "training…" not in messages and messages.count("saving the trained model…") == 1
    assert sum(e.event == "metrics" and e.final for e in resumed.events) == 1
    adapter = (tmp_path / "run" / "adapter" / "adapter_model.safetensors").read_bytes()
    assert adapter == (checkpoint / "adapter_model.safetensors").read_bytes()


@pytest.mark.slow
def test_the_stop_file_ends_training_early_and_the_run_completes_there(tmp_path, tiny_model, sft_files):
    """A sweep's pruner stops a trial through FTCORE_STOP_FILE: training ends at the step that sees the file, as if
    it were the last, and the run saves its model and ends done, not cancelled."""
    train, _ = sft_files
    stop = tmp_path / "stop-early"
    stop.write_text("trial 1 is behind")
    result = subprocess.run([sys.executable, "-m", "ftcore", "train", "--spec", _spec(tmp_path, tiny_model, train, 400, False)],
                            cwd=CORE, capture_output=True, text=True, timeout=300, env={**os.environ, "FTCORE_STOP_FILE": str(stop)})
    assert result.returncode == 0, result.stderr[-2000:]
    seen = stdout_events(result.stdout)
    assert [e.step for e in seen if e.event == "progress"][-1] == 1
    assert any(e.event == "log" and e.message.startswith("stopping early at step 1: trial 1 is behind") for e in seen)
    assert any(e.event == "artifact" and e.kind == "adapter" for e in seen)
    assert seen[-1].event == "done"
