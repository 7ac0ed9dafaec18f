"""onnx: tiny models become transformers.js's layout, and the fp32 model run greedily in ONNX Runtime (with its KV
cache, step by step) gives transformers' tokens exactly, past Gemma 3's sliding window; fp16 (traced in fp16; Gemma 3
has none) runs, q4 holds MatMulNBits weights; a vision model is refused.

The worker's own verification (services/worker/test/onnx-verify.test.ts) exports a tiny model of every supported
architecture (llama, qwen2, qwen3, gemma3) with this same step and runs the files in onnxruntime-node, fp32 equal to
transformers' tokens on each: this half runs the two paths of the export (with fp16 variants, llama; without, and
with a sliding window, gemma3), not the same four exports a second time in the same CI run.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from helpers import QA, captured_events

from ftcore.export import onnx as onnx_export
from ftcore.errors import SpecError

PROMPTS = [{"messages": [{"role": "user", "content": q}]} for q, _ in QA]


def _export(model: str, out: Path, **kw) -> tuple[captured_events, dict]:
    prompts = out.parent / "prompts.json"
    prompts.write_text(json.dumps(PROMPTS))
    reference = out.parent / "reference.json"
    with captured_events() as cap:
        onnx_export.run(onnx_export.Options(model=model, output_dir=str(out), prompts_file=str(prompts),
                                            reference_file=str(reference), **kw))
    return cap, json.loads(reference.read_text())


def greedy(path: Path, prompt_ids: list[int], n: int) -> list[int]:
    """Greedy decoding as transformers.js does it: the prompt, then one token a step over the returned KV cache."""
    import onnxruntime as ort

    session = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    inputs = {i.name: i for i in session.get_inputs()}
    outputs = [o.name for o in session.get_outputs()]
    past = {name: np.zeros([1, i.shape[1], 0, i.shape[3]], dtype=np.float16 if "float16" in i.type else np.float32)
            for name, i in inputs.items() if name.startswith("past_key_values.")}
    seq, step, tokens = list(prompt_ids), list(prompt_ids), []
    for _ in range(n):
        feed = {"input_ids": np.array([step], dtype=np.int64), "attention_mask": np.ones([1, len(seq)], dtype=np.int64), **past}
        if "position_ids" in inputs:
            feed["position_ids"] = np.arange(len(seq) - len(step), len(seq), dtype=np.int64)[None]
        logits, *present = session.run(None, feed)
        token = int(np.argmax(logits[0, -1]))
        tokens.append(token)
        seq, step = [*seq, token], [token]
        past = {name.replace("present.", "past_key_values."): value for name, value in zip(outputs[1:], present)}
    return tokens


@pytest.mark.slow
@pytest.mark.parametrize("architecture", ["llama", "gemma3"])
def test_fp32_gives_transformers_tokens(tiny_model_of, tmp_path, architecture):
    import onnx

    out = tmp_path / "onnx-export"
    cap, reference = _export(tiny_model_of(architecture), out)
    fp16 = architecture != "gemma3"  # onnx_export.NO_FP16
    assert sorted(p.name for p in (out / "onnx").iterdir()) == (
        ["model.onnx", "model_fp16.onnx", "model_q4.onnx", "model_q4f16.onnx"] if fp16 else ["model.onnx", "model_q4.onnx"])
    if not fp16:
        assert [e.message for e in cap.of("log") if e.level == "warning"] == [
            f"the {v} variant is not written: {onnx_export.NO_FP16['Gemma3ForCausalLM']}" for v in ("fp16", "q4f16")]
    for name in ("config.json", "generation_config.json", "tokenizer.json", "tokenizer_config.json"):
        assert (out / name).is_file(), name
    # transformers.js reads the template from tokenizer_config.json only
    assert json.loads((out / "tokenizer_config.json").read_text())["chat_template"] == (out / "chat_template.jinja").read_text()
    assert [(e.kind, e.path) for e in cap.of("artifact")] == [("onnx", str(out))]

    prompts = reference["prompts"]
    assert len(prompts) == 4 and all(len(p["tokens"]) == 32 for p in prompts)
    assert len({t for p in prompts for t in p["tokens"]}) >= 8, "the continuations say more than a repeated token"
    if architecture == "gemma3":  # the tiny Gemma's window is 16: every prompt and its continuation pass it
        window = json.loads((out / "config.json").read_text())["sliding_window"]
        assert all(len(p["prompt_ids"]) + 32 > 2 * window for p in prompts)
    for p in prompts:
        assert greedy(out / "onnx" / "model.onnx", p["prompt_ids"], 32) == p["tokens"]
        if fp16:  # traced in fp16: its KV cache and logits are fp16
            assert len(greedy(out / "onnx" / "model_fp16.onnx", p["prompt_ids"], 4)) == 4

    ops = {n.op_type for n in onnx.load(str(out / "onnx" / "model_q4.onnx"), load_external_data=False).graph.node}
    assert "MatMulNBits" in ops
    if fp16:
        q4f16 = onnx.load(str(out / "onnx" / "model_q4f16.onnx"), load_external_data=False)
        assert "MatMulNBits" in {n.op_type for n in q4f16.graph.node}
        assert any(i.data_type == onnx.TensorProto.FLOAT16 for i in q4f16.graph.initializer)


@pytest.mark.slow
def test_generation_config_stops_on_the_end_of_turn(tiny_model_of, tmp_path):
    from transformers import AutoTokenizer

    model = tiny_model_of("qwen2")
    out = tmp_path / "onnx-export"
    with captured_events():
        onnx_export.run(onnx_export.Options(model=model, output_dir=str(out), variants=[]))
    eos = json.loads((out / "generation_config.json").read_text())["eos_token_id"]
    end_of_turn = AutoTokenizer.from_pretrained(model).convert_tokens_to_ids("<|im_end|>")
    assert end_of_turn in ([eos] if isinstance(eos, int) else eos)
    assert sorted(p.name for p in (out / "onnx").iterdir()) == ["model.onnx"]


def test_refuses_a_vision_model_and_an_unknown_architecture(tmp_path):
    (tmp_path / "vision").mkdir()
    (tmp_path / "vision" / "config.json").write_text(json.dumps({"architectures": ["Gemma3ForConditionalGeneration"],
                                                                  "vision_config": {}}))
    with pytest.raises(SpecError, match="a vision model cannot be exported to ONNX"):
        onnx_export.run(onnx_export.Options(model=str(tmp_path / "vision"), output_dir=str(tmp_path / "out")))
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "config.json").write_text(json.dumps({"architectures": ["GPT2LMHeadModel"]}))
    with pytest.raises(SpecError, match="GPT2LMHeadModel.*cannot be exported to ONNX; supported"):
        onnx_export.run(onnx_export.Options(model=str(tmp_path / "other"), output_dir=str(tmp_path / "out")))
