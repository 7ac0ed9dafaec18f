"""preflight: what a training run will do, told before it runs (the dry run of POST /train, and the first event of
every train run).

Token counts come from the very masks and truncation the trainers use, so a problem in the data or the chat template
(no end-of-turn token learned, rows cut, rows that teach nothing) shows before hours of compute are spent on it. The
model is built on the meta device (no weights are read); memory is an estimate (see `memory`), and tokens per second
are measured, on request, by running a few real optimizer steps (`throughput.measure_throughput`).
"""
from __future__ import annotations

import json
import math
import os
import statistics
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .. import events
from ..errors import SpecError
from .spec import Options as TrainOptions
from .throughput import free_memory, measure_throughput

SAMPLES = 2  # rows shown with their trained spans
END_OF_TURN_ROWS = 20  # rows whose trained tokens are searched for a stop token
FEW_STEPS = 10
END_OF_TURN_PAIRS = 8  # DPO pairs the base model's end-of-turn probability is measured on
# Below this median probability of ending the turn after the chosen answer, DPO alone will not teach stopping (see
# end_of_turn_warning). Measured (median over 8 pairs): the packaged Gemma 3 270M, pretrained and not instruction-tuned,
# 8e-14 on pairs that prefer <answer>word</answer> to the plain word (it runs on after them, as the 300-pair task found);
# the untrained tiny model 0.0018 on its QA pairs, and 0.9994 once 30 SFT steps taught it those answers.
DPO_END_OF_TURN_MIN = 0.1
# QLoRA keeps the decoder's linear weights in 4-bit NF4 with double-quantised scales: 4 bits + 0.5 bit per weight.
NF4_BYTES = 0.5625
# Activations kept for the backward pass, per token and layer, in units of hidden_size × 2 bytes (Korthikanti et al.
# 2022 count 34 for a GPT block without recomputation): only when the decoder's layers cannot be found by name.
ACTIVATION_FACTOR = 34
EAGER_ATTENTION_FACTOR = 5  # eager attention keeps scores, softmax and dropout mask: ~5 × heads × s² per layer
HEADROOM = 1.1  # allocator fragmentation, CUDA context, temporaries


@dataclass(kw_only=True)
class Options(TrainOptions):
    """Dry run of a training spec: validate it and report tokens, truncation, steps, memory and warnings as JSON."""

    output_file: str = field(metadata={"help": "where the report is written (JSON)"})
    measure_throughput: bool = field(default=False, metadata={
        "help": "also run 4 real optimizer steps on a temporary copy and report the tokens per second measured "
                "(seconds to minutes; nothing is saved)"})


def run(options: Options) -> None:
    from .run import load_processing_class
    from .validate import validate

    train_records, test_records, mode = validate(options)
    result = report(options, train_records, test_records, mode, load_processing_class(options))
    if sampled_checks_apply(options):
        from ..models import load_for_inference

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


@dataclass
class _Row:
    """One train row as the trainer sees it: the whole sequence before truncation (preference: prompt + chosen),
    which tokens carry loss, and the span ids[start:stop] that truncation keeps."""

    ids: list[int]
    trained: list[bool]
    start: int
    stop: int
    prompt: int = 0  # preference and prompt-only: prompt tokens before truncation
    counted: int = 0  # tokens TokenCounter counts for this row in a training step (see `_training_tokens`)

    @property
    def kept(self) -> int:
        return self.stop - self.start

    @property
    def trained_kept(self) -> int:
        return sum(self.trained[self.start:self.stop])


