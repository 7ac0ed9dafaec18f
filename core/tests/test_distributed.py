"""One job across several processes: the core launched by torchrun (2 CPU processes, gloo) trains the same global
batches as one process with twice the per-device batch, so its loss curve and token count match that run's; only
rank 0 speaks (events, checkpoints, the adapter), and a SIGTERM stops every rank at the same step with a checkpoint."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from helpers import CORE, sigterm_at_step, stdout_events

from ftcore import events


def _spec(tmp_path, tiny_model, train, name, batch_size, max_steps=8, method="LoRA") -> str:
    spec = {"base_model": tiny_model, "train_file": train, "output_dir": str(tmp_path / name), "method": method,
            "hyperparameters": {"learning_rate": 0.01 if method == "LoRA" else 1e-3, "batch_size": batch_size,
                                "gradient_accumulation_steps": 1,
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


def _run(processes: int, spec: str, **env: str) -> list:
    result = subprocess.run(_launch(processes, spec), cwd=CORE, capture_output=True, text=True, timeout=600,
                            env={**os.environ, "OMP_NUM_THREADS": "1", **env})
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
    return stdout_events(result.stdout)


def _losses(run) -> list[float]:
    return [e.loss for e in run if e.event == "progress"]


def _same_curve(one, two, tolerance: float) -> None:
    """Step for step, the losses of the two runs agree within `tolerance` (relative), and the curve goes down."""
    for a, b in zip(_losses(one), _losses(two), strict=True):
        assert abs(a - b) <= tolerance * abs(a), (_losses(one), _losses(two))
    assert _losses(two)[-1] < _losses(two)[0]


def _saved(run) -> Path:
    (folder,) = [Path(e.path) for e in run if e.event == "artifact"]
    return folder


def _sizes(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.name, p.stat().st_size) for p in folder.iterdir())


@pytest.mark.slow
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
    _same_curve(one, two, 0.05)

    assert _sizes(_saved(two)) == _sizes(_saved(one))
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(tiny_model), str(_saved(two)))


@pytest.mark.slow
def test_full_sharded_over_two_processes_trains_and_saves_as_one(tmp_path, tiny_model, sft_files):
    """FSDP (as for a Full model too big for one device; forced here, the tiny model fits): each rank holds half of
    every weight, gradient and Adam moment, yet the run is the one-process run with the same global batch."""
    import torch
    from safetensors.torch import load_file
    from transformers import AutoModelForCausalLM

    train, _ = sft_files
    one = _run(1, _spec(tmp_path, tiny_model, train, "full-one", 4, method="Full"))
    two = _run(2, _spec(tmp_path, tiny_model, train, "full-two", 2, method="Full"), FTCORE_SHARDING="fsdp")

    assert any(e.event == "log" and e.message.startswith("FSDP: the weights, gradients and optimizer state are "
                                                          "sharded over the 2 processes") for e in two)
    assert [e.step for e in two if e.event == "progress"] == list(range(1, 9))
    _same_curve(one, two, 0.02)

    # Rank 0 wrote the whole model, gathered from both ranks' shards: the same tensors as the one-process run's.
    one_model, two_model = _saved(one), _saved(two)
    assert _sizes(two_model) == _sizes(one_model)  # the tied LM head once, as one process writes it
    a, b = load_file(one_model / "model.safetensors"), load_file(two_model / "model.safetensors")
    assert a.keys() == b.keys()
    before = load_file(Path(tiny_model) / "model.safetensors")
    for name in a:
        assert a[name].shape == b[name].shape
        assert torch.allclose(a[name], b[name], atol=1e-5), name  # measured: ≤ 1.2e-7
    assert any(not torch.equal(before[name], b[name]) for name in before)
    AutoModelForCausalLM.from_pretrained(two_model)
    # and rank 0 evaluated that whole model: the final eval loss is the one-process run's
    final = lambda run: [e.eval_loss for e in run if e.event == "metrics" and e.eval_loss is not None][-1]  # noqa: E731
    assert abs(final(two) - final(one)) <= 0.02 * final(one)


@pytest.mark.slow
def test_sigterm_stops_every_rank_with_one_checkpoint(tmp_path, tiny_model, sft_files):
    train, _ = sft_files
    seen, _ = sigterm_at_step(_launch(2, _spec(tmp_path, tiny_model, train, "cancel", 2, max_steps=400)))
    assert seen[-1] == events.Error(code="cancelled", message="cancelled")
    (checkpoint,) = [e for e in seen if e.event == "checkpoint"]
    assert 3 <= checkpoint.step < 400 and Path(checkpoint.path, "trainer_state.json").is_file()


@pytest.mark.slow
def test_sharded_run_cancelled_leaves_a_checkpoint_it_resumes_from(tmp_path, tiny_model, sft_files):
    """Under FSDP a checkpoint holds every rank's shards gathered (model and Adam moments): a SIGTERM stops both ranks
    with one, and a run resumed from it on two processes again continues at its step and saves the whole model."""
    train, _ = sft_files
    spec = _spec(tmp_path, tiny_model, train, "full-cancel", 2, max_steps=400, method="Full")
    seen, _ = sigterm_at_step(_launch(2, spec), FTCORE_SHARDING="fsdp", OMP_NUM_THREADS="1")
    assert seen[-1] == events.Error(code="cancelled", message="cancelled")
    (checkpoint,) = [e for e in seen if e.event == "checkpoint"]
    assert 3 <= checkpoint.step < 400 and Path(checkpoint.path, "trainer_state.json").is_file()

    resumed = json.loads(Path(spec).read_text())
    resumed["resume_from_checkpoint"] = True
    resumed["hyperparameters"]["max_steps"] = checkpoint.step + 2
    Path(spec).write_text(json.dumps(resumed))
    after = _run(2, spec, FTCORE_SHARDING="fsdp")
    assert any(e.event == "log" and e.message.startswith("resuming from") for e in after)
    assert [e.step for e in after if e.event == "progress"] == [checkpoint.step + 1, checkpoint.step + 2]
    from transformers import AutoModelForCausalLM

    AutoModelForCausalLM.from_pretrained(_saved(after))
