"""Guards against the silent failures fine-tuning tools ship, each on the tiny model trained for real (fp32, so
greedy choices are not ties): the end-of-turn token is learned, gradient accumulation does not change the loss,
batched generation equals one-by-one generation, a non-finite loss stops the run without saving the diverged
weights, and a resumed run continues the schedule and the data order of the uninterrupted one."""
from pathlib import Path

import pytest
from helpers import QA, captured_events, conversation, sft_spec, write_jsonl

from ftcore.errors import SpecError
from ftcore.inference.generate import generate_token_ids
from ftcore.models.loading import load_for_inference
from ftcore.train.run import run, setup
from ftcore.train.spec import Options


def spec(tiny_model, train, out, test=None, **hp) -> Options:
    """test_sft's spec, logging every step on short rows."""
    return sft_spec(tiny_model, train, test, out, **{"logging_steps": 1, "max_length": 64, **hp})


def losses(events) -> dict[int, float]:
    return {e.step: e.loss for e in events if e.event == "progress" and e.loss is not None}


def test_the_end_of_turn_token_is_learned_so_generation_stops_by_itself(trained_adapter, tiny_model):
    model, tokenizer = load_for_inference(tiny_model, trained_adapter, device="cpu")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    answers = generate_token_ids(model, tokenizer, prompts, max_new_tokens=48)
    # generate_token_ids cuts at the first stop token: an answer as long as the budget never met one.
    assert [len(a) < 48 for a in answers] == [True] * len(QA)
    assert tokenizer.batch_decode(answers, skip_special_tokens=True) == [a for _, a in QA]


def test_batched_generation_equals_one_by_one(trained_adapter, tiny_model):
    model, tokenizer = load_for_inference(tiny_model, trained_adapter, device="cpu")
    # Prompts of different lengths, so a batch needs padding.
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    prompts.append([{"role": "system", "content": "Answer in one word, please, and be brief."}, {"role": "user", "content": QA[1][0]}])
    batched = generate_token_ids(model, tokenizer, prompts, max_new_tokens=16, batch_size=len(prompts))
    alone = [generate_token_ids(model, tokenizer, [p], max_new_tokens=16, batch_size=1)[0] for p in prompts]
    assert batched == alone


@pytest.mark.slow
@pytest.mark.parametrize("answers", ["equal", "unequal"])
def test_gradient_accumulation_gives_the_losses_of_one_big_batch(tiny_model, tmp_path, answers):
    # Equal: every answer the same number of tokens; unequal: answers of 1 to many tokens, where averaging each
    # micro-batch's loss (the old bug) weighs tokens of short answers more than those of long ones.
    pairs = [(q, "Four.") for q, _ in QA] if answers == "equal" else [(q, "Four." * (1 + 3 * i)) for i, (q, _) in enumerate(QA)]
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in pairs] * 5)
    runs = {}
    for batch, accumulation in [(4, 1), (1, 4)]:
        with captured_events() as cap:
            run(spec(tiny_model, train, tmp_path / f"b{batch}", max_steps=5, batch_size=batch, gradient_accumulation_steps=accumulation))
        runs[batch] = losses(cap.events)
    assert runs[4].keys() == runs[1].keys() == {1, 2, 3, 4, 5}
    for step in runs[4]:
        assert runs[1][step] == pytest.approx(runs[4][step], abs=1e-3), (step, runs)


@pytest.mark.slow
def test_a_non_finite_loss_stops_the_run_at_once_naming_the_step_and_keeps_the_last_good_checkpoint(tiny_model, tmp_path, monkeypatch):
    from ftcore.errors import TrainingDiverged
    from ftcore.train.lean_sft import LearnedPositionsSFTTrainer

    # A loss that turns NaN at step 5 (as a too high learning rate or an overflow makes it): the backward pass then
    # fills the gradients, and after the optimizer step the weights, with NaN, as a real divergence does.
    original = LearnedPositionsSFTTrainer.compute_loss

    def diverging(self, *args, **kwargs):
        loss = original(self, *args, **kwargs)
        return loss * float("nan") if self.state.global_step >= 4 else loss

    monkeypatch.setattr(LearnedPositionsSFTTrainer, "compute_loss", diverging)
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    out = tmp_path / "run"
    with captured_events() as cap, pytest.raises(TrainingDiverged) as stopped:
        run(spec(tiny_model, train, out, max_steps=30, save_strategy="steps", save_steps=2))
    message = str(stopped.value)
    assert message.startswith("the training loss became nan at step 5; training stopped there and kept the last good checkpoint")
    assert "learning_rate 0.02 too high" in message
    # Stopped at once: no step after 5 ran, nothing was saved from the diverged weights, and no model.
    assert max(e.step for e in cap.events if e.event == "progress") < 5
    assert sorted(int(c.name.split("-")[1]) for c in (out / "checkpoints").glob("checkpoint-*")) == [2, 4]
    assert [e.step for e in cap.events if e.event == "checkpoint"] == [2, 4]
    assert not any(e.event == "artifact" for e in cap.events)
    assert not (out / "adapter").exists()