def report(spec: TrainOptions, train_records, test_records, mode, tokenizer) -> dict:
    """The preflight report (interface: POST /train with dry_run); `tokenizer` is the processing class training
    uses (the processor for modality vision). Token figures are over the train split."""
    hp = spec.hyperparameters
    rows = [_encode(spec, record, tokenizer) for record in train_records]
    _refuse_if_nothing_is_trained(spec, rows)
    lengths = sorted(len(r.ids) for r in rows)
    kept = sum(r.kept for r in rows)
    steps = _steps(spec, rows)
    model = _model_facts(spec)
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
        "samples": [{"segments": _segments(_text_tokenizer(tokenizer), r)} for r in rows[:SAMPLES]],
        "steps": steps,
        "training_tokens": _training_tokens(spec, rows, steps),
        "model": model.facts,
        "memory": memory(spec, rows, model),
        "throughput": None,
        "warnings": [],
    }
    result["warnings"] = _warnings(spec, rows, train_records, test_records, mode, tokenizer, result)
    return result


def _refuse_if_nothing_is_trained(spec: TrainOptions, rows: list[_Row]) -> None:
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


# --- tokens, as each trainer makes them ------------------------------------------------------------------------

def _text_tokenizer(processing_class):
    return getattr(processing_class, "tokenizer", processing_class)


def _encode(spec: TrainOptions, record: dict, tokenizer) -> _Row:
    hp = spec.hyperparameters
    if spec.trainer_type == "sft":
        if spec.modality == "vision":  # the collator's own encoding: image soft tokens included, mask carried over
            from ..vision import IGNORE, encode_conversation

            encoded = encode_conversation(tokenizer, record["messages"], sys.maxsize)
            ids, trained = encoded["input_ids"], [label != IGNORE for label in encoded["labels"]]
        else:  # the trainer's own mask (trainers.sft_dataset); truncation keeps the start
            from ..chat import trained_token_mask

            ids, mask = trained_token_mask(tokenizer, record["messages"], tools=record.get("tools"))
            trained = [bool(m) for m in mask]
        stop = min(len(ids), hp.max_length)
        return _Row(ids, trained, 0, stop, counted=stop)
    if spec.trainer_type == "dpo":
        return _dpo_row(record, tokenizer, hp)
    if spec.trainer_type == "orpo":
        return _orpo_row(record, tokenizer, hp)
    return _grpo_row(record, tokenizer, hp)


def _dpo_row(record: dict, tokenizer, hp) -> _Row:
    """TRL's DPOTrainer: prompt and completions templated as text, tokenized apart, eos appended to each completion;
    the prompt keeps its last max_prompt_length tokens, then prompt + completion its last max_length
    (truncation_mode keep_end, TRL's default)."""
    from trl import DPOTrainer
    from trl.data_utils import maybe_apply_chat_template

    texts = maybe_apply_chat_template({k: record[k] for k in ("prompt", "chosen", "rejected")}, tokenizer)
    tokens = DPOTrainer.tokenize_row(texts, tokenizer, None, None, add_special_tokens=False)
    prompt, chosen = tokens["prompt_input_ids"], tokens["chosen_input_ids"]
    start = max(len(prompt) - hp.max_prompt_length, 0)
    start += max(len(prompt) - start + len(chosen) - hp.max_length, 0)
    counted = min(len(prompt), hp.max_prompt_length) + len(chosen) + len(tokens["rejected_input_ids"])
    return _Row(prompt + chosen, [False] * len(prompt) + [True] * len(chosen), start, len(prompt) + len(chosen),
                prompt=len(prompt), counted=counted)


def _orpo_row(record: dict, tokenizer, hp) -> _Row:
    """TRL's ORPOTrainer.tokenize_row: prompt + answer tokenized together (split where the prompt's tokens end),
    bos/eos added when missing; if prompt + the longer answer exceed max_length the prompt keeps its last
    max_prompt_length tokens, and if still too long the answers keep their first max_length - max_prompt_length."""
    from trl.data_utils import maybe_apply_chat_template

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
    return _Row(prompt + chosen, [False] * len(prompt) + [True] * len(chosen), start, len(prompt) + answer_kept,
                prompt=len(prompt), counted=counted)


