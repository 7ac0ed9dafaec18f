"""Checks a training spec against its dataset, model and machine before anything heavy is loaded.

Every failure says what to change.
"""
from __future__ import annotations

import json
from pathlib import Path

from ..data import MESSAGE_KEYS, MODE_FIELDS, Mode, detect_mode, read_jsonl
from ..errors import SpecError
from .methods import TRAINERS, method_of
from .contract import CONTRACT, loss_types
from .spec import Options


def model_context_length(model_dir: str) -> int | None:
    config = json.loads((Path(model_dir) / "config.json").read_text())
    config = config.get("text_config", config)
    return config.get("max_position_embeddings")


def cuda_available() -> bool:
    import torch

    return torch.cuda.is_available()


def validate(spec: Options) -> tuple[list[dict], list[dict] | None, Mode]:
    """Returns the train records, test records (or None) and the dataset mode."""
    hp = spec.hyperparameters
    if spec.method == "QLoRA" and (spec.device == "cpu" or not cuda_available()):
        raise SpecError("QLoRA needs a CUDA GPU; use LoRA")
    if not (Path(spec.base_model) / "config.json").is_file():
        raise SpecError(f"base_model {spec.base_model} is not a model folder (no config.json); "
                        "run import-model or make-tiny-model first, or pass the folder the worker downloaded")

    train = read_jsonl(spec.train_file, "train_file")
    mode = detect_mode(train, "train_file")
    test = None
    if spec.test_file:
        test = read_jsonl(spec.test_file, "test_file")
        if detect_mode(test, "test_file") != mode:
            raise SpecError("test_file and train_file have different record shapes; use splits of one processed dataset")
    needed = method_of(spec).MODE
    if mode != needed:
        fitting = [t for t, m in TRAINERS.items() if m.MODE == mode]
        raise SpecError(f"trainer_type {spec.trainer_type} needs {needed} records {MODE_FIELDS[needed]}, but the "
                        f"dataset is {mode}; use trainer_type {' or '.join(fitting)}, or process the dataset "
                        f"with processing_mode {needed}")

    _check_modality(spec, train, test, mode)
    _check_tools(spec, train, test)
    context = model_context_length(spec.base_model)
    if context and hp.max_length > context:
        raise SpecError(f"max_length {hp.max_length} exceeds the model's {context} context; lower max_length")
    if "max_prompt_length" in method_of(spec).SETTINGS and hp.max_prompt_length >= hp.max_length:
        raise SpecError(f"max_prompt_length {hp.max_prompt_length} leaves no room for the answer within "
                        f"max_length {hp.max_length}; lower max_prompt_length")
    _check_valid_graders(spec)
    if spec.eval_config.eval_strategy != "no" and not test:
        raise SpecError(f"eval_strategy {spec.eval_config.eval_strategy} needs a test split; pass test_file "
                        "(process the dataset with a manual_split) or set eval_strategy no")
    if hp.packing and spec.trainer_type != "sft":
        raise SpecError(f"packing applies to sft only; set packing false for {spec.trainer_type}")
    if hp.padding_free and spec.trainer_type not in ("sft", "dpo"):
        raise SpecError(f"padding_free applies to sft and dpo only; set padding_free false for {spec.trainer_type}")
    _check_scheduler(hp.lr_scheduler_type)
    allowed_losses = loss_types(spec.trainer_type)
    if hp.loss_type is not None and allowed_losses and hp.loss_type not in allowed_losses:
        raise SpecError(f"loss_type {hp.loss_type!r} is not a {spec.trainer_type} loss; use one of {', '.join(allowed_losses)}")
    if spec.trainer_type == "grpo":
        _check_rewards(spec, train)
        generation_batch = hp.batch_size * hp.gradient_accumulation_steps
        if hp.num_generations < 2 or generation_batch % hp.num_generations:
            raise SpecError(f"GRPO needs num_generations ≥ 2 dividing batch_size × gradient_accumulation_steps "
                            f"({generation_batch}); got num_generations {hp.num_generations}")
    elif spec.reward_config:
        raise SpecError(f"reward_config applies to grpo only; remove it for {spec.trainer_type}")
    if spec.response_schema is not None:
        _check_response_schema(spec)
    return train, test, mode


