"""gguf: the tiny model and a LoRA adapter become GGUF files whose metadata and tensors say what llama.cpp needs.

Token-for-token parity with transformers is proven by running the files in llama.cpp: the fast engine's tests
(services/worker/test/fast-engine.test.ts) use these same commands.
"""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from helpers import captured_events

from ftcore import gguf_export
from ftcore.errors import SpecError


def _export(model: str, out, **kw) -> captured_events:
    with captured_events() as cap:
        gguf_export.run(gguf_export.Options(model=model, output_file=str(out), **kw))
    return cap


def _field(reader, key: str):
    f = reader.fields[key]
    if len(f.data) == 1 and f.types[0].name != "ARRAY":
        value = f.parts[f.data[0]]
        return bytes(value).decode() if f.types[0].name == "STRING" else value[0]
    return [bytes(f.parts[i]).decode() if f.types[-1].name == "STRING" else f.parts[i][0] for i in f.data]


def _hf_weights(folder: str) -> dict[str, np.ndarray]:
    from safetensors.numpy import load_file

    return load_file(f"{folder}/model.safetensors")


@pytest.fixture(scope="module")
def tiny_f16(tiny_model, tmp_path_factory):
    out = tmp_path_factory.mktemp("gguf") / "tiny-f16.gguf"
    _export(tiny_model, out, quantization="f16")
    return out


def test_f16_carries_tokenizer_template_stop_tokens_and_context(tiny_model, tiny_f16):
    from gguf import GGUFReader
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_model)
    r = GGUFReader(str(tiny_f16))
    assert _field(r, "general.architecture") == "llama"
    assert _field(r, "llama.context_length") == 512
    assert _field(r, "tokenizer.ggml.model") == "gpt2"
    assert _field(r, "tokenizer.ggml.pre") == "gpt-2"  # llama.cpp's name for the GPT-2 split regex ByteLevel uses
    assert _field(r, "tokenizer.ggml.tokens") == [tok.convert_ids_to_tokens(i) for i in range(len(tok))]
    end_of_turn = tok.convert_tokens_to_ids("<|im_end|>")
    assert _field(r, "tokenizer.ggml.eos_token_id") == end_of_turn
    assert _field(r, "tokenizer.ggml.eot_token_id") == end_of_turn
    assert not _field(r, "tokenizer.ggml.add_bos_token")
    template = _field(r, "tokenizer.chat_template")
    assert "<|im_start|>" in template and "{%- generation %}" not in template  # transformers-only marker removed
    assert _field(r, "tokenizer.ggml.token_type")[end_of_turn] == 3  # CONTROL: parsed whole from the template


def test_f16_tensors_are_the_hf_weights_in_llama_cpp_layout(tiny_model, tiny_f16):
    from gguf import GGUFReader

    hf = _hf_weights(tiny_model)
    tensors = {t.name: np.asarray(t.data) for t in GGUFReader(str(tiny_f16)).tensors}
    assert "output.weight" not in tensors  # tied embeddings: llama.cpp reuses token_embd
    np.testing.assert_allclose(tensors["token_embd.weight"], hf["model.embed_tokens.weight"], atol=1e-3)
    config = json.loads(open(f"{tiny_model}/config.json").read())
    q = hf["model.layers.0.self_attn.q_proj.weight"]
    np.testing.assert_allclose(tensors["blk.0.attn_q.weight"],
                               gguf_export.permute_rope_rows(q, config["num_attention_heads"]), atol=1e-3)
    np.testing.assert_array_equal(tensors["blk.1.ffn_norm.weight"],
                                  hf["model.layers.1.post_attention_layernorm.weight"])


def test_modelfile_beside_the_gguf(tiny_f16):
    modelfile = (tiny_f16.parent / "Modelfile").read_text()
    assert modelfile.startswith(f"FROM ./{tiny_f16.name}\n")
    assert 'PARAMETER stop "<|im_end|>"' in modelfile
    assert '{{ if eq .Role "user" }}<|im_start|>user\n{{ .Content }}<|im_end|>\n' in modelfile
    assert modelfile.rstrip().endswith('<|im_start|>assistant\n"""\nPARAMETER stop "<|im_end|>"')


@pytest.mark.parametrize("quantization,qtype,tolerance", [("q8_0", "Q8_0", 0.02), ("q4_k_m", "Q4_0", 0.1)])
def test_quantized_types_and_values(tiny_model, tmp_path, quantization, qtype, tolerance):
    from gguf import GGUFReader
    from gguf.quants import dequantize

    cap = _export(tiny_model, tmp_path / "m.gguf", quantization=quantization)
    if quantization == "q4_k_m":
        assert "written as q4_0" in cap.of("log")[0].message
    tensors = {t.name: t for t in GGUFReader(str(tmp_path / "m.gguf")).tensors}
    down = tensors["blk.0.ffn_down.weight"]
    assert down.tensor_type.name == qtype
    assert tensors["blk.0.attn_norm.weight"].tensor_type.name == "F32"
    hf = _hf_weights(tiny_model)["model.layers.0.mlp.down_proj.weight"]
    error = np.abs(dequantize(down.data, down.tensor_type).reshape(hf.shape) - hf).max()
    assert error < tolerance * np.abs(hf).max()


def test_unsupported_architecture_lists_the_supported_ones(tiny_model, tmp_path):
    folder = tmp_path / "gpt2"
    shutil.copytree(tiny_model, folder)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(SpecError, match="supported: LlamaForCausalLM, Qwen2ForCausalLM, Qwen3ForCausalLM, Gemma3"):
        _export(str(folder), tmp_path / "x.gguf")


def test_lora_adapter_gguf(tiny_model, tmp_path):
    import torch
    from gguf import GGUFReader
    from peft import LoraConfig, get_peft_model
    from safetensors.numpy import load_file
    from transformers import AutoModelForCausalLM

    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    config = LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
    get_peft_model(model, config).save_pretrained(tmp_path / "adapter")
    _export(tiny_model, tmp_path / "adapter.gguf", adapter=str(tmp_path / "adapter"))
    r = GGUFReader(str(tmp_path / "adapter.gguf"))
    assert _field(r, "general.type") == "adapter"
    assert _field(r, "adapter.type") == "lora"
    assert _field(r, "adapter.lora.alpha") == 8.0
    tensors = {t.name: np.asarray(t.data) for t in r.tensors}
    assert len(tensors) == 2 * 2 * 2  # 2 layers × (q, v) × (a, b)
    peft = load_file(str(tmp_path / "adapter" / "adapter_model.safetensors"))
    prefix = "base_model.model.model.layers.0.self_attn"
    np.testing.assert_array_equal(tensors["blk.0.attn_v.weight.lora_a"], peft[f"{prefix}.v_proj.lora_A.weight"])
    np.testing.assert_array_equal(tensors["blk.0.attn_q.weight.lora_b"],
                                  gguf_export.permute_rope_rows(peft[f"{prefix}.q_proj.lora_B.weight"], 4))
