"""Pre-flight: the dry run's warnings that need the model's weights (loaded for inference), which the report itself never
reads: DPO from a model that does not end its turn after the chosen answers; GRPO whose graders score the base model's
answers to a prompt all alike."""
from __future__ import annotations

import statistics

from ..methods.dpo import token_row as dpo_row
from ..spec import Options as TrainOptions
from ..token_rows import stop_ids, text_tokenizer


END_OF_TURN_PAIRS = 8  # DPO pairs the base model's end-of-turn probability is measured on


# Below this median probability of ending the turn after the chosen answer, DPO alone will not teach stopping (see
# end_of_turn_warning). Measured (median over 8 pairs): the packaged Gemma 3 270M, pretrained and not instruction-tuned,
# 8e-14 on pairs that prefer <answer>word</answer> to the plain word (it runs on after them, as the 300-pair task found);
# the untrained tiny model 0.0018 on its QA pairs, and 0.9994 once 30 SFT steps taught it those answers.
DPO_END_OF_TURN_MIN = 0.1


def sampled_checks_apply(spec: TrainOptions) -> bool:
    """Whether the dry run reads the model's weights for `sampled_warnings` (the report itself never does)."""
    return (spec.trainer_type == "dpo" and not spec.hyperparameters.rpo_alpha) or spec.trainer_type == "grpo"


def sampled_warnings(spec: TrainOptions, train_records, model, tokenizer) -> list[dict]:
    """The dry run's warnings that need the model itself (loaded for inference): DPO from a model that does not end
    its turn after the chosen answers; GRPO whose graders score the base model's answers to a prompt all alike
    (reward_spread.py)."""
    from ..reward_spread import sampled_reward_warning

    warnings = []
    if spec.trainer_type == "dpo" and not spec.hyperparameters.rpo_alpha:
        warnings.append(end_of_turn_warning(spec, end_of_turn_probability(spec, train_records, tokenizer, model)))
    if spec.trainer_type == "grpo":
        warnings.append(sampled_reward_warning(spec, train_records, model, tokenizer))
    return [w for w in warnings if w]


def end_of_turn_probability(spec: TrainOptions, train_records, tokenizer, model) -> float | None:
    """DPO only: the median, over the first END_OF_TURN_PAIRS train pairs, of the model's probability of ending its
    turn right after the chosen answer (the first stop token of the chosen completion as DPO tokenizes it, given
    everything before it). None for other trainers, or rows without a stop token."""
    if spec.trainer_type != "dpo":
        return None
    import torch

    text = text_tokenizer(tokenizer)
    stops = stop_ids(spec.base_model, text)
    device = next(model.parameters()).device
    probabilities = []
    for record in train_records[:END_OF_TURN_PAIRS]:
        row = dpo_row(spec, record, text)
        at = next((i for i in range(row.prompt, len(row.ids)) if row.ids[i] in stops), None)
        if at is None or at == 0:
            continue
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([row.ids[:at]], device=device)).logits[0, -1].float()
        probabilities.append(torch.softmax(logits, dim=-1)[row.ids[at]].item())
    return statistics.median(probabilities) if probabilities else None


def end_of_turn_warning(spec: TrainOptions, probability: float | None) -> dict | None:
    """A warning when DPO starts from a model that would not end its turn after the chosen answers: DPO's loss moves
    the chosen answer's likelihood only relative to the rejected one's, and the end of turn is in both, so it never
    teaches stopping (a run then answers right and runs on). rpo_alpha adds the chosen answers' likelihood."""
    if probability is None or probability >= DPO_END_OF_TURN_MIN or spec.hyperparameters.rpo_alpha:
        return None
    return {"code": "dpo_no_end_of_turn", "message": (
        f"{spec.base_model} ends its turn after the chosen answers with a median probability of {probability:.2g} "
        f"(below {DPO_END_OF_TURN_MIN:g}, the first {END_OF_TURN_PAIRS} train pairs): DPO compares the chosen answer "
        "with the rejected one and both end their turn, so it will not teach the model to stop, and it will keep "
        "writing after a right answer. Fine-tune it with SFT on the chosen answers first (then DPO from that job), "
        "train with ORPO, or set rpo_alpha (e.g. 1.0), which adds the chosen answers' likelihood to the loss")}
