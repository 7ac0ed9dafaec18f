"""preflight: what a training run will do, told before it runs (the dry run of POST /train, and the first event of
every train run).

Token counts come from the very masks and truncation the trainers use, so a problem in the data or the chat template
(no end-of-turn token learned, rows cut, rows that teach nothing) shows before hours of compute are spent on it. The
model is built on the meta device (no weights are read); memory is an estimate (memory.py), and tokens per second
are measured, on request, by running a few real optimizer steps (`throughput.measure_throughput`).
"""
from __future__ import annotations

import json
import math
import statistics
from dataclasses import dataclass, field
from pathlib import Path

from ... import events
from ...errors import SpecError
from ..methods import method_of
from ..spec import Options as TrainOptions
from ..throughput import free_memory, measure_throughput
from ..token_rows import TokenRow, text_tokenizer
from .memory import memory, model_facts
from .sampled import sampled_checks_apply, sampled_warnings
from .steps import steps_of, training_tokens
from .warnings import warnings_of

SAMPLES = 2  # rows shown with their trained spans


@dataclass(kw_only=True)
class Options(TrainOptions):
    """Dry run of a training spec: validate it and report tokens, truncation, steps, memory and warnings as JSON."""

    output_file: str = field(metadata={"help": "where the report is written (JSON)"})
    measure_throughput: bool = field(default=False, metadata={
        "help": "also run 4 real optimizer steps on a temporary copy and report the tokens per second measured "
                "(seconds to minutes; nothing is saved)"})


def run(options: Options) -> None:
    from ..setup import load_processing_class
    from ..validate import validate

    train_records, test_records, mode = validate(options)
    result = report(options, train_records, test_records, mode, load_processing_class(options))
    if sampled_checks_apply(options):
        from ...models.loading import load_for_inference

        model, tokenizer = load_for_inference(options.base_model, options.init_adapter, options.device)
        result["warnings"] += sampled_warnings(options, train_records, model, tokenizer)
        del model
        free_memory()
    if options.measure_throughput:
        result["throughput"] = measure_throughput(options, train_records, test_records, mode, result["memory"])
    out = Path(options.output_file)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2, allow_nan=False) + "\n")
    events.emit(events.Preflight(report=result))


def report(spec: TrainOptions, train_records, test_records, mode, tokenizer) -> dict:
    """The preflight report (interface: POST /train with dry_run); `tokenizer` is the processing class training
    uses (the processor for modality vision). Token figures are over the train split."""
    hp = spec.hyperparameters
    token_row = method_of(spec).token_row
    rows = [token_row(spec, record, tokenizer) for record in train_records]
    _refuse_if_nothing_is_trained(spec, rows)
    lengths = sorted(len(r.ids) for r in rows)
    kept = sum(r.kept for r in rows)
    steps = steps_of(spec, rows)
    model = model_facts(spec)
    result = {
        "trainer_type": spec.trainer_type,
        "method": spec.method,
        "examples": {"train": len(train_records), "test": len(test_records) if test_records is not None else None},
        "tokens": {"min": lengths[0], "median": float(statistics.median(lengths)),
                   "p95": _percentile(lengths, 95), "max": lengths[-1], "total": sum(lengths)},
        "max_length": hp.max_length,
        "truncated": {"examples": sum(r.kept < len(r.ids) for r in rows),
                      "loss_tokens_lost": sum(sum(r.trained) - r.trained_kept for r in rows)},
        "loss_token_share": (None if spec.trainer_type == "grpo" else
                             round(sum(r.trained_kept for r in rows) / max(kept, 1), 6)),
        "samples": [{"segments": _segments(text_tokenizer(tokenizer), r)} for r in rows[:SAMPLES]],
        "steps": steps,
        "training_tokens": training_tokens(spec, rows, steps),
        "model": model.facts,
        "memory": memory(spec, rows, model),
        "throughput": None,
        "warnings": [],
    }
    result["warnings"] = warnings_of(spec, rows, train_records, test_records, mode, tokenizer, result)
    return result


def _refuse_if_nothing_is_trained(spec: TrainOptions, rows: list[TokenRow]) -> None:
    """Truncation that cuts every trained token of every row away leaves the run nothing to learn: each batch's loss
    would be 0/0 (#56: a soak's job failed at step 1 with a NaN loss). Refused before anything loads, naming the length
    setting and the longest row."""
    if spec.trainer_type == "grpo" or not any(any(r.trained) for r in rows) or any(r.trained_kept for r in rows):
        return
    hp = spec.hyperparameters
    longest = max(range(len(rows)), key=lambda n: len(rows[n].ids))
    size = len(rows[longest].ids)
    if spec.trainer_type == "sft":
        raise SpecError(f"every train row is longer than max_length {hp.max_length} where its answer starts, so "
                        f"truncation leaves no answer token to learn from; the longest, row {longest + 1}, is {size} "
                        f"tokens: raise max_length to {size}, or shorten the rows")
    longest_prompt = max(r.prompt for r in rows)
    raise SpecError(f"max_prompt_length {hp.max_prompt_length} and max_length {hp.max_length} leave no token of any "
                    f"chosen answer to learn from; the longest row, row {longest + 1}, is {size} tokens (the longest "
                    f"prompt {longest_prompt}): raise max_prompt_length to {longest_prompt} and max_length to {size}, "
                    "or shorten the rows")


def _percentile(ordered: list[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), to one decimal: a count of tokens read by a person,
    without the float error of the interpolation (36.50000000000001)."""
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 1)


def _segments(tokenizer, row: TokenRow) -> list[dict]:
    """The kept tokens decoded in runs of trained / not trained."""
    segments: list[dict] = []
    run: list[int] = []
    for i in range(row.start, row.stop):
        if run and row.trained[i] != row.trained[i - 1]:
            segments.append({"text": tokenizer.decode(run), "trained": row.trained[i - 1]})
            run = []
        run.append(row.ids[i])
    if run:
        segments.append({"text": tokenizer.decode(run), "trained": row.trained[row.stop - 1]})
    return segments
