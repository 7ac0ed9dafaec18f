"""Every interface 2.12 hyperparameter reaches the TRL config, the PEFT config or the model kwargs —
or is reported as not applicable. None is silently ignored."""
import dataclasses

import pytest

from ftcore.train.configs import model_kwargs, not_applicable, peft_config, trainer_config
from ftcore.train.spec import EvalConfig, Hyperparameters, Options, RewardItem

# Distinct non-default values, so a match cannot be a coincidence of defaults.
VALUES = dict(learning_rate=3.3e-4, batch_size=3, gradient_accumulation_steps=2, epochs=7, max_steps=11,
              packing=True, padding_free=True, use_fast_attention=True, max_length=96, lr_scheduler_type="cosine",
              save_strategy="steps", logging_steps=3, lora_rank=5, lora_alpha=7, lora_dropout=0.07,
              max_prompt_length=40, num_generations=3, max_grad_norm=0.7, adam_beta1=0.81, adam_beta2=0.97,
              warmup_ratio=0.13, beta=0.27, save_steps=9, max_completion_length=17, seed=123)

# hyperparameter → (trainer types it applies to, where it lands: "args.<field>" | "peft.<field>" | "model.<key>")
WHERE = {
    "learning_rate": ("*", ["args.learning_rate"]),
    "batch_size": ("*", ["args.per_device_train_batch_size", "args.per_device_eval_batch_size"]),
    "gradient_accumulation_steps": ("*", ["args.gradient_accumulation_steps"]),
    "epochs": ("*", ["args.num_train_epochs"]),
    "max_steps": ("*", ["args.max_steps"]),
    "packing": ("sft", ["args.packing"]),
    "padding_free": ("sft dpo", ["args.padding_free"]),
    "use_fast_attention": ("*", ["model.attn_implementation"]),
    "max_length": ("sft dpo orpo", ["args.max_length"]),  # grpo: caps the completion, checked below
    "lr_scheduler_type": ("*", ["args.lr_scheduler_type"]),
    "save_strategy": ("*", ["args.save_strategy"]),
    "logging_steps": ("*", ["args.logging_steps"]),
    "lora_rank": ("*", ["peft.r"]),
    "lora_alpha": ("*", ["peft.lora_alpha"]),
    "lora_dropout": ("*", ["peft.lora_dropout"]),
    "max_prompt_length": ("dpo orpo grpo", ["args.max_prompt_length"]),
    "num_generations": ("grpo", ["args.num_generations"]),
    "max_grad_norm": ("*", ["args.max_grad_norm"]),
    "adam_beta1": ("*", ["args.adam_beta1"]),
    "adam_beta2": ("*", ["args.adam_beta2"]),
    "warmup_ratio": ("*", ["args.warmup_ratio"]),
    "beta": ("dpo orpo grpo", ["args.beta"]),
    "save_steps": ("*", ["args.save_steps"]),
    "max_completion_length": ("grpo", ["args.max_completion_length"]),
    "seed": ("*", ["args.seed", "args.data_seed"]),
}


def _spec(trainer_type: str, tmp_path, **changes) -> Options:
    values = dict(VALUES)
    values.update(changes)
    if trainer_type == "grpo":
        values.update(max_length=96, max_prompt_length=40, packing=False, padding_free=False)
    if trainer_type == "orpo":
        values.update(padding_free=False, packing=False)
    if trainer_type == "dpo":
        values.update(packing=False)
    return Options(base_model="unused", train_file="unused", output_dir=str(tmp_path), method="LoRA",
                   trainer_type=trainer_type, hyperparameters=Hyperparameters(**values),
                   eval_config=EvalConfig(eval_strategy="steps", eval_steps=4),
                   reward_config=[RewardItem(type="built_in", function_name="format_reward")])


def _expected(name, values):
    if name == "use_fast_attention":
        return "sdpa"  # the best kernel on this CPU machine
    if name == "lr_scheduler_type":
        return "cosine"
    if name == "save_strategy":
        return "steps"
    return values[name]


