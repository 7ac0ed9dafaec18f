"""The generation engine (#31, #64): which engine a call takes, and the engine's own decode loop (inference/decode.py)
against transformers' generate on the CPU: the same greedy tokens on every architecture it serves, seeded sampling
that is reproducible and draws from generate's distribution, stop tokens, stop strings and max tokens per row
honoured whatever the host's read interval, a cancel between reads, and the step compiled by torch.compile giving
the eager step's tokens. The CUDA half (graphs, bf16) is core/tests/test_cuda.py and scripts/gpu-check.sh."""
import pytest
import torch
from helpers import QA

from ftcore.chat import render
from ftcore.errors import Cancelled, SpecError
from ftcore.inference import decode
from ftcore.inference.generate import ENGINE_VARIABLE, Engine, choose_engine, generate_answers, generate_token_ids
from ftcore.models.loading import load_for_inference

PROMPTS = [[{"role": "user", "content": q}] for q, _ in QA]


def encoded(tokenizer, prompts=PROMPTS):
    tokenizer.padding_side = "left"
    texts = [render(tokenizer, p, None, add_generation_prompt=True) for p in prompts]
    batch = tokenizer(texts, return_tensors="pt", padding=True, add_special_tokens=False)
    return batch["input_ids"], batch["attention_mask"]


def settings(tokenizer, **more) -> dict:
    """generate's keyword arguments as generate.py passes them."""
    return {"do_sample": False, "temperature": None, "top_p": None, "top_k": None,
            "eos_token_id": tokenizer.eos_token_id, "pad_token_id": tokenizer.pad_token_id, "max_new_tokens": 32,
            **more}


def test_the_compiled_engine_generates_what_plain_generate_does(trained_adapter, tiny_model, monkeypatch):
    """The CUDA engine (#31: a static KV cache, the decode step compiled, CUDA graphs on a GPU) against transformers'
    generate on the same device and dtype: the same greedy tokens in fp32 on the CPU, through a LoRA adapter, with the
    prompts left-padded to one width and the last batch filled with copies of its last prompt."""
    model, tokenizer = load_for_inference(tiny_model, trained_adapter, device="cpu")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    prompts.append([{"role": "system", "content": "Answer in one word, please, and be brief."}, {"role": "user", "content": QA[1][0]}])
    monkeypatch.setenv(ENGINE_VARIABLE, "plain")
    plain = generate_token_ids(model, tokenizer, prompts, max_new_tokens=24)
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    compiled = generate_token_ids(model, tokenizer, prompts, max_new_tokens=24, batch_size=2)  # 2 + 2 + 1 and a copy
    assert compiled == plain
    inner = model.get_base_model()
    assert not getattr(inner, "_ftcore_compile_failed", False) and inner._ftcore_decoders  # the engine's loop ran
    assert inner._ftcore_compiled_shapes == {(2, 64 + 24)}  # one shape: every batch padded to the longest prompt


@pytest.mark.parametrize("architecture", ["qwen2", "qwen3", "gemma3"])
def test_the_compiled_engine_generates_what_plain_generate_does_on_each_tiny_architecture(architecture, tiny_model_of,
                                                                                          monkeypatch):
    """The same parity on the other families the core makes tiny models of, random weights, so every answer runs to
    max_new_tokens: all of the first 32 greedy tokens equal. Gemma 3 stays on plain generate: its sliding-window
    layers make torch.compile recompile the decode step at every token in transformers' static cache
    (generate._has_sliding_layers)."""
    model, tokenizer = load_for_inference(tiny_model_of(architecture), device="cpu")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    monkeypatch.setenv(ENGINE_VARIABLE, "plain")
    plain = generate_token_ids(model, tokenizer, prompts, max_new_tokens=32)
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    compiled = generate_token_ids(model, tokenizer, prompts, max_new_tokens=32)
    assert compiled == plain
    assert not getattr(model, "_ftcore_compile_failed", False)
    assert bool(getattr(model, "_ftcore_decoders", None)) == (architecture != "gemma3")  # the engine's own loop


def test_the_engine_on_the_cpu_is_plain_generate_at_batch_8_unless_asked(tiny_model, monkeypatch):
    model, _ = load_for_inference(tiny_model, device="cpu")
    monkeypatch.delenv(ENGINE_VARIABLE, raising=False)
    assert choose_engine(model, [30] * 500, 256, None) == Engine(compiled=False, batch_size=8)
    assert choose_engine(model, [30] * 500, 256, 3) == Engine(compiled=False, batch_size=3)
    assert choose_engine(model, [], 256, None) == Engine(compiled=False, batch_size=8)  # images: the processor's inputs
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    assert choose_engine(model, [30] * 5, 16, None) == Engine(compiled=True, batch_size=8)
    assert choose_engine(model, [30] * 3, 16, None) == Engine(compiled=True, batch_size=4)  # a power of two: shared
    monkeypatch.setenv(ENGINE_VARIABLE, "fast")
    with pytest.raises(SpecError, match="auto, plain or compiled"):
        choose_engine(model, [30], 16, None)


