"""GRPO reward functions from reward_config (decisions.md): the graders (string_check, text_similarity, python,
multi; evaluation/graders.py) and the built-in ones. All offline."""
from __future__ import annotations

import re

from ..chat import text_of
from ..events import Log, emit
from ..evaluation.graders import GRADER_TYPES, JUDGES, grade_batch, make_sample
from .spec import RewardItem


def completion_text(completion) -> str:
    """A completion is a string, or (conversational) a list of messages whose contents are joined."""
    if isinstance(completion, str):
        return completion
    return "".join(text_of(m.get("content", "")) for m in completion)


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


def as_grader(item: RewardItem) -> dict:
    """A reward_config item as the grader it is (evaluation/graders.py): the reference from a column or a template."""
    if item.type == "python":
        return {"type": "python", "name": item.name, "source": item.source}
    if item.type == "multi":
        return {"type": "multi", "name": item.name, "calculate_output": item.calculate_output,
                "graders": {name: as_grader(sub) for name, sub in (item.graders or {}).items()}}
    if item.type in JUDGES:
        # The native prompt's {completion} and {<column>} are the graders' {{sample.output_text}} and {{item.<column>}}.
        messages = item.input if isinstance(item.input, list) else [{"role": "user", "content": re.sub(
            r"\{(\w+)\}", lambda m: "{{sample.output_text}}" if m.group(1) == "completion" else "{{item.%s}}" % m.group(1),
            item.prompt or "")}]
        judge = {"type": item.type, "name": item.name, "model": item.model, "input": messages,
                 "sampling_params": item.sampling_params or {}}
        if item.type == "label_model":
            return {**judge, "labels": item.labels, "passing_labels": item.passing_labels}
        return {**judge, "range": item.range or [0.0, 1.0]}
    reference = item.reference if item.reference is not None else "{{item.%s}}" % item.reference_field
    grader = {"type": item.type, "name": item.name, "input": item.input or "{{sample.output_text}}",
              "reference": reference}
    if item.type == "string_check":
        grader["operation"] = item.operation or "eq"
    else:
        grader["evaluation_metric"] = item.evaluation_metric
    return grader


def build_reward_function(item: RewardItem):
    """A TRL reward function: f(prompts, completions, **columns) → one float per completion. A completion a grader
    cannot grade scores 0; the first such error of each grader, and how many there were, are logged."""
    if item.type in GRADER_TYPES:
        grader = as_grader(item)
        failures = {"count": 0}

        def reward(prompts, completions, **columns):
            samples = [make_sample(completion_text(c)) for c in completions]
            names = [k for k, v in columns.items() if isinstance(v, list) and len(v) == len(completions)]
            items = [{name: columns[name][i] for name in names} for i in range(len(completions))]
            graded = grade_batch(grader, samples, items)
            errors = [g.error for g in graded if g.error]
            if errors:
                failures["count"] += len(errors)
                emit(Log(level="warning", message=f"grader {reward.__name__}: {len(errors)} of {len(graded)} answers "
                                                  f"scored 0 because they could not be graded ({failures['count']} so "
                                                  f"far), e.g. {errors[0]}"))
            return [g.reward for g in graded]
    else:
        def reward(prompts, completions, **columns):
            outputs = [completion_text(c) for c in completions]
            if item.function_name == "numerical_accuracy":
                return [numerical_accuracy(o, r) for o, r in zip(outputs, columns.get(item.reference_field))]
            fn = format_reward if item.function_name == "format_reward" else count_xml
            return [fn(o) for o in outputs]

    detail = item.operation or item.evaluation_metric or item.function_name or ""
    reward.__name__ = item.name or f"{item.type}_{detail}".rstrip("_")
    return reward