def _grpo_row(record: dict, tokenizer, hp) -> _Row:
    """TRL's GRPOTrainer: the templated prompt (with the generation prompt) tokenized with max_length =
    max_prompt_length on the tokenizer's truncation side; nothing of it carries loss (the completions do)."""
    from trl.data_utils import maybe_apply_chat_template

    text = maybe_apply_chat_template({"prompt": record["prompt"]}, tokenizer)["prompt"]
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    cut = max(len(ids) - hp.max_prompt_length, 0)
    start, stop = (cut, len(ids)) if tokenizer.truncation_side == "left" else (0, len(ids) - cut)
    return _Row(ids, [False] * len(ids), start, stop, prompt=len(ids), counted=_completion_budget(hp))


def _completion_budget(hp) -> int:
    """GRPO's max_completion_length as configs.trainer_config caps it."""
    return min(hp.max_completion_length, hp.max_length - hp.max_prompt_length)


def _percentile(ordered: list[int], q: float) -> float:
    """Linear interpolation between closest ranks (numpy's default), to one decimal: a count of tokens read by a person,
    without the float error of the interpolation (36.50000000000001)."""
    position = (len(ordered) - 1) * q / 100
    low = math.floor(position)
    high = min(low + 1, len(ordered) - 1)
    return round(ordered[low] + (ordered[high] - ordered[low]) * (position - low), 1)


def _segments(tokenizer, row: _Row) -> list[dict]:
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


# --- steps and tokens of the run -------------------------------------------------------------------------------

def _steps(spec: TrainOptions, rows: list[_Row]) -> dict:
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
        sequences = _packed_sequences([r.kept for r in rows], hp.max_length) if hp.packing else len(rows)
        per_epoch = max(math.ceil(math.ceil(sequences / hp.batch_size) / hp.gradient_accumulation_steps), 1)
    total = hp.max_steps if hp.max_steps > 0 else math.ceil(hp.epochs * per_epoch)
    return {"per_epoch": per_epoch, "total": total, "effective_batch_size": effective}


def _packed_sequences(lengths: list[int], size: int) -> int:
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


def _training_tokens(spec: TrainOptions, rows: list[_Row], steps: dict) -> int:
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
        return steps["total"] * steps["effective_batch_size"] * _completion_budget(hp)
    per_row = [r.counted for r in rows]
    if hp.max_steps > 0:
        epochs, rest = divmod(hp.max_steps, steps["per_epoch"])
        units = _packed_sequences([r.kept for r in rows], hp.max_length) if hp.packing else len(rows)
        return round(sum(per_row) * (epochs + min(rest * steps["effective_batch_size"] / units, 1)))
    return sum(per_row) * hp.epochs


# --- the model, without its weights ----------------------------------------------------------------------------

@dataclass
class _Model:
    facts: dict
    quantizable: int  # weights of the linear layers bitsandbytes quantises for QLoRA (all but the output layer)
    heads: int
    # Activation values one token keeps per decoder layer for the backward pass (see `_layer_activations`).
    layer_activations: int


def _model_facts(spec: TrainOptions) -> _Model:
    """Parameter counts from the model built on the meta device (config.json only; no weights read). Trainable:
    all for Full; for LoRA/QLoRA r × (in_features + out_features) over the linear layers PEFT adapts: every one
    but the output layer (target_modules all-linear), a vision model's text decoder projections, or the modules
    of the adapter being continued (init_adapter)."""
    import torch
    from accelerate import init_empty_weights
    from transformers import AutoConfig

    from .configs import _uses_bf16

    config = AutoConfig.from_pretrained(spec.base_model)
    text = config.get_text_config()
    if spec.modality == "vision":
        from transformers import AutoModelForImageTextToText as Auto
    else:
        from transformers import AutoModelForCausalLM as Auto
    with init_empty_weights():
        model = Auto.from_config(config)
    model.tie_weights()  # from_pretrained ties the output layer to the embedding (tie_word_embeddings); from_config not
    parameters = sum(p.numel() for p in model.parameters())
    output = model.get_output_embeddings()
    linears = [(name, m) for name, m in model.named_modules() if isinstance(m, torch.nn.Linear) and m is not output]
    if spec.method == "Full":
        trainable = parameters
    else:
        rank, targeted = _lora_targets(spec)
        trainable = sum(rank * (m.in_features + m.out_features) for name, m in linears if targeted(name))
    facts = {"parameters": parameters, "trainable_parameters": trainable,
             "dtype": "bfloat16" if _uses_bf16(spec) else "float32", "hidden_size": text.hidden_size,
             "num_layers": text.num_hidden_layers, "vocab_size": text.vocab_size}
    return _Model(facts, sum(m.weight.numel() for _, m in linears), text.num_attention_heads,
                  _layer_activations(spec, linears, text.hidden_size))


