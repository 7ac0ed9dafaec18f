"""GRPO reward functions from reward_config (decisions.md): string_check, text_similarity, built_in. All offline.

Each returns a TRL reward function: f(prompts, completions, **columns) → one float per completion.
"""
from __future__ import annotations

import re

from ..chat import text_of
from ..metrics import meteor_sentence
from .spec import RewardItem


def completion_text(completion) -> str:
    """A completion is a string, or (conversational) a list of messages whose contents are joined."""
    if isinstance(completion, str):
        return completion
    return "".join(text_of(m.get("content", "")) for m in completion)


def string_check(operation: str, output: str, reference: str) -> float:
    """eq / ne: exact comparison (surrounding whitespace ignored); like / ilike: the reference occurs in the
    output (ilike: case-insensitive) — the OpenAI string_check grader's meaning."""
    out, ref = output.strip(), str(reference).strip()
    if operation == "eq":
        return float(out == ref)
    if operation == "ne":
        return float(out != ref)
    if operation == "like":
        return float(ref in out)
    return float(ref.lower() in out.lower())


def text_similarity(metric: str, output: str, reference: str) -> float:
    """A score in [0, 1]."""
    reference = str(reference)
    if metric == "bleu":
        import sacrebleu

        return sacrebleu.sentence_bleu(output, [reference]).score / 100.0
    if metric == "meteor":
        return meteor_sentence(output, reference)
    if metric.startswith("rouge_"):
        from rouge_score import rouge_scorer

        key = {"rouge_1": "rouge1", "rouge_2": "rouge2", "rouge_l": "rougeL"}[metric]
        return rouge_scorer.RougeScorer([key], use_stemmer=True).score(reference, output)[key].fmeasure
    from rapidfuzz import fuzz

    return fuzz.ratio(output, reference) / 100.0


_FORMAT = re.compile(r"^\s*<think>.*?</think>\s*<answer>.*?</answer>\s*$", re.DOTALL)
_NUMBER = re.compile(r"-?\d+(?:[.,]\d+)?")


def format_reward(output: str) -> float:
    """1.0 when the output is <think>…</think> followed by <answer>…</answer>."""
    return float(bool(_FORMAT.match(output)))


def count_xml(output: str) -> float:
    """Partial credit (0.25 each) for every think/answer tag appearing exactly once; text after </answer> costs."""
    score = sum(0.25 for tag in ("<think>", "</think>", "<answer>", "</answer>") if output.count(tag) == 1)
    if "</answer>" in output:
        score -= 0.001 * len(output.split("</answer>")[-1].strip())
    return score


def numerical_accuracy(output: str, reference: str) -> float:
    """1.0 when the last number in the output (inside <answer> when present) equals the reference number."""
    answer = re.search(r"<answer>(.*?)</answer>", output, re.DOTALL)
    numbers = _NUMBER.findall(answer.group(1) if answer else output)
    expected = _NUMBER.findall(str(reference))
    if not numbers or not expected:
        return 0.0
    try:
        return float(abs(float(numbers[-1].replace(",", "")) - float(expected[-1].replace(",", ""))) < 1e-6)
    except ValueError:
        return 0.0


def build_reward_function(item: RewardItem):
    def reward(prompts, completions, **columns):
        outputs = [completion_text(c) for c in completions]
        refs = columns.get(item.reference_field) if item.reference_field else None
        if item.type == "string_check":
            return [string_check(item.operation, o, r) for o, r in zip(outputs, refs)]
        if item.type == "text_similarity":
            return [text_similarity(item.evaluation_metric, o, r) for o, r in zip(outputs, refs)]
        if item.function_name == "numerical_accuracy":
            return [numerical_accuracy(o, r) for o, r in zip(outputs, refs)]
        fn = format_reward if item.function_name == "format_reward" else count_xml
        return [fn(o) for o in outputs]

    detail = item.operation or item.evaluation_metric or item.function_name
    reward.__name__ = item.name or f"{item.type}_{detail}"
    return reward
