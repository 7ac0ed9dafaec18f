"""The script a user coming from OpenAI fine-tuning runs, with the official `openai` Python package, unchanged but for
OPENAI_BASE_URL: upload, fine-tune, follow, read events and checkpoints, chat (plain and streaming), the same question
through the Responses API; a second job paused, resumed and cancelled; then a malformed
file and another user's view. test/openai-compat.test.ts runs it against the embedded stack and reads the JSON report
it prints last."""

import io
import json
import os
import time

import openai
from openai import OpenAI

client = OpenAI()  # OPENAI_BASE_URL and OPENAI_API_KEY from the environment, as with OpenAI itself
hyperparameters = json.loads(os.environ["HYPERPARAMETERS"])

file = client.files.create(file=("train.jsonl", io.BytesIO(os.environ["TRAIN_LINES"].encode())), purpose="fine-tune")
job = client.fine_tuning.jobs.create(
    model="tiny",
    training_file=file.id,
    suffix="py",
    method={"type": "supervised", "supervised": {"hyperparameters": hyperparameters}},
)
while job.status not in ("succeeded", "failed", "cancelled"):
    time.sleep(0.5)
    job = client.fine_tuning.jobs.retrieve(job.id)

events = client.fine_tuning.jobs.list_events(job.id, limit=500).data
checkpoints = client.fine_tuning.jobs.checkpoints.list(job.id).data
messages = [
    {"role": "system", "content": "Answer briefly."},
    {"role": "user", "content": "Hello."},
    {"role": "assistant", "content": "Hi there, ask away."},
    {"role": "user", "content": "What color is the sky?"},
]
answer = client.chat.completions.create(model=job.fine_tuned_model, messages=messages, temperature=0, max_tokens=16)
streamed = "".join(
    chunk.choices[0].delta.content or ""
    for chunk in client.chat.completions.create(model=job.fine_tuned_model, messages=messages, temperature=0, max_tokens=16, stream=True)
    if chunk.choices
)
response = client.responses.create(model=job.fine_tuned_model, input=messages, temperature=0, max_output_tokens=16)

bad_file = client.files.create(file=("bad.jsonl", io.BytesIO(b'{"messages": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "yo"}]}\nnot json\n')), purpose="fine-tune")
bad = client.fine_tuning.jobs.create(model="tiny", training_file=bad_file.id)

# Pause, resume and cancel, as most fine-tuning scripts call them: the SDK sends each as a POST with
# `Content-Type: application/json` and an empty body.
second = client.fine_tuning.jobs.create(model="tiny", training_file=file.id, suffix="py2", method={"type": "supervised", "supervised": {"hyperparameters": hyperparameters}})
lifecycle = [client.fine_tuning.jobs.pause(second.id).status]
while second.status != "paused":  # a queued job pauses at once, a running one at its next step
    time.sleep(0.2)
    second = client.fine_tuning.jobs.retrieve(second.id)
lifecycle.append(second.status)
lifecycle.append(client.fine_tuning.jobs.resume(second.id).status)
client.fine_tuning.jobs.cancel(second.id)
while second.status not in ("succeeded", "failed", "cancelled"):
    time.sleep(0.2)
    second = client.fine_tuning.jobs.retrieve(second.id)
lifecycle.append(second.status)

other = OpenAI(api_key=os.environ["OTHER_API_KEY"])
try:
    other.fine_tuning.jobs.retrieve(job.id)
    other_user = 200
except openai.NotFoundError as err:
    other_user = err.status_code

print(json.dumps({
    "status": job.status,
    "error": job.error.message if job.error else None,
    "fine_tuned_model": job.fine_tuned_model,
    "events": len(events),
    "checkpoints": len(checkpoints),
    "answer": answer.choices[0].message.content,
    "streamed": streamed,
    "response": response.output_text,
    "bad_status": bad.status,
    "bad_message": bad.error.message if bad.error else None,
    "other_user": other_user,
    "lifecycle": lifecycle,
}))