def _layer_activations(spec: TrainOptions, linears, hidden: int) -> int:
    """Values one token keeps for the backward pass in one decoder layer, counted on the first text decoder layer:
    each linear layer's input and output, the gated MLP's activation and product (2 × the gate's width), four
    hidden-wide norm and residual tensors; LoRA with dropout also keeps each adapted layer's dropped input. Measured
    against Gemma 3 270M on CPU (bench/preflight), the 34 × hidden of Korthikanti et al. (GPT blocks, 16-bit) fell
    short by a quarter: gated MLPs are wider and LoRA's dropout keeps copies."""
    layer = [(name, m) for name, m in linears if ".layers.0." in name and "vision" not in name]
    values = sum(m.in_features + m.out_features for _, m in layer) + 4 * hidden
    values += sum(2 * m.out_features for name, m in layer if name.endswith("gate_proj"))
    if spec.method != "Full" and spec.hyperparameters.lora_dropout > 0:
        _, targeted = _lora_targets(spec)
        values += sum(m.in_features for name, m in layer if targeted(name))
    return values


def _lora_targets(spec: TrainOptions):
    """(rank, name → adapted?) as PEFT matches target_modules: a string is a regex over the whole module name, a
    list names module-name suffixes."""
    import re

    from ..vision import LANGUAGE_MODEL_TARGETS

    rank, targets = spec.hyperparameters.lora_rank, None
    if spec.init_adapter:
        adapter = json.loads((Path(spec.init_adapter) / "adapter_config.json").read_text())
        rank, targets = adapter["r"], adapter["target_modules"]
    elif spec.modality == "vision":
        targets = LANGUAGE_MODEL_TARGETS
    if targets is None or targets == "all-linear":
        return rank, lambda name: True
    if isinstance(targets, str):
        return rank, lambda name: re.fullmatch(targets, name) is not None
    return rank, lambda name: any(name == t or name.endswith("." + t) for t in targets)


