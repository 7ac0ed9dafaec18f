"""A Tinker session's checkpoints (ftcore/tinker/session.py): save_state resumes exactly, with or without the
optimizer; save_weights_for_sampler is a PEFT adapter the rest of the core loads."""
import json

import numpy as np
import pytest
import torch

from ftcore.errors import SpecError
from ftcore.models.loading import load_for_inference
from ftcore.tinker.session import AdamParams, TrainingSession

from helpers import QA
from test_tinker_session import conversation_datum, logprobs_of, new_session

STEP = AdamParams(learning_rate=1e-2, weight_decay=0.01, grad_clip_norm=5.0)


def train(session: TrainingSession, steps: int) -> list[float]:
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    seen = []
    for _ in range(steps):
        seen.append(session.forward_backward(data, "cross_entropy").metrics["loss:sum"])
        session.optim_step(STEP)
    return seen


def test_a_resumed_session_continues_exactly(tiny_model, tmp_path):
    uninterrupted = new_session(tiny_model)
    train(uninterrupted, 3)
    uninterrupted.save_state(str(tmp_path / "state"))
    expected = train(uninterrupted, 2)

    resumed = new_session(tiny_model, seed=1)  # another initialisation: everything must come from the checkpoint
    resumed.load_state(str(tmp_path / "state"), with_optimizer=True)
    assert resumed.step == 3
    assert train(resumed, 2) == expected

    recreated = TrainingSession.from_state(str(tmp_path / "state"), with_optimizer=True, device="cpu")
    assert recreated.info()["target_modules"] == uninterrupted.info()["target_modules"]
    assert train(recreated, 2) == expected


def test_loading_without_the_optimizer_starts_it_afresh(tiny_model, tmp_path):
    trained = new_session(tiny_model)
    train(trained, 3)
    trained.save_state(str(tmp_path / "state"))
    weights_only = new_session(tiny_model, seed=1)
    weights_only.load_state(str(tmp_path / "state"), with_optimizer=False)
    data = [conversation_datum(trained.tokenizer, q, a) for q, a in QA]
    for a, b in zip(logprobs_of(trained, data), logprobs_of(weights_only, data)):
        np.testing.assert_array_equal(a, b)
    assert weights_only.step == 0 and not weights_only.optimizer.state
    assert train(weights_only, 2) != train(trained, 2)  # Adam's moments start from zero again


def test_a_state_of_another_adapter_shape_is_refused(tiny_model, tmp_path):
    new_session(tiny_model, rank=4).save_state(str(tmp_path / "rank4"))
    with pytest.raises(SpecError, match="holds an adapter of"):
        new_session(tiny_model).load_state(str(tmp_path / "rank4"))
    with pytest.raises(SpecError, match="not a save_state folder"):
        new_session(tiny_model).load_state(str(tmp_path))


def test_sampler_weights_are_a_peft_adapter_that_answers_as_the_session(tiny_model, tmp_path):
    session = new_session(tiny_model)
    train(session, 3)
    folder = session.save_weights_for_sampler(str(tmp_path / "sampler"))
    config = json.loads((tmp_path / "sampler" / "adapter_config.json").read_text())
    assert (config["r"], config["lora_alpha"], config["base_model_name_or_path"]) == (8, 32, tiny_model)
    assert not (tmp_path / "sampler" / "optimizer.pt").exists()

    model, tokenizer = load_for_inference(tiny_model, folder, "cpu")
    datum = conversation_datum(tokenizer, *QA[0])
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([datum.model_input])).logits[0]
    targets = torch.as_tensor(datum.loss_fn_inputs["target_tokens"])
    loaded = logits.log_softmax(-1).gather(-1, targets[:, None])[:, 0].numpy()
    np.testing.assert_allclose(loaded, logprobs_of(session, [datum])[0], atol=1e-5)


def test_merged_sampler_weights_answer_as_the_adapter_even_when_the_output_layer_shares_the_embeddings(tiny_model, tmp_path):
    """train_unembed (the SDK's default) adapts lm_head; the tiny model's lm_head is its input embeddings' matrix, so
    a merge that folds the delta into that shared matrix changes the inputs too. The merged model must answer as the
    adapter does."""
    from transformers import AutoModelForCausalLM

    from ftcore.export.merge import Options, run

    session = new_session(tiny_model)
    assert session.model.config.tie_word_embeddings
    train(session, 3)
    folder = session.save_weights_for_sampler(str(tmp_path / "sampler"))
    run(Options(base_model=tiny_model, adapter=folder, output_dir=str(tmp_path / "merged")))

    adapted, tokenizer = load_for_inference(tiny_model, folder, "cpu")
    merged = AutoModelForCausalLM.from_pretrained(str(tmp_path / "merged"), torch_dtype=torch.float32)
    ids = torch.tensor([conversation_datum(tokenizer, *QA[0]).model_input])
    with torch.no_grad():
        np.testing.assert_allclose(merged(input_ids=ids).logits.numpy(), adapted(input_ids=ids).logits.numpy(), atol=1e-4)


def test_a_state_whose_tensors_do_not_fit_is_refused_before_it_changes_anything(tiny_model, tmp_path):
    from safetensors.torch import load_file, save_file

    from ftcore.tinker.session import ADAPTER_FILE

    trained = new_session(tiny_model)
    train(trained, 2)
    trained.save_state(str(tmp_path / "state"))
    file = tmp_path / "state" / ADAPTER_FILE
    tensors = load_file(file)
    last = sorted(tensors)[-1]
    tensors[last] = tensors[last][..., :-1].contiguous()  # one tensor a column short: the same LoRA settings otherwise
    save_file(tensors, file)

    session = new_session(tiny_model, seed=1)
    before = {name: p.detach().clone() for name, p in session.model.named_parameters() if "lora_" in name}
    with pytest.raises(SpecError, match="does not fit this model"):
        session.load_state(str(tmp_path / "state"))
    after = dict(session.model.named_parameters())
    assert all(torch.equal(before[name], after[name]) for name in before)
