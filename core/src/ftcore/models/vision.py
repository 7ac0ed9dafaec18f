"""Vision chat: image parts of ChatML records ({"type": "image", "image": <path or file:// URI>}) loaded with PIL,
turned into a vision-language model's inputs by its processor, with labels on the assistant tokens only.

A processor's own `return_assistant_tokens_mask` cannot be trusted here: it maps the template's assistant character
spans onto the text *after* image placeholders were expanded into soft tokens, so the spans land on the wrong tokens
(for Gemma 3 they land on none). The mask is computed on the unexpanded text and carried across instead.
"""
from __future__ import annotations

import json
from difflib import SequenceMatcher
from pathlib import Path
from urllib.parse import unquote, urlparse

from ..errors import SpecError

IGNORE = -100
# LoRA targets of vision models: the text decoder's projections; the vision tower and projector stay frozen.
LANGUAGE_MODEL_TARGETS = r".*language_model.*\.(q_proj|k_proj|v_proj|o_proj|gate_proj|up_proj|down_proj)"
_PROCESSOR_FILES = ("processor_config.json", "preprocessor_config.json")


def image_refs(messages: list[dict]) -> list[str]:
    """The image references of a conversation's parts, in order."""
    return [part.get("image") or part.get("url") or part.get("path") or ""
            for message in messages if isinstance(message.get("content"), list)
            for part in message["content"] if isinstance(part, dict) and part.get("type") == "image"]


def image_path(ref: str) -> Path:
    """A local path or a file:// URI as a path; anything else (http, s3, blob URIs) cannot be read here."""
    if ref.startswith("file://"):
        return Path(unquote(urlparse(ref).path))
    if "://" in ref:
        raise SpecError(f"image {ref!r} is not a local path or file:// URI; the worker copies a dataset's images "
                        "next to its splits before training")
    return Path(ref)


def check_images(records: list[dict], what: str, keys: tuple[str, ...]) -> int:
    """Every image of every record exists; returns how many images there are."""
    count = 0
    for n, record in enumerate(records, start=1):
        for key in keys:
            for ref in image_refs(record.get(key) or []):
                try:
                    path = image_path(ref)
                except SpecError as e:
                    raise SpecError(f"{what} record {n}: {e}") from e
                if not path.is_file():
                    raise SpecError(f"{what} record {n}: image {ref} does not exist ({path}); process the dataset "
                                    "again or fix the path")
                count += 1
    return count


def is_vision_model(model_dir: str) -> bool:
    config = json.loads((Path(model_dir) / "config.json").read_text())
    return "vision_config" in config and any((Path(model_dir) / f).is_file() for f in _PROCESSOR_FILES)


def load_processor(folder: str):
    """The folder's processor (image processor + tokenizer), or None when it has none."""
    if not any((Path(folder) / f).is_file() for f in _PROCESSOR_FILES):
        return None
    from transformers import AutoProcessor

    processor = AutoProcessor.from_pretrained(folder)
    if getattr(processor, "image_processor", None) is None:
        return None
    if processor.tokenizer.pad_token is None:
        processor.tokenizer.pad_token = processor.tokenizer.eos_token
    return processor


def load_model(model_dir: str, **kwargs):
    from transformers import AutoModelForImageTextToText

    return AutoModelForImageTextToText.from_pretrained(model_dir, **kwargs)


def load_images(messages: list[dict]):
    from PIL import Image

    images = []
    for ref in image_refs(messages):
        with Image.open(image_path(ref)) as image:
            images.append(image.convert("RGB"))
    return images


def _template(processor) -> str:
    return processor.chat_template or processor.tokenizer.chat_template


