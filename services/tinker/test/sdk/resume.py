"""The tinker SDK against our service: a run's core is killed after it saved its state; the run says so on its next
call, and create_training_client_from_state_with_optimizer continues it (on whichever worker takes it) exactly as the
uninterrupted run went on. Prints READY and waits for a line on stdin while the test kills the core; then one JSON
object for services/tinker/test/sdk.test.ts.

usage: resume.py BASE_URL API_KEY BASE_MODEL
"""
import json
import sys

import tinker
from tinker import types

base_url, api_key, base_model = sys.argv[1:4]
service = tinker.ServiceClient(base_url=base_url, api_key=api_key)
training = service.create_lora_training_client(base_model=base_model, rank=8, seed=1).result()
tokenizer = training.get_tokenizer()


def datum(text):
    tokens = tokenizer.encode(text)
    return types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),
                       loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})


a, b = datum("one two three four five six seven"), datum("red green blue yellow orange purple")
adam = types.AdamParams(learning_rate=5e-3)
for _ in range(5):
    training.forward_backward([a], "cross_entropy")
    training.optim_step(adam).result()
state = training.save_state("step-5").result().path


def go_on(client):
    """One more step on b from the saved state, then b's loss after it."""
    first = client.forward_backward([b], "cross_entropy").result().metrics["loss:sum"]
    client.optim_step(adam).result()
    return first, client.forward([b], "cross_entropy").result().metrics["loss:sum"]


reference = go_on(training)
print("READY", flush=True)
sys.stdin.readline()  # the test kills the run's core now

try:
    training.forward_backward([a], "cross_entropy").result()
    died = None
except tinker.RequestFailedError as e:
    died = str(e)

resumed_client = service.create_training_client_from_state_with_optimizer(state).result()
resumed = go_on(resumed_client)
print(json.dumps({"state": state, "reference": reference, "resumed": resumed, "died": died}))
service.close("success").result()
