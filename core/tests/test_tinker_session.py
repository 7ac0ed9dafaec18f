"""The Tinker engine's training primitives (ftcore/tinker/session.py) on the tiny model: losses as Tinker defines them,
gradients that accumulate until optim_step, AdamW with the hyperparameters of each call."""
import math

import numpy as np
import pytest
import torch

from ftcore.errors import SpecError
from ftcore.tinker import losses
from ftcore.tinker.lora import LoraSpec
from ftcore.tinker.session import AdamParams, Datum, TrainingSession

from helpers import QA


def new_session(model: str, **lora) -> TrainingSession:
    return TrainingSession.create(LoraSpec(model, **{"rank": 8, "seed": 0, **lora}), device="cpu")


def conversation_datum(tokenizer, question: str, answer: str) -> Datum:
    """A chat turn as Tinker's cookbook builds one: inputs and targets shifted by one, weight 1 on the answer only."""
    prompt = tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True)
    full = tokenizer.apply_chat_template([{"role": "user", "content": question},
                                          {"role": "assistant", "content": answer}])
    assert full[:len(prompt)] == prompt
    weights = np.array([0.0] * (len(prompt) - 1) + [1.0] * (len(full) - len(prompt)), dtype=np.float32)
    return Datum(full[:-1], {"target_tokens": np.array(full[1:]), "weights": weights})


def rl_datum(datum: Datum, sampler_logprobs, advantages) -> Datum:
    return Datum(datum.model_input, {"target_tokens": datum.loss_fn_inputs["target_tokens"],
                                     "logprobs": np.asarray(sampler_logprobs, dtype=np.float32),
                                     "advantages": np.asarray(advantages, dtype=np.float32)})


def logprobs_of(session: TrainingSession, data: list[Datum]) -> list[np.ndarray]:
    return [o["logprobs"] for o in session.forward_backward(data, "cross_entropy", forward_only=True).loss_fn_outputs]


def adapter_weights(session: TrainingSession) -> list[torch.Tensor]:
    return [p.detach().clone() for p in session.parameters]


def gradients(session: TrainingSession) -> list[torch.Tensor]:
    return [p.grad.clone() for p in session.parameters]


@pytest.fixture()
def session(tiny_model) -> TrainingSession:
    return new_session(tiny_model)


@pytest.fixture()
def data(session) -> list[Datum]:
    return [conversation_datum(session.tokenizer, q, a) for q, a in QA]


def test_a_supervised_loop_lowers_the_loss_and_its_logprobs_are_the_peft_models(session, data):
    losses_seen = []
    for _ in range(10):
        losses_seen.append(session.forward_backward(data, "cross_entropy").metrics["loss:sum"])
        session.optim_step(AdamParams(learning_rate=1e-2))
    assert losses_seen[-1] < 0.1 * losses_seen[0], losses_seen
    assert session.step == 10

    out = session.forward_backward(data, "cross_entropy", forward_only=True)
    expected_loss = 0.0
    for datum, output in zip(data, out.loss_fn_outputs):
        with torch.no_grad():
            logits = session.model(input_ids=torch.tensor([datum.model_input])).logits[0]
        targets = torch.as_tensor(datum.loss_fn_inputs["target_tokens"])
        independent = logits.log_softmax(-1).gather(-1, targets[:, None])[:, 0].numpy()
        assert output["logprobs"].dtype == np.float32 and output["logprobs"].shape == targets.shape
        np.testing.assert_allclose(output["logprobs"], independent, atol=1e-5)
        expected_loss -= float((datum.loss_fn_inputs["weights"] * independent).sum())
    assert set(out.metrics) == {"loss:sum"}
    assert out.metrics["loss:sum"] == pytest.approx(expected_loss, abs=1e-4)