def _check_modality(spec: Options, train: list[dict], test: list[dict] | None, mode: Mode) -> None:
    """Images only with modality vision, which needs SFT, a vision-language model and images that exist here."""
    from ..chat import has_generation_markers
    from ..models.vision import check_images, image_refs, is_vision_model, load_processor

    keys = MESSAGE_KEYS[mode]
    if spec.modality == "text":
        if any(image_refs(r[k]) for r in train for k in keys):
            raise SpecError("the records contain image parts; train them with modality vision on a vision-language "
                            "model, or process the dataset without image mappings")
        return
    if spec.trainer_type != "sft":
        raise SpecError(f"modality vision trains with trainer_type sft only (LoRA or Full); {spec.trainer_type} "
                        "with images is not supported by this core yet; use trainer_type sft, or modality text")
    if not is_vision_model(spec.base_model):
        raise SpecError(f"modality vision needs a vision-language model, but {spec.base_model} is text-only (no "
                        "vision_config in config.json or no image processor files); use a vision model such as "
                        "make-tiny-model --architecture gemma3-vision, or train with modality text")
    if spec.hyperparameters.packing or spec.hyperparameters.padding_free:
        raise SpecError("packing and padding_free do not apply to modality vision; set them false")
    if not has_generation_markers(load_processor(spec.base_model)):
        raise SpecError(f"the chat template of {spec.base_model} has no {{% generation %}} markers, so the "
                        "assistant tokens cannot be told apart for the loss; add them around its assistant turn")
    check_images(train, "train_file", keys)
    if test:
        check_images(test, "test_file", keys)


def uses_tools(record: dict) -> bool:
    """A record with tool definitions, an assistant's tool calls or a tool result."""
    messages = [m for key in ("messages", "prompt", "chosen", "rejected") for m in record.get(key) or []
                if isinstance(m, dict)]
    return bool(record.get("tools")) or any(m.get("tool_calls") or m.get("role") == "tool" for m in messages)


def _check_tools(spec: Options, train: list[dict], test: list[dict] | None) -> None:
    """Tool conversations need a template that writes tools and tool calls, and arguments that are JSON: refused
    before the model is loaded, naming the model and the first record that needs them."""
    from ..chat import supports_tools

    records = [("train_file", n, r) for n, r in enumerate(train, start=1)]
    records += [("test_file", n, r) for n, r in enumerate(test or [], start=1)]
    using = [(what, n, r) for what, n, r in records if uses_tools(r)]
    if not using:
        return
    for what, n, record in using:
        _check_arguments(record, f"{what} record {n}")
    from transformers import AutoTokenizer

    what, n, _ = using[0]
    if not supports_tools(AutoTokenizer.from_pretrained(spec.base_model)):
        raise SpecError(f"the chat template of {spec.base_model} has no tool support (it writes neither tool "
                        f"definitions nor tool calls), but {what} record {n} and {len(using) - 1} more use tools; "
                        "train a model whose template has them (Qwen2.5, Qwen3, Llama 3.1 or later), or remove tools, "
                        "tool_calls and tool messages from the dataset")


def _check_arguments(record: dict, where: str) -> None:
    for key in ("messages", "prompt", "chosen", "rejected"):
        for m, message in enumerate(record.get(key) or [], start=1):
            for call in message.get("tool_calls") or []:
                arguments = (call.get("function") or {}).get("arguments")
                try:
                    parsed = json.loads(arguments) if isinstance(arguments, str) else arguments
                except json.JSONDecodeError as e:
                    raise SpecError(f"{where} message {m}: a tool call's arguments are not JSON ({e}); write them "
                                    "as a JSON object in a string") from e
                if not isinstance(parsed, dict):
                    raise SpecError(f"{where} message {m}: a tool call's arguments must be a JSON object")


