"""DPO: preference pairs (prompt, chosen, rejected) through TRL's DPOTrainer."""
from __future__ import annotations

from ...data import Mode
from ..contract import dataset_mode, settings_read_by
from ..spec import Options, set_only
from ..token_rows import TokenRow
from ..trainers import as_dataset

MODE: Mode = dataset_mode("dpo")
SETTINGS = settings_read_by("dpo")


def trainer_config(spec: Options, common: dict):
    from trl import DPOConfig

    hp = spec.hyperparameters
    return DPOConfig(**common, max_length=hp.max_length, max_prompt_length=hp.max_prompt_length,
                     beta=hp.beta, padding_free=hp.padding_free,
                     **set_only(loss_type=hp.loss_type, rpo_alpha=hp.rpo_alpha))


def token_row(spec: Options, record: dict, tokenizer) -> TokenRow:
    """TRL's DPOTrainer: prompt and completions templated as text, tokenized apart, eos appended to each completion;
    the prompt keeps its last max_prompt_length tokens, then prompt + completion its last max_length
    (truncation_mode keep_end, TRL's default)."""
    from trl import DPOTrainer
    from trl.data_utils import maybe_apply_chat_template

    hp = spec.hyperparameters
    texts = maybe_apply_chat_template({k: record[k] for k in ("prompt", "chosen", "rejected")}, tokenizer)
    tokens = DPOTrainer.tokenize_row(texts, tokenizer, None, None, add_special_tokens=False)
    prompt, chosen = tokens["prompt_input_ids"], tokens["chosen_input_ids"]
    start = max(len(prompt) - hp.max_prompt_length, 0)
    start += max(len(prompt) - start + len(chosen) - hp.max_length, 0)
    counted = min(len(prompt), hp.max_prompt_length) + len(chosen) + len(tokens["rejected_input_ids"])
    return TokenRow(prompt + chosen, [False] * len(prompt) + [True] * len(chosen), start, len(prompt) + len(chosen),
                    prompt=len(prompt), counted=counted)


def build_trainer(spec: Options, common: dict, train_records, test_records):
    from trl import DPOTrainer

    return DPOTrainer(**common, train_dataset=as_dataset(train_records), eval_dataset=as_dataset(test_records))