@pytest.mark.parametrize("trainer_type", ["sft", "dpo", "orpo", "grpo"])
def test_every_hyperparameter_reaches_the_trainer_or_is_reported(trainer_type, tmp_path):
    spec = _spec(trainer_type, tmp_path)
    hp = spec.hyperparameters
    targets = {"args": trainer_config(spec), "peft": peft_config(spec), "model": model_kwargs(spec)}
    notes = " ".join(not_applicable(spec))
    assert set(WHERE) == {f.name for f in dataclasses.fields(Hyperparameters)}, "update WHERE for new fields"
    for name, (types, places) in WHERE.items():
        applies = types == "*" or trainer_type in types.split()
        if not applies:
            assert name in notes, f"{name} neither applied nor reported for {trainer_type}"
            continue
        for place in places:
            kind, attr = place.split(".")
            target = targets[kind]
            actual = target[attr] if isinstance(target, dict) else getattr(target, attr)
            actual = getattr(actual, "value", actual)  # enums
            expected = _expected(name, dataclasses.asdict(hp))
            if name == "max_completion_length":
                expected = min(hp.max_completion_length, hp.max_length - hp.max_prompt_length)
            assert actual == expected, f"{name} → {place}: {actual!r} != {expected!r}"
    args = targets["args"]
    if trainer_type == "grpo":
        assert args.max_prompt_length + args.max_completion_length <= hp.max_length
    assert args.eval_strategy.value == "steps" and args.eval_steps == 4


def test_full_method_has_no_peft_config_and_reports_the_lora_fields(tmp_path):
    spec = dataclasses.replace(_spec("sft", tmp_path), method="Full")
    assert peft_config(spec) is None
    assert any("lora_rank" in note for note in not_applicable(spec))


def test_fast_attention_off_uses_the_eager_kernel(tmp_path):
    spec = _spec("sft", tmp_path, use_fast_attention=False)
    assert model_kwargs(spec)["attn_implementation"] == "eager"


def test_gradient_checkpointing_only_when_memory_needs_it(tmp_path, monkeypatch):
    import ftcore.train.configs as configs
    import torch

    spec = _spec("sft", tmp_path)
    assert not configs.needs_gradient_checkpointing(spec, 10**15)  # CPU: never, whatever the estimate
    assert configs.trainer_config(spec).gradient_checkpointing is False  # TRL's SFTConfig alone would say True
    monkeypatch.setattr(configs, "device_is_cuda", lambda spec: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (80 * 2**30, 80 * 2**30))
    assert not configs.needs_gradient_checkpointing(spec, 60 * 2**30)
    assert configs.needs_gradient_checkpointing(spec, 75 * 2**30)  # above 90% of the free 80 GiB
    assert configs.needs_gradient_checkpointing(spec, None)  # no estimate: the safe side
    assert configs.trainer_config(spec, checkpointing=True).gradient_checkpointing is True


def test_gpu_attention_kernel_skips_the_blocks_between_packed_rows(tmp_path, monkeypatch):
    import ftcore.train.configs as configs

    monkeypatch.setattr(configs, "_has_flash_attn", lambda: False)
    assert configs._fast_attention(_spec("sft", tmp_path, padding_free=True, packing=False)) == "flex_attention"
    assert configs._fast_attention(_spec("sft", tmp_path, padding_free=False, packing=True)) == "flex_attention"
    assert configs._fast_attention(_spec("sft", tmp_path, padding_free=False, packing=False)) == "sdpa"
    assert configs._fast_attention(_spec("dpo", tmp_path)) == "sdpa"
    monkeypatch.setattr(configs, "_has_flash_attn", lambda: True)
    assert configs._fast_attention(_spec("sft", tmp_path)) == "flash_attention_2"
    assert not configs.uses_liger(_spec("sft", tmp_path))  # CPU: Triton needs a GPU
