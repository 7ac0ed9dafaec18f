"""Reinforcement fine-tuning as a user coming from OpenAI writes it, with the official `openai` Python package, unchanged
but for OPENAI_BASE_URL: a grader run first, then a job whose answers follow a response_format JSON Schema and whose
grader is a multi grader over a string_check of the answer's JSON field and a python grader that raises on one line's
item; then another user's view. test/openai-rft.test.ts runs it against the embedded
stack and reads the JSON report it prints last."""

import io
import json
import os
import time

import openai
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as with OpenAI itself

python_grader = {
    "type": "python",
    "name": "short",
    "source": ("def grade(sample, item):\n"
               "    if item['n'] == 3:\n"
               "        raise ValueError('item 3 is broken')\n"
               "    return 1.0 if len(sample['output_text']) < 200 else 0.0\n"),
}
grader = {
    "type": "multi",
    "name": "score",
    "graders": {
        "has_e": {"type": "string_check", "name": "has_e", "input": "{{sample.output_json.word}}", "reference": "e",
                  "operation": "ilike"},
        "short": python_grader,
    },
    "calculate_output": "0.5 * has_e + 0.5 * short",
}
run = client.fine_tuning.alpha.graders.run(grader=python_grader, model_sample="Paris", item={"n": 1})
broken = client.fine_tuning.alpha.graders.run(grader=python_grader, model_sample="Paris", item={"n": 3})

lines = [{"messages": [{"role": "user", "content": f"Say word number {n}."}], "n": n} for n in range(4)]
file = client.files.create(file=("rft.jsonl", io.BytesIO("\n".join(json.dumps(line) for line in lines).encode())),
                           purpose="fine-tune")
job = client.fine_tuning.jobs.create(
    model="tiny",
    training_file=file.id,
    seed=3,
    method={"type": "reinforcement", "reinforcement": {
        "grader": grader, "hyperparameters": {"n_epochs": 1, "batch_size": 2, "compute_multiplier": 1},
        "response_format": {"type": "json_schema", "json_schema": {"name": "word", "strict": True, "schema": {
            "type": "object", "properties": {"word": {"type": "string", "maxLength": 8}}, "required": ["word"],
            "additionalProperties": False}}}}},
)
while job.status not in ("succeeded", "failed", "cancelled"):
    time.sleep(0.5)
    job = client.fine_tuning.jobs.retrieve(job.id)

events = client.fine_tuning.jobs.list_events(job.id, limit=500).data
ungraded = [e.message for e in events if e.level == "warn" and "could not be graded" in e.message]
other = OpenAI(api_key=os.environ["OTHER_API_KEY"])
try:
    other.fine_tuning.jobs.retrieve(job.id)
    other_user = 200
except openai.NotFoundError as err:
    other_user = err.status_code

print(json.dumps({
    "status": job.status,
    "error": job.error.message if job.error else None,
    "run_reward": run.reward,
    "run_error": broken.metadata.errors.python_grader_runtime_error_details,
    "reward_steps": sum(1 for e in events if e.type == "metrics" and e.data and "train_reward_mean" in e.data),
    "ungraded_warning": ungraded[0] if ungraded else None,
    "ungraded_warnings": ungraded,
    # answers that could not be graded: only line 3's (its python grader raises), when every answer is JSON of the schema
    "ungraded": sum(int(m.split(" of ")[0].rsplit(" ", 1)[-1]) for m in ungraded),
    "response_format": (job.method.reinforcement.model_extra or {}).get("response_format"),
    "other_user": other_user,
}))