def test_forward_only_leaves_no_gradient(session, data):
    before = adapter_weights(session)
    session.forward_backward(data, "cross_entropy", forward_only=True)
    assert all(p.grad is None for p in session.parameters)
    session.optim_step(AdamParams(learning_rate=1e-2, weight_decay=0.1))
    assert all(torch.equal(a, b) for a, b in zip(before, adapter_weights(session)))


def test_gradients_accumulate_across_calls_until_optim_step(tiny_model):
    halves, whole = new_session(tiny_model), new_session(tiny_model)
    data = [conversation_datum(whole.tokenizer, q, a) for q, a in QA]
    first = halves.forward_backward(data[:2], "cross_entropy").metrics["loss:sum"]
    second = halves.forward_backward(data[2:], "cross_entropy").metrics["loss:sum"]
    assert whole.forward_backward(data, "cross_entropy").metrics["loss:sum"] == pytest.approx(first + second, abs=1e-4)
    for a, b in zip(gradients(halves), gradients(whole)):
        torch.testing.assert_close(a, b, atol=1e-5, rtol=1e-5)
    params = AdamParams(learning_rate=1e-2, eps=1e-8)
    halves.optim_step(params)
    whole.optim_step(params)
    for a, b in zip(adapter_weights(halves), adapter_weights(whole)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=0)


def test_a_small_batch_budget_runs_several_passes_with_the_same_result(tiny_model):
    one_pass, several = new_session(tiny_model), new_session(tiny_model)
    several.max_batch_tokens = 40  # one conversation per pass
    data = [conversation_datum(one_pass.tokenizer, q, a) for q, a in QA]
    a, b = (s.forward_backward(data, "cross_entropy") for s in (one_pass, several))
    assert a.metrics["loss:sum"] == pytest.approx(b.metrics["loss:sum"], abs=1e-4)
    for x, y in zip(gradients(one_pass), gradients(several)):
        torch.testing.assert_close(x, y, atol=1e-5, rtol=1e-5)


@pytest.mark.parametrize("sign", [1.0, -1.0])
def test_importance_sampling_moves_the_sampled_tokens_with_the_advantage(session, data, sign):
    answer = [d.loss_fn_inputs["weights"] for d in data]
    before = logprobs_of(session, data)
    rl = [rl_datum(d, lp, sign * w) for d, lp, w in zip(data, before, answer)]
    session.forward_backward(rl, "importance_sampling")
    session.optim_step(AdamParams(learning_rate=1e-3))
    after = logprobs_of(session, data)
    change = sum(float(((a - b) * w).sum()) for a, b, w in zip(after, before, answer))
    assert sign * change > 0.5, change


def test_ppo_gives_no_gradient_where_the_ratio_is_clipped(tiny_model):
    ppo, reference = new_session(tiny_model), new_session(tiny_model)
    datum = conversation_datum(ppo.tokenizer, *QA[0])
    current = logprobs_of(ppo, [datum])[0]
    n = len(current)
    # The first half of the tokens was twice as likely under the sampler as now (ratio 0.5 < 0.8) with a negative
    # advantage: PPO takes the clipped, constant term there. The rest is on-policy (ratio 1).
    far = np.arange(n) < n // 2
    sampler = np.where(far, current + math.log(2), current)
    advantages = np.where(far, -1.0, 1.0)
    ppo.forward_backward([rl_datum(datum, sampler, advantages)], "ppo")
    # Importance sampling on the on-policy tokens only has the same gradient.
    reference.forward_backward([rl_datum(datum, current, np.where(far, 0.0, 1.0))], "importance_sampling")
    for a, b in zip(gradients(ppo), gradients(reference)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-5)
    assert any(g.abs().sum() > 0 for g in gradients(reference))

    # A lower bound under 0.5 takes those tokens back into the objective.
    widened = new_session(tiny_model)
    widened.forward_backward([rl_datum(datum, sampler, advantages)], "ppo", {"clip_low_threshold": 0.4})
    assert max(float((a - b).abs().max()) for a, b in zip(gradients(widened), gradients(reference))) > 1e-4


