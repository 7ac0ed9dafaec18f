"""Every interface 2.12 hyperparameter reaches the TRL config, the PEFT config or the model kwargs —
or is reported as not applicable. None is silently ignored."""
import dataclasses
import os

import pytest

from ftcore.train.configs import not_applicable, peft_config, trainer_config
from ftcore.train.device import model_kwargs
from ftcore.train.reward_spread import EqualRewardWatch
from ftcore.train.spec import EvalConfig, Hyperparameters, Options, RewardItem

# Distinct non-default values, so a match cannot be a coincidence of defaults.
VALUES = dict(learning_rate=3.3e-4, batch_size=3, gradient_accumulation_steps=2, epochs=7, max_steps=11,
              packing=True, padding_free=True, use_fast_attention=True, max_length=96, lr_scheduler_type="cosine",
              save_strategy="steps", logging_steps=3, lora_rank=5, lora_alpha=7, lora_dropout=0.07,
              max_prompt_length=40, num_generations=3, max_grad_norm=0.7, adam_beta1=0.81, adam_beta2=0.97,
              warmup_ratio=0.13, beta=0.27, save_steps=9, max_completion_length=17, seed=123,
              importance_sampling_level="sequence", epsilon=0.15, epsilon_high=0.31, scale_rewards="batch",
              mask_truncated_completions=True, rpo_alpha=0.6, temperature=0.9, equal_reward_steps=3)
# loss_type: a value of each trainer's own (its default otherwise): the trainers take different losses.
LOSS_TYPES = {"grpo": "dr_grpo", "dpo": "ipo", "sft": "ipo", "orpo": "dr_grpo"}

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
    "loss_type": ("dpo grpo", ["args.loss_type"]),
    "importance_sampling_level": ("grpo", ["args.importance_sampling_level"]),
    "epsilon": ("grpo", ["args.epsilon"]),
    "epsilon_high": ("grpo", ["args.epsilon_high"]),
    "scale_rewards": ("grpo", ["args.scale_rewards"]),
    "mask_truncated_completions": ("grpo", ["args.mask_truncated_completions"]),
    "rpo_alpha": ("dpo", ["args.rpo_alpha"]),
    "temperature": ("grpo", ["args.temperature"]),
    "equal_reward_steps": ("grpo", ["watch.steps"]),  # the core's own warning (reward_spread.py), not TRL's
}


def _spec(trainer_type: str, tmp_path, **changes) -> Options:
    values = dict(VALUES, loss_type=LOSS_TYPES[trainer_type])
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
    targets = {"args": trainer_config(spec), "peft": peft_config(spec), "model": model_kwargs(spec),
               "watch": EqualRewardWatch(spec)}
    notes = " ".join(not_applicable(spec))
    assert set(WHERE) == {f.name for f in dataclasses.fields(Hyperparameters)}, "update WHERE for new fields"
    for name, (types, places) in WHERE.items():
        applies = types == "*" or trainer_type in types.split()
        if not applies:
            # reported when set; at its default it was not (the API fills every default in)
            set_here = getattr(hp, name) != Hyperparameters.__dataclass_fields__[name].default
            if set_here:
                assert name in notes, f"{name} neither applied nor reported for {trainer_type}"
            else:
                assert f"{name} applies to" not in notes, f"{name} at its default reported for {trainer_type}"
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


@pytest.mark.parametrize("trainer_type", ["sft", "dpo", "orpo", "grpo"])
def test_a_spec_of_defaults_is_told_of_nothing_it_did_not_set(trainer_type, tmp_path):
    """#39: every SFT job logged "max_prompt_length applies to dpo/grpo/orpo only" (and num_generations,
    max_completion_length, beta) though its request set none of them; GRPO jobs the same of packing, padding_free."""
    spec = Options(base_model="unused", train_file="unused", output_dir=str(tmp_path), trainer_type=trainer_type)
    assert not [note for note in not_applicable(spec) if "applies to" in note]


def test_full_method_has_no_peft_config_and_reports_the_lora_fields(tmp_path):
    spec = dataclasses.replace(_spec("sft", tmp_path), method="Full")
    assert peft_config(spec) is None
    assert any("lora_rank" in note for note in not_applicable(spec))


def test_fast_attention_off_uses_the_eager_kernel_on_the_cpu_and_sdpa_on_a_gpu(tmp_path, monkeypatch):
    import ftcore.train.device as device

    spec = _spec("sft", tmp_path, use_fast_attention=False)
    assert model_kwargs(spec)["attn_implementation"] == "eager"
    monkeypatch.setattr(device, "device_is_cuda", lambda spec: True)
    monkeypatch.setattr(device, "uses_bf16", lambda spec: True)
    assert model_kwargs(spec)["attn_implementation"] == "sdpa"


GiB = 2**30


