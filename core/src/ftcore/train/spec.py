"""The training spec: interface.md 2.11 (training_config) and 2.12 (hyperparameters), plus the local
paths the worker resolved. Secrets are never fields here: HF_TOKEN / WANDB_API_KEY / MLFLOW_* come from the env.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from .contract import CONTRACT, dataclass_of

# interface.md 2.12 and the evaluation settings, as the training request's schema states them (contract.py).
Hyperparameters = dataclass_of("Hyperparameters", CONTRACT["hyperparameters"],
                               "interface.md 2.12; defaults are the request sample's values",
                               defaults={"max_length": CONTRACT["default_max_length"]})
EvalConfig = dataclass_of("EvalConfig", CONTRACT["eval_config"], "evaluation during training")


@dataclass
class RewardItem:
    """One GRPO reward (decisions.md): a grader (string_check, text_similarity, python, score_model, label_model, multi;
    evaluation/graders.py) or a built-in function. string_check and text_similarity read the reference from `reference_field`, or from the
    `reference` template (OpenAI's graders: `{{item.<field>}}`), and grade `input` (default the answer's text)."""

    type: Literal["string_check", "text_similarity", "built_in", "python", "multi", "score_model", "label_model"] = field(
        metadata={"help": "reward kind"})
    name: str = field(default="", metadata={"help": "name shown in logs (default: the kind)"})
    reference_field: str | None = field(default=None, metadata={"help": "dataset column holding the reference"})
    input: str | list[dict] | None = field(default=None, metadata={
        "help": "template graded (default {{sample.output_text}}); score_model: the judge's messages"})
    reference: str | None = field(default=None, metadata={"help": "template of the reference, instead of a column"})
    operation: Literal["eq", "ne", "like", "ilike"] | None = field(default=None, metadata={"help": "string_check"})
    evaluation_metric: Literal["cosine", "fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3",
                               "rouge_4", "rouge_5", "rouge_l"] | None = field(
        default=None, metadata={"help": "text_similarity metric"})
    function_name: Literal["format_reward", "count_xml", "numerical_accuracy"] | None = field(
        default=None, metadata={"help": "built_in reward function"})
    source: str | None = field(default=None, metadata={"help": "python: source defining grade(sample, item)"})
    graders: dict[str, RewardItem] | None = field(default=None, metadata={"help": "multi: the graders, by name"})
    calculate_output: str | None = field(default=None, metadata={"help": "multi: formula over the graders' names"})
    model: str | None = field(default=None, metadata={"help": "score_model, label_model: the judge model"})
    prompt: str | None = field(default=None, metadata={
        "help": "score_model: the judge's instruction, {completion} and {<column>} filled in (instead of input)"})
    range: list[float] | None = field(default=None, metadata={"help": "score_model: lowest and highest score"})
    labels: list[str] | None = field(default=None, metadata={"help": "label_model: the labels the judge chooses from"})
    passing_labels: list[str] | None = field(default=None, metadata={"help": "label_model: the labels that earn 1"})
    sampling_params: dict | None = field(default=None, metadata={"help": "score_model, label_model: the judge's sampling"})
    weight: float = field(default=1.0, metadata={"help": "weight of this reward in the sum"})


@dataclass
class TrackerConfig:
    provider: Literal["none", "mlflow", "wandb"] = field(default="none", metadata={
        "help": "experiment tracker; its key/URI come from WANDB_API_KEY / MLFLOW_TRACKING_URI in the env"})
    project: str = field(default="", metadata={"help": "tracker project / experiment name"})
    log_model: Literal["false", "checkpoint", "end"] = field(default="end", metadata={"help": "upload the model to the tracker"})


@dataclass
class Options:
    """Fine-tune a model (SFT, DPO, ORPO, GRPO × LoRA, QLoRA, Full) on JSONL splits; events on stdout."""

    base_model: str = field(metadata={"help": "local HF model folder (the worker resolves hub ids first)"})
    train_file: str = field(metadata={"help": "train split: JSONL in the record shape of the processing mode"})
    output_dir: str = field(metadata={"help": "run folder: checkpoints/, and adapter/ or model/ at the end"})
    test_file: str | None = field(default=None, metadata={
        "help": "test split JSONL; final metrics use it (else the last 5% of train)"})
    method: Literal["LoRA", "QLoRA", "Full"] = field(default="QLoRA", metadata={"help": "what is trained"})
    trainer_type: Literal["sft", "dpo", "orpo", "grpo"] = field(default="sft", metadata={"help": "training objective"})
    modality: Literal["text", "vision"] = field(default="text", metadata={"help": "text, or vision (images in messages)"})
    hyperparameters: Hyperparameters = field(default_factory=Hyperparameters, metadata={"help": "interface.md 2.12"})
    eval_config: EvalConfig = field(default_factory=EvalConfig, metadata={"help": "evaluation during training"})
    reward_config: list[RewardItem] = field(default_factory=list, metadata={"help": "GRPO rewards (JSON list)"})
    response_schema: dict | None = field(default=None, metadata={
        "help": "GRPO: a JSON Schema every sampled completion follows (constrained decoding), so graders read "
                "{{sample.output_json.<field>}}"})
    tracker_config: TrackerConfig = field(default_factory=TrackerConfig, metadata={"help": "experiment tracker"})
    resume_from_checkpoint: bool = field(default=False, metadata={
        "help": "continue from the newest checkpoint in output_dir/checkpoints"})
    init_adapter: str | None = field(default=None, metadata={
        "help": "LoRA/QLoRA: go on training this PEFT adapter folder (another job's model) instead of a new adapter"})
    device: Literal["auto", "cpu", "cuda"] = field(default="auto", metadata={"help": "where to train"})


def completion_budget(hp) -> int:
    """GRPO's max_completion_length, capped so that prompt and completion fit max_length (its config and pre-flight)."""
    return min(hp.max_completion_length, hp.max_length - hp.max_prompt_length)


def set_only(**values):
    """The knobs a spec sets; the others keep TRL's defaults."""
    return {name: value for name, value in values.items() if value is not None}
