"""Maps a training spec onto the TRL trainer config, the PEFT config and the model-loading kwargs.

Every 2.12 hyperparameter either reaches one of them or is reported by `not_applicable` (a log event):
none is silently ignored. tests/test_train_configs.py checks each one.
"""
from __future__ import annotations

import functools
import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from .spec import Options

CHECKPOINTS = "checkpoints"


def device_is_cuda(spec: Options) -> bool:
    import torch

    return spec.device != "cpu" and torch.cuda.is_available()


def device_summary(spec: Options) -> str:
    """Where and how the run trains, for its log: the device (the GPU's name), the dtype, the attention kernel."""
    import torch

    kwargs = model_kwargs(spec)
    dtype = str(kwargs["dtype"]).removeprefix("torch.")
    if not device_is_cuda(spec):
        return f"training on the CPU in {dtype}, attention {kwargs['attn_implementation']}"
    extras = [", Liger kernels" if uses_liger(spec) else "", ", 4-bit NF4 base" if spec.method == "QLoRA" else ""]
    return (f"training on CUDA ({torch.cuda.get_device_name()}) in {dtype}, attention "
            f"{kwargs['attn_implementation']}{''.join(extras)}")


def model_kwargs(spec: Options) -> dict:
    """from_pretrained kwargs: dtype, attention kernel, 4-bit quantisation for QLoRA."""
    import torch

    cuda = device_is_cuda(spec)
    kwargs: dict = {"dtype": torch.bfloat16 if _uses_bf16(spec) else torch.float32}
    if spec.hyperparameters.use_fast_attention:
        kwargs["attn_implementation"] = _fast_attention(spec) if cuda else "sdpa"
    else:
        # On CUDA, PyTorch's fused kernel (transformers' own default): the eager matmul-softmax-matmul only costs
        # memory and time there (a default job trained with it on an H200, scripts/gpu-check.sh, #37). On the CPU the
        # eager path stays (the tests' losses and tokens are pinned to it).
        kwargs["attn_implementation"] = "sdpa" if cuda else "eager"
    if spec.method == "QLoRA":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=kwargs["dtype"])
        if "LOCAL_RANK" in os.environ:  # one process per GPU (torchrun): the quantised weights go to this rank's GPU
            kwargs["device_map"] = {"": int(os.environ["LOCAL_RANK"])}
    return kwargs


def _uses_bf16(spec: Options) -> bool:
    import torch

    return device_is_cuda(spec) and torch.cuda.is_bf16_supported()


def _fast_attention(spec: Options) -> str:
    """On CUDA: FlashAttention 2 where the flash_attn package is installed (varlen: each packed document attends to
    itself only). Else, for SFT rows packed into one (padding_free or packing), transformers' flex attention, whose
    compiled block-sparse kernel skips the blocks between documents: sdpa would compute the whole (sum of lengths)²
    score matrix under a mask, 4× slower end to end at 16 rows of up to 2048 tokens (bench/train/README.md). Else
    sdpa (cuDNN or flash kernels)."""
    hp = spec.hyperparameters
    if _has_flash_attn():
        return "flash_attention_2"
    if spec.trainer_type == "sft" and spec.modality == "text" and (hp.padding_free or hp.packing):
        return "flex_attention" if flex_attention_lowers(*_head_shape(spec.base_model)) else "sdpa"
    return "sdpa"


