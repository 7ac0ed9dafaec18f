"""sample(weights=folder) on a Tinker session (ftcore/tinker/session.py): a sampling client made by
save_weights_for_sampler keeps sampling from those weights while training goes on, and leaves the training state as it
was. And a loss or gradient that is not finite is refused, never applied."""
import math

import numpy as np
import pytest
import torch

from ftcore.errors import SpecError
from ftcore.tinker import losses, session as session_module
from ftcore.tinker.sampling import SamplingParams
from ftcore.tinker.session import AdamParams, Datum, TrainingSession

from helpers import QA
from test_tinker_sampling import prompt_of
from test_tinker_session import adapter_weights, conversation_datum, gradients, logprobs_of, new_session, rl_datum

STEP = AdamParams(learning_rate=1e-2)
GREEDY = SamplingParams(temperature=0, max_tokens=8, stop=[])


def train(session: TrainingSession, steps: int) -> None:
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    for _ in range(steps):
        session.forward_backward(data, "cross_entropy")
        session.optim_step(STEP)


def greedy(session: TrainingSession, prompt: list[int], weights: str | None = None):
    out = session.sample(prompt, 1, GREEDY, prompt_logprobs=True, weights=weights)
    return out.sequences[0], out.prompt_logprobs[1:]


def assert_same_sample(a, b):
    (seq_a, prompt_a), (seq_b, prompt_b) = a, b
    assert seq_a.tokens == seq_b.tokens
    np.testing.assert_allclose(seq_a.logprobs, seq_b.logprobs, atol=1e-5, rtol=0)
    np.testing.assert_allclose(prompt_a, prompt_b, atol=1e-5, rtol=0)


def optimizer_state(session: TrainingSession) -> list[torch.Tensor]:
    return [t.clone() for state in session.optimizer.state.values() for t in state.values()]


def test_a_snapshot_samples_its_own_weights_while_training_goes_on(tiny_model, tmp_path):
    session = new_session(tiny_model)
    train(session, 1)
    prompt = prompt_of(session, QA[0][0])
    a = session.save_weights_for_sampler(str(tmp_path / "a"))
    at_save = greedy(session, prompt)
    assert_same_sample(greedy(session, prompt, weights=a), at_save)  # nothing changed yet: sampled directly

    train(session, 3)
    assert_same_sample(greedy(session, prompt, weights=a), at_save)
    current = greedy(session, prompt)
    assert np.abs(np.array(current[1]) - np.array(at_save[1])).max() > 1e-3  # the current weights did move
    assert_same_sample(greedy(session, prompt, weights=None), current)


def test_sampling_a_snapshot_leaves_weights_gradients_and_optimizer_untouched(tiny_model, tmp_path):
    session = new_session(tiny_model)
    train(session, 1)
    a = session.save_weights_for_sampler(str(tmp_path / "a"))
    train(session, 2)
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    session.forward_backward(data[:2], "cross_entropy")  # accumulated, not yet applied
    weights, grads, moments = adapter_weights(session), gradients(session), optimizer_state(session)
    loss = session.forward_backward(data, "cross_entropy", forward_only=True).metrics["loss:sum"]

    session.sample(prompt_of(session, QA[1][0]), 2, SamplingParams(max_tokens=6, seed=1), weights=a)

    assert all(torch.equal(x, y) for x, y in zip(weights, adapter_weights(session)))
    assert all(torch.equal(x, y) for x, y in zip(grads, gradients(session)))
    assert all(torch.equal(x, y) for x, y in zip(moments, optimizer_state(session)))
    assert session.forward_backward(data, "cross_entropy", forward_only=True).metrics["loss:sum"] == loss
    assert all(p.data.device.type == "cpu" and p.data.dtype == torch.float32 for p in session.parameters)


def test_a_snapshot_dropped_from_memory_is_read_back_from_its_folder(tiny_model, tmp_path):
    session = new_session(tiny_model)
    train(session, 1)
    prompt = prompt_of(session, QA[2][0])
    a = session.save_weights_for_sampler(str(tmp_path / "a"))
    at_save = greedy(session, prompt)
    for n in range(session_module.SNAPSHOTS_IN_MEMORY + 1):
        train(session, 1)
        session.save_weights_for_sampler(str(tmp_path / f"other{n}"))
    assert len(session._snapshots) == session_module.SNAPSHOTS_IN_MEMORY
    assert str((tmp_path / "a").resolve()) not in session._snapshots

    assert_same_sample(greedy(session, prompt, weights=a), at_save)
    assert str((tmp_path / "a").resolve()) in session._snapshots  # read back, and kept for the next sample
    assert_same_sample(greedy(session, prompt, weights=str(tmp_path / "." / "a")), at_save)  # the same folder