def _check_valid_graders(spec: Options) -> None:
    """eval_config.graders (train/valid_score.py): graders the core can run, at evaluations that happen; a
    metric_for_best of valid_score needs them."""
    ev = spec.eval_config
    if ev.metric_for_best.removeprefix("eval_").startswith("valid_score") and not ev.graders:
        raise SpecError("metric_for_best valid_score is the graders' score; add eval_config.graders")
    if not ev.graders:
        return
    if ev.eval_strategy == "no":
        raise SpecError("eval_config.graders score the test split at each evaluation; set eval_strategy to steps or "
                        "epoch")
    from ..evaluation.graders import check_grader

    for i, grader in enumerate(ev.graders):
        check_grader(grader, f"eval_config.graders[{i}]")


def _check_scheduler(name: str) -> None:
    """A spec read from JSON had its enum checked by specs.from_dict; one built in Python (tests, bench) is held to
    the same list here (test_validate keeps it within transformers' SchedulerType)."""
    allowed = CONTRACT["hyperparameters"]["lr_scheduler_type"]["enum"]
    if name not in allowed:
        raise SpecError(f"lr_scheduler_type {name!r} is not a transformers scheduler; use one of {allowed}")


def _check_rewards(spec: Options, train: list[dict]) -> None:
    """Each reward can run on this data and machine: its fields, the columns its references read, the grader's
    templates and formula (graders.check_grader), and a sandbox for python graders."""
    from ..evaluation.graders import check_grader, variables
    from ..evaluation.sandbox import unavailable
    from .rewards import as_grader

    if not spec.reward_config:
        raise SpecError("grpo needs at least one reward in reward_config (string_check, text_similarity, python, "
                        "score_model, label_model, multi or built_in)")
    columns = sorted(set().union(*(r.keys() for r in train)) - {"prompt"})
    for i, reward in enumerate(spec.reward_config):
        where = f"reward_config[{i}]"
        if reward.type == "built_in":
            if reward.function_name is None:
                raise SpecError(f"{where}: built_in needs function_name")
            if reward.function_name == "numerical_accuracy" and not reward.reference_field:
                raise SpecError(f"{where}: built_in needs reference_field (a dataset column); columns: {columns}")
            read = [reward.reference_field] if reward.reference_field else []
        else:
            if reward.type in ("string_check", "text_similarity") and not reward.reference_field and reward.reference is None:
                raise SpecError(f"{where}: {reward.type} needs reference_field (a dataset column) or a reference "
                                f"template; columns: {columns}")
            grader = as_grader(reward)
            check_grader(grader, where)
            read = variables(grader)
        for column in read:
            if not all(column in r for r in train):
                raise SpecError(f"{where}: reference_field {column!r} is not a column of every train record; "
                                f"columns: {columns}")
        if _uses_python(reward) and (reason := unavailable()):
            raise SpecError(f"{where}: {reason}")


def _uses_python(reward) -> bool:
    return reward.type == "python" or any(_uses_python(g) for g in (reward.graders or {}).values())


def _check_response_schema(spec: Options) -> None:
    """GRPO only, and a schema constrained decoding can follow."""
    if spec.trainer_type != "grpo":
        raise SpecError(f"response_schema applies to grpo only (what the sampled completions follow); remove it for "
                        f"{spec.trainer_type}")
    from lmformatenforcer import JsonSchemaParser

    try:
        JsonSchemaParser(spec.response_schema).get_allowed_characters()  # what the answer may start with: the root read
    except Exception as error:  # noqa: BLE001 - the parser's own errors, of any kind
        raise SpecError(f"response_schema is not a JSON Schema the sampling can follow: {error}") from error