def _head_shape(model_dir: str) -> tuple[int, int, int]:
    """(attention heads, key/value heads, head dimension) of a text model's config."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_dir)
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return heads, getattr(config, "num_key_value_heads", None) or heads, head_dim


@functools.cache
def flex_attention_lowers(heads: int, kv_heads: int, head_dim: int) -> bool:
    """Whether transformers' compiled flex attention builds forward and backward kernels for this head shape on this
    GPU in bf16, tried as training calls it: transformers' own mask for packed documents (a document-id tensor
    captured by the mask function) and its own attention forward, at two lengths, so that the second call recompiles
    with dynamic lengths as the second step of a padding-free run does. The lengths are whole blocks, as training's
    rows are (trainer_config pads them: packed_on_flex). Where inductor has no kernel configuration for a shape, the
    model trains on sdpa, said in its log, instead of failing."""
    import torch
    from transformers.integrations.flex_attention import flex_attention_forward
    from transformers.masking_utils import (and_masks, causal_mask_function, flex_attention_mask,
                                            packed_sequence_mask_function)

    from .. import events

    class Attention(torch.nn.Module):  # what flex_attention_forward reads of a model's attention layer
        pass

    layer = Attention().train()
    try:
        for length in (2 * FLEX_BLOCK, 3 * FLEX_BLOCK):
            documents = (torch.arange(length, device="cuda") >= length // 3 + 5).long().unsqueeze(0)
            mask = flex_attention_mask(1, torch.arange(length, device="cuda"), length, mask_function=and_masks(
                causal_mask_function, packed_sequence_mask_function(documents)))
            q, k, v = (torch.randn(1, n, length, head_dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for n in (heads, kv_heads, kv_heads))
            out, _ = flex_attention_forward(layer, q, k, v, mask, scaling=head_dim ** -0.5)
            out.float().sum().backward()
        torch.cuda.synchronize()
        return True
    except Exception as e:  # noqa: BLE001 - any compile failure means: not this kernel
        first = next((line for line in str(e).splitlines() if "Error" in line), str(e).splitlines()[0])
        events.emit(events.Log(level="warning", message=f"flex attention does not compile for {heads}×{head_dim} "
                               f"heads ({kv_heads} key/value) on this GPU ({type(e).__name__}: {first[:200]}); "
                               "training on sdpa"))
        return False


# Flex attention's block of positions. A packed row shorter than one block goes to inductor's flex_decoding kernel,
# which builds no training kernel: on an H200 with torch 2.11 the tiny test model's first step (a row of 102 tokens)
# failed with NoValidChoicesError (name 'flex_decoding', no choices) for 16- and 64-wide heads alike, and so did the
# probe at 100 tokens, where it built forward and backward at 200 and 330 (scripts/gpu-check.sh, #37). So packed rows
# on flex are padded to whole
# blocks (TRL's pad_to_multiple_of: the padding has label -100 and, at position 0, attends to itself only), which
# also bounds the lengths the kernel is compiled for.
FLEX_BLOCK = 128


def packed_on_flex(spec: Options) -> bool:
    """Whether an SFT job's packed rows go through flex attention (on CUDA, without FlashAttention 2)."""
    return (device_is_cuda(spec) and spec.hyperparameters.use_fast_attention
            and _fast_attention(spec) == "flex_attention")


def _has_flash_attn() -> bool:
    import importlib.util

    return importlib.util.find_spec("flash_attn") is not None


def uses_liger(spec: Options) -> bool:
    """Liger's Triton kernels (fused linear cross-entropy, RMSNorm, RoPE, SwiGLU) for text SFT on CUDA: the fused
    loss never materialises the (tokens × vocabulary) logits, the largest activation of a small model with a big
    vocabulary. Not on CPU (Triton needs a GPU) nor for vision (the image-text models are patched differently)."""
    import importlib.util

    return (device_is_cuda(spec) and spec.trainer_type == "sft" and spec.modality == "text"
            and importlib.util.find_spec("liger_kernel") is not None)


@contextmanager
def liger_undone_after(spec: Options):
    """Training with Liger, then transformers as it was. The Trainer applies Liger to the one model it trains, but
    Liger patches the model's modeling module for the whole process (its RoPE function, its RMSNorm and MLP classes,
    the causal-LM forward), so a model loaded on CPU later in the same process ran Triton kernels on CPU tensors.
    The model's modeling module is imported first, so that what it had before is known."""
    if not uses_liger(spec):
        yield
        return
    import importlib

    from transformers import AutoConfig

    model_type = AutoConfig.from_pretrained(spec.base_model).model_type
    importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    with modeling_patches_undone():
        yield


@contextmanager
def modeling_patches_undone():
    """What is patched inside, put back after: the names of every transformers modeling module loaded on entry, the
    forward of each class they define, and torch's cross_entropy (Liger's cross_entropy option replaces it)."""
    import sys

    import torch.nn.functional

    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("transformers.models.") and ".modeling_" in name and m is not None]
    names = [(m, dict(vars(m))) for m in modules]
    forwards = [(c, c.__dict__["forward"]) for m in modules for c in list(vars(m).values())
                if isinstance(c, type) and c.__module__ == m.__name__ and "forward" in c.__dict__]
    cross_entropy = torch.nn.functional.cross_entropy
    try:
        yield
    finally:
        for module, before in names:
            for name, value in before.items():
                if vars(module).get(name) is not value:
                    setattr(module, name, value)
        for cls, forward in forwards:
            if cls.__dict__.get("forward") is not forward:
                cls.forward = forward
        torch.nn.functional.cross_entropy = cross_entropy


