"""GRPO rewards (offline) and GRPO training on the tiny model with each reward kind and each loss."""
import dataclasses

import pytest
from helpers import captured_events, write_jsonl

from ftcore.inference.generate import ENGINE_VARIABLE
from ftcore.evaluation.graders import string_check, text_similarity
from ftcore.train.rewards import build_reward_function, count_xml, format_reward, numerical_accuracy
from ftcore.train.run import run
from ftcore.train.spec import Hyperparameters, Options, RewardItem


@pytest.mark.parametrize("operation,output,reference,expected", [
    ("eq", " Paris ", "Paris", 1.0), ("eq", "paris", "Paris", 0.0), ("ne", "Rome", "Paris", 1.0),
    ("like", "It is Paris.", "Paris", 1.0), ("like", "it is paris", "Paris", 0.0), ("ilike", "it is PARIS", "paris", 1.0),
])
def test_string_check(operation, output, reference, expected):
    assert string_check(operation, output, reference) == expected


@pytest.mark.parametrize("metric", ["bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4", "rouge_5",
                                    "rouge_l", "fuzzy_match", "cosine"])
def test_text_similarity_is_one_for_identical_text_and_lower_for_different_text(metric):
    reference = "the cat sat on the mat today"
    same, other = text_similarity(metric, [reference, "a dog ran in the park"], [reference, reference])
    assert same == pytest.approx(1.0, abs=1e-2)  # METEOR: 0.9985
    assert other < 0.6


def test_built_in_rewards():
    good = "<think>2+2</think><answer>4</answer>"
    assert format_reward(good) == 1.0 and format_reward("4") == 0.0
    assert count_xml(good) == 1.0 and count_xml("<think>") == 0.25
    assert numerical_accuracy(good, "4") == 1.0 and numerical_accuracy("<answer>5</answer>", "4") == 0.0


def test_reward_functions_read_the_reference_column_of_conversational_completions():
    fn = build_reward_function(RewardItem(type="string_check", reference_field="answer", operation="eq"))
    completions = [[{"role": "assistant", "content": "4"}], [{"role": "assistant", "content": "5"}]]
    assert fn(prompts=[[], []], completions=completions, answer=["4", "4"]) == [1.0, 0.0]


REWARDS = {
    "string_check": RewardItem(type="string_check", reference_field="answer", operation="ilike"),
    "text_similarity": RewardItem(type="text_similarity", reference_field="answer", evaluation_metric="fuzzy_match"),
    "built_in": RewardItem(type="built_in", function_name="count_xml"),
}


def grpo_spec(tiny_model, tmp_path, reward: RewardItem, steps: int, lr: float, method: str = "LoRA") -> Options:
    records = [{"prompt": [{"role": "user", "content": q}], "answer": a}
               for q, a in [("Say a word.", "e"), ("Say a letter.", "e")]] * 4
    train = write_jsonl(tmp_path / "train.jsonl", records)
    hp = Hyperparameters(learning_rate=lr, batch_size=8, gradient_accumulation_steps=1, max_steps=steps,
                         logging_steps=1, max_length=64, max_prompt_length=32, max_completion_length=6,
                         num_generations=8, lora_rank=8, lora_alpha=16, lora_dropout=0.0, save_strategy="no",
                         warmup_ratio=0.0, max_grad_norm=1.0, beta=0.0, lr_scheduler_type="constant")
    return Options(base_model=tiny_model, train_file=train, output_dir=str(tmp_path / "run"), method=method,
                   trainer_type="grpo", hyperparameters=hp, reward_config=[reward])


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(REWARDS))
def test_grpo_runs_and_logs_rewards(kind, tiny_model, tmp_path):
    with captured_events() as cap:
        run(grpo_spec(tiny_model, tmp_path, REWARDS[kind], steps=2, lr=1e-3))
    progress = cap.of("progress")
    assert progress and all("reward" in p.extra for p in progress)
    assert any(k.startswith("rewards/") for k in progress[-1].extra)
    (metrics,) = cap.of("metrics")
    assert "reward" in metrics.extra


