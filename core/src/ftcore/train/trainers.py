"""Builds the TRL trainer for a trainer type from records already validated."""
from __future__ import annotations

from .spec import Options


def _dataset(records):
    if records is None:
        return None
    from datasets import Dataset

    # `metadata` marks augmented records (how each was made); it is provenance, never a training column.
    return Dataset.from_list([{k: v for k, v in record.items() if k != "metadata"} for record in records])


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


def sft_dataset(records, tokenizer, what: str):
    """SFT records as TRL takes a processed dataset, {input_ids, assistant_masks}, with the core's loss mask
    (chat.trained_token_mask: the template's assistant turns, less those with weight 0); TRL still truncates or packs
    them, and its collator gives the tokens outside the mask label -100. A row with no trained token is refused, as
    TRL refuses one when it applies the template itself."""
    from ..chat import trained_token_mask
    from ..errors import SpecError

    if records is None:
        return None
    rows, empty = [], []
    for n, record in enumerate(records, start=1):
        ids, mask = trained_token_mask(tokenizer, record["messages"], tools=record.get("tools"))
        rows.append({"input_ids": ids, "assistant_masks": mask})
        if not any(mask):
            empty.append(n)
    if empty:
        listed = ", ".join(map(str, empty[:5])) + (", …" if len(empty) > 5 else "")
        raise SpecError(f"{len(empty)} of {len(records)} {what} rows (rows {listed}) have no token the chat template "
                        f"of {tokenizer.name_or_path} marks as the assistant's, so they add nothing to the loss; wrap "
                        "the assistant turn of the template in {% generation %} … {% endgeneration %}, or remove the "
                        "rows")
    return _dataset(rows)


def build_trainer(spec: Options, model, tokenizer, config, peft_config, train_records, test_records):
    _resume_in_the_same_data_order()
    if spec.modality == "vision":  # message contents mix strings and part lists, which Arrow cannot hold in a column
        train, test = train_records, test_records
    elif spec.trainer_type == "sft":
        train, test = sft_dataset(train_records, tokenizer, "train"), sft_dataset(test_records, tokenizer, "test")
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
    from .reward_spread import EqualRewardWatch
    from .rewards import build_reward_function

    rewards = [build_reward_function(r) for r in spec.reward_config]
    config.reward_weights = [r.weight for r in spec.reward_config]
    watch = EqualRewardWatch(spec)
    trainer = grpo_trainer(spec.response_schema, watch, reward_funcs=rewards, **common)
    trainer.add_callback(watch)
    return trainer


def grpo_trainer(schema: dict | None, watch=None, **kwargs):
    """TRL's GRPOTrainer, sampling through the core's generation engine. TRL calls transformers' generate inside
    _generate_single_turn with compiling turned off and a GenerationConfig that cannot carry a per-token filter; here
    that call goes, on CUDA, to a static KV cache with the decode step compiled (generate.compiled_generate: CUDA
    graphs, the prompts padded to one width so each step replays the same graph), and, with `schema`, through
    lm-format-enforcer's prefix_allowed_tokens_fn (a fresh one per batch of prompts, as the core's forced tool calls
    do: constrained.py). Whether a compile pays is judged on the completions of the whole run. `watch`
    (reward_spread.EqualRewardWatch) is told the weighted reward of every answer training scores."""
    import functools

    import torch
    from trl import GRPOTrainer

    from ..constrained import allowed_tokens_fn
    from ..generate import choose_engine, compiled_generate

    class CoreGRPOTrainer(GRPOTrainer):
        def _generate_single_turn(self, prompts, images):
            model = self.accelerator.unwrap_model(self.model_wrapped)
            own = functools.partial(type(model).generate, model)
            extra = {"prefix_allowed_tokens_fn": allowed_tokens_fn(self.processing_class, schema)} if schema else {}

            def generate(input_ids=None, attention_mask=None, disable_compile=True, **settings):
                rows, width = input_ids.shape
                new = self.args.max_completion_length
                engine = choose_engine(model, [width] * rows, new, rows, work=rows * new * self.state.max_steps)
                if images is None and engine.compiled:
                    tokens = compiled_generate(model, own, input_ids, attention_mask, rows, **extra, **settings)
                    return torch.cat([input_ids, tokens], dim=1)
                return own(input_ids=input_ids, attention_mask=attention_mask, disable_compile=disable_compile,
                           **extra, **settings)

            model.generate = generate
            try:
                return super()._generate_single_turn(prompts, images)
            finally:
                del model.generate  # the class's own again

        def _calculate_rewards(self, inputs, prompts, completions, completion_ids_list):
            rewards_per_func = super()._calculate_rewards(inputs, prompts, completions, completion_ids_list)
            if watch is not None and self.model.training:  # every process's answers, gathered, as TRL sums them
                weights = self.reward_weights.to(rewards_per_func.device).unsqueeze(0)
                watch.record((rewards_per_func * weights).nansum(dim=1).tolist())
            return rewards_per_func

    return CoreGRPOTrainer(**kwargs)
