"""Builds the TRL trainer for a trainer type from records already validated."""
from __future__ import annotations

from .spec import Options


def _dataset(records):
    if records is None:
        return None
    from datasets import Dataset

    return Dataset.from_list(records)


def _resume_in_the_same_data_order() -> None:
    """Upstream bug, worked around here only: when a run resumes mid-epoch, transformers' Trainer skips the batches
    already trained with accelerate's `skip_first_batches`, which (accelerate 1.11, data_loader.py) builds a new
    DataLoaderShard whose `iteration` starts at 0; its __iter__ then calls set_epoch(0) on the shared seedable
    sampler, so the resumed epoch is drawn in epoch 0's order instead of its own. The copy is given the original's
    iteration (the epoch the Trainer set). tests/test_guards.py compares a resumed run with an uninterrupted one."""
    import transformers.trainer as hf

    if getattr(hf.skip_first_batches, "keeps_epoch", False):
        return
    original = hf.skip_first_batches

    def skip_first_batches(dataloader, num_batches=0):
        skipped = original(dataloader, num_batches)
        if hasattr(dataloader, "iteration") and hasattr(skipped, "iteration"):
            skipped.iteration = dataloader.iteration
        return skipped

    skip_first_batches.keeps_epoch = True
    hf.skip_first_batches = skip_first_batches


def build_trainer(spec: Options, model, tokenizer, config, peft_config, train_records, test_records):
    _resume_in_the_same_data_order()
    if spec.modality == "vision":  # message contents mix strings and part lists, which Arrow cannot hold in a column
        train, test = train_records, test_records
    else:
        train, test = _dataset(train_records), _dataset(test_records)
    common = dict(model=model, args=config, train_dataset=train, eval_dataset=test, processing_class=tokenizer,
                  peft_config=peft_config)
    if spec.trainer_type == "sft":
        from .lean_sft import LearnedPositionsSFTTrainer

        extra = {}
        if spec.modality == "vision":
            from ..vision import VisionChatCollator

            extra["data_collator"] = VisionChatCollator(tokenizer, spec.hyperparameters.max_length)
        if spec.eval_config.compute_eval_metrics and test is not None:
            from .metrics import token_accuracy_metrics

            extra["compute_metrics"], extra["preprocess_logits_for_metrics"] = token_accuracy_metrics()
        return LearnedPositionsSFTTrainer(**common, **extra)
    if spec.trainer_type == "dpo":
        from trl import DPOTrainer

        return DPOTrainer(**common)
    if spec.trainer_type == "orpo":
        from trl import ORPOTrainer

        return ORPOTrainer(**common)
    from trl import GRPOTrainer

    from .rewards import build_reward_function

    rewards = [build_reward_function(r) for r in spec.reward_config]
    config.reward_weights = [r.weight for r in spec.reward_config]
    return GRPOTrainer(reward_funcs=rewards, **common)
