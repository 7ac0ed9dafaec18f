"""Honest evaluation: token-weighted loss and next-token accuracy on the assistant tokens of a test split."""
from __future__ import annotations

import math
import time

from .. import events


def assistant_token_metrics(model, tokenizer, conversations: list[list[dict]], max_length: int,
                            batch_size: int = 8, encode=None, tools: list | None = None) -> dict[str, float]:
    """eval_loss = mean NLL per assistant token, perplexity = exp(eval_loss), accuracy = share of assistant
    tokens the model predicts exactly (greedy, from the previous position), eval_runtime = seconds.
    `encode` turns a batch of conversations into model inputs with labels (vision: the processor's collator);
    by default the tokenizer's chat template does, with each conversation's tool definitions (`tools`) if any."""
    import torch

    started = time.monotonic()
    was_training = model.training
    model.eval()
    device = next(model.parameters()).device
    nll_sum, correct, total = 0.0, 0, 0
    tools = tools or [None] * len(conversations)
    for i in range(0, len(conversations), batch_size):
        batch = conversations[i:i + batch_size]
        encoded = encode(batch) if encode else _text_batch(tokenizer, batch, max_length, tools[i:i + batch_size])
        inputs = {k: v.to(device) for k, v in encoded.items()}
        labels = inputs.pop("labels")
        with torch.no_grad():
            logits = model(**inputs).logits.float()
        logits, targets = logits[:, :-1], labels[:, 1:]
        mask = targets != -100
        nll_sum += torch.nn.functional.cross_entropy(
            logits[mask], targets[mask], reduction="sum").item() if mask.any() else 0.0
        correct += int((logits.argmax(-1)[mask] == targets[mask]).sum())
        total += int(mask.sum())
    model.train(was_training)
    if total == 0:
        raise ValueError("the evaluation split has no assistant tokens within max_length")
    loss = nll_sum / total
    return {"eval_loss": loss, "perplexity": math.exp(min(loss, 700)), "accuracy": correct / total,
            "eval_runtime": time.monotonic() - started}


def _text_batch(tokenizer, conversations: list[list[dict]], max_length: int, tools: list) -> dict:
    import torch

    batch = [assistant_labels(tokenizer, c, max_length, t) for c, t in zip(conversations, tools)]
    width = max(len(ids) for ids, _ in batch)
    pad = tokenizer.pad_token_id
    return {"input_ids": torch.tensor([ids + [pad] * (width - len(ids)) for ids, _ in batch]),
            "attention_mask": torch.tensor([[1] * len(ids) + [0] * (width - len(ids)) for ids, _ in batch]),
            "labels": torch.tensor([lab + [-100] * (width - len(lab)) for _, lab in batch])}


def assistant_labels(tokenizer, conversation: list[dict], max_length: int,
                     tools: list | None = None) -> tuple[list[int], list[int]]:
    """Token ids of the chat-templated conversation and labels that keep only the tokens training learns (assistant
    turns, less those with weight 0)."""
    from ..chat import trained_token_mask

    ids, mask = trained_token_mask(tokenizer, conversation, tools=tools)
    ids, mask = ids[:max_length], mask[:max_length]
    return ids, [t if m else -100 for t, m in zip(ids, mask)]


def emit_final_metrics(model, tokenizer, conversations, max_length: int, batch_size: int, step: int,
                       encode=None, tools: list | None = None) -> dict:
    values = assistant_token_metrics(model, tokenizer, conversations, max_length, batch_size, encode, tools)
    events.emit(events.Metrics(step=step, final=True, **{k: round(v, 6) for k, v in values.items()}))
    return values


def token_accuracy_metrics():
    """compute_metrics for the Trainer (assistant-token accuracy); works batch by batch or on the whole set."""
    import torch

    state = {"correct": 0, "total": 0}

    def preprocess_logits(logits, labels):
        return logits.argmax(-1)

    def compute(eval_pred, compute_result: bool = True):
        preds = torch.as_tensor(eval_pred.predictions)
        labels = torch.as_tensor(eval_pred.label_ids)
        mask = labels[:, 1:] != -100
        state["correct"] += int((preds[:, :-1][mask] == labels[:, 1:][mask]).sum())
        state["total"] += int(mask.sum())
        if not compute_result:
            return {}
        accuracy = state["correct"] / max(state["total"], 1)
        state.update(correct=0, total=0)
        return {"accuracy": accuracy}

    return compute, preprocess_logits
