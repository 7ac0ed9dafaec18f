"""Vision modality on the tiny Gemma 3 vision model, for real: the model and processor, the label mask on an image
conversation, SFT LoRA that learns to name a square's colour, merge, generation, and validation."""
import json
import math
from pathlib import Path

import pytest
import torch
from helpers import captured_events, write_jsonl

from ftcore.errors import SpecError
from ftcore.train.spec import Hyperparameters, Options
from ftcore.models.vision import VisionChatCollator, load_processor

QUESTION = "What color is the square?"
COLOURS = {"red": [(230, 20, 20), (200, 40, 30), (250, 60, 60), (180, 10, 40)],
           "blue": [(20, 30, 230), (40, 40, 200), (60, 80, 250), (10, 50, 180)]}


def _square(path: Path, rgb) -> Path:
    from PIL import Image

    image = Image.new("RGB", (40, 40), (255, 255, 255))
    image.paste(Image.new("RGB", (28, 28), rgb), (6, 6))
    image.save(path)
    return path


def _record(image: str, answer: str | None) -> dict:
    messages = [{"role": "user", "content": [{"type": "image", "image": image}, {"type": "text", "text": QUESTION}]}]
    if answer is not None:
        messages.append({"role": "assistant", "content": answer})
    return {"messages": messages}


@pytest.fixture(scope="module")
def vision_model(tmp_path_factory) -> str:
    from ftcore.models.tiny_model import Options as TinyOptions
    from ftcore.models.tiny_model import run

    folder = tmp_path_factory.mktemp("tiny-vision") / "model"
    corpus = tmp_path_factory.mktemp("corpus") / "corpus.txt"
    corpus.write_text(f"{QUESTION} red blue Be brief.")
    with captured_events():
        run(TinyOptions(output_dir=str(folder), architecture="gemma3-vision", text_files=[str(corpus)]))
    return str(folder)


@pytest.fixture(scope="module")
def squares(tmp_path_factory) -> dict[str, list[Path]]:
    folder = tmp_path_factory.mktemp("squares")
    return {name: [_square(folder / f"{name}{i}.png", rgb) for i, rgb in enumerate(shades)]
            for name, shades in COLOURS.items()}


@pytest.fixture(scope="module")
def vision_files(squares, tmp_path_factory) -> tuple[str, str]:
    folder = tmp_path_factory.mktemp("vision-data")
    # both forms the core accepts: file:// URIs (what the worker writes) and plain paths
    records = [_record(p.as_uri() if i % 2 else str(p), name) for name, paths in squares.items()
               for i, p in enumerate(paths)]
    return write_jsonl(folder / "train.jsonl", records), write_jsonl(folder / "test.jsonl", records[::3])


def vision_spec(model, train, test, out, **changes) -> Options:
    hp = dict(learning_rate=0.01, batch_size=4, gradient_accumulation_steps=1, max_steps=30, logging_steps=5,
              max_length=64, lora_rank=8, lora_alpha=16, lora_dropout=0.0, save_strategy="no", warmup_ratio=0.0,
              max_grad_norm=1.0)
    hp.update(changes.pop("hyperparameters", {}))
    fields = {"method": "LoRA", "modality": "vision", **changes}
    return Options(base_model=model, train_file=train, test_file=test, output_dir=str(out),
                   hyperparameters=Hyperparameters(**hp), **fields)


def test_tiny_vision_model_reloads_with_its_processor(vision_model, squares):
    from transformers import AutoProcessor, Gemma3ForConditionalGeneration, Gemma3Processor

    processor = AutoProcessor.from_pretrained(vision_model)
    model = Gemma3ForConditionalGeneration.from_pretrained(vision_model)
    assert isinstance(processor, Gemma3Processor) and processor.image_seq_length == model.config.mm_tokens_per_image
    assert processor.tokenizer.eos_token == "<end_of_turn>" and "<end_of_turn>" in processor.chat_template
    batch = VisionChatCollator(processor, 64).encode([_record(str(squares["red"][0]), "red")["messages"]])
    assert batch["pixel_values"].shape == (1, 3, 32, 32)
    assert int((batch["input_ids"] == model.config.image_token_id).sum()) == model.config.mm_tokens_per_image
    with torch.no_grad():
        logits = model(**{k: v for k, v in batch.items() if k != "labels"}).logits
    assert logits.shape[:2] == batch["input_ids"].shape and torch.isfinite(logits).all()


def test_label_mask_keeps_only_assistant_tokens_of_an_image_conversation(vision_model, vision_files, tmp_path):
    from ftcore.data import read_jsonl
    from ftcore.train.setup import setup

    spec = vision_spec(vision_model, *vision_files, tmp_path / "run")
    records = read_jsonl(spec.train_file, "train")
    with captured_events():
        trainer, _, _ = setup(spec, records, None, "language_modeling")
    processor = trainer.processing_class
    conversation = [{"role": "system", "content": "Be brief."}, *records[0]["messages"]]
    batch = VisionChatCollator(processor, 64).encode([conversation])
    ids, labels = batch["input_ids"][0], batch["labels"][0]
    image_positions = ids == processor.tokenizer.image_token_id
    assert int(image_positions.sum()) == 4 and (labels[image_positions] == -100).all()
    assert processor.tokenizer.decode(ids[labels != -100]) == "red<end_of_turn>"
    assert QUESTION in processor.tokenizer.decode(ids) and "Be brief." in processor.tokenizer.decode(ids)
    # the trainer's own batches mask the same way
    collated = next(iter(trainer.get_train_dataloader()))
    learned = {processor.tokenizer.decode(row[labels != -100])
               for row, labels in zip(collated["input_ids"], collated["labels"])}
    assert learned <= {"red<end_of_turn>", "blue<end_of_turn>"}
    # LoRA adapts the text decoder only
    trainable = [n for n, p in trainer.model.named_parameters() if p.requires_grad]
    assert trainable and all("language_model" in n and "lora_" in n for n in trainable)