def test_each_loss_is_the_sum_tinkers_docs_define(session, data):
    datum = data[0]
    logprobs = torch.tensor(logprobs_of(session, [datum])[0], dtype=torch.float64)
    sampler = logprobs + torch.linspace(-1, 1, len(logprobs), dtype=torch.float64)
    advantages = torch.linspace(-2, 3, len(logprobs), dtype=torch.float64)
    ratio = torch.exp(logprobs - sampler)
    expected = {
        "importance_sampling": ({}, -(ratio * advantages).sum()),
        "ppo": ({}, -torch.min(ratio * advantages, ratio.clamp(0.8, 1.2) * advantages).sum()),
        "cispo": ({"clip_high_threshold": 1.5}, -(ratio.clamp(0.0, 1.5) * logprobs * advantages).sum()),
        "dro": ({"beta": 0.3}, -(logprobs * advantages - 0.15 * (logprobs - sampler) ** 2).sum()),
    }
    rl = rl_datum(datum, sampler.numpy(), advantages.numpy())
    for name, (config, value) in expected.items():
        out = session.forward_backward([rl], name, config, forward_only=True)
        assert out.metrics["loss:sum"] == pytest.approx(float(value), rel=1e-5, abs=1e-4), name


def test_optim_step_is_adamw_with_each_calls_hyperparameters(session, data):
    steps = [AdamParams(learning_rate=1e-2, beta1=0.8, beta2=0.9, eps=1.0, weight_decay=0.1, grad_clip_norm=0.5),
             AdamParams(learning_rate=3e-3, beta1=0.5, beta2=0.7, eps=0.1, weight_decay=0.0, grad_clip_norm=0.0)]
    weights = adapter_weights(session)
    m = [torch.zeros_like(w) for w in weights]
    v = [torch.zeros_like(w) for w in weights]
    for t, hp in enumerate(steps, start=1):
        session.forward_backward(data, "cross_entropy")
        grads = gradients(session)
        norm = torch.linalg.vector_norm(torch.stack([torch.linalg.vector_norm(g) for g in grads]))
        metrics = session.optim_step(hp)
        assert metrics["grad_norm:mean"] == pytest.approx(float(norm), rel=1e-5)
        scale = min(1.0, hp.grad_clip_norm / (float(norm) + 1e-6)) if hp.grad_clip_norm else 1.0
        for i, g in enumerate(grads):
            g = g * scale
            m[i] = hp.beta1 * m[i] + (1 - hp.beta1) * g
            v[i] = hp.beta2 * v[i] + (1 - hp.beta2) * g * g
            update = (m[i] / (1 - hp.beta1 ** t)) / ((v[i] / (1 - hp.beta2 ** t)).sqrt() + hp.eps)
            weights[i] = weights[i] * (1 - hp.learning_rate * hp.weight_decay) - hp.learning_rate * update
        for expected, actual in zip(weights, adapter_weights(session)):
            torch.testing.assert_close(actual, expected, atol=1e-6, rtol=1e-5)
        assert all(p.grad is None for p in session.parameters)


def test_the_flags_choose_the_adapted_layers(tiny_model):
    def targets(**flags):
        off = {"train_attn": False, "train_mlp": False, "train_unembed": False}
        return new_session(tiny_model, **{**off, **flags}).info()["target_modules"]

    assert targets(train_attn=True) == ["k_proj", "o_proj", "q_proj", "v_proj"]
    assert targets(train_mlp=True) == ["down_proj", "gate_proj", "up_proj"]
    assert targets(train_unembed=True) == ["lm_head"]
    with pytest.raises(SpecError, match="select no layer"):
        targets()


