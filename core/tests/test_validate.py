"""Specs that cannot work fail before any model is loaded, with the fix spelled out."""
import dataclasses

import pytest
from helpers import write_jsonl

from ftcore.errors import SpecError
from ftcore.train.spec import EvalConfig, Hyperparameters, Options, RewardItem
from ftcore.train.validate import validate


def _spec(tiny_model, train, **changes) -> Options:
    base = Options(base_model=tiny_model, train_file=train, output_dir="unused", method="LoRA")
    return dataclasses.replace(base, **changes)


def test_a_good_spec_passes(tiny_model, sft_files):
    records, test, mode = validate(_spec(tiny_model, sft_files[0], test_file=sft_files[1],
                                         hyperparameters=Hyperparameters(max_length=128)))
    assert mode == "language_modeling" and len(records) == 16 and len(test) == 4


@pytest.mark.parametrize("changes,message", [
    (dict(method="QLoRA", device="cpu"), "QLoRA needs a CUDA GPU; use LoRA"),
    (dict(trainer_type="dpo"), "trainer_type dpo needs preference records"),
    (dict(hyperparameters=Hyperparameters(max_length=4096)), "max_length 4096 exceeds the model's 512 context; lower max_length"),
    (dict(eval_config=EvalConfig(eval_strategy="steps")), "needs a test split; pass test_file"),
    (dict(hyperparameters=Hyperparameters(max_length=128, lr_scheduler_type="bogus")), "is not a transformers scheduler"),
    (dict(base_model="/nonexistent"), "is not a model folder"),
    (dict(eval_config=EvalConfig(metric_for_best="valid_score")), "metric_for_best valid_score is the graders' score"),
    (dict(eval_config=EvalConfig(graders=[{"type": "string_check", "name": "a", "operation": "eq", "input": "x",
                                           "reference": "y"}])), "eval_config.graders score the test split"),
    (dict(eval_config=EvalConfig(eval_strategy="steps", graders=[{"type": "string_check", "name": "a", "input": "x",
                                                                  "reference": "y", "operation": "equals"}])),
     "eval_config.graders\\[0\\].operation is 'equals'"),
    (dict(train_file="/nonexistent.jsonl"), "does not exist"),
    (dict(reward_config=[RewardItem(type="built_in", function_name="count_xml")]), "reward_config applies to grpo only"),
    (dict(response_schema={"type": "object"}), "response_schema applies to grpo only"),
])
def test_bad_specs_fail_with_the_fix(tiny_model, sft_files, changes, message):
    changes.setdefault("hyperparameters", Hyperparameters(max_length=128))
    with pytest.raises(SpecError, match=message.replace("(", r"\(")):
        validate(_spec(tiny_model, sft_files[0], **changes))


def test_grpo_reward_reference_field_must_be_a_column(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "p.jsonl", [{"prompt": [{"role": "user", "content": "2+2?"}], "answer": "4"}])
    reward = RewardItem(type="string_check", reference_field="solution", operation="eq")
    spec = _spec(tiny_model, train, trainer_type="grpo", reward_config=[reward],
                 hyperparameters=Hyperparameters(max_length=128, max_prompt_length=64))
    with pytest.raises(SpecError, match=r"reference_field 'solution' is not a column .* columns: \['answer'\]"):
        validate(spec)
    with pytest.raises(SpecError, match="grpo needs at least one reward"):
        validate(dataclasses.replace(spec, reward_config=[]))
    with pytest.raises(SpecError, match="response_schema is not a JSON Schema the sampling can follow: Unsupported type"):
        validate(dataclasses.replace(spec, reward_config=[dataclasses.replace(reward, reference_field="answer")],
                                     response_schema={"type": "bogus"}))


def test_preference_records_with_sft_name_the_trainers_that_fit(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "pref.jsonl", [{"prompt": [{"role": "user", "content": "q"}],
                                                   "chosen": [{"role": "assistant", "content": "a"}],
                                                   "rejected": [{"role": "assistant", "content": "b"}]}])
    with pytest.raises(SpecError, match="use trainer_type dpo or orpo"):
        validate(_spec(tiny_model, train, hyperparameters=Hyperparameters(max_length=128)))


@pytest.mark.parametrize("answer_weight,question_weight,message", [
    (2, None, r"train_file record 2: 'messages' message 2: weight must be 0 \(not trained on\) or 1 \(trained on\), got 2"),
    ("0", None, r"train_file record 2: 'messages' message 2: weight must be 0 .* got '0'"),
    (True, None, r"train_file record 2: 'messages' message 2: weight must be 0 .* got True"),
    (1, 0, r"train_file record 2: 'messages' message 1: weight applies to assistant messages only, not to 'user'"),
    (0, None, r"train_file record 2: every assistant message has weight 0, so the row teaches nothing"),
])
def test_message_weights_are_0_or_1_on_assistant_messages(tiny_model, tmp_path, answer_weight, question_weight,
                                                          message):
    question, answer = {"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "weight": answer_weight}
    if question_weight is not None:
        question["weight"] = question_weight
    good = {"messages": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a", "weight": 1}]}
    train = write_jsonl(tmp_path / "train.jsonl", [good, {"messages": [question, answer]}])
    with pytest.raises(SpecError, match=message):
        validate(_spec(tiny_model, train, hyperparameters=Hyperparameters(max_length=128)))


def test_the_answers_of_a_preference_pair_cannot_have_weight_0(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "pref.jsonl", [{"prompt": [{"role": "user", "content": "q"}],
                                                   "chosen": [{"role": "assistant", "content": "a", "weight": 0}],
                                                   "rejected": [{"role": "assistant", "content": "b"}]}])
    with pytest.raises(SpecError, match="record 1: 'chosen' message 1: the answers of a preference pair are always"):
        validate(_spec(tiny_model, train, trainer_type="dpo", hyperparameters=Hyperparameters(max_length=128)))


def test_the_contracts_schedulers_and_losses_are_what_transformers_and_trl_take():
    """The training request's enums (contract.json, from the zod schema) within what the libraries accept: every
    lr_scheduler_type a transformers SchedulerType, every loss_type one its trainer's config lists."""
    from transformers.trainer_utils import SchedulerType
    from trl import DPOConfig, GRPOConfig

    from ftcore.train.contract import CONTRACT, loss_types

    assert set(CONTRACT["hyperparameters"]["lr_scheduler_type"]["enum"]) <= {s.value for s in SchedulerType}
    for trainer, config in (("grpo", GRPOConfig), ("dpo", DPOConfig)):
        documented = config.__dataclass_fields__["loss_type"].metadata["help"]  # TRL lists them only in its help
        assert loss_types(trainer) and all(f"'{loss}'" in documented for loss in loss_types(trainer)), trainer
