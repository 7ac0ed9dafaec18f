"""Pre-flight: warnings, each with the change that fixes it (what the report's rows show; sampled.py: what needs the
model's weights)."""
from __future__ import annotations

import json
import math
import os

from ..spec import Options as TrainOptions
from ..token_rows import TokenRow, listed_rows, stop_ids, text_tokenizer
from .steps import packed_sequences


END_OF_TURN_ROWS = 20  # rows whose trained tokens are searched for a stop token
FEW_STEPS = 10


def warnings_of(spec: TrainOptions, rows: list[TokenRow], train_records, test_records, mode, tokenizer, result) -> list[dict]:
    warnings = []

    def warn(code: str, message: str) -> None:
        warnings.append({"code": code, "message": message})

    text = text_tokenizer(tokenizer)
    if spec.trainer_type == "sft":
        from ...chat import has_generation_markers

        empty = [n for n, r in enumerate(rows, start=1) if not any(r.trained)]
        if empty:
            block = " inside its {% generation %} block" if has_generation_markers(tokenizer) else ""
            cause = ("give each of them an assistant turn, or check that the chat template writes the assistant's "
                     f"content{block}")
            refused = ", and training refuses them" if spec.modality == "text" else ""
            warn("no_assistant_turn", f"{len(empty)} of {len(rows)} train rows ({listed_rows(empty)}) have no token the "
                                      f"chat template of {spec.base_model} marks as the assistant's: they add "
                                      f"nothing to the loss{refused}; {cause}")
        checked = [r for r in rows if any(r.trained)][:END_OF_TURN_ROWS]
        stops = stop_ids(spec.base_model, text)
        if checked and not any(t in stops for r in checked for t, on in zip(r.ids, r.trained) if on):
            names = ", ".join(repr(text.convert_ids_to_tokens(t)) for t in sorted(stops))
            warn("no_end_of_turn", f"the trained tokens of the first {len(checked)} train rows never include the "
                                   f"end-of-turn token ({names}), so the model would never learn to stop and would "
                                   "run on until max_new_tokens: put the end-of-turn token inside the "
                                   f"{{% generation %}} block of the chat template of {spec.base_model}")
    if test_records:
        duplicates = _duplicates(train_records, test_records, mode)
        if duplicates:
            warn("train_test_duplicates", f"{len(duplicates)} of {len(test_records)} test rows ({listed_rows(duplicates)}) "
                                          "are also in the train split, so the test metrics reward memorising them: "
                                          "remove them from test_file or split the dataset again")
    truncated = result["truncated"]
    if truncated["examples"]:
        warn("truncated", _truncation_message(spec, rows, result, text))
    batch = _batch_larger_than_split(spec, rows)
    if batch:
        warn("batch_larger_than_split", batch)
    total = result["steps"]["total"]
    if total < FEW_STEPS:
        hp = spec.hyperparameters
        warn("few_steps", f"the run makes only {total} optimizer steps (effective batch "
                          f"{result['steps']['effective_batch_size']}), too few to learn much or for the learning rate "
                          f"schedule to take effect: raise epochs (now {hp.epochs}) or max_steps, or lower batch_size "
                          "or gradient_accumulation_steps")
    ev = spec.eval_config
    if ev.eval_strategy == "steps" and ev.eval_steps > total:
        # the Trainer evaluates at each multiple of eval_steps: none comes within the run (#39: the console's
        # "Quick check", 30 steps, with eval_steps at its default of 50)
        warn("no_evaluation", f"eval_strategy steps evaluates every {ev.eval_steps} steps (eval_steps) but the run "
                              f"makes only {total}, so no evaluation runs during training"
                              f"{_evaluation_needs(ev)}: lower eval_steps to at most {total} (e.g. "
                              f"{max(total // 3, 1)}), or set eval_strategy epoch")
    return warnings