# Share of a process's memory (a GPU's free memory; on CPU the host's available memory over the processes of the
# job) that pre-flight's estimate may take before the run saves memory.
MEMORY_SHARE = 0.9


@dataclass(frozen=True)
class MemoryPlan:
    """How a run fits in memory: Full weights, gradients and optimizer state sharded over the job's processes
    (FSDP) instead of copied on each (DDP), and activations recomputed in the backward pass instead of kept
    (gradient checkpointing). `reasons` are said to the user as log events."""

    fsdp: bool = False
    checkpointing: bool = False
    reasons: tuple[str, ...] = ()


def memory_plan(spec: Options, memory: dict | None) -> MemoryPlan:
    """The plan for pre-flight's memory estimate (`preflight.memory`; None when there is none), alike on every rank.

    - FSDP: for Full on several processes, when the estimate is above MEMORY_SHARE of what one process has (the model
      does not fit one device), or when FTCORE_SHARDING (the worker's TRAIN_SHARDING) is "fsdp"; "ddp" never shards.
      LoRA and QLoRA train their small adapters with DDP: each process holds the frozen base.
    - Gradient checkpointing (about a third more compute per step): on CUDA only, when the per-process estimate
      (sharded, under FSDP) is above MEMORY_SHARE of the GPU's free memory, or when there is no estimate. Never on
      CPU, where the host's memory holds the activations.

    Every rank takes both decisions from its own memory, then they are agreed (one rank's need is every rank's), so
    no rank wraps the model differently from the others."""
    from . import distributed
    from .preflight import HEADROOM

    world = int(os.environ.get("WORLD_SIZE", "1"))
    choice = os.environ.get("FTCORE_SHARDING", "auto")
    cuda = device_is_cuda(spec)
    available = _process_memory(cuda, world)
    budget = MEMORY_SHARE * available
    peak = memory["estimated_peak_bytes"] if memory else None
    reasons: list[str] = []
    fsdp = False
    if world > 1 and spec.method == "Full" and choice != "ddp":
        fsdp = choice == "fsdp" or (peak is not None and peak > budget)
    if choice == "fsdp" and world > 1 and spec.method != "Full":
        reasons.append(f"TRAIN_SHARDING fsdp applies to Full; {spec.method} trains its adapter with DDP")
    fsdp = distributed.any_rank(fsdp)
    if fsdp:
        reasons.append(f"FSDP: the weights, gradients and optimizer state are sharded over the {world} processes "
                       + ("(TRAIN_SHARDING fsdp)" if choice == "fsdp" else
                          f"(the estimated peak of {_gib(peak)} is above {MEMORY_SHARE:.0%} of the {_gib(available)} "
                          "one process has)"))
    if peak is not None and fsdp:
        sharded = memory["weights_bytes"] + memory["training_state_bytes"]
        peak = round((sharded / world + memory["activations_bytes"]) * HEADROOM)
    checkpointing = distributed.any_rank(cuda and (peak is None or peak > budget))
    if checkpointing:
        reasons.append("gradient checkpointing on: " + (
            f"the estimated peak of {_gib(peak)} per process is above {MEMORY_SHARE:.0%} of the GPU's free "
            f"{_gib(available)}" if peak is not None else "no memory estimate"))
    return MemoryPlan(fsdp=fsdp, checkpointing=checkpointing, reasons=tuple(reasons))


def _process_memory(cuda: bool, world: int) -> int:
    """Bytes one process has: its GPU's free memory, or its share of the host's available memory (the job's
    processes on one machine share it)."""
    if cuda:
        import torch

        free, _ = torch.cuda.mem_get_info(int(os.environ.get("LOCAL_RANK", 0)))
        return free
    import psutil

    return psutil.virtual_memory().available // int(os.environ.get("LOCAL_WORLD_SIZE", world))


def _gib(size: float) -> str:
    return f"{size / 2**30:.1f} GiB"