@pytest.fixture(scope="module")
def trained(vision_model, vision_files, tmp_path_factory):
    from ftcore.train.run import run

    spec = vision_spec(vision_model, *vision_files, tmp_path_factory.mktemp("vision-sft") / "run")
    with captured_events() as cap:
        run(spec)
    return spec, cap.events


def test_sft_lora_learns_to_name_the_colour_of_the_square(trained, vision_model, squares, tmp_path):
    from ftcore.inference.generate import Options as GenerateOptions
    from ftcore.inference.generate import run as generate

    spec, events = trained
    losses = [e.loss for e in events if e.event == "progress"]
    print("vision SFT losses", losses)
    assert len(losses) == 7 and losses[-1] < losses[0] * 0.3
    (metrics,) = [e for e in events if e.event == "metrics"]
    assert metrics.perplexity == pytest.approx(math.exp(metrics.eval_loss), rel=1e-4) and metrics.accuracy == 1.0
    prompts = write_jsonl(tmp_path / "prompts.jsonl", [_record(p.as_uri(), name) for name, paths in squares.items()
                                                       for p in paths])
    out = tmp_path / "answers.jsonl"
    with captured_events():
        generate(GenerateOptions(model=vision_model, adapter=str(Path(spec.output_dir) / "adapter"),
                                 input_file=prompts, output_file=str(out), max_new_tokens=4, device="cpu"))
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["text"] for r in rows] == [r["reference"] for r in rows]


def test_merged_vision_model_keeps_the_processor_and_the_adapter_logits(trained, vision_model, squares, tmp_path):
    from ftcore.export.merge import Options as MergeOptions
    from ftcore.export.merge import run as merge
    from ftcore.models.loading import load_for_inference

    spec, _ = trained
    adapter = str(Path(spec.output_dir) / "adapter")
    merged = tmp_path / "merged"
    with captured_events():
        merge(MergeOptions(base_model=vision_model, adapter=adapter, output_dir=str(merged)))
    processor = load_processor(str(merged))
    assert processor is not None and processor.chat_template == load_processor(vision_model).chat_template
    batch = VisionChatCollator(processor, 64).encode([_record(str(squares["blue"][1]), None)["messages"]])
    batch.pop("labels")
    with_adapter, _ = load_for_inference(vision_model, adapter, device="cpu")
    folded, _ = load_for_inference(str(merged), device="cpu")
    with torch.no_grad():
        assert torch.allclose(with_adapter(**batch).logits, folded(**batch).logits, atol=1e-4)


@pytest.mark.slow
def test_full_training_changes_the_weights_and_saves_a_vision_model(vision_model, vision_files, tmp_path):
    from transformers import Gemma3ForConditionalGeneration

    from ftcore.train.run import run

    spec = vision_spec(vision_model, *vision_files, tmp_path / "run", method="Full",
                       hyperparameters=dict(max_steps=2, learning_rate=1e-3))
    with captured_events():
        run(spec)
    saved = Path(spec.output_dir) / "model"
    before = Gemma3ForConditionalGeneration.from_pretrained(vision_model).state_dict()
    after = Gemma3ForConditionalGeneration.from_pretrained(saved).state_dict()
    assert not torch.equal(before["lm_head.weight"], after["lm_head.weight"])
    assert load_processor(str(saved)) is not None


def test_vision_specs_that_cannot_work_fail_with_the_fix(vision_model, vision_files, squares, tmp_path):
    from ftcore.train.validate import validate

    train, test = vision_files
    text_model = tmp_path / "text-model"
    text_model.mkdir()
    (text_model / "config.json").write_text(json.dumps({"model_type": "llama", "max_position_embeddings": 512}))
    with pytest.raises(SpecError, match="needs a vision-language model, but .* is text-only"):
        validate(vision_spec(str(text_model), train, None, tmp_path))
    missing = write_jsonl(tmp_path / "missing.jsonl", [_record(str(squares["red"][0]), "red"),
                                                       _record(str(tmp_path / "gone.png"), "blue")])
    with pytest.raises(SpecError, match=f"train_file record 2: image {tmp_path / 'gone.png'} does not exist"):
        validate(vision_spec(vision_model, missing, None, tmp_path))
    preference = write_jsonl(tmp_path / "pref.jsonl", [{
        "prompt": _record(str(squares["red"][0]), None)["messages"],
        "chosen": [{"role": "assistant", "content": "red"}], "rejected": [{"role": "assistant", "content": "blue"}]}])
    with pytest.raises(SpecError, match="modality vision trains with trainer_type sft only"):
        validate(vision_spec(vision_model, preference, None, tmp_path, trainer_type="dpo"))
    with pytest.raises(SpecError, match="the records contain image parts; train them with modality vision"):
        validate(vision_spec(vision_model, train, test, tmp_path, modality="text"))
    assert validate(vision_spec(vision_model, train, test, tmp_path))[2] == "language_modeling"