def _memory(weights: float, state: float, activations: float) -> dict:
    """A pre-flight memory estimate (preflight.memory) of these parts, in GiB."""
    return {"estimated_peak_bytes": round((weights + state + activations) * GiB * 1.1), "weights_bytes": weights * GiB,
            "training_state_bytes": state * GiB, "activations_bytes": activations * GiB}


def _on_gpus(monkeypatch, processes: int, free_gib: int = 80):
    import ftcore.train.device as device
    import torch

    monkeypatch.setattr(device, "device_is_cuda", lambda spec: True)
    # the specs here name no real model: a model of 64-wide heads whose flex kernel builds, as Llama 3.2 1B's
    monkeypatch.setattr(device, "_head_shape", lambda model: (32, 8, 64))
    monkeypatch.setattr(device, "flex_attention_lowers", lambda *shape: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (free_gib * GiB, free_gib * GiB))
    monkeypatch.setenv("WORLD_SIZE", str(processes))
    # transformers and the plan export FSDP settings to the environment (accelerate reads them): keep them here
    monkeypatch.setattr(os, "environ", dict(os.environ))


def test_gradient_checkpointing_only_when_memory_needs_it(tmp_path, monkeypatch):
    from ftcore.train.memory import MemoryPlan, memory_plan

    spec = _spec("sft", tmp_path)
    assert memory_plan(spec, _memory(900, 900, 900)) == MemoryPlan()  # CPU, one process: never, whatever the estimate
    assert trainer_config(spec).gradient_checkpointing is False  # TRL's SFTConfig alone would say True
    _on_gpus(monkeypatch, 1)
    assert not memory_plan(spec, _memory(2, 1, 50)).checkpointing  # 58 GiB of 80
    plan = memory_plan(spec, _memory(2, 1, 65))  # 74.8 GiB: above 90% of the free 80 GiB
    assert plan.checkpointing and not plan.fsdp
    assert "gradient checkpointing on: the estimated peak of 74.8 GiB" in plan.reasons[0]
    assert memory_plan(spec, None).checkpointing  # no estimate: the safe side
    assert trainer_config(spec, plan).gradient_checkpointing is True
    # on a GPU, packed rows on flex attention are padded to whole blocks (shorter ones have no training kernel, #37)
    assert trainer_config(spec, plan).pad_to_multiple_of == 128


def test_full_is_sharded_over_the_processes_when_it_does_not_fit_one(tmp_path, monkeypatch):
    from ftcore.train.memory import memory_plan

    full = dataclasses.replace(_spec("sft", tmp_path), method="Full")
    lora = _spec("sft", tmp_path)
    big = _memory(16, 48, 8)  # an 8B model in bf16: 79.2 GiB with nothing sharded; (64 / 4 + 8) × 1.1 = 26.4 per rank
    _on_gpus(monkeypatch, 4)
    plan = memory_plan(full, big)
    assert plan.fsdp and not plan.checkpointing
    assert "sharded over the 4 processes (the estimated peak of 79.2 GiB is above 90% of the 80.0 GiB" in plan.reasons[0]
    # sharded and still too big per process: FSDP's own activation checkpointing
    tight = memory_plan(full, _memory(16, 48, 60))
    assert tight.fsdp and tight.checkpointing
    # LoRA's adapter is small: DDP, each process holding the base, and checkpointing for its activations
    ddp = memory_plan(lora, big)
    assert not ddp.fsdp and ddp.checkpointing
    assert not memory_plan(full, _memory(4, 12, 8)).fsdp  # 26.4 GiB fits one GPU: DDP
    monkeypatch.setenv("FTCORE_SHARDING", "ddp")
    assert not memory_plan(full, big).fsdp
    monkeypatch.setenv("FTCORE_SHARDING", "fsdp")
    assert memory_plan(full, _memory(4, 12, 8)).fsdp
    assert not memory_plan(lora, big).fsdp and "applies to Full" in memory_plan(lora, big).reasons[0]
    monkeypatch.setenv("WORLD_SIZE", "1")
    assert not memory_plan(full, big).fsdp  # one process: nothing to shard over

    # The configs (built here without a process group: the plans above were made for 4 processes)
    config = trainer_config(full, plan)
    assert [o.value for o in config.fsdp] == ["full_shard", "auto_wrap"] and config.gradient_checkpointing is False
    assert os.environ["FSDP_VERSION"] == "2" and os.environ["ACCELERATE_USE_FSDP"] == "true"
    assert trainer_config(full, tight).fsdp_config["activation_checkpointing"] is True


