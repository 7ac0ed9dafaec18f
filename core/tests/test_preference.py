"""DPO (its default sigmoid loss, IPO, and hinge with RPO's likelihood term) and ORPO with LoRA on the tiny model: the
chosen-minus-rejected reward margin rises."""
import pytest
from helpers import QA, captured_events, write_jsonl

from ftcore.train.run import run
from ftcore.train.spec import Hyperparameters, Options


def preference_records():
    wrong = {a: QA[(i + 1) % len(QA)][1] for i, (_, a) in enumerate(QA)}
    return [{"prompt": [{"role": "user", "content": q}], "chosen": [{"role": "assistant", "content": a}],
             "rejected": [{"role": "assistant", "content": wrong[a]}]} for q, a in QA] * 4


@pytest.mark.parametrize("trainer_type,knobs", [
    ("dpo", {}), ("orpo", {}), ("dpo", {"loss_type": "ipo"}), ("dpo", {"loss_type": "hinge", "rpo_alpha": 1.0}),
], ids=["dpo", "orpo", "dpo-ipo", "dpo-hinge-rpo"])
@pytest.mark.slow
def test_reward_margin_rises(trainer_type, knobs, tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", preference_records())
    hp = Hyperparameters(learning_rate=0.02, batch_size=4, gradient_accumulation_steps=1, max_steps=16,
                         logging_steps=4, max_length=96, max_prompt_length=48, lora_rank=8, lora_alpha=16,
                         lora_dropout=0.0, save_strategy="no", warmup_ratio=0.0, max_grad_norm=1.0, beta=0.5, **knobs)
    spec = Options(base_model=tiny_model, train_file=train, output_dir=str(tmp_path / "run"), method="LoRA",
                   trainer_type=trainer_type, hyperparameters=hp)
    with captured_events() as cap:
        run(spec)
    # The untrained tiny model does not end its turn after the chosen answers: plain DPO is warned, RPO is not.
    stopping = [e.message for e in cap.of("log") if "will not teach the model to stop" in e.message]
    assert len(stopping) == (1 if trainer_type == "dpo" and "rpo_alpha" not in knobs else 0), stopping
    margins = [p.extra["rewards/margins"] for p in cap.of("progress")]
    assert len(margins) >= 4
    assert margins[-1] > margins[0] and margins[-1] > 0
    (metrics,) = cap.of("metrics")  # prompt + chosen is the reference answer for eval loss and accuracy
    assert metrics.eval_loss is not None and metrics.accuracy is not None
    assert [a.kind for a in cap.of("artifact")] == ["adapter"]


@pytest.mark.slow
def test_the_end_of_turn_measurement_tells_a_model_that_stops_from_one_that_does_not(tiny_model, tmp_path):
    """The pre-flight's DPO guard: the untrained tiny model ends its turn after the chosen answers with a probability
    far below the threshold (warned, naming the fixes); after 30 SFT steps on those answers it does (no warning)."""
    from helpers import QA, sft_spec

    from ftcore.models.loading import load_for_inference
    from ftcore.train.preflight.sampled import DPO_END_OF_TURN_MIN, end_of_turn_probability, end_of_turn_warning

    sft = write_jsonl(tmp_path / "sft.jsonl", [{"messages": [{"role": "user", "content": q}, {"role": "assistant",
                                                                                                "content": a}]}
                                               for q, a in QA] * 4)
    taught = sft_spec(tiny_model, sft, None, tmp_path / "sft", max_steps=30)
    taught.method = "Full"
    with captured_events():
        run(taught)
    pairs = preference_records()
    measured = {}
    for name, folder in [("untrained", tiny_model), ("taught", str(tmp_path / "sft" / "model"))]:
        model, tokenizer = load_for_inference(folder, device="cpu")
        spec = Options(base_model=folder, train_file="unused", output_dir=str(tmp_path / name), trainer_type="dpo",
                       method="LoRA", hyperparameters=Hyperparameters(max_length=96, max_prompt_length=48))
        probability = end_of_turn_probability(spec, pairs, tokenizer, model)
        measured[name] = (probability, end_of_turn_warning(spec, probability))
    (untrained, warning), (taught_probability, none) = measured["untrained"], measured["taught"]
    assert untrained < DPO_END_OF_TURN_MIN < taught_probability, measured
    assert none is None
    assert warning["code"] == "dpo_no_end_of_turn"
    assert all(fix in warning["message"] for fix in ("SFT", "ORPO", "rpo_alpha"))
