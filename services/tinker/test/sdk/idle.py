"""A run left without calls for longer than TINKER_IDLE_S lets its worker go (its state saved) and continues from there
on its next call: the same losses as a run that was never let go. One JSON object for services/tinker/test/idle.test.ts.

usage: idle.py BASE_URL API_KEY BASE_MODEL PAUSE_S
"""
import json
import sys
import time

import tinker
from tinker import types

base_url, api_key, base_model, pause = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
service = tinker.ServiceClient(base_url=base_url, api_key=api_key)
tokenizer = None


def steps(client, n, datum):
    losses = []
    for _ in range(n):
        fwd = client.forward_backward([datum], "cross_entropy")
        client.optim_step(types.AdamParams(learning_rate=5e-3))
        losses.append(fwd.result().metrics["loss:sum"])
    return losses


reference = service.create_lora_training_client(base_model=base_model, rank=8, seed=2).result()
tokenizer = reference.get_tokenizer()
tokens = tokenizer.encode("alpha beta gamma delta epsilon zeta eta theta")
datum = types.Datum(model_input=types.ModelInput.from_ints(tokens[:-1]),
                    loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)})
expected = steps(reference, 6, datum)

resting = service.create_lora_training_client(base_model=base_model, rank=8, seed=2).result()
base = service.create_sampling_client(base_model=base_model)
base = base.result() if hasattr(base, "result") else base
before = base.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
got = steps(resting, 3, datum)
time.sleep(pause)  # longer than TINKER_IDLE_S: both runs save their state and let their worker go
got += steps(resting, 3, datum)
after = base.compute_logprobs(types.ModelInput.from_ints(tokens)).result()  # a sample brings the base's run back
print(json.dumps({"expected": expected, "got": got, "model_id": resting.model_id, "base_before": before, "base_after": after}))
service.close("success").result()