def test_bad_requests_are_refused_before_any_gradient_changes(session, data):
    session.forward_backward(data[:1], "cross_entropy")
    kept = gradients(session)
    datum = data[0]
    n = len(datum.model_input)
    refused = {
        "not supported; supported: cross_entropy, importance_sampling, ppo, cispo, dro":
            ([datum], "gspo", None),
        r"lacks loss_fn_inputs \['logprobs', 'advantages'\]": ([datum], "importance_sampling", None),
        "needs loss_fn_config": ([rl_datum(datum, np.zeros(n), np.ones(n))], "dro", None),
        "does not apply to ppo": ([rl_datum(datum, np.zeros(n), np.ones(n))], "ppo", {"clip": 0.1}),
        "must be numbers": ([rl_datum(datum, np.zeros(n), np.ones(n))], "dro", {"beta": "high"}),
        "weights has shape": ([Datum(datum.model_input, {**datum.loss_fn_inputs, "weights": np.ones(n + 1)})],
                              "cross_entropy", None),
        "token ids must lie in": ([data[1], Datum([10**6] * n, datum.loss_fn_inputs)], "cross_entropy", None),
        "integer token ids": ([Datum([0.5] * n, datum.loss_fn_inputs)], "cross_entropy", None),
        "at least one datum": ([], "cross_entropy", None),
    }
    for message, (batch, loss_fn, config) in refused.items():
        with pytest.raises(SpecError, match=message):
            session.forward_backward(batch, loss_fn, config)
    for a, b in zip(kept, gradients(session)):
        assert torch.equal(a, b)


def test_a_call_that_fails_midway_leaves_the_gradients_as_they_were(session, data, monkeypatch):
    session.forward_backward(data[:1], "cross_entropy")
    kept = gradients(session)
    session.max_batch_tokens = 40  # one conversation per pass: the failure comes after a first backward

    calls = []

    def fail_on_the_second(logprobs, inputs, config):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("out of memory")
        return losses.cross_entropy(logprobs, inputs, config)

    monkeypatch.setitem(losses.LOSSES, "cross_entropy", losses.Loss((), ("weights",), {}, fail_on_the_second))
    with pytest.raises(RuntimeError, match="out of memory"):
        session.forward_backward(data, "cross_entropy")
    for a, b in zip(kept, gradients(session)):
        assert torch.equal(a, b)


def test_cispos_clipped_ratio_is_a_constant_coefficient(tiny_model):
    cispo, reference = new_session(tiny_model), new_session(tiny_model)
    datum = conversation_datum(cispo.tokenizer, *QA[1])
    current = logprobs_of(cispo, [datum])[0]
    sampler = current + np.linspace(-1, 1, len(current), dtype=np.float32)
    advantages = np.linspace(-1, 2, len(current), dtype=np.float32)
    cispo.forward_backward([rl_datum(datum, sampler, advantages)], "cispo", {"clip_high_threshold": 1.5})
    # Its gradient is cross-entropy's with each token weighted by its clipped ratio times its advantage.
    weights = np.clip(np.exp(current - sampler), 0.0, 1.5) * advantages
    reference.forward_backward([Datum(datum.model_input, {**datum.loss_fn_inputs, "weights": weights})],
                               "cross_entropy")
    for a, b in zip(gradients(cispo), gradients(reference)):
        torch.testing.assert_close(a, b, atol=1e-6, rtol=1e-4)


def test_top_k_targets_give_logprobs_of_their_shape(session, data):
    datum = data[0]
    targets = np.asarray(datum.loss_fn_inputs["target_tokens"])
    two = np.stack([targets, (targets + 1) % 300], axis=1)
    out = session.forward_backward([Datum(datum.model_input, {"target_tokens": two, "weights": np.ones(two.shape)})],
                                   "cross_entropy", forward_only=True)
    logprobs = out.loss_fn_outputs[0]["logprobs"]
    assert logprobs.shape == two.shape
    np.testing.assert_allclose(logprobs[:, 0], logprobs_of(session, [datum])[0], atol=1e-6)
    assert out.metrics["loss:sum"] == pytest.approx(-float(logprobs.sum()), rel=1e-5)