LONG_QUESTION = " ".join(["What is the capital of France?"] * 30)


@pytest.mark.slow
def test_a_run_whose_rows_all_keep_no_answer_token_is_refused_before_it_loads_the_model(tiny_model, tmp_path):
    # The soak's job (#56): every prompt longer than max_length, so truncation cuts every answer away: refused at the
    # pre-flight, naming the setting and the longest row, instead of failing at step 1 with a NaN loss.
    
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(LONG_QUESTION, "Paris.")] * 8)
    with captured_events() as cap, pytest.raises(SpecError) as refused:
        run(spec(tiny_model, train, tmp_path / "run", max_steps=4, max_length=32))
    message = str(refused.value)
    assert message.startswith("every train row is longer than max_length 32 where its answer starts")
    assert "the longest, row 1, is" in message and "raise max_length to" in message
    assert not any(e.event == "log" and e.message.startswith("loading the base model") for e in cap.events)


@pytest.mark.slow
def test_a_batch_that_keeps_no_answer_token_says_so_first_not_the_learning_rate(tiny_model, tmp_path):
    # Most rows' answers truncated away, one row kept: a batch of one such row has no label to learn from; its loss is
    # 0/0. The message leads with what the run saw in that batch.
    from ftcore.errors import TrainingDiverged

    rows = [conversation(LONG_QUESTION, "Paris.")] * 7 + [conversation("Capital of France?", "Paris.")]
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    with captured_events(), pytest.raises(TrainingDiverged) as stopped:
        run(spec(tiny_model, train, tmp_path / "run", max_steps=4, max_length=32, batch_size=1))
    message = str(stopped.value)
    assert message.startswith("the training loss became nan at step 1; training stopped there")
    assert "Every label of that batch was masked" in message and "max_length 32" in message
    assert "learning_rate" not in message


@pytest.mark.slow
def test_resume_after_a_stop_continues_the_schedule_and_the_data_order(tiny_model, tmp_path):
    # Twice as many rows as a step takes, shuffled, and a decaying learning rate: a resume that restarted the
    # schedule or the data order would show in the loss and the learning rate of every step after it.
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 2)
    settings = dict(max_steps=10, batch_size=2, lr_scheduler_type="cosine", warmup_ratio=0.2, save_strategy="steps", save_steps=5)
    with captured_events() as whole:
        run(spec(tiny_model, train, tmp_path / "whole", **settings))

    # The same run stopped after step 5 (its checkpoint saved), as a crash or a stopping worker leaves it …
    from transformers import TrainerCallback

    class StopAfterFive(TrainerCallback):
        def on_step_end(self, args, state, control, **kwargs):
            if state.global_step == 5:
                control.should_training_stop = True
            return control

    from ftcore.data import read_jsonl

    interrupted = spec(tiny_model, train, tmp_path / "interrupted", **settings)
    with captured_events() as first:
        trainer, _, _ = setup(interrupted, read_jsonl(train, "train"), None, "language_modeling")
        trainer.add_callback(StopAfterFive())
        trainer.train()
    assert (Path(interrupted.output_dir) / "checkpoints" / "checkpoint-5").is_dir()
    # … then resumed.
    interrupted.resume_from_checkpoint = True
    with captured_events() as second:
        run(interrupted)

    expected = {e.step: e for e in whole.events if e.event == "progress"}
    resumed = {e.step: e for e in second.events if e.event == "progress"}
    assert set(resumed) == {6, 7, 8, 9, 10}
    for step, event in resumed.items():
        assert event.learning_rate == pytest.approx(expected[step].learning_rate, rel=1e-6), step
        assert event.loss == pytest.approx(expected[step].loss, abs=1e-4), step
    assert losses(first.events) == pytest.approx({s: expected[s].loss for s in range(1, 6)}, abs=1e-4)
