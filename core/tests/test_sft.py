"""SFT with LoRA on the tiny model, for real: the label mask, loss, memorisation, metrics, merge, generation."""
import json
import math
from pathlib import Path

import pytest
import torch
from helpers import QA, captured_events, sft_spec

from ftcore.inference.generate import generate_texts
from ftcore.models.loading import load_for_inference
from ftcore.train.metrics import assistant_labels
from ftcore.train.run import run, setup


def test_label_mask_keeps_only_assistant_tokens_of_a_templated_conversation(tiny_model, sft_files, tmp_path):
    from ftcore.data import read_jsonl

    spec = sft_spec(tiny_model, *sft_files, tmp_path / "run")
    records = read_jsonl(spec.train_file, "train")
    with captured_events():
        trainer, _, _ = setup(spec, records, None, "language_modeling")
    tokenizer = trainer.processing_class
    conversation = [{"role": "system", "content": "Be brief."}, *records[0]["messages"]]
    ids, labels = assistant_labels(tokenizer, conversation, 128)
    assert tokenizer.decode([t for t in labels if t != -100]) == "Paris.<|im_end|>"
    assert "What is the capital" in tokenizer.decode(ids)
    # The trainer's own collated batch masks the same way: only answers and their end-of-turn token count.
    batch = next(iter(trainer.get_train_dataloader()))
    for row_ids, row_labels in zip(batch["input_ids"], batch["labels"]):
        learned = tokenizer.decode(row_ids[row_labels != -100])
        assert learned in {a + "<|im_end|>" for _, a in QA}


