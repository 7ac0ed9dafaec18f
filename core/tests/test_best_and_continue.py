"""Early stopping, keeping the best checkpoint, and going on from another run's adapter, on the tiny model for
real. The test split contradicts the train split (same questions, other answers), so memorising the train
answers makes the eval loss rise after a few steps: the run must stop early and keep the checkpoint where the
eval loss was lowest."""
import math

import pytest
from helpers import QA, captured_events, conversation, write_jsonl
from safetensors.torch import load_file

from ftcore.train.run import run
from ftcore.train.spec import EvalConfig, Hyperparameters, Options

OTHER = ["Rome.", "Green.", "Seven.", "Bye now!"]


@pytest.fixture(scope="module")
def contradicting_files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("contradicting")
    train = write_jsonl(folder / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    test = write_jsonl(folder / "test.jsonl", [conversation(q, other) for (q, _), other in zip(QA, OTHER)])
    return train, test


def spec(tiny_model, files, out, eval_config: EvalConfig, **hp) -> Options:
    hyper = dict(learning_rate=0.05, batch_size=4, gradient_accumulation_steps=1, max_steps=40, logging_steps=2,
                 max_length=64, lora_rank=8, lora_alpha=16, lora_dropout=0.0, save_strategy="no", warmup_ratio=0.0,
                 max_grad_norm=1.0)
    hyper.update(hp)
    return Options(base_model=tiny_model, train_file=files[0], test_file=files[1], output_dir=str(out), method="LoRA",
                   hyperparameters=Hyperparameters(**hyper), eval_config=eval_config)


@pytest.fixture(scope="module")
def best_run(tiny_model, contradicting_files, tmp_path_factory):
    out = tmp_path_factory.mktemp("best") / "run"
    config = EvalConfig(eval_strategy="steps", eval_steps=2, early_stopping_patience=2, load_best_model_at_end=True)
    with captured_events() as cap:
        run(spec(tiny_model, contradicting_files, out, config))
    events = cap.events
    reported = next(i for i, e in enumerate(events) if e.event == "metrics" and "best_step" in e.extra)
    # The evaluations during training: the metrics events before the best step is reported (the final metrics,
    # measured on the kept model, come after it).
    evals = [(m.step, m.eval_loss) for m in events[:reported] if m.event == "metrics" and m.eval_loss is not None]
    return out, events, evals, int(events[reported].extra["best_step"])


def test_early_stopping_stops_once_eval_loss_stops_improving(best_run):
    _, events, evals, _ = best_run
    last_step = max(p.step for p in events if p.event == "progress")
    assert last_step < 40, "the run went to max_steps instead of stopping early"
    losses = [loss for _, loss in evals]
    best = min(range(len(losses)), key=losses.__getitem__)
    # Stopped after `patience` evaluations without improvement on the best one.
    assert len(losses) - 1 - best >= 2, evals
    assert evals[-1][0] == last_step


def test_the_evaluation_after_training_is_marked_final_and_the_trainers_are_not(best_run):
    """Both can be at the last step with different losses (two measures): `final` tells them apart."""
    _, events, evals, _ = best_run
    metrics = [e for e in events if e.event == "metrics" and e.eval_loss is not None]
    assert [m.final for m in metrics] == [False] * len(evals) + [True]


def test_the_best_checkpoint_is_the_model_and_the_step_is_reported(best_run):
    out, events, evals, step = best_run
    assert sum(1 for e in events if e.event == "metrics" and "best_step" in e.extra) == 1
    assert dict(evals)[step] == min(loss for _, loss in evals)
    # The saved adapter is the best checkpoint's, not the last step's.
    saved = load_file(out / "adapter" / "adapter_model.safetensors")
    best = load_file(out / "checkpoints" / f"checkpoint-{step}" / "adapter_model.safetensors")
    assert saved.keys() == best.keys()
    assert all((saved[k] == best[k]).all() for k in saved)


@pytest.mark.slow
def test_a_run_can_go_on_from_another_runs_adapter(tiny_model, sft_files, tmp_path):
    config = EvalConfig()
    first_out, second_out = tmp_path / "first", tmp_path / "second"
    with captured_events() as first:
        run(spec(tiny_model, sft_files, first_out, config, max_steps=12))
    continued = spec(tiny_model, sft_files, second_out, config, max_steps=4)
    continued.init_adapter = str(first_out / "adapter")
    with captured_events() as second:
        run(continued)
    start_of_first = [p.loss for p in first.of("progress") if p.loss is not None][0]
    end_of_first = [p.loss for p in first.of("progress") if p.loss is not None][-1]
    start_of_second = [p.loss for p in second.of("progress") if p.loss is not None][0]
    # It starts where the first run ended, not from a fresh adapter.
    assert start_of_second < (start_of_first + end_of_first) / 2
    assert math.isfinite(start_of_second)
    assert any("continuing the adapter" in e.message for e in second.of("log"))


@pytest.mark.slow
def test_graders_score_each_evaluation_and_the_best_scoring_step_is_the_model(tiny_model, tmp_path):
    """eval_config.graders (#61): a grader that scores an answer 1 while it is not yet the learnt one, so the score
    falls as the run memorises QA and the best step is not the last. valid_score is in every evaluation's metrics,
    the kept step is the first argmax of them, and the saved adapter is that checkpoint's."""
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    test = write_jsonl(tmp_path / "test.jsonl", [{**conversation(q, a), "learned": a} for q, a in QA])
    not_learnt = {"type": "string_check", "name": "not_learnt", "operation": "ne", "input": "{{sample.output_text}}",
                  "reference": "{{item.learned}}"}
    config = EvalConfig(eval_strategy="steps", eval_steps=5, load_best_model_at_end=True, metric_for_best="valid_score",
                        graders=[not_learnt], grader_max_new_tokens=12)
    out = tmp_path / "run"
    with captured_events() as cap:
        run(spec(tiny_model, (train, test), out, config, max_steps=30, learning_rate=0.02))
    reported = next(i for i, e in enumerate(cap.events) if e.event == "metrics" and "best_step" in e.extra)
    scores = [(m.step, m.extra["valid_score"]) for m in cap.events[:reported]
              if m.event == "metrics" and "valid_score" in m.extra]
    assert [s for s, _ in scores] == [5, 10, 15, 20, 25, 30]
    assert all(m.extra["valid_score/not_learnt"] == m.extra["valid_score"] for m in cap.events[:reported]
               if m.event == "metrics" and "valid_score" in m.extra)
    best = max(scores, key=lambda s: s[1])  # the first of the highest, as transformers keeps it
    step = int(cap.events[reported].extra["best_step"])
    assert step == best[0] != 30 and scores[-1][1] < best[1], scores  # memorised by the end: scored lower
    saved = load_file(out / "adapter" / "adapter_model.safetensors")
    kept = load_file(out / "checkpoints" / f"checkpoint-{step}" / "adapter_model.safetensors")
    assert saved.keys() == kept.keys() and all((saved[k] == kept[k]).all() for k in saved)
    assert any(f"kept the best checkpoint: step {step} (valid_score " in e.message for e in cap.of("log"))
