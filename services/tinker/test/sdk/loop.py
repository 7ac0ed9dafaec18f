"""The official tinker SDK (test/tools' venv, locked) against our Tinker service: a memorisation loop on the tests' tiny
model. Prints one JSON object of what it saw for services/tinker/test/sdk.test.ts to check; the checks that need the
SDK's own objects (types, futures) are made here and fail the script.

usage: loop.py BASE_URL API_KEY BASE_MODEL
"""
import json
import sys

import tinker
from tinker import types

base_url, api_key, base_model = sys.argv[1:4]
service = tinker.ServiceClient(base_url=base_url, api_key=api_key)
training = service.create_lora_training_client(base_model=base_model, rank=8, seed=0).result()
tokenizer = training.get_tokenizer()

tokens = tokenizer.encode("the capital of France is Paris and the capital of Spain is Madrid")
datum = types.Datum(
    model_input=types.ModelInput.from_ints(tokens[:-1]),
    loss_fn_inputs={"target_tokens": tokens[1:], "weights": [1.0] * (len(tokens) - 1)},
)
losses = []
for step in range(20):
    fwd = training.forward_backward([datum], "cross_entropy")
    opt = training.optim_step(types.AdamParams(learning_rate=1e-2))  # submitted before the first ends
    out = fwd.result()
    opt.result()
    losses.append(out.metrics["loss:sum"])
    if step == 0:
        untrained = out.loss_fn_outputs[0]["logprobs"].tolist()  # a fresh LoRA adds nothing: the base model's

forward = training.forward([datum], "cross_entropy").result()
forward_logprobs = forward.loss_fn_outputs[0]["logprobs"].tolist()
state = training.save_state("after-20").result().path
sampler = training.save_weights_and_get_sampling_client().result()
prompt = types.ModelInput.from_ints(tokens[:4])
greedy = sampler.sample(prompt, 1, types.SamplingParams(max_tokens=8, temperature=0.0)).result()
seeded = [sampler.sample(prompt, 2, types.SamplingParams(max_tokens=8, temperature=1.0, seed=7)).result() for _ in range(2)]
prompt_logprobs = sampler.compute_logprobs(types.ModelInput.from_ints(tokens)).result()
# The sampled tokens' own logprobs, against forward's over the same tokens (the sampler's weights are the run's now).
drawn = seeded[0].sequences[0]
whole = tokens[:4] + list(drawn.tokens)
scored = training.forward([types.Datum(model_input=types.ModelInput.from_ints(whole[:-1]),
                                       loss_fn_inputs={"target_tokens": whole[1:], "weights": [1.0] * (len(whole) - 1)})],
                          "cross_entropy").result()
drawn_forward = scored.loss_fn_outputs[0]["logprobs"].tolist()[-len(drawn.tokens):]

base = service.create_sampling_client(base_model=base_model)
base = base.result() if hasattr(base, "result") else base
base_logprobs = base.compute_logprobs(types.ModelInput.from_ints(tokens)).result()

named = training.save_weights_for_sampler("final").result().path
sampler2 = service.create_sampling_client(model_path=named)
again = sampler2.sample(prompt, 1, types.SamplingParams(max_tokens=8, temperature=0.0)).result()
# What /v1 chat should answer with these weights (tinker:<run>:final): greedy over the chat-templated conversation.
chat_prompt = tokenizer.apply_chat_template([{"role": "user", "content": "the capital of France"}], add_generation_prompt=True, tokenize=True)
chat_prompt = list(chat_prompt["input_ids"] if hasattr(chat_prompt, "keys") else chat_prompt)
chat = sampler2.sample(types.ModelInput.from_ints(chat_prompt), 1, types.SamplingParams(max_tokens=8, temperature=0.0)).result()

try:
    training.forward_backward([datum], "gspo").result()
    refused = None
except tinker.RequestFailedError as e:  # noqa: F841 - the message is what the test reads
    refused = {"message": str(e), "category": str(e.category)}

print(json.dumps({
    "losses": losses,
    "forward_loss": forward.metrics["loss:sum"],
    "forward_logprobs": forward_logprobs,
    "prompt_logprobs": prompt_logprobs,
    "tokens": tokens,
    "state": state,
    "named": named,
    "greedy": greedy.sequences[0].tokens,
    "greedy_logprobs": greedy.sequences[0].logprobs,
    "again": again.sequences[0].tokens,
    "chat_text": tokenizer.decode(chat.sequences[0].tokens, skip_special_tokens=True),
    "seeded": [[s.tokens for s in r.sequences] for r in seeded],
    "drawn_logprobs": list(drawn.logprobs),
    "untrained": untrained,
    "base_logprobs": base_logprobs,
    "drawn_forward": drawn_forward,
    "refused": refused,
    "model_id": training.model_id,
}))
service.close("success").result()
