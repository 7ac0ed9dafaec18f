"""ORPO: preference pairs through TRL's ORPOTrainer (the chosen answers' likelihood and the odds ratio in one loss)."""
from __future__ import annotations

from ...data import Mode
from ..contract import dataset_mode, settings_read_by
from ..spec import Options
from ..token_rows import TokenRow
from ..trainers import as_dataset

MODE: Mode = dataset_mode("orpo")
SETTINGS = settings_read_by("orpo")


def trainer_config(spec: Options, common: dict):
    from trl import ORPOConfig

    hp = spec.hyperparameters
    return ORPOConfig(**common, max_length=hp.max_length, max_prompt_length=hp.max_prompt_length, beta=hp.beta)


def token_row(spec: Options, record: dict, tokenizer) -> TokenRow:
    """TRL's ORPOTrainer.tokenize_row: prompt + answer tokenized together (split where the prompt's tokens end),
    bos/eos added when missing; if prompt + the longer answer exceed max_length the prompt keeps its last
    max_prompt_length tokens, and if still too long the answers keep their first max_length - max_prompt_length."""
    from trl.data_utils import maybe_apply_chat_template

    hp = spec.hyperparameters
    texts = maybe_apply_chat_template({k: record[k] for k in ("prompt", "chosen", "rejected")}, tokenizer)
    prompt_alone = tokenizer(texts["prompt"], add_special_tokens=False)["input_ids"]
    pairs = []
    for key in ("chosen", "rejected"):
        full = tokenizer(texts["prompt"] + texts[key], add_special_tokens=False)["input_ids"]
        split = len(prompt_alone) - (prompt_alone != full[:len(prompt_alone)])
        prompt, answer = full[:split], full[split:]
        if tokenizer.bos_token_id is not None and (not prompt or prompt[0] != tokenizer.bos_token_id):
            prompt = [tokenizer.bos_token_id] + prompt
        if not answer or answer[-1] != tokenizer.eos_token_id:
            answer = answer + [tokenizer.eos_token_id]
        pairs.append((prompt, answer))
    (prompt, chosen), (_, rejected) = pairs
    longer = max(len(chosen), len(rejected))
    start = max(len(prompt) - hp.max_prompt_length, 0) if len(prompt) + longer > hp.max_length else 0
    kept_prompt = len(prompt) - start
    cap = hp.max_length - hp.max_prompt_length if kept_prompt + longer > hp.max_length else longer
    answer_kept = min(len(chosen), cap)
    # TokenCounter sees the prompt_, chosen_ (prompt + chosen) and rejected_ (prompt + rejected) attention masks
    counted = 3 * kept_prompt + answer_kept + min(len(rejected), cap)
    return TokenRow(prompt + chosen, [False] * len(prompt) + [True] * len(chosen), start, len(prompt) + answer_kept,
                    prompt=len(prompt), counted=counted)


def build_trainer(spec: Options, common: dict, train_records, test_records):
    from trl import ORPOTrainer

    return ORPOTrainer(**common, train_dataset=as_dataset(train_records), eval_dataset=as_dataset(test_records))