def peft_config(spec: Options):
    if spec.method == "Full":
        return None
    from peft import LoraConfig

    from ..vision import LANGUAGE_MODEL_TARGETS

    hp = spec.hyperparameters
    # a vision model's LoRA adapts its text decoder only: the vision tower and projector stay frozen
    targets = LANGUAGE_MODEL_TARGETS if spec.modality == "vision" else "all-linear"
    return LoraConfig(r=hp.lora_rank, lora_alpha=hp.lora_alpha, lora_dropout=hp.lora_dropout,
                      target_modules=targets, task_type="CAUSAL_LM")


def _common_args(spec: Options, plan: MemoryPlan) -> dict:
    hp, ev = spec.hyperparameters, spec.eval_config
    report_to = [] if spec.tracker_config.provider == "none" else [spec.tracker_config.provider]
    args = dict(
        output_dir=str(Path(spec.output_dir) / CHECKPOINTS),
        learning_rate=hp.learning_rate,
        per_device_train_batch_size=hp.batch_size,
        per_device_eval_batch_size=hp.batch_size,
        gradient_accumulation_steps=hp.gradient_accumulation_steps,
        num_train_epochs=hp.epochs,
        max_steps=hp.max_steps,
        lr_scheduler_type=hp.lr_scheduler_type,
        save_strategy=hp.save_strategy,
        logging_steps=hp.logging_steps,
        max_grad_norm=hp.max_grad_norm,
        adam_beta1=hp.adam_beta1,
        adam_beta2=hp.adam_beta2,
        warmup_ratio=hp.warmup_ratio,
        seed=hp.seed,
        data_seed=hp.seed,
        eval_strategy=ev.eval_strategy,
        eval_steps=ev.eval_steps if ev.eval_strategy == "steps" else None,
        batch_eval_metrics=ev.batch_eval_metrics and ev.compute_eval_metrics,
        report_to=report_to,
        run_name=spec.tracker_config.project or None,
        disable_tqdm=True,
        use_cpu=not device_is_cuda(spec),
        bf16=_uses_bf16(spec),
        save_total_limit=2,
        dataloader_num_workers=0,
        logging_first_step=True,
        # Several processes (torchrun): every trainable parameter takes part in each step (LoRA, QLoRA and Full alike),
        # and DDP's search for unused ones marks PEFT's LoRA weights ready twice ("Expected to mark a variable ready
        # only once").
        ddp_find_unused_parameters=False,
        # TRL's SFTConfig would turn it on always; under FSDP it is FSDP's own (transformers refuses both)
        gradient_checkpointing=plan.checkpointing and not plan.fsdp,
    )
    if plan.fsdp:
        # FSDP2 (accelerate reads FSDP_VERSION when the Trainer makes its Accelerator), each decoder layer a unit (the
        # model's _no_split_modules); checkpoints and the saved model gathered whole on rank 0.
        os.environ.update(FSDP_VERSION="2", FSDP_STATE_DICT_TYPE="FULL_STATE_DICT")
        args.update(fsdp="full_shard auto_wrap",
                    fsdp_config={"activation_checkpointing": plan.checkpointing, "cpu_ram_efficient_loading": False})
    if hp.save_strategy == "steps":
        args["save_steps"] = hp.save_steps or hp.logging_steps * 10
    if ev.early_stopping_patience or ev.load_best_model_at_end:
        args["metric_for_best_model"] = ev.metric_for_best
        args["greater_is_better"] = not ev.metric_for_best.endswith("loss")
    if ev.load_best_model_at_end:
        # transformers keeps the best checkpoint only among those saved, so one is saved at every evaluation.
        args.update(load_best_model_at_end=True, save_strategy=ev.eval_strategy)
        if ev.eval_strategy == "steps":
            args["save_steps"] = ev.eval_steps
    return args


