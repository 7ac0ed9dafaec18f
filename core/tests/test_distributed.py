"""One job across several processes: the core launched by torchrun (2 CPU processes, gloo) trains the same global
batches as one process with twice the per-device batch, so its loss curve and token count match that run's; only
rank 0 speaks (events, checkpoints, the adapter), and a SIGTERM stops every rank at the same step with a checkpoint."""
import json
import os
import subprocess
import sys
from pathlib import Path

from helpers import CORE, sigterm_at_step, stdout_events

from ftcore import events


def _spec(tmp_path, tiny_model, train, name, batch_size, max_steps=8) -> str:
    spec = {"base_model": tiny_model, "train_file": train, "output_dir": str(tmp_path / name), "method": "LoRA",
            "hyperparameters": {"learning_rate": 0.01, "batch_size": batch_size, "gradient_accumulation_steps": 1,
                                "max_steps": max_steps, "logging_steps": 1, "max_length": 64, "save_strategy": "no",
                                "warmup_ratio": 0.0, "lora_rank": 4, "lora_alpha": 8, "seed": 7}}
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(spec))
    return str(path)


def _launch(processes: int, spec: str) -> list[str]:
    if processes == 1:
        return [sys.executable, "-m", "ftcore", "train", "--spec", spec]
    return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc_per_node={processes}",
            "-m", "ftcore", "train", "--spec", spec]


def _run(processes: int, spec: str) -> list:
    result = subprocess.run(_launch(processes, spec), cwd=CORE, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1"})
    assert result.returncode == 0, result.stderr[-3000:]
    return stdout_events(result.stdout)


def test_two_processes_train_the_same_global_batches_as_one(tmp_path, tiny_model, sft_files):
    train, _ = sft_files
    one = _run(1, _spec(tmp_path, tiny_model, train, "one", 4))
    two = _run(2, _spec(tmp_path, tiny_model, train, "two", 2))

    # Rank 0 alone speaks: one event stream, one progress event per step, the world size said once.
    assert [e.step for e in two if e.event == "progress"] == list(range(1, 9))
    assert any(e.event == "log" and "2 processes" in e.message for e in two)
    assert sum(1 for e in two if e.event == "done") == 1
    # Each rank read its half of every global batch: the tokens add up to the one-process run's, and the losses
    # (means over both halves) follow the same curve.
    tokens = lambda run: [e.extra["trained_tokens"] for e in run if e.event == "progress"]  # noqa: E731
    assert tokens(two) == tokens(one)
    losses = lambda run: [e.loss for e in run if e.event == "progress"]  # noqa: E731
    for a, b in zip(losses(one), losses(two)):
        assert abs(a - b) <= 0.05 * abs(a), (losses(one), losses(two))
    assert losses(two)[-1] < losses(two)[0]

    (one_adapter,) = [Path(e.path) for e in one if e.event == "artifact"]
    (two_adapter,) = [Path(e.path) for e in two if e.event == "artifact"]
    sizes = lambda folder: sorted((p.name, p.stat().st_size) for p in folder.iterdir())  # noqa: E731
    assert sizes(two_adapter) == sizes(one_adapter)
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), str(two_adapter))


def test_sigterm_stops_every_rank_with_one_checkpoint(tmp_path, tiny_model, sft_files):
    train, _ = sft_files
    seen, _ = sigterm_at_step(_launch(2, _spec(tmp_path, tiny_model, train, "cancel", 2, max_steps=400)))
    assert seen[-1] == events.Error(code="cancelled", message="cancelled")
    (checkpoint,) = [e for e in seen if e.event == "checkpoint"]
    assert 3 <= checkpoint.step < 400 and Path(checkpoint.path, "trainer_state.json").is_file()
