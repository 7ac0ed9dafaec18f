"""SFT that projects onto the vocabulary only where a token is learned.

With assistant-only loss most positions of a chat (system, user, template) carry label -100, yet TRL computes the
full (batch × sequence × vocabulary) logits, and then the entropy over all of them, every step. For Gemma 3's
262k-token vocabulary that output layer is more than half the model's FLOPs and gigabytes of activations. Here the
model is asked for the logits of the learned positions only (`logits_to_keep` with indices, which transformers'
causal LMs accept), so the loss, its gradient and the logged metrics are the same, at a fraction of the cost.
With Liger's fused linear cross-entropy (CUDA, device.uses_liger) no logits are made at all, so TRL's own loss runs.
"""
from __future__ import annotations

import inspect

import torch
from trl import SFTTrainer

IGNORE = -100


class LearnedPositionsSFTTrainer(SFTTrainer):
    def compute_loss(self, model, inputs, return_outputs=False, num_items_in_batch=None):
        if (return_outputs or not model.training or "labels" not in inputs or self.args.use_liger_kernel
                or not _accepts_logits_to_keep(model)):
            return super().compute_loss(model, inputs, return_outputs=return_outputs,
                                        num_items_in_batch=num_items_in_batch)
        targets = torch.nn.functional.pad(inputs["labels"], (0, 1), value=IGNORE)[..., 1:]  # position p predicts p+1
        keep = (targets != IGNORE).any(dim=0).nonzero().squeeze(-1)
        if keep.numel() == 0:
            return super().compute_loss(model, inputs, num_items_in_batch=num_items_in_batch)
        if not self.model_accepts_loss_kwargs:  # the Trainer then divides by the accumulation steps itself
            num_items_in_batch = None
        model_inputs = {k: v for k, v in inputs.items() if k != "labels"}
        logits = model(**model_inputs, use_cache=False, logits_to_keep=keep).logits.float()
        targets = targets[:, keep]
        log_probs = torch.log_softmax(logits, dim=-1)
        # the reduction transformers' ForCausalLMLoss uses, so gradient accumulation weighs tokens the same way
        loss = torch.nn.functional.nll_loss(log_probs.flatten(0, 1), targets.flatten(), ignore_index=IGNORE,
                                            reduction="sum" if num_items_in_batch is not None else "mean")
        if num_items_in_batch is not None:
            loss = loss / num_items_in_batch
            if self.args.average_tokens_across_devices:
                loss = loss * self.accelerator.num_processes
        self._log_metrics(inputs, log_probs.detach(), targets)
        return loss

    def _log_metrics(self, inputs, log_probs, targets) -> None:
        """num_tokens, mean_token_accuracy and entropy as TRL logs them (entropy over the learned positions)."""
        learned = targets != IGNORE
        metrics = self._metrics["train"]
        entropy = -(log_probs.exp() * log_probs).sum(-1)
        metrics["entropy"].append(entropy[learned].mean().item())
        seen = inputs["attention_mask"].sum() if "attention_mask" in inputs else inputs["position_ids"].size(1)
        self._total_train_tokens += int(seen)
        metrics["num_tokens"] = [self._total_train_tokens]
        correct = (log_probs.argmax(-1) == targets) & learned
        metrics["mean_token_accuracy"].append((correct.sum() / learned.sum().clamp(min=1)).item())


def _accepts_logits_to_keep(model) -> bool:
    base = model.get_base_model() if hasattr(model, "get_base_model") else model
    return "logits_to_keep" in inspect.signature(base.forward).parameters