def test_a_state_folder_and_another_sessions_adapter_can_be_sampled_too(tiny_model, tmp_path):
    session, other = new_session(tiny_model), new_session(tiny_model, seed=1)
    train(other, 2)
    prompt = prompt_of(session, QA[3][0])
    theirs = other.save_weights_for_sampler(str(tmp_path / "theirs"))
    assert_same_sample(greedy(session, prompt, weights=theirs), greedy(other, prompt))

    state = session.save_state(str(tmp_path / "state"))
    at_save = greedy(session, prompt)
    assert_same_sample(greedy(session, prompt, weights=state), at_save)
    train(session, 1)
    assert_same_sample(greedy(session, prompt, weights=state), at_save)  # read from the folder
    session.load_state(state)
    assert_same_sample(greedy(session, prompt), at_save)


def test_weights_that_were_never_saved_or_do_not_fit_are_refused(tiny_model, tmp_path):
    session = new_session(tiny_model)
    prompt = prompt_of(session, QA[0][0])
    missing = str(tmp_path / "never-saved")
    with pytest.raises(SpecError, match="never-saved") as refused:
        session.sample(prompt, 1, GREEDY, weights=missing)
    assert refused.value.field == "weights"
    rank4 = new_session(tiny_model, rank=4).save_weights_for_sampler(str(tmp_path / "rank4"))
    with pytest.raises(SpecError, match="does not fit this session's"):
        session.sample(prompt, 1, GREEDY, weights=rank4)


# --- losses that are not finite ---------------------------------------------------------------------------------------


def test_a_loss_that_is_not_finite_names_the_datum_and_applies_nothing(tiny_model):
    session = new_session(tiny_model)
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    session.forward_backward(data[:1], "cross_entropy")
    kept = gradients(session)
    session.max_batch_tokens = 40  # one datum per pass: the bad one comes after a first backward

    nan_weights = Datum(data[1].model_input, {**data[1].loss_fn_inputs,
                                              "weights": np.full(len(data[1].model_input), np.nan)})
    current = logprobs_of(session, data[:2])
    overflow = rl_datum(data[1], current[1] - 200.0, np.ones_like(current[1]))  # exp(200) overflows float32
    refused = {
        r"cross_entropy gives nan for data\[1\]: its loss_fn_inputs \['weights'\]": ([data[0], nan_weights],
                                                                                    "cross_entropy"),
        r"importance_sampling gives -inf for data\[1\]: its inputs and logprobs are finite, so a term overflowed":
            ([rl_datum(data[0], current[0], np.ones_like(current[0])), overflow], "importance_sampling"),
    }
    for message, (batch, loss_fn) in refused.items():
        for forward_only in (False, True):
            with pytest.raises(SpecError, match="^the loss is not finite: " + message) as error:
                session.forward_backward(batch, loss_fn, forward_only=forward_only)
            assert error.value.field == "data[1]"
            assert all(torch.equal(a, b) for a, b in zip(kept, gradients(session)))

    session.optim_step(STEP)
    assert all(bool(w.isfinite().all()) for w in adapter_weights(session))


def test_gradients_that_are_not_finite_are_dropped(tiny_model, monkeypatch):
    session = new_session(tiny_model)
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    session.forward_backward(data[:1], "cross_entropy")
    kept = gradients(session)

    def nan_gradient(logprobs, inputs, config):  # 0, but d/dx sqrt(x) at 0 is infinite, times 0: NaN
        return torch.sqrt(logprobs * 0).sum()

    monkeypatch.setitem(losses.LOSSES, "cross_entropy", losses.Loss((), ("weights",), {}, nan_gradient))
    with pytest.raises(SpecError, match="^the gradients are not finite"):
        session.forward_backward(data, "cross_entropy")
    assert all(torch.equal(a, b) for a, b in zip(kept, gradients(session)))
    assert math.isfinite(session.optim_step(STEP)["grad_norm:mean"])
