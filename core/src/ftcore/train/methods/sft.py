"""SFT: supervised fine-tuning on conversations, the loss on the assistant's tokens (chat.trained_token_mask); the only
trainer for modality vision."""
from __future__ import annotations

import sys

from ...data import Mode
from ..contract import dataset_mode, settings_read_by
from .. import device
from ..spec import Options
from ..token_rows import TokenRow
from ..trainers import as_dataset

MODE: Mode = dataset_mode("sft")
SETTINGS = settings_read_by("sft")


def trainer_config(spec: Options, common: dict):
    from trl import SFTConfig

    hp = spec.hyperparameters
    if spec.modality == "vision":  # records stay as they are; vision.VisionChatCollator masks the labels
        return SFTConfig(**common, max_length=hp.max_length, assistant_only_loss=False,
                         remove_unused_columns=False, dataset_kwargs={"skip_prepare_dataset": True})
    # the records come tokenized with their loss mask (sft_dataset), which TRL's collator applies
    return SFTConfig(**common, max_length=hp.max_length, packing=hp.packing, padding_free=hp.padding_free,
                     assistant_only_loss=False, dataset_num_proc=None, use_liger_kernel=device.uses_liger(spec),
                     pad_to_multiple_of=device.FLEX_BLOCK if device.packed_on_flex(spec) else None)


def token_row(spec: Options, record: dict, tokenizer) -> TokenRow:
    """The trainer's own tokens: the collator's encoding for vision (image soft tokens included, mask carried over),
    else the mask sft_dataset gives; truncation keeps the start."""
    if spec.modality == "vision":
        from ...models.vision import IGNORE, encode_conversation

        encoded = encode_conversation(tokenizer, record["messages"], sys.maxsize)
        ids, trained = encoded["input_ids"], [label != IGNORE for label in encoded["labels"]]
    else:
        from ...chat import trained_token_mask

        ids, mask = trained_token_mask(tokenizer, record["messages"], tools=record.get("tools"))
        trained = [bool(m) for m in mask]
    stop = min(len(ids), spec.hyperparameters.max_length)
    return TokenRow(ids, trained, 0, stop, counted=stop)


def sft_dataset(records, tokenizer, what: str):
    """SFT records as TRL takes a processed dataset, {input_ids, assistant_masks}, with the core's loss mask
    (chat.trained_token_mask: the template's assistant turns, less those with weight 0); TRL still truncates or packs
    them, and its collator gives the tokens outside the mask label -100. A row with no trained token is refused, as
    TRL refuses one when it applies the template itself."""
    from ...chat import trained_token_mask
    from ...errors import SpecError

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
    return as_dataset(rows)


def build_trainer(spec: Options, common: dict, train_records, test_records):
    from ..lean_sft import LearnedPositionsSFTTrainer

    tokenizer = common["processing_class"]
    extra = {}
    if spec.modality == "vision":  # message contents mix strings and part lists, which Arrow cannot hold in a column
        from ...models.vision import VisionChatCollator

        train, test = train_records, test_records
        extra["data_collator"] = VisionChatCollator(tokenizer, spec.hyperparameters.max_length)
    else:
        train, test = sft_dataset(train_records, tokenizer, "train"), sft_dataset(test_records, tokenizer, "test")
    if spec.eval_config.compute_eval_metrics and test is not None:
        from ..metrics import token_accuracy_metrics

        extra["compute_metrics"], extra["preprocess_logits_for_metrics"] = token_accuracy_metrics()
    return LearnedPositionsSFTTrainer(**common, train_dataset=train, eval_dataset=test, **extra)
