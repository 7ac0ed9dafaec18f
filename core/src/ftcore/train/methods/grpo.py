"""GRPO: prompts only; completions sampled through the core's generation engine and scored by the job's rewards."""
from __future__ import annotations

from ...data import Mode
from ..contract import dataset_mode, settings_read_by
from ..spec import Options, completion_budget, set_only
from ..token_rows import TokenRow
from ..trainers import as_dataset

MODE: Mode = dataset_mode("grpo")
SETTINGS = settings_read_by("grpo")


def trainer_config(spec: Options, common: dict):
    from trl import GRPOConfig

    hp = spec.hyperparameters
    return GRPOConfig(**common, max_prompt_length=hp.max_prompt_length, num_generations=hp.num_generations,
                      max_completion_length=completion_budget(hp), beta=hp.beta, log_completions=False,
                      remove_unused_columns=False,
                      **set_only(loss_type=hp.loss_type, importance_sampling_level=hp.importance_sampling_level,
                                 epsilon=hp.epsilon, epsilon_high=hp.epsilon_high, scale_rewards=hp.scale_rewards,
                                 mask_truncated_completions=hp.mask_truncated_completions,
                                 temperature=hp.temperature))


def token_row(spec: Options, record: dict, tokenizer) -> TokenRow:
    """TRL's GRPOTrainer: the templated prompt (with the generation prompt) tokenized with max_length =
    max_prompt_length on the tokenizer's truncation side; nothing of it carries loss (the completions do)."""
    from trl.data_utils import maybe_apply_chat_template

    hp = spec.hyperparameters
    text = maybe_apply_chat_template({"prompt": record["prompt"]}, tokenizer)["prompt"]
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    cut = max(len(ids) - hp.max_prompt_length, 0)
    start, stop = (cut, len(ids)) if tokenizer.truncation_side == "left" else (0, len(ids) - cut)
    return TokenRow(ids, [False] * len(ids), start, stop, prompt=len(ids), counted=completion_budget(hp))


def build_trainer(spec: Options, common: dict, train_records, test_records):
    from ..reward_spread import EqualRewardWatch
    from ..rewards import build_reward_function

    rewards = [build_reward_function(r) for r in spec.reward_config]
    common["args"].reward_weights = [r.weight for r in spec.reward_config]
    watch = EqualRewardWatch(spec)
    trainer = grpo_trainer(spec.response_schema, watch, reward_funcs=rewards, train_dataset=as_dataset(train_records),
                           eval_dataset=as_dataset(test_records), **common)
    trainer.add_callback(watch)
    return trainer


def grpo_trainer(schema: dict | None, watch=None, **kwargs):
    """TRL's GRPOTrainer, sampling through the core's generation engine. TRL calls transformers' generate inside
    _generate_single_turn with compiling turned off and a GenerationConfig that cannot carry a per-token filter; here
    that call goes, on CUDA, to a static KV cache with the decode step compiled (inference/generate.compiled_generate: CUDA
    graphs, the prompts padded to one width so each step replays the same graph), and, with `schema`, through
    lm-format-enforcer's prefix_allowed_tokens_fn (a fresh one per batch of prompts, as the core's forced tool calls
    do: inference/constrained.py). Whether a compile pays is judged on the completions of the whole run. `watch`
    (reward_spread.EqualRewardWatch) is told the weighted reward of every answer training scores."""
    import functools

    import torch
    from trl import GRPOTrainer

    from ...inference.constrained import allowed_tokens_fn
    from ...inference.generate import choose_engine, compiled_generate

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