def trainer_config(spec: Options, plan: MemoryPlan = MemoryPlan()):
    """The TRL config object for spec.trainer_type, holding its memory the way `plan` says (memory_plan)."""
    hp = spec.hyperparameters
    common = _common_args(spec, plan)
    if spec.trainer_type == "sft":
        from trl import SFTConfig

        if spec.modality == "vision":  # records stay as they are; vision.VisionChatCollator masks the labels
            return SFTConfig(**common, max_length=hp.max_length, assistant_only_loss=False,
                             remove_unused_columns=False, dataset_kwargs={"skip_prepare_dataset": True})
        # the records come tokenized with their loss mask (trainers.sft_dataset), which TRL's collator applies
        return SFTConfig(**common, max_length=hp.max_length, packing=hp.packing, padding_free=hp.padding_free,
                         assistant_only_loss=False, dataset_num_proc=None, use_liger_kernel=uses_liger(spec),
                         pad_to_multiple_of=FLEX_BLOCK if packed_on_flex(spec) else None)
    if spec.trainer_type == "dpo":
        from trl import DPOConfig

        return DPOConfig(**common, max_length=hp.max_length, max_prompt_length=hp.max_prompt_length,
                         beta=hp.beta, padding_free=hp.padding_free,
                         **_set(loss_type=hp.loss_type, rpo_alpha=hp.rpo_alpha))
    if spec.trainer_type == "orpo":
        from trl import ORPOConfig

        return ORPOConfig(**common, max_length=hp.max_length, max_prompt_length=hp.max_prompt_length,
                          beta=hp.beta)
    from trl import GRPOConfig

    return GRPOConfig(**common, max_prompt_length=hp.max_prompt_length, num_generations=hp.num_generations,
                      max_completion_length=min(hp.max_completion_length, hp.max_length - hp.max_prompt_length),
                      beta=hp.beta, log_completions=False, remove_unused_columns=False,
                      **_set(loss_type=hp.loss_type, importance_sampling_level=hp.importance_sampling_level,
                             epsilon=hp.epsilon, epsilon_high=hp.epsilon_high, scale_rewards=hp.scale_rewards,
                             mask_truncated_completions=hp.mask_truncated_completions, temperature=hp.temperature))


def _set(**values):
    """The knobs a spec sets; the others keep TRL's defaults."""
    return {name: value for name, value in values.items() if value is not None}


# 2.12 fields that do not apply to a trainer type / method: reported, never silently dropped.
_ONLY_FOR = {
    "packing": {"sft"},
    "padding_free": {"sft", "dpo"},
    "max_prompt_length": {"dpo", "orpo", "grpo"},
    "num_generations": {"grpo"},
    "max_completion_length": {"grpo"},
    "beta": {"dpo", "orpo", "grpo"},
    "equal_reward_steps": {"grpo"},
}


# The trainers' knobs without a default of their own: reported only when set for a trainer that does not read them.
_ONLY_FOR_WHEN_SET = {
    "loss_type": {"dpo", "grpo"},
    "importance_sampling_level": {"grpo"},
    "epsilon": {"grpo"},
    "epsilon_high": {"grpo"},
    "scale_rewards": {"grpo"},
    "mask_truncated_completions": {"grpo"},
    "temperature": {"grpo"},
    "rpo_alpha": {"dpo"},
}


def not_applicable(spec: Options) -> list[str]:
    """What the spec sets that this run does not use, one sentence each. A value at its default was not set: the API
    fills every default in, and an SFT job was told "max_prompt_length applies to dpo/grpo/orpo only" though its
    request named none (#39)."""
    import dataclasses

    from .spec import Hyperparameters

    defaults = {f.name: f.default for f in dataclasses.fields(Hyperparameters)}
    notes = [f"{name} applies to {'/'.join(sorted(types))} only; not used by {spec.trainer_type}"
             for name, types in _ONLY_FOR.items()
             if spec.trainer_type not in types and getattr(spec.hyperparameters, name) != defaults[name]]
    notes += [f"{name} applies to {'/'.join(sorted(types))} only; not used by {spec.trainer_type}"
              for name, types in _ONLY_FOR_WHEN_SET.items()
              if spec.trainer_type not in types and getattr(spec.hyperparameters, name) is not None]
    if spec.trainer_type == "grpo":
        notes.append("max_length caps max_prompt_length + max_completion_length for grpo")
    if spec.method == "Full":
        notes.append("lora_rank, lora_alpha and lora_dropout apply to LoRA/QLoRA only; not used by Full")
    if spec.hyperparameters.max_steps > 0:
        notes.append(f"max_steps {spec.hyperparameters.max_steps} overrides epochs")
    if spec.eval_config.batch_eval_metrics and not spec.eval_config.compute_eval_metrics:
        notes.append("batch_eval_metrics applies only with compute_eval_metrics true")
    return notes
