"""CUDA behaviour, where CUDA is (every test here is marked `cuda`; on a CPU machine they are skipped): SFT trains in
bf16 with the packed-row attention kernel and Liger, and leaves transformers as it was for a CPU model after it;
QLoRA trains 4-bit NF4 weights; generation on the GPU gives the CPU's greedy text.

Written before any CUDA machine ran them (#31): the first run on one is their first check."""
import pytest
import torch
from helpers import QA, captured_events, conversation, sft_spec, write_jsonl

from ftcore.inference.generate import generate_token_ids
from ftcore.models.loading import load_for_inference
from ftcore.train import configs, device
from ftcore.train.run import run

pytestmark = [pytest.mark.cuda, pytest.mark.slow]


def _train(tiny_model, tmp_path, **hp):
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    spec = sft_spec(tiny_model, train, None, tmp_path / "run", **hp)
    with captured_events() as cap:
        run(spec)
    losses = [p.loss for p in cap.of("progress")]
    assert any(e.message.startswith("training on CUDA (") and "bfloat16" in e.message for e in cap.of("log"))
    return spec, losses


@pytest.fixture(scope="module")
def wide_head_model(tmp_path_factory) -> str:
    """A tiny model with 64-wide heads (as Llama 3.2 1B's; the tiny model's are 16 wide)."""
    from ftcore.models.tiny_model import Options, run as make

    folder = tmp_path_factory.mktemp("wide") / "model"
    corpus = tmp_path_factory.mktemp("wide-corpus") / "corpus.txt"
    corpus.write_text("\n".join(q + " " + a for q, a in QA))
    with captured_events():
        make(Options(output_dir=str(folder), text_files=[str(corpus)], hidden_size=256, intermediate_size=512))
    return str(folder)


def test_sft_on_cuda_is_bf16_with_the_packed_row_kernel_and_liger_and_leaves_cpu_models_alone(wide_head_model,
                                                                                             tmp_path):
    from transformers import AutoModelForCausalLM
    from transformers.models.llama import modeling_llama

    rope = modeling_llama.apply_rotary_pos_emb
    spec, losses = _train(wide_head_model, tmp_path, padding_free=True, use_fast_attention=True)
    assert device.device_is_cuda(spec) and device.uses_liger(spec)
    kwargs = device.model_kwargs(spec)
    assert kwargs["dtype"] == torch.bfloat16
    # the packed-row kernel where this torch builds it for these heads (4 × 64, 2 key/value), else sdpa, said in the log
    packed = {"flash_attention_2", "flex_attention"} if device.flex_attention_lowers(4, 2, 64) else {"sdpa"}
    assert kwargs["attn_implementation"] in packed
    assert losses[-1] < losses[0] * 0.5
    # Liger was applied for the training and undone after it: a model on the CPU runs without Triton.
    assert modeling_llama.apply_rotary_pos_emb is rope
    with torch.no_grad():
        logits = AutoModelForCausalLM.from_pretrained(wide_head_model)(torch.tensor([[1, 2, 3]])).logits
    assert torch.isfinite(logits).all()


def test_short_packed_rows_train_on_flex_padded_to_whole_blocks(tiny_model, tmp_path):
    """The tiny model's packed rows (~100 tokens) failed flex attention's first step on an H200 with torch 2.11: a row
    shorter than a block goes to the flex_decoding kernel, which has no training kernel (NoValidChoicesError, #37).
    Rows are padded to whole blocks, so the job trains on flex; where the probe finds no kernel at all, on sdpa."""
    spec, losses = _train(tiny_model, tmp_path, padding_free=True, use_fast_attention=True)
    kernel = device.model_kwargs(spec)["attn_implementation"]
    assert kernel == ("flex_attention" if device.flex_attention_lowers(4, 2, 16) else "sdpa")
    assert configs.trainer_config(spec).pad_to_multiple_of == (device.FLEX_BLOCK if kernel == "flex_attention"
                                                               else None)
    assert losses[-1] < losses[0] * 0.5


def test_without_fast_attention_a_gpu_job_trains_on_sdpa_not_eager(tiny_model, tmp_path):
    spec, losses = _train(tiny_model, tmp_path)
    assert device.model_kwargs(spec)["attn_implementation"] == "sdpa"
    assert losses[-1] < losses[0] * 0.5


def test_qlora_trains_nf4_weights(tiny_model, tmp_path):
    pytest.importorskip("bitsandbytes")
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    spec = sft_spec(tiny_model, train, None, tmp_path / "run")
    spec.method = "QLoRA"
    assert device.model_kwargs(spec)["quantization_config"].bnb_4bit_quant_type == "nf4"
    with captured_events() as cap:
        run(spec)
    losses = [p.loss for p in cap.of("progress")]
    assert losses[-1] < losses[0] * 0.5
    assert (tmp_path / "run" / "adapter" / "adapter_config.json").is_file()


def test_greedy_generation_on_the_gpu_is_the_cpus(tiny_model, tmp_path):
    """The GPU runs bf16 and the CPU fp32: at least 95% of the greedy tokens agree, position by position (#31)."""
    _train(tiny_model, tmp_path)
    adapter = str(tmp_path / "run" / "adapter")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    ids = {}
    for device in ("cpu", "cuda"):
        model, tokenizer = load_for_inference(tiny_model, adapter, device=device)
        ids[device] = generate_token_ids(model, tokenizer, prompts, max_new_tokens=16)
    pairs = [(a, b) for cpu, gpu in zip(ids["cpu"], ids["cuda"]) for a, b in zip(list(cpu), list(gpu))]
    assert pairs and sum(a == b for a, b in pairs) / len(pairs) >= 0.95


def test_the_compiled_engine_on_the_gpu_generates_what_plain_generate_does(tiny_model, tmp_path, monkeypatch):
    """The CUDA engine (static KV cache, decode step in CUDA graphs) against transformers' generate, both in bf16 on
    the GPU: at least 95% of the first 32 greedy tokens equal, position by position (#31)."""
    from ftcore.inference.generate import ENGINE_VARIABLE

    _train(tiny_model, tmp_path)
    model, tokenizer = load_for_inference(tiny_model, str(tmp_path / "run" / "adapter"), device="cuda")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA] * 4
    monkeypatch.setenv(ENGINE_VARIABLE, "plain")
    plain = generate_token_ids(model, tokenizer, prompts, max_new_tokens=32)
    monkeypatch.setenv(ENGINE_VARIABLE, "compiled")
    compiled = generate_token_ids(model, tokenizer, prompts, max_new_tokens=32)
    assert model.get_base_model()._ftcore_compiled_shapes and not getattr(model.get_base_model(),
                                                                          "_ftcore_compile_failed", False)
    pairs = [(a, b) for p, c in zip(plain, compiled) for a, b in zip(p, c)]
    assert pairs and sum(a == b for a, b in pairs) / len(pairs) >= 0.95


def test_on_the_gpu_the_engine_compiles_large_work_and_sizes_batches_from_free_memory(tiny_model, monkeypatch):
    from ftcore.inference.generate import ENGINE_VARIABLE, choose_engine

    monkeypatch.delenv(ENGINE_VARIABLE, raising=False)
    model, _ = load_for_inference(tiny_model, device="cuda")
    small = choose_engine(model, [40] * 4, 16, None)
    assert not small.compiled and small.batch_size == 4  # a compile would cost more than it saves; all in one batch
    large = choose_engine(model, [40] * 256, 256, None)
    assert large.compiled and large.batch_size == 256  # the tiny model's cache: 256 rows fit in any GPU