def memory(spec: TrainOptions, rows: list[_Row], model: _Model) -> dict:
    """Estimated peak accelerator memory of training, in bytes (an estimate: kernels, allocator and framework
    overheads vary; it errs on the high side). With d = 2 bytes for bfloat16, 4 for float32:

    weights   = parameters × d; QLoRA: linear weights × 0.5625 (NF4 + double-quantised scales) + the rest × 4
                (prepare_model_for_kbit_training upcasts the non-quantised parameters to float32)
    state     = LoRA/QLoRA: trainable × 16 (float32 weight, gradient, two Adam moments);
                Full: trainable × 3 × d (gradient, two Adam moments; the optimizer's temporaries come after the
                backward pass has freed the activations, so they do not add to this peak)
    activations, for the largest micro-batch of b rows of s = the longest kept row (packing: max_length) tokens
    (SFT padding-free: the b longest rows' tokens rather than b × s), over L layers of width h (DPO/ORPO:
    b = 2 × batch_size, chosen and rejected go through together; GRPO: s = prompt + max_completion_length):
                b × s × L × values kept per token and layer (`_layer_activations`; 17 × h when the layers are
                not found) × d
                + eager attention (use_fast_attention false, on the CPU; a GPU runs sdpa): 5 × heads × s² × b × L × d / 2
                + logits and their gradient in float32 (not with Liger's fused loss, configs.uses_liger):
                  b × positions × vocab × 4 × 2, where positions = the trained tokens of the row with the most
                  (the core's SFT computes logits only where a token is learned, lean_sft.py; packed: the loss
                  share of s), GRPO the completion, else s
    peak      = (weights + state + activations) × 1.1
    """
    from .configs import device_is_cuda, uses_liger

    hp = spec.hyperparameters
    facts = model.facts
    d = 2 if facts["dtype"] == "bfloat16" else 4
    if spec.method == "QLoRA":
        weights = model.quantizable * NF4_BYTES + (facts["parameters"] - model.quantizable) * 4
    else:
        weights = facts["parameters"] * d
    trainable = facts["trainable_parameters"]
    state = trainable * 16 if spec.method != "Full" else trainable * 3 * d
    b = hp.batch_size * (2 if spec.trainer_type in ("dpo", "orpo") else 1)
    longest = max(r.kept for r in rows)
    if spec.trainer_type == "grpo":
        s = longest + _completion_budget(hp)
        positions = _completion_budget(hp)
    elif spec.trainer_type == "sft" and hp.packing:
        s = hp.max_length
        share = sum(r.trained_kept for r in rows) / max(sum(r.kept for r in rows), 1)
        positions = math.ceil(share * s)
    elif spec.trainer_type == "sft":
        s = longest
        positions = max(r.trained_kept for r in rows)
    else:
        s = longest
        positions = s
    layers, hidden = facts["num_layers"], facts["hidden_size"]
    tokens = b * s
    if spec.trainer_type == "sft" and hp.padding_free and not hp.packing:  # one row of the batch's real tokens
        tokens = sum(sorted(r.kept for r in rows)[-b:])
    activations = tokens * layers * (model.layer_activations or ACTIVATION_FACTOR * hidden / 2) * d
    if not hp.use_fast_attention and not device_is_cuda(spec):
        activations += EAGER_ATTENTION_FACTOR * model.heads * s * s * b * layers * d / 2
    if not uses_liger(spec):  # Liger's fused loss takes the logits a chunk at a time and never keeps them
        activations += b * positions * facts["vocab_size"] * 4 * 2
    return {"estimated_peak_bytes": round((weights + state + activations) * HEADROOM), "weights_bytes": round(weights),
            "training_state_bytes": round(state), "activations_bytes": round(activations)}


# --- warnings, each with the change that fixes it ---------------------------------------------------------------

def _warnings(spec: TrainOptions, rows: list[_Row], train_records, test_records, mode, tokenizer, result) -> list[dict]:
    warnings = []

    def warn(code: str, message: str) -> None:
        warnings.append({"code": code, "message": message})

    text_tokenizer = _text_tokenizer(tokenizer)
    if spec.trainer_type == "sft":
        from ..chat import has_generation_markers

        empty = [n for n, r in enumerate(rows, start=1) if not any(r.trained)]
        if empty:
            block = " inside its {% generation %} block" if has_generation_markers(tokenizer) else ""
            cause = ("give each of them an assistant turn, or check that the chat template writes the assistant's "
                     f"content{block}")
            refused = ", and training refuses them" if spec.modality == "text" else ""
            warn("no_assistant_turn", f"{len(empty)} of {len(rows)} train rows ({_first(empty)}) have no token the "
                                      f"chat template of {spec.base_model} marks as the assistant's: they add "
                                      f"nothing to the loss{refused}; {cause}")
        checked = [r for r in rows if any(r.trained)][:END_OF_TURN_ROWS]
        stops = _stop_ids(spec.base_model, text_tokenizer)
        if checked and not any(t in stops for r in checked for t, on in zip(r.ids, r.trained) if on):
            names = ", ".join(repr(text_tokenizer.convert_ids_to_tokens(t)) for t in sorted(stops))
            warn("no_end_of_turn", f"the trained tokens of the first {len(checked)} train rows never include the "
                                   f"end-of-turn token ({names}), so the model would never learn to stop and would "
                                   "run on until max_new_tokens: put the end-of-turn token inside the "
                                   f"{{% generation %}} block of the chat template of {spec.base_model}")
    if test_records:
        duplicates = _duplicates(train_records, test_records, mode)
        if duplicates:
            warn("train_test_duplicates", f"{len(duplicates)} of {len(test_records)} test rows ({_first(duplicates)}) "
                                          "are also in the train split, so the test metrics reward memorising them: "
                                          "remove them from test_file or split the dataset again")
    truncated = result["truncated"]
    if truncated["examples"]:
        warn("truncated", _truncation_message(spec, rows, result, text_tokenizer))
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