def test_on_cuda_the_engine_compiles_work_that_pays_for_it_and_sizes_batches_from_free_memory(tiny_model, monkeypatch):
    """The CUDA decisions, with the device's answers stood in (test_cuda.py has them for real): the tiny model's KV
    cache is 2 layers × 2 (K, V) × 2 heads × 16 dims × 4 bytes = 512 B a position and its prefill activations 2.5 KiB,
    so half of 64 MiB free holds ~34 rows of 320 positions; 256 prompts × 256 tokens pay for a compile, 4 × 16 do not."""
    import torch

    from ftcore.inference import generate

    monkeypatch.delenv(ENGINE_VARIABLE, raising=False)
    model, _ = load_for_inference(tiny_model, device="cpu")
    monkeypatch.setattr(generate, "_on_cuda", lambda m: True)
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (64 * 2**20, 80 * 2**30))
    config = model.config
    per_position = 2 * config.num_hidden_layers * config.num_key_value_heads * config.head_dim * 4
    rows = generate._batch_from_memory(model, 320)
    assert per_position == 512 and 20 <= rows <= 50 and rows == int(32 * 2**20 // (
        320 * (per_position + (4 * config.hidden_size + 3 * config.intermediate_size) * 4) + 8 * config.vocab_size))
    assert choose_engine(model, [40] * 4, 16, None) == Engine(compiled=False, batch_size=4)  # all at once, plain
    assert choose_engine(model, [40] * 1000, 16, None) == Engine(compiled=False, batch_size=generate._batch_from_memory(model, 56))
    big = choose_engine(model, [40] * 256, 256, None)  # 64k new tokens: compiled, rows a power of two that fits
    assert big.compiled and big.batch_size == min(generate._batch_from_memory(model, 64 + 256), 256)
    # A shape compiled before is taken even for little work; a model holding MAX_COMPILED_SHAPES takes no new one.
    model._ftcore_compiled_shapes = {(4, 64 + 16)}
    assert choose_engine(model, [40] * 4, 16, None) == Engine(compiled=True, batch_size=4)
    model._ftcore_compiled_shapes = {(k, 1) for k in range(generate.MAX_COMPILED_SHAPES)}
    assert not choose_engine(model, [40] * 256, 256, None).compiled
    model._ftcore_compiled_shapes = set()
    assert not choose_engine(model, [40] * 256, 256, None, work=10).compiled  # GRPO: the run's work decides


@pytest.mark.parametrize("temperature,top_p", [(0.7, 0.9), (1.3, 1.0)])
def test_seeded_sampling_is_reproducible_and_its_probabilities_are_generates(temperature, top_p, tiny_model):
    """Random weights, so the distributions are wide: the same seed draws the same tokens, another seed others, and
    each drawn token's probability equals what transformers' temperature and top-p warpers give it after a plain
    forward over the same tokens (fp32, within 1e-4)."""
    from transformers.generation.logits_process import TemperatureLogitsWarper, TopPLogitsWarper

    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    input_ids, mask = encoded(tokenizer)
    plan = decode.plan(model, settings(tokenizer, do_sample=True, temperature=temperature, top_p=top_p))
    assert (plan.temperature, plan.top_p) == (temperature, top_p)
    drawn, chosen = decode.decode(model, input_ids, mask, plan, seed=7, probabilities=True)
    assert torch.equal(drawn, decode.decode(model, input_ids, mask, plan, seed=7))
    assert not torch.equal(drawn, decode.decode(model, input_ids, mask, plan, seed=8))
    whole = torch.cat([input_ids, drawn], dim=1)
    whole_mask = torch.cat([mask, torch.ones_like(drawn)], dim=1)
    positions = (whole_mask.cumsum(-1) - 1).masked_fill(whole_mask == 0, 1)
    with torch.no_grad():
        logits = model(input_ids=whole, attention_mask=whole_mask, position_ids=positions).logits.float()
    warpers = [TemperatureLogitsWarper(temperature)] + ([TopPLogitsWarper(top_p)] if top_p < 1 else [])
    compared = 0
    for row in range(drawn.shape[0]):
        for t in range(drawn.shape[1]):
            scores = logits[row:row + 1, input_ids.shape[1] + t - 1]
            for warper in warpers:
                scores = warper(None, scores)
            expected = scores.softmax(dim=-1)[0, drawn[row, t]].item()
            assert abs(expected - chosen[row, t].item()) < 1e-4, (row, t)
            compared += 1
    assert compared == drawn.numel() == len(QA) * 32  # random weights: no row met its end-of-turn token


