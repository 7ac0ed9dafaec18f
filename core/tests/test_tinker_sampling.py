"""Tinker's sample on a training session's current weights (ftcore/tinker/sampling.py): greedy as transformers'
generate, stop tokens and strings, max_tokens, seeds, and logprobs that forward_backward agrees with."""
import numpy as np
import pytest
import torch

from ftcore.errors import SpecError
from ftcore.tinker.sampling import SamplingParams
from ftcore.tinker.session import AdamParams, Datum, TrainingSession

from helpers import QA
from test_tinker_session import conversation_datum, new_session


@pytest.fixture(scope="module")
def session(tiny_model) -> TrainingSession:
    """A session that has learnt QA's answers a little (sampling never changes its weights)."""
    session = new_session(tiny_model)
    data = [conversation_datum(session.tokenizer, q, a) for q, a in QA]
    for _ in range(6):
        session.forward_backward(data, "cross_entropy")
        session.optim_step(AdamParams(learning_rate=1e-2))
    return session


def prompt_of(session: TrainingSession, question: str) -> list[int]:
    return session.tokenizer.apply_chat_template([{"role": "user", "content": question}], add_generation_prompt=True)


def greedy(session, prompt, **params):
    return session.sample(prompt, 1, SamplingParams(temperature=0, **params)).sequences[0]


def test_greedy_is_what_transformers_generate_gives(session):
    eos = session.tokenizer.eos_token_id
    for question, _ in QA:
        prompt = prompt_of(session, question)
        ours = greedy(session, prompt, max_tokens=12)
        with torch.no_grad():
            theirs = session.model.generate(input_ids=torch.tensor([prompt]), attention_mask=torch.ones(1, len(prompt)),
                                            max_new_tokens=12, do_sample=False, eos_token_id=eos, pad_token_id=eos)
        assert ours.tokens == theirs[0, len(prompt):].tolist()
        assert ours.stop_reason == ("stop" if ours.tokens[-1] == eos else "length")


def test_stop_tokens_strings_and_max_tokens_end_a_sample(session):
    prompt = prompt_of(session, QA[0][0])
    full = greedy(session, prompt, max_tokens=12)
    assert full.stop_reason == "stop" and full.tokens[-1] == session.tokenizer.eos_token_id  # the model's own stop
    assert greedy(session, prompt, max_tokens=12, stop=[full.tokens[1]]).tokens == full.tokens[:2]
    by_string = greedy(session, prompt, max_tokens=12, stop=".")
    assert by_string.stop_reason == "stop" and session.tokenizer.decode(by_string.tokens).endswith(".")
    assert "." not in session.tokenizer.decode(by_string.tokens[:-1])
    cut = greedy(session, prompt, max_tokens=2)
    assert (cut.tokens, cut.stop_reason) == (full.tokens[:2], "length")
    # stop=[] removes even the end-of-turn token: max_tokens ends the sample.
    endless = greedy(session, prompt, max_tokens=len(full.tokens) + 3, stop=[])
    assert endless.stop_reason == "length" and endless.tokens[:len(full.tokens)] == full.tokens
    assert len(endless.tokens) == len(full.tokens) + 3


def test_sampled_and_prompt_logprobs_are_the_forward_logprobs(session):
    prompt = prompt_of(session, QA[1][0])
    out = session.sample(prompt, 3, SamplingParams(max_tokens=8, temperature=1.5, seed=3), prompt_logprobs=True)
    for sequence in out.sequences:
        tokens = prompt + sequence.tokens
        datum = Datum(tokens[:-1], {"target_tokens": np.array(tokens[1:])})
        forward = session.forward_backward([datum], "cross_entropy", forward_only=True).loss_fn_outputs[0]["logprobs"]
        np.testing.assert_allclose(sequence.logprobs, forward[len(prompt) - 1:], atol=1e-4)
        assert out.prompt_logprobs[0] is None
        np.testing.assert_allclose(out.prompt_logprobs[1:], forward[:len(prompt) - 1], atol=1e-4)


def test_a_seed_makes_samples_reproducible(session):
    prompt = prompt_of(session, QA[2][0])

    def draw(seed):
        params = SamplingParams(max_tokens=8, temperature=2.0, seed=seed, stop=[])
        return [s.tokens for s in session.sample(prompt, 4, params).sequences]

    assert draw(7) == draw(7)
    assert draw(7) != draw(8)
    assert len({tuple(tokens) for tokens in draw(7)}) > 1  # the samples of one request differ from one another


def test_top_k_and_top_p_narrow_the_choice(session):
    prompt = prompt_of(session, QA[3][0])
    best = greedy(session, prompt, max_tokens=6).tokens
    for narrow in (SamplingParams(max_tokens=6, temperature=5.0, top_k=1, seed=1),
                   SamplingParams(max_tokens=6, temperature=5.0, top_p=1e-6, seed=1)):
        assert session.sample(prompt, 2, narrow).sequences[0].tokens == best


def test_bad_sampling_requests_are_refused(session):
    prompt = prompt_of(session, QA[0][0])
    refused = {
        "do not fit the model's context": (prompt, 1, SamplingParams(max_tokens=10_000)),
        "token ids in": ([10**6], 1, SamplingParams(max_tokens=2)),
        "num_samples": (prompt, 0, SamplingParams(max_tokens=2)),
        "top_p": (prompt, 1, SamplingParams(max_tokens=2, top_p=0)),
        "stop must be": (prompt, 1, SamplingParams(max_tokens=2, stop=[1, "x"])),
    }
    for message, args in refused.items():
        with pytest.raises(SpecError, match=message):
            session.sample(*args)