def _batch_larger_than_split(spec: TrainOptions, rows: list[TokenRow]) -> str | None:
    """An optimizer step that asks for more rows than the train split has (#54: 6 rows with batch_size 4 ×
    gradient_accumulation_steps 4 took 190 s where a batch that fits took 83 s). Devices: WORLD_SIZE, which torchrun
    sets for a real job on several; a dry run counts one."""
    hp = spec.hyperparameters
    devices = int(os.environ.get("WORLD_SIZE", "1"))
    effective = hp.batch_size * hp.gradient_accumulation_steps * devices
    if spec.trainer_type == "grpo":  # a step takes `effective` completions, num_generations of them per prompt
        have = len(rows) * hp.num_generations
        unit = f"completions: {len(rows)} prompts × num_generations {hp.num_generations}"
    elif spec.trainer_type == "sft" and hp.packing:
        have, unit = packed_sequences([r.kept for r in rows], hp.max_length), "packed sequences"
    else:
        have, unit = len(rows), "rows"
    if effective <= have:
        return None
    on_devices = f" × {devices} devices" if devices > 1 else ""
    lower = [f"gradient_accumulation_steps to {max(have // (hp.batch_size * devices), 1)}"]
    if hp.gradient_accumulation_steps * devices <= have:
        lower.append(f"batch_size to {have // (hp.gradient_accumulation_steps * devices)}")
    return (f"the effective batch (batch_size {hp.batch_size} × gradient_accumulation_steps "
            f"{hp.gradient_accumulation_steps}{on_devices} = {effective}) is larger than the train split ({have} "
            f"{unit}), so each epoch is a single optimizer step that never fills it: lower {' or '.join(lower)}, "
            "or add rows")


def _evaluation_needs(ev) -> str:
    """What else goes without the evaluations during training."""
    needs = [name for name, on in (("early stopping", ev.early_stopping_patience),
                                   ("load_best_model_at_end", ev.load_best_model_at_end)) if on]
    return f" and {' and '.join(needs)} {'has' if len(needs) == 1 else 'have'} nothing to compare" if needs else ""


def _duplicates(train_records, test_records, mode) -> list[int]:
    """Test rows (numbered from 1) whose conversation is also in train."""
    from ...data import MESSAGE_KEYS

    def key(record):
        return json.dumps([record[k] for k in MESSAGE_KEYS[mode]], sort_keys=True)

    seen = {key(r) for r in train_records}
    return [n for n, r in enumerate(test_records, start=1) if key(r) in seen]


def _truncation_message(spec: TrainOptions, rows: list[TokenRow], result: dict, tokenizer) -> str:
    from ..validate import model_context_length

    hp = spec.hyperparameters
    cut = [n for n, r in enumerate(rows, start=1) if r.kept < len(r.ids)]
    lost = result["truncated"]["loss_tokens_lost"]
    context = model_context_length(spec.base_model)
    limit = f" (the model's context is {context})" if context else ""
    head = f"{len(cut)} of {len(rows)} train rows ({listed_rows(cut)})"
    emptied = sum(1 for r in rows if any(r.trained) and not r.trained_kept)
    none = f" ({emptied} rows keep none and teach nothing)" if emptied else ""
    if spec.trainer_type == "sft":
        tokens = result["tokens"]
        p95, longest = math.ceil(tokens["p95"]), tokens["max"]
        target = f"{longest}" if p95 >= longest else f"{p95} (fits 95% of rows) or {longest} (fits all)"
        return (f"{head} are longer than max_length {hp.max_length} and are cut at the end, losing {lost} trained "
                f"tokens{none}: raise max_length to {target}{limit}, or shorten those rows")
    longest_prompt = max(r.prompt for r in rows)
    if spec.trainer_type == "grpo":
        side = "start" if tokenizer.truncation_side == "left" else "end (the generation prompt goes with it)"
        return (f"{head} have prompts longer than max_prompt_length {hp.max_prompt_length} tokens and are cut at "
                f"the {side}: raise max_prompt_length to {longest_prompt} (max_length must stay above it){limit}, "
                "or shorten those prompts")
    return (f"{head} are cut by max_prompt_length {hp.max_prompt_length} or max_length {hp.max_length} (prompt "
            f"and chosen answer), losing {lost} trained tokens of the chosen answers{none}: raise max_prompt_length "
            f"to {longest_prompt} and max_length to {max(len(r.ids) for r in rows)}{limit}, or shorten those rows")