@pytest.fixture(scope="module")
def trained(tiny_model, tmp_path_factory):
    from helpers import conversation, write_jsonl

    folder = tmp_path_factory.mktemp("sft")
    train = write_jsonl(folder / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    test = write_jsonl(folder / "test.jsonl", [conversation(q, a) for q, a in QA])
    spec = sft_spec(tiny_model, train, test, folder / "run")
    with captured_events() as cap:
        run(spec)
    return spec, cap.events


def test_loss_falls_and_progress_events_carry_every_field(trained):
    _, events = trained
    progress = [e for e in events if e.event == "progress"]
    assert [p.step for p in progress] == [1, 5, 10, 15, 20, 25, 30]
    assert progress[-1].loss < progress[0].loss * 0.5
    # The log says where it trained (on CUDA: the GPU's name, bf16, the attention kernel: test_cuda.py).
    assert "training on the CPU in float32, attention eager" in [e.message for e in events if e.event == "log"]
    for p in progress:
        assert p.total_steps == 30 and p.epoch > 0 and p.learning_rate is not None
        assert p.tokens_per_second > 0 and p.eta_seconds is not None


def test_final_metrics_are_computed_on_the_test_split(trained):
    _, events = trained
    (metrics,) = [e for e in events if e.event == "metrics"]
    assert metrics.step == 30 and metrics.final
    assert metrics.perplexity == pytest.approx(math.exp(metrics.eval_loss), rel=1e-4)
    assert 0.5 < metrics.accuracy <= 1.0 and metrics.eval_runtime > 0


def test_adapter_differs_from_init_and_keeps_the_chat_template(trained, tiny_model):
    from safetensors.torch import load_file
    from transformers import AutoTokenizer

    spec, events = trained
    adapter = Path(spec.output_dir) / "adapter"
    assert [e.path for e in events if e.event == "artifact"] == [str(adapter)]
    weights = load_file(adapter / "adapter_model.safetensors")
    lora_b = [w for k, w in weights.items() if "lora_B" in k]
    assert lora_b and all(w.abs().max() > 0 for w in lora_b)  # PEFT initialises lora_B to zero
    saved, base = AutoTokenizer.from_pretrained(adapter), AutoTokenizer.from_pretrained(tiny_model)
    assert saved.chat_template == base.chat_template and saved.eos_token == "<|im_end|>"


def test_generation_returns_the_memorised_answers(trained, tiny_model):
    spec, _ = trained
    model, tokenizer = load_for_inference(tiny_model, str(Path(spec.output_dir) / "adapter"), device="cpu")
    prompts = [[{"role": "user", "content": q}] for q, _ in QA]
    assert generate_texts(model, tokenizer, prompts, max_new_tokens=12) == [a for _, a in QA]


@pytest.mark.slow
def test_merged_model_gives_the_adapter_logits_and_generates_from_the_cli(trained, tiny_model, tmp_path):
    from helpers import run_cli, said, stdout_events

    spec, _ = trained
    adapter = str(Path(spec.output_dir) / "adapter")
    merged = tmp_path / "merged"
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text("".join(json.dumps({"messages": [{"role": "user", "content": q},
                                                        {"role": "assistant", "content": a}]}) + "\n" for q, a in QA))
    result = run_cli(["merge", "--base_model", tiny_model, "--adapter", adapter, "--output_dir", str(merged)])
    assert result.returncode == 0, result.stderr
    assert [e.event for e in said(stdout_events(result.stdout))] == ["artifact", "done"]

    with_adapter, tokenizer = load_for_inference(tiny_model, adapter, device="cpu")
    folded, merged_tokenizer = load_for_inference(str(merged), device="cpu")
    assert merged_tokenizer.chat_template == tokenizer.chat_template
    text = tokenizer.apply_chat_template([{"role": "user", "content": QA[0][0]}], tokenize=False,
                                         add_generation_prompt=True)
    ids = tokenizer(text, return_tensors="pt", add_special_tokens=False)["input_ids"]
    with torch.no_grad():
        assert torch.allclose(with_adapter(ids).logits, folded(ids).logits, atol=1e-4)

    out = tmp_path / "gen.jsonl"
    result = run_cli(["generate", "--model", str(merged), "--input_file", str(prompts), "--output_file", str(out),
                      "--max_new_tokens", "12"])
    assert result.returncode == 0, result.stderr
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == [r["reference"] for r in rows] == [a for _, a in QA]


@pytest.mark.slow
@pytest.mark.parametrize("packing", [False, True])
def test_trained_tokens_of_the_last_progress_event_are_the_preflight_count(tiny_model, sft_files, tmp_path, packing):
    """Every token of every micro-batch of both epochs, padding left out (packed: no padding at all)."""
    spec = sft_spec(tiny_model, *sft_files, tmp_path / "run", max_steps=-1, epochs=2, logging_steps=3,
                    packing=packing)
    with captured_events() as cap:
        run(spec)
    (preflight,) = cap.of("preflight")
    progress = cap.of("progress")
    if not packing:  # 16 rows, 4 a batch: 8 steps; 1, 3 and 6 are logged, and the last one always is
        assert [p.step for p in progress] == [1, 3, 6, 8]
    assert progress[-1].step == preflight.report["steps"]["total"]
    trained = [p.extra["trained_tokens"] for p in progress]
    assert trained == sorted(trained) and trained[0] > 0
    assert trained[-1] == preflight.report["training_tokens"]


@pytest.mark.slow
def test_trained_tokens_of_a_run_max_steps_ends_are_the_preflight_count(tiny_model, sft_files, tmp_path):
    """max_steps past an epoch whose last batch is short (16 rows, 3 a batch: 6 steps, the last of 1 row): the
    preflight count is what was trained, within the spread of the rows the steps after the epoch drew."""
    spec = sft_spec(tiny_model, *sft_files, tmp_path / "run", max_steps=9, batch_size=3, gradient_accumulation_steps=1,
                    logging_steps=9)
    with captured_events() as cap:
        run(spec)
    (preflight,) = cap.of("preflight")
    trained = cap.of("progress")[-1].extra["trained_tokens"]
    assert preflight.report["steps"]["per_epoch"] == 6
    assert abs(trained - preflight.report["training_tokens"]) / trained < 0.1, (trained, preflight.report["training_tokens"])


@pytest.mark.parametrize("padding_free", [False, True])
def test_logits_of_learned_positions_only_give_trls_loss_and_gradients(tiny_model, sft_files, tmp_path, padding_free):
    from trl import SFTTrainer

    from ftcore.data import read_jsonl

    spec = sft_spec(tiny_model, *sft_files, tmp_path / "run", padding_free=padding_free)
    with captured_events():
        trainer, _, _ = setup(spec, read_jsonl(spec.train_file, "train"), None, "language_modeling")
    batch = next(iter(trainer.get_train_dataloader()))
    trainer.model.train()
    results = []
    for compute_loss in (trainer.compute_loss, lambda m, b, **kw: SFTTrainer.compute_loss(trainer, m, b, **kw)):
        trainer.model.zero_grad()
        loss = compute_loss(trainer.model, dict(batch), num_items_in_batch=(batch["labels"] != -100).sum())
        loss.backward()
        grads = [p.grad.clone() for p in trainer.model.parameters() if p.requires_grad]
        results.append((loss.item(), grads))
    (ours, our_grads), (trls, trl_grads) = results
    assert ours == pytest.approx(trls, rel=1e-5)
    assert all(torch.allclose(a, b, atol=1e-6, rtol=1e-4) for a, b in zip(our_grads, trl_grads))
