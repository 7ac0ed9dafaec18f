"""Grader scores at evaluation steps (#61): at each evaluation the model answers the first `grader_samples` prompts of
the test split and eval_config.graders (the objects /v1 graders and POST /evaluation take) score the answers:
`valid_score`, the mean of the graders' means (as OpenAI reports valid_mean_reward), and `valid_score/<name>` per
grader, in the evaluation's metrics. transformers reads them there as eval_valid_score, so `metric_for_best:
valid_score` with load_best_model_at_end keeps the best-scoring step as the job's model."""
from __future__ import annotations

from transformers import TrainerCallback

from .. import events
from ..evaluation.graders import Judge, grade_batch, make_sample
from ..inference.generate import generate_answers, prompt_of


def rows_of(records: list[dict], limit: int) -> list[tuple[list[dict], dict]]:
    """(prompt, item) of the first `limit` records with a prompt: the conversation (messages, or prompt + chosen
    answer) up to its last assistant message, which is item.reference; the record's other fields are item.<field>."""
    rows = []
    for record in records:
        conversation = record.get("messages") or [*record.get("prompt", []), *record.get("chosen", [])]
        prompt, reference = prompt_of(conversation)
        if not prompt:
            continue
        fields = {k: v for k, v in record.items() if k not in ("messages", "prompt", "chosen", "rejected")}
        rows.append((prompt, {**fields, **({"reference": reference} if reference is not None else {})}))
        if len(rows) == limit:
            break
    return rows


class ValidScore(TrainerCallback):
    """Scores the model's answers at each evaluation and adds eval_valid_score (and per grader) to its metrics, before
    the trainer picks its best step and the protocol callback reports them."""

    def __init__(self, graders: list[dict], test_records: list[dict], samples: int, max_new_tokens: int):
        self.graders, self.max_new_tokens = graders, max_new_tokens
        self.rows = rows_of(test_records, samples)

    def on_evaluate(self, args, state, control, metrics=None, model=None, processing_class=None, **kwargs):
        import torch

        if metrics is None or model is None or not self.rows:
            return
        tokenizer = getattr(processing_class, "tokenizer", processing_class)
        training = model.training
        model.eval()
        try:
            with torch.no_grad():
                answers = generate_answers(model, tokenizer, [p for p, _ in self.rows], self.max_new_tokens)
        finally:
            model.train(training)
        samples = [make_sample(a.text) for a in answers]
        items = [item for _, item in self.rows]
        judge = Judge.from_environment()
        means = {}
        for grader in self.graders:
            grades = grade_batch(grader, samples, items, judge)
            means[grader["name"]] = sum(g.reward for g in grades) / len(grades)
            failed = [g.error for g in grades if g.error]
            if failed:
                events.emit(events.Log(level="warning", message=f"valid_score: {len(failed)} of {len(grades)} answers "
                                       f"could not be graded by {grader['name']} and scored 0, e.g. {failed[0]}"))
        metrics["eval_valid_score"] = sum(means.values()) / len(means)
        for name, mean in means.items():
            metrics[f"eval_valid_score/{name}"] = mean
