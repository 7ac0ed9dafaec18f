"""Pre-flight: the run's optimizer steps and the tokens it trains on."""
from __future__ import annotations

import math

from ..spec import Options as TrainOptions
from ..spec import completion_budget
from ..token_rows import TokenRow


def steps_of(spec: TrainOptions, rows: list[TokenRow]) -> dict:
    """The HF Trainer's count: micro-batches = ceil(sequences / batch_size), an optimizer step every
    gradient_accumulation_steps of them (a short last one still counts), epochs × that unless max_steps > 0.
    Packed SFT trains on the sequences best-fit-decreasing packing makes (TRL's bfd). GRPO samples
    num_generations completions per prompt and takes batch_size × gradient_accumulation_steps completions per step;
    its sampler drops the prompts that do not fill a whole step."""
    hp = spec.hyperparameters
    effective = hp.batch_size * hp.gradient_accumulation_steps
    if spec.trainer_type == "grpo":
        per_epoch = max(len(rows) * hp.num_generations // effective, 1)
    else:
        sequences = packed_sequences([r.kept for r in rows], hp.max_length) if hp.packing else len(rows)
        per_epoch = max(math.ceil(math.ceil(sequences / hp.batch_size) / hp.gradient_accumulation_steps), 1)
    total = hp.max_steps if hp.max_steps > 0 else math.ceil(hp.epochs * per_epoch)
    return {"per_epoch": per_epoch, "total": total, "effective_batch_size": effective}


def packed_sequences(lengths: list[int], size: int) -> int:
    """Bins best-fit-decreasing packing fills (each row into the fullest bin it still fits, else a new bin)."""
    import bisect

    spaces: list[int] = []  # free space of the open bins, sorted
    bins = 0
    for length in sorted(lengths, reverse=True):
        i = bisect.bisect_left(spaces, length)
        if i < len(spaces):
            space = spaces.pop(i)
        else:
            space, bins = size, bins + 1
        if space - length > 0:
            bisect.insort(spaces, space - length)
    return bins


def training_tokens(spec: TrainOptions, rows: list[TokenRow], steps: dict) -> int:
    """Tokens the run pushes through the model, counted as TokenCounter counts them (so that training_tokens /
    the measured tokens per second is the wall time): SFT the kept tokens of each row (packing changes the
    sequences, not the tokens); DPO prompt + chosen + rejected; ORPO prompt + (prompt + chosen) +
    (prompt + rejected); GRPO the completion tokens, at most max_completion_length each (an upper bound).
    With max_steps > 0: every row once per whole epoch the steps make, and the share of the rows the steps left over
    take (each a full effective batch: an epoch's short last batch is its last step). Counted as the mean row × the
    effective batch × the steps, a 6-row set in batches of 4 (a full step, then one of 2) came out 4/3 of what was
    trained, and the estimate 1.4× the time (#39)."""
    hp = spec.hyperparameters
    if spec.trainer_type == "grpo":
        return steps["total"] * steps["effective_batch_size"] * completion_budget(hp)
    per_row = [r.counted for r in rows]
    if hp.max_steps > 0:
        epochs, rest = divmod(hp.max_steps, steps["per_epoch"])
        units = packed_sequences([r.kept for r in rows], hp.max_length) if hp.packing else len(rows)
        return round(sum(per_row) * (epochs + min(rest * steps["effective_batch_size"] / units, 1)))
    return sum(per_row) * hp.epochs