def test_a_draw_follows_the_distribution(tiny_model):
    """1,024 rows of one prompt, each its own seed: the most likely tokens that hold half the first token's
    probability are drawn about that often (within 4 standard errors); a sampler stuck on the argmax (always) or
    drawing uniformly (a share near their count over the vocabulary's) is far off."""
    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    input_ids, mask = encoded(tokenizer, PROMPTS[:1] * 1024)
    plan = decode.plan(model, settings(tokenizer, do_sample=True, temperature=0.8, max_new_tokens=1))
    drawn = decode.decode(model, input_ids, mask, plan, seed=0)
    with torch.no_grad():
        probabilities = (model(input_ids=input_ids[:1]).logits[0, -1].float() / 0.8).softmax(dim=-1)
    ordered, order = probabilities.sort(descending=True)
    half = order[:int((ordered.cumsum(0) < 0.5).sum()) + 1]
    q = probabilities[half].sum().item()
    share = torch.isin(drawn[:, 0], half).float().mean().item()
    uniform = len(half) / probabilities.numel()
    bound = 4 * (q * (1 - q) / 1024) ** 0.5
    assert abs(share - q) < bound < abs(uniform - q), (share, q, uniform)


@pytest.mark.parametrize("every", [1, 3, 8])
@pytest.mark.parametrize("max_new_tokens", [2, 24])
def test_stop_strings_stop_tokens_and_max_tokens_end_each_row_as_generate_does(every, max_new_tokens, trained_adapter,
                                                                               tiny_model, monkeypatch):
    """The trained answers are "Paris.", "Blue.", "Four." and "Hello there!": with stop strings "ri", "ue" and "ll"
    three rows end at a string and "Four." at its end-of-turn token; with 2 new tokens some end at their length.
    Each answer (text, tokens, finish reason) is plain generate's, whatever the host's read interval."""
    model, tokenizer = load_for_inference(tiny_model, trained_adapter, device="cpu")
    stop = ["ri", "ue", "ll"]
    monkeypatch.setenv(ENGINE_VARIABLE, "plain")
    plain = generate_answers(model, tokenizer, PROMPTS, max_new_tokens=max_new_tokens, stop=stop)
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    monkeypatch.setattr(decode, "STEPS_PER_READ", every)
    looped = generate_answers(model, tokenizer, PROMPTS, max_new_tokens=max_new_tokens, stop=stop)
    assert looped == plain
    assert bool(model.get_base_model()._ftcore_decoders)
    if max_new_tokens == 24:
        assert [(a.text, a.finish_reason) for a in looped] == [("Pa", "stop"), ("Bl", "stop"), ("Four.", "stop"),
                                                               ("He", "stop")]
    else:
        assert "length" in {a.finish_reason for a in looped}


def test_a_second_call_of_a_shape_fills_the_same_state_tensors(tiny_model):
    """A CUDA graph replays the addresses it was captured with: a second call of the same shape, here with another
    stop token, must write its settings into the tensors the first call made, never new ones."""
    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    input_ids, mask = encoded(tokenizer)
    decode.decode(model, input_ids, mask, decode.plan(model, settings(tokenizer)))
    (decoder,) = model._ftcore_decoders.values()
    before = [t.data_ptr() for t in decoder._state()]
    other = decode.plan(model, settings(tokenizer, eos_token_id=tokenizer.pad_token_id))
    decode.decode(model, input_ids, mask, other)
    assert len(model._ftcore_decoders) == 1 and [t.data_ptr() for t in decoder._state()] == before
    assert decoder.stops.tolist() == [tokenizer.pad_token_id]


def test_a_cancel_ends_the_loop_at_its_next_read(tiny_model, monkeypatch):
    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    input_ids, mask = encoded(tokenizer)
    reads = []

    def should_stop() -> bool:
        reads.append(1)
        return len(reads) >= 2

    out = decode.decode(model, input_ids, mask, decode.plan(model, settings(tokenizer, max_new_tokens=64)),
                        should_stop=should_stop, every=4)
    assert len(reads) == 2 and out.shape[1] == 1 + 2 * 4  # the first token, then two reads of 4 steps
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    with pytest.raises(Cancelled):
        generate_token_ids(model, tokenizer, PROMPTS, max_new_tokens=64, should_stop=lambda: True)