def _batch_larger_than_split(spec: TrainOptions, rows: list[_Row]) -> str | None:
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
        have, unit = _packed_sequences([r.kept for r in rows], hp.max_length), "packed sequences"
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


def sampled_checks_apply(spec: TrainOptions) -> bool:
    """Whether the dry run reads the model's weights for `sampled_warnings` (the report itself never does)."""
    return (spec.trainer_type == "dpo" and not spec.hyperparameters.rpo_alpha) or spec.trainer_type == "grpo"


def sampled_warnings(spec: TrainOptions, train_records, model, tokenizer) -> list[dict]:
    """The dry run's warnings that need the model itself (loaded for inference): DPO from a model that does not end
    its turn after the chosen answers; GRPO whose graders score the base model's answers to a prompt all alike
    (reward_spread.py)."""
    from .reward_spread import sampled_reward_warning

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

    text_tokenizer = _text_tokenizer(tokenizer)
    stops = _stop_ids(spec.base_model, text_tokenizer)
    device = next(model.parameters()).device
    probabilities = []
    for record in train_records[:END_OF_TURN_PAIRS]:
        row = _dpo_row(record, text_tokenizer, spec.hyperparameters)
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


def _first(numbers: list[int], shown: int = 5) -> str:
    listed = ", ".join(map(str, numbers[:shown]))
    return f"row{'s' if len(numbers) > 1 else ''} {listed}{', …' if len(numbers) > shown else ''}"


def _stop_ids(model_dir: str, tokenizer) -> set[int]:
    """The tokens generation stops at: the tokenizer's eos and generation_config.json's eos_token_id(s)."""
    stops = {tokenizer.eos_token_id} - {None}
    path = Path(model_dir) / "generation_config.json"
    if path.is_file():
        configured = json.loads(path.read_text()).get("eos_token_id")
        stops |= set(configured if isinstance(configured, list) else [configured]) - {None}
    return stops


def _duplicates(train_records, test_records, mode) -> list[int]:
    """Test rows (numbered from 1) whose conversation is also in train."""
    from ..data import MESSAGE_KEYS

    def key(record):
        return json.dumps([record[k] for k in MESSAGE_KEYS[mode]], sort_keys=True)

    seen = {key(r) for r in train_records}
    return [n for n, r in enumerate(test_records, start=1) if key(r) in seen]


def _truncation_message(spec: TrainOptions, rows: list[_Row], result: dict, tokenizer) -> str:
    from .validate import model_context_length

    hp = spec.hyperparameters
    cut = [n for n, r in enumerate(rows, start=1) if r.kept < len(r.ids)]
    lost = result["truncated"]["loss_tokens_lost"]
    context = model_context_length(spec.base_model)
    limit = f" (the model's context is {context})" if context else ""
    head = f"{len(cut)} of {len(rows)} train rows ({_first(cut)})"
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