def encode_conversation(processor, messages: list[dict], max_length: int) -> dict:
    """input_ids (images expanded to their soft tokens), token_type_ids, pixel_values and labels that keep only the
    trained assistant tokens (chat.trained_token_mask), truncated to max_length."""
    from ..chat import trained_token_mask, without_weights

    tokenizer = processor.tokenizer
    plain_ids, plain_mask = trained_token_mask(tokenizer, messages, chat_template=_template(processor))
    text = tokenizer.apply_chat_template(without_weights(messages), chat_template=_template(processor), tokenize=False)
    images = load_images(messages)
    encoded = processor(text=[text], images=[images] if images else None, add_special_tokens=False,
                        return_tensors="pt")
    ids = encoded["input_ids"][0].tolist()
    mask = _carry_mask(plain_ids, plain_mask, ids)
    if len(ids) > max_length and _image_token_id(processor) in ids[max_length:]:
        raise SpecError(f"a conversation's image tokens reach beyond max_length {max_length} (it needs {len(ids)} "
                        "tokens); raise max_length")
    out = {"input_ids": ids[:max_length], "labels": [t if m else IGNORE for t, m in zip(ids, mask)][:max_length]}
    if "token_type_ids" in encoded:
        out["token_type_ids"] = encoded["token_type_ids"][0].tolist()[:max_length]
    if images:
        out["pixel_values"] = encoded["pixel_values"]
    return out


def _carry_mask(plain_ids: list[int], plain_mask: list[int], ids: list[int]) -> list[int]:
    """The assistant mask of the unexpanded tokens moved onto the expanded ones: expansion only inserts tokens
    around image placeholders (in user turns), so the assistant tokens are in the blocks both sequences share."""
    if plain_ids == ids:
        return plain_mask
    mask = [0] * len(ids)
    for a, b, size in SequenceMatcher(None, plain_ids, ids, autojunk=False).get_matching_blocks():
        mask[b:b + size] = plain_mask[a:a + size]
    return mask


def _image_token_id(processor) -> int | None:
    return getattr(processor, "image_token_id", None) or getattr(processor.tokenizer, "image_token_id", None)


class VisionChatCollator:
    """Batches vision chat records ({"messages": [...]}) for training and evaluation: right-padded, labels on
    assistant tokens only, the images of the whole batch in one pixel_values tensor (in order of appearance)."""

    def __init__(self, processor, max_length: int):
        self.processor = processor
        self.max_length = max_length

    def __call__(self, records: list[dict]) -> dict:
        return self.encode([r["messages"] for r in records])

    def encode(self, conversations: list[list[dict]]) -> dict:
        import torch

        rows = [encode_conversation(self.processor, c, self.max_length) for c in conversations]
        width = max(len(r["input_ids"]) for r in rows)
        pad = self.processor.tokenizer.pad_token_id

        def padded(key: str, value: int):
            return torch.tensor([r[key] + [value] * (width - len(r[key])) for r in rows])

        batch = {"input_ids": padded("input_ids", pad), "labels": padded("labels", IGNORE),
                 "attention_mask": torch.tensor([[1] * len(r["input_ids"]) + [0] * (width - len(r["input_ids"]))
                                                 for r in rows])}
        if all("token_type_ids" in r for r in rows):
            batch["token_type_ids"] = padded("token_type_ids", 0)
        pixels = [r["pixel_values"] for r in rows if "pixel_values" in r]
        if pixels:
            batch["pixel_values"] = torch.cat(pixels)
        return batch


def encode_prompts(processor, prompts: list[list[dict]]):
    """Generation inputs: the prompts with the generation prompt appended, left-padded, images expanded."""
    texts = [processor.tokenizer.apply_chat_template(p, chat_template=_template(processor), tokenize=False,
                                                     add_generation_prompt=True) for p in prompts]
    images = [load_images(p) for p in prompts]
    return processor(text=texts, images=images if any(images) else None, padding=True, padding_side="left",
                     add_special_tokens=False, return_tensors="pt")


def prompt_encoder(folders: list[str | None], prompts: list[list[dict]]):
    """generate's encoder for prompts with image parts, through the model's processor; None for text-only prompts."""
    if not any(image_refs(p) for p in prompts):
        return None
    processor = next((p for p in (load_processor(f) for f in folders if f) if p is not None), None)
    if processor is None:
        raise SpecError(f"the prompts contain images but {folders[-1]} has no image processor; generate with a "
                        "vision-language model, or send text-only prompts")
    check_images([{"messages": p} for p in prompts], "input_file", ("messages",))
    return lambda batch: encode_prompts(processor, batch)


def save_processor(sources: list[str | None], out: Path) -> None:
    """Writes the first source folder's processor into out (merge keeps a vision model's image processor)."""
    for folder in sources:
        processor = load_processor(folder) if folder else None
        if processor is not None:
            processor.save_pretrained(out)
            return