def test_what_the_loop_does_not_do_stays_on_generate(tiny_model):
    """A repetition penalty (as Qwen2.5's generation_config.json sets one), top-k, a per-token filter or scores asked
    for: decode.plan says None and generate.py keeps transformers' generate for them."""
    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    assert decode.plan(model, settings(tokenizer)) is not None
    assert decode.plan(model, settings(tokenizer, repetition_penalty=1.05)) is None
    assert decode.plan(model, settings(tokenizer, do_sample=True, temperature=0.7, top_k=20)) is None
    assert decode.plan(model, settings(tokenizer, prefix_allowed_tokens_fn=lambda b, s: [1])) is None
    assert decode.plan(model, settings(tokenizer, output_scores=True, return_dict_in_generate=True)) is None
    model.generation_config.repetition_penalty = 1.05
    try:
        assert decode.plan(model, settings(tokenizer)) is None  # the model's own defaults count, as in generate
    finally:
        model.generation_config.repetition_penalty = 1.0


def test_the_compiled_step_gives_the_eager_steps_tokens(tiny_model):
    """The step as CUDA runs it, through torch.compile (inductor on the CPU here; ~25 s of compiling): greedy equal to
    transformers' generate, sampling equal to the eager loop's with the same seeds."""
    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    input_ids, mask = encoded(tokenizer)
    greedy = decode.plan(model, settings(tokenizer, max_new_tokens=16))
    with torch.no_grad():
        plain = model.generate(input_ids=input_ids, attention_mask=mask, **settings(tokenizer, max_new_tokens=16))
    assert torch.equal(decode.decode(model, input_ids, mask, greedy, compiled=True), plain[:, input_ids.shape[1]:])
    sampling = decode.plan(model, settings(tokenizer, do_sample=True, temperature=0.7, top_p=0.9, max_new_tokens=16))
    assert torch.equal(decode.decode(model, input_ids, mask, sampling, seed=3, compiled=True),
                       decode.decode(model, input_ids, mask, sampling, seed=3, compiled=False))


def test_a_decode_steps_grouped_heads_read_the_cache_as_it_is_and_attend_as_sdpa_does(tiny_model, monkeypatch):
    """The loop's attention for one query position (decode._grouped_sdpa): each key/value head's group of query heads
    against the uncopied cache, the same numbers as transformers' sdpa (which copies the cache per query head under a
    mask); a prefill goes to transformers' own. The loop switches the model to it and back, and runs it."""
    from transformers import AttentionInterface
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    class Attention(torch.nn.Module):
        num_key_value_groups, is_causal = 4, True

    torch.manual_seed(0)
    key, value = torch.randn(3, 2, 20, 16), torch.randn(3, 2, 20, 16)
    mask = torch.ones(3, 1, 1, 24, dtype=torch.bool)
    mask[0, ..., :5] = False  # a left-padded row
    mask[1, ..., 12:] = False  # positions the cache has not reached
    query = torch.randn(3, 8, 1, 16)
    ours, _ = decode._grouped_sdpa(Attention(), query, key, value, mask, scaling=0.25)
    theirs, _ = sdpa_attention_forward(Attention(), query, key, value, mask, scaling=0.25)
    assert ours.shape == theirs.shape == (3, 1, 8, 16)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=1e-6)

    model, tokenizer = load_for_inference(tiny_model, device="cpu")
    assert model.config._attn_implementation == "sdpa" and model.config.num_key_value_heads < model.config.num_attention_heads
    decode._attend_grouped(torch.nn.Module())  # registers it (no model parts: nothing switched)
    seen = []

    def spy(module, query, *rest, **more):
        seen.append(query.shape[2])
        return decode._grouped_sdpa(module, query, *rest, **more)

    monkeypatch.setitem(AttentionInterface._global_mapping, decode.GROUPED_SDPA, spy)
    input_ids, mask = encoded(tokenizer)
    out = decode.decode(model, input_ids, mask, decode.plan(model, settings(tokenizer, max_new_tokens=8)), every=4)
    layers = model.config.num_hidden_layers
    assert seen[:layers] == [input_ids.shape[1]] * layers and set(seen[layers:]) == {1}  # the prefill, then steps
    assert model.config._attn_implementation == "sdpa"
    plain = model.generate(input_ids=input_ids, attention_mask=mask, **settings(tokenizer, max_new_tokens=8))
    assert torch.equal(out, plain[:, input_ids.shape[1]:input_ids.shape[1] + out.shape[1]])
