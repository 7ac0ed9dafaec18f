"""The training spec: interface.md 2.11 (training_config) and 2.12 (hyperparameters), plus the local
paths the worker resolved. Secrets are never fields here: HF_TOKEN / WANDB_API_KEY / MLFLOW_* come from the env.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

GRPO_LOSS_TYPES = ("grpo", "dr_grpo", "dapo", "bnpo")
DPO_LOSS_TYPES = ("sigmoid", "hinge", "ipo", "exo_pair", "nca_pair", "robust", "bco_pair", "sppo_hard", "aot", "aot_pair",
                  "discopop", "apo_zero", "apo_down", "sft")


@dataclass
class Hyperparameters:
    """interface.md 2.12; defaults are the request sample's values."""

    learning_rate: float = field(default=2e-4, metadata={"help": "peak learning rate"})
    batch_size: int = field(default=2, metadata={"help": "per-device train (and eval) batch size"})
    gradient_accumulation_steps: int = field(default=4, metadata={"help": "micro-batches per optimizer step"})
    epochs: int = field(default=3, metadata={"help": "passes over the train split (ignored when max_steps > 0)"})
    max_steps: int = field(default=-1, metadata={"help": "optimizer steps to run; -1: use epochs"})
    packing: bool = field(default=False, metadata={"help": "SFT: pack several conversations into one sequence"})
    padding_free: bool = field(default=False, metadata={
        "help": "SFT/DPO: concatenate the batch without padding (needs a flash-attention kernel to be exact across "
                "sequence boundaries; on CPU it is accepted and uses position ids)"})
    use_fast_attention: bool = field(default=False, metadata={
        "help": "use the best attention kernel the hardware has (flash_attention_2 on CUDA when installed, else sdpa)"})
    max_length: int = field(default=1024, metadata={"help": "tokens per sequence (prompt + completion); longer ones are truncated"})
    lr_scheduler_type: str = field(default="linear", metadata={"help": "any transformers scheduler name"})
    save_strategy: Literal["no", "steps", "epoch"] = field(default="epoch", metadata={
        "help": "when checkpoints are saved (steps: every logging_steps × 10 unless save_steps is set)"})
    logging_steps: int = field(default=10, metadata={"help": "emit a progress event every this many steps"})
    lora_rank: int = field(default=16, metadata={"help": "LoRA rank r"})
    lora_alpha: int = field(default=16, metadata={"help": "LoRA alpha (scaling = alpha / r)"})
    lora_dropout: float = field(default=0.05, metadata={"help": "dropout on the LoRA branch"})
    max_prompt_length: int = field(default=512, metadata={"help": "DPO/ORPO/GRPO: prompt tokens kept (left-truncated)"})
    num_generations: int = field(default=4, metadata={"help": "GRPO: completions sampled per prompt"})
    max_grad_norm: float = field(default=0.1, metadata={"help": "gradient clipping norm"})
    adam_beta1: float = field(default=0.9, metadata={"help": "AdamW beta1"})
    adam_beta2: float = field(default=0.99, metadata={"help": "AdamW beta2"})
    warmup_ratio: float = field(default=0.1, metadata={"help": "fraction of steps spent warming up the learning rate"})
    beta: float = field(default=0.1, metadata={"help": "DPO/GRPO: KL strength; ORPO: weight of the odds-ratio term (lambda)"})
    # Not in 2.12 but needed to make runs reproducible and tests precise.
    save_steps: int | None = field(default=None, metadata={"help": "save_strategy=steps: save every this many steps"})
    max_completion_length: int = field(default=64, metadata={"help": "GRPO: tokens generated per completion"})
    seed: int = field(default=42, metadata={"help": "random seed (data order, init of LoRA weights, sampling)"})
    # The trainers' own loss and sampling knobs (decisions.md); unset: TRL's default.
    loss_type: str | None = field(default=None, metadata={
        "help": f"grpo: {', '.join(GRPO_LOSS_TYPES)} (TRL's default dapo); dpo: {', '.join(DPO_LOSS_TYPES)} (default sigmoid)"})
    importance_sampling_level: Literal["token", "sequence"] | None = field(default=None, metadata={
        "help": "grpo: importance ratios per token, or per sequence (GSPO)"})
    epsilon: float | None = field(default=None, metadata={"help": "grpo: lower clipping bound of the ratio (TRL: 0.2)"})
    epsilon_high: float | None = field(default=None, metadata={
        "help": "grpo: upper clipping bound (default epsilon; DAPO recommends 0.28)"})
    scale_rewards: Literal["group", "batch", "none"] | None = field(default=None, metadata={
        "help": "grpo: advantages scaled by the group's reward std, the batch's, or not at all (Dr. GRPO)"})
    mask_truncated_completions: bool | None = field(default=None, metadata={
        "help": "grpo: completions cut at max_completion_length take no part in the loss"})
    temperature: float | None = field(default=None, metadata={
        "help": "grpo: sampling temperature of the answers compared (TRL: 1.0); higher makes them differ more"})
    # The core's own: when GRPO cannot learn, say so early (reward_spread.py).
    equal_reward_steps: int = field(default=4, metadata={
        "help": "grpo: warn when every prompt's answers all scored the same in each of the first this many steps "
                "(nothing is learnt then); 0: never"})
    rpo_alpha: float | None = field(default=None, metadata={
        "help": "dpo: weight of the chosen answers' likelihood (NLL) added to the loss (RPO); teaches ending the turn"})


@dataclass
class EvalConfig:
    eval_strategy: Literal["no", "steps", "epoch"] = field(default="no", metadata={
        "help": "evaluate on the test split during training (needs test_file)"})
    eval_steps: int = field(default=50, metadata={"help": "eval_strategy=steps: evaluate every this many steps"})
    compute_eval_metrics: bool = field(default=False, metadata={
        "help": "during-training evaluations also report perplexity and assistant-token accuracy"})
    batch_eval_metrics: bool = field(default=False, metadata={
        "help": "compute eval metrics batch by batch (less memory on big test splits)"})
    early_stopping_patience: int | None = field(default=None, metadata={
        "help": "stop when metric_for_best has not improved for this many evaluations"})
    load_best_model_at_end: bool = field(default=False, metadata={
        "help": "keep the best checkpoint (by metric_for_best) as the model; saves at every evaluation"})
    metric_for_best: str = field(default="eval_loss", metadata={
        "help": "the evaluation metric early stopping and load_best_model_at_end compare (lower is better for a loss)"})


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