def test_gpu_attention_kernel_skips_the_blocks_between_packed_rows(tmp_path, monkeypatch):
    import ftcore.train.device as device

    monkeypatch.setattr(device, "_has_flash_attn", lambda: False)
    monkeypatch.setattr(device, "_head_shape", lambda model: (32, 8, 64))
    monkeypatch.setattr(device, "flex_attention_lowers", lambda *shape: shape == (32, 8, 64))
    assert device._fast_attention(_spec("sft", tmp_path, padding_free=True, packing=False)) == "flex_attention"
    assert device._fast_attention(_spec("sft", tmp_path, padding_free=False, packing=True)) == "flex_attention"
    assert device._fast_attention(_spec("sft", tmp_path, padding_free=False, packing=False)) == "sdpa"
    assert device._fast_attention(_spec("dpo", tmp_path)) == "sdpa"
    # heads inductor has no flex kernel for (16 wide on an H200, #37): sdpa rather than a job failed at its first step
    monkeypatch.setattr(device, "_head_shape", lambda model: (4, 2, 16))
    assert device._fast_attention(_spec("sft", tmp_path, padding_free=True)) == "sdpa"
    monkeypatch.setattr(device, "_has_flash_attn", lambda: True)
    assert device._fast_attention(_spec("sft", tmp_path)) == "flash_attention_2"
    assert not device.uses_liger(_spec("sft", tmp_path))  # CPU: Triton needs a GPU
    assert trainer_config(_spec("sft", tmp_path, padding_free=True)).pad_to_multiple_of is None  # the CPU: no flex


@pytest.mark.slow
def test_packed_rows_padded_to_whole_flex_blocks_train_as_unpadded_ones(tiny_model, tmp_path, monkeypatch):
    """Packed rows on flex attention are padded to whole blocks of 128 (shorter ones have no training kernel on an
    H200, #37). The padding must change nothing: the losses of a padded and an unpadded run are the same."""
    from helpers import QA, captured_events, conversation, sft_spec, write_jsonl

    import ftcore.train.device as device
    from ftcore.train.run import run

    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 2)
    losses = {}
    for padded in (False, True):
        monkeypatch.setattr(device, "packed_on_flex", lambda spec, padded=padded: padded)
        spec = sft_spec(tiny_model, train, None, tmp_path / f"run-{padded}", padding_free=True, max_steps=6,
                        logging_steps=1)
        assert trainer_config(spec).pad_to_multiple_of == (device.FLEX_BLOCK if padded else None)
        with captured_events() as cap:
            run(spec)
        losses[padded] = [p.loss for p in cap.of("progress")]
    assert len(losses[True]) == 6 and losses[True] == pytest.approx(losses[False], rel=1e-4)


def test_liger_is_undone_after_training_so_a_later_cpu_model_runs_without_triton(tiny_model, tmp_path, monkeypatch):
    """The Trainer applies Liger to the model it trains (on CUDA), and Liger patches that model's modeling module for
    the whole process; a CPU model loaded afterwards in the same process ran Triton kernels on CPU tensors (7 core
    tests failed so on a CUDA machine). Here Liger is applied as the Trainer applies it, to a CPU model (patching
    runs no kernel), inside what a CUDA run trains in."""
    pytest.importorskip("liger_kernel")
    import torch
    from liger_kernel.transformers import _apply_liger_kernel_to_instance
    from transformers import AutoModelForCausalLM
    from transformers.models.llama import modeling_llama

    from ftcore.train import device

    spec = dataclasses.replace(_spec("sft", tmp_path), base_model=tiny_model)
    monkeypatch.setattr(device, "uses_liger", lambda _: True)  # as on CUDA
    patched = lambda: (modeling_llama.apply_rotary_pos_emb, modeling_llama.LlamaRMSNorm,  # noqa: E731
                       modeling_llama.LlamaMLP, modeling_llama.LlamaForCausalLM.forward)
    before = patched()
    with device.liger_undone_after(spec):
        _apply_liger_kernel_to_instance(model=AutoModelForCausalLM.from_pretrained(tiny_model))
        assert all(a is not b for a, b in zip(patched(), before[:3])), "Liger patches the module (the reason for this)"
    assert patched() == before
    with torch.no_grad():
        logits = AutoModelForCausalLM.from_pretrained(tiny_model)(torch.tensor([[1, 2, 3]])).logits
    assert torch.isfinite(logits).all()


def test_the_trainers_each_setting_applies_to_are_the_apis():
    """Which trainer reads which setting is stated once, as `x-trainers` in the training API's schema (the console's
    form and the applied config read it there); the notes of settings a run does not use must say the same."""
    import json
    import pathlib

    from ftcore.train.methods import setting_readers

    document = json.loads((pathlib.Path(__file__).parents[2] / "openapi" / "training.json").read_text())
    fields = document["components"]["schemas"]["Hyperparameters"]["properties"]
    stated = {name: set(field["x-trainers"]) for name, field in fields.items() if "x-trainers" in field}
    assert stated == setting_readers()