@pytest.mark.parametrize("knobs", [
    {}, {"loss_type": "grpo"}, {"loss_type": "dr_grpo", "scale_rewards": "none"}, {"loss_type": "bnpo"},
    {"importance_sampling_level": "sequence", "epsilon": 3e-4, "epsilon_high": 4e-4},
    {"epsilon_high": 0.28, "scale_rewards": "batch"},
], ids=["dapo", "grpo", "dr_grpo", "bnpo", "gspo", "dapo-clip-higher"])
@pytest.mark.slow
def test_grpo_raises_the_mean_reward_of_a_string_check_task(knobs, tiny_model, tmp_path):
    """Reward 1 when the completion contains "e" (ilike): the random tiny model's sampled completions do about a
    third of the time, so every group of 8 has both outcomes to learn from; full fine-tuning at a high learning rate
    makes it the rule within a few steps, with each loss and sampling variant (GSPO with the sequence-level clip range
    its paper uses). The seed is fixed, so the run is the same every time on CPU. (mask_truncated_completions is left
    to the config test: these 6-token completions are all cut, so it would mask every one.)"""
    spec = grpo_spec(tiny_model, tmp_path, REWARDS["string_check"], steps=20, lr=1e-2, method="Full")
    spec.hyperparameters = dataclasses.replace(spec.hyperparameters, **knobs)
    with captured_events() as cap:
        run(spec)
    rewards = [p.extra["reward"] for p in cap.of("progress")]
    first, last = sum(rewards[:4]) / 4, sum(rewards[-4:]) / 4
    assert last >= first + 0.3, rewards


@pytest.mark.slow
@pytest.mark.parametrize("method", ["Full", "LoRA"])
def test_grpo_samples_through_the_compiled_engine_and_still_learns(method, tiny_model, tmp_path, monkeypatch):
    """On CUDA GRPO's completions come from the compiled engine (#31; here forced on the CPU): one shape compiled once
    for the run, the weights it reads changed by every step, and the task is learnt as with TRL's own sampling. With
    LoRA, PEFT's hook on the embeddings (which torch.compile cannot trace) is set aside while it samples."""
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    full = method == "Full"
    spec = grpo_spec(tiny_model, tmp_path, REWARDS["string_check"], steps=20 if full else 2, lr=1e-2, method=method)
    with captured_events() as cap:
        run(spec)
    logs = [e.message for e in cap.of("log")]
    assert [m for m in logs if m.startswith("generation: a new decode shape")] == [
        "generation: a new decode shape, 8 rows × 64 + 6 positions (on a GPU its step compiles once: tens of seconds)"]
    assert not [m for m in logs if "failed" in m], logs
    rewards = [p.extra["reward"] for p in cap.of("progress")]
    assert len(rewards) == spec.hyperparameters.max_steps
    if full:
        assert sum(rewards[-4:]) / 4 >= sum(rewards[:4]) / 4 + 0.3, rewards


EQUAL_REWARDS = "learns nothing"


@pytest.mark.parametrize("reward,warned", [
    (RewardItem(type="built_in", function_name="format_reward"), True),  # the tiny model never writes <think>: all 0
    (REWARDS["text_similarity"], False),  # partial credit: a group's answers differ
], ids=["all-or-nothing", "partial-credit"])
@pytest.mark.slow
def test_a_run_whose_answers_all_score_alike_says_it_cannot_learn(reward, warned, tiny_model, tmp_path):
    """#39: an RFT job whose grader scored every answer 0 ran 18 steps and said nothing. Equal rewards in a group give
    every answer an advantage of 0, so GRPO learns nothing: after equal_reward_steps steps of only that, one warning
    with the fixes; none when the answers' rewards differ."""
    spec = grpo_spec(tiny_model, tmp_path, reward, steps=3, lr=1e-3)
    spec.hyperparameters.equal_reward_steps = 2
    with captured_events() as cap:
        run(spec)
    warnings = [e.message for e in cap.of("log") if e.level == "warning" and EQUAL_REWARDS in e.message]
    if not warned:
        assert warnings == []
        return
    (message,) = warnings
    assert message.startswith("in the first 2 steps of training, the 8 answers to each prompt all got the same reward")
    assert "(reward 0)" in message
    for fix in ("partial credit", "raise num_generations (now 8)", "temperature (now 1)"):
        assert fix in message, message
    # said as step 2 ended, not at the end of the run
    at = next(i for i, e in enumerate(cap.events) if e.event == "log" and EQUAL_REWARDS in e.message)
    assert [e.step for e in cap.events[at:] if e.event == "progress"] == [2, 3]
