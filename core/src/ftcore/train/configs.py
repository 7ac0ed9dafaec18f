"""Maps a training spec onto the TRL trainer config (the arguments every trainer takes; each method adds its own), the
PEFT config, and what the spec sets that the run does not use.

Every 2.12 hyperparameter either reaches the trainer config, the PEFT config or the model-loading kwargs
(device.model_kwargs), or is reported by `not_applicable` (a log event): none is silently ignored.
tests/test_train_configs.py checks each one.
"""
from __future__ import annotations

import os
from pathlib import Path

from . import device
from .memory import MemoryPlan
from .spec import Options

CHECKPOINTS = "checkpoints"




def peft_config(spec: Options):
    if spec.method == "Full":
        return None
    from peft import LoraConfig

    from ..models.vision import LANGUAGE_MODEL_TARGETS

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
        use_cpu=not device.device_is_cuda(spec),
        bf16=device.uses_bf16(spec),
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
    """The TRL config object for spec.trainer_type (its method's own settings: methods/), holding its memory the way
    `plan` says (memory.memory_plan)."""
    from .methods import method_of

    return method_of(spec).trainer_config(spec, _common_args(spec, plan))


def not_applicable(spec: Options) -> list[str]:
    """What the spec sets that this run does not use, one sentence each. A value at its default was not set: the API
    fills every default in, and an SFT job was told "max_prompt_length applies to dpo/grpo/orpo only" though its
    request named none (#39)."""
    import dataclasses

    from .contract import lora_only
    from .methods import setting_readers
    from .spec import Hyperparameters

    readers = setting_readers()
    notes = [f"{field.name} applies to {'/'.join(sorted(readers[field.name]))} only; not used by {spec.trainer_type}"
             for field in dataclasses.fields(Hyperparameters)
             if spec.trainer_type not in readers.get(field.name, {spec.trainer_type})
             and getattr(spec.hyperparameters, field.name) != field.default]
    if spec.trainer_type == "grpo":
        notes.append("max_length caps max_prompt_length + max_completion_length for grpo")
    if spec.method == "Full":
        *others, last = lora_only()
        notes.append(f"{', '.join(others)} and {last} apply to LoRA/QLoRA only; not used by Full")
    if spec.hyperparameters.max_steps > 0:
        notes.append(f"max_steps {spec.hyperparameters.max_steps} overrides epochs")
    if spec.eval_config.batch_eval_metrics and not spec.eval_config.compute_eval_metrics:
        notes.append("batch_eval_metrics applies only with compute_eval_metrics true")
    return notes
