"""make-tiny-model --architecture gemma3-vision: a random-init Gemma 3 vision-language model (SigLIP vision tower,
multimodal projector, Gemma 3 text decoder) with its processor, saved as an HF folder that AutoProcessor and
Gemma3ForConditionalGeneration (AutoModelForImageTextToText) load. Vision tests train it for real on CPU.

Images are IMAGE_SIZE² pixels cut into PATCH_SIZE² patches and pooled to TOKENS_PER_IMAGE soft tokens, so a picture
costs a handful of sequence positions instead of Gemma 3's 256.
"""
from __future__ import annotations

from ..chat import GEMMA3_END_OF_TURN
from .tiny_parts import build_tokenizer, save_tiny_model

IMAGE_SIZE = 32
PATCH_SIZE = 8  # 4 × 4 patches
TOKENS_PER_IMAGE = 4  # pooled to 2 × 2; must be a square dividing the patch grid
BOI, IMAGE, EOI = "<start_of_image>", "<image_soft_token>", "<end_of_image>"

# Gemma 3's chat format for content given as a string or as parts (an image part renders as <start_of_image>, which
# the processor expands to the image's soft tokens), with generation markers for the assistant-token mask.
GEMMA3_VISION_TEMPLATE = (
    "{%- macro render(content) %}"
    "{%- if content is string %}{{- content | trim }}"
    "{%- else %}{%- for part in content %}"
    "{%- if part['type'] == 'image' %}{{- '<start_of_image>' }}"
    "{%- elif part['type'] == 'text' %}{{- part['text'] | trim }}{%- endif %}"
    "{%- endfor %}{%- endif %}"
    "{%- endmacro %}"
    "{{- bos_token }}"
    "{%- if messages[0]['role'] == 'system' %}"
    "{%- set first_user_prefix = render(messages[0]['content']) + '\\n\\n' %}{%- set loop_messages = messages[1:] %}"
    "{%- else %}{%- set first_user_prefix = '' %}{%- set loop_messages = messages %}{%- endif %}"
    "{%- for message in loop_messages %}"
    "{%- if message['role'] == 'assistant' %}"
    "{{- '<start_of_turn>model\\n' }}"
    "{%- generation %}{{- render(message['content']) }}{{- '<end_of_turn>' }}{%- endgeneration %}"
    "{{- '\\n' }}"
    "{%- else %}"
    "{{- '<start_of_turn>' + message['role'] + '\\n' + (first_user_prefix if loop.first else '') }}"
    "{{- render(message['content']) }}{{- '<end_of_turn>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<start_of_turn>model\\n' }}{%- endif %}"
)


def build_processor(text_files: list[str], vocab_size: int, max_length: int):
    """Gemma3Processor: a small Gemma3ImageProcessor and the tiny Gemma 3 tokenizer plus the three image tokens."""
    from tokenizers import AddedToken
    from transformers import Gemma3ImageProcessor, Gemma3Processor, GemmaTokenizerFast

    text_tokenizer = build_tokenizer(text_files, vocab_size, "gemma3")
    backend = text_tokenizer.backend_tokenizer
    backend.add_special_tokens([AddedToken(t, normalized=False, special=True) for t in (BOI, IMAGE, EOI)])
    tokenizer = GemmaTokenizerFast(
        tokenizer_object=backend, bos_token="<bos>", eos_token=GEMMA3_END_OF_TURN, unk_token="<unk>",
        pad_token="<pad>", add_bos_token=True, add_eos_token=False, chat_template=GEMMA3_VISION_TEMPLATE,
        model_max_length=max_length, extra_special_tokens={"boi_token": BOI, "image_token": IMAGE, "eoi_token": EOI})
    images = Gemma3ImageProcessor(size={"height": IMAGE_SIZE, "width": IMAGE_SIZE}, do_pan_and_scan=False)
    return Gemma3Processor(image_processor=images, tokenizer=tokenizer, chat_template=GEMMA3_VISION_TEMPLATE,
                           image_seq_length=TOKENS_PER_IMAGE)


def model_config(options, tokenizer):
    from transformers import Gemma3Config, Gemma3TextConfig, SiglipVisionConfig

    head_dim = options.hidden_size // options.num_heads
    layers = options.num_layers or 2
    text = Gemma3TextConfig(
        vocab_size=len(tokenizer), hidden_size=options.hidden_size, num_hidden_layers=layers,
        num_attention_heads=options.num_heads, num_key_value_heads=options.num_kv_heads, head_dim=head_dim,
        query_pre_attn_scalar=head_dim, intermediate_size=options.intermediate_size,
        max_position_embeddings=options.max_position_embeddings, sliding_window=options.sliding_window,
        # Gemma 3 alternates sliding-window layers with global ones; the last layer is global here
        layer_types=["sliding_attention"] * (layers - 1) + ["full_attention"],
        bos_token_id=tokenizer.bos_token_id, eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
        initializer_range=options.initializer_range)
    vision = SiglipVisionConfig(
        hidden_size=options.hidden_size // 2, intermediate_size=options.hidden_size, num_hidden_layers=1,
        num_attention_heads=2, image_size=IMAGE_SIZE, patch_size=PATCH_SIZE, vision_use_head=False)
    return Gemma3Config(
        text_config=text, vision_config=vision, mm_tokens_per_image=TOKENS_PER_IMAGE,
        boi_token_index=tokenizer.convert_tokens_to_ids(BOI), eoi_token_index=tokenizer.convert_tokens_to_ids(EOI),
        image_token_index=tokenizer.image_token_id, initializer_range=options.initializer_range,
        pad_token_id=tokenizer.pad_token_id, eos_token_id=tokenizer.eos_token_id, bos_token_id=tokenizer.bos_token_id)


def run(options) -> None:
    """Builds and saves the model for make-tiny-model's options (its text sizes; the vision sizes are fixed above)."""
    import torch
    from transformers import Gemma3ForConditionalGeneration

    processor = build_processor(options.text_files, options.vocab_size, options.max_position_embeddings)
    tokenizer = processor.tokenizer
    torch.manual_seed(options.seed)
    model = Gemma3ForConditionalGeneration(model_config(options, tokenizer))
    with torch.no_grad():
        # Gemma 3 initialises the projection to zeros (pretrained weights replace it); a random model would be blind.
        projection = model.model.multi_modal_projector.mm_input_projection_weight
        projection.normal_(0.0, options.initializer_range)
    save_tiny_model(model, tokenizer, processor, options.output_dir)
