"""Where and how a run computes: the device, the dtype, the attention kernel (flex attention's probe on CUDA), Liger's
kernels, and the from_pretrained kwargs that follow from them."""
from __future__ import annotations

import functools
import os
from contextlib import contextmanager

from .spec import Options


def device_is_cuda(spec: Options) -> bool:
    import torch

    return spec.device != "cpu" and torch.cuda.is_available()


def device_summary(spec: Options) -> str:
    """Where and how the run trains, for its log: the device (the GPU's name), the dtype, the attention kernel."""
    import torch

    kwargs = model_kwargs(spec)
    dtype = str(kwargs["dtype"]).removeprefix("torch.")
    if not device_is_cuda(spec):
        return f"training on the CPU in {dtype}, attention {kwargs['attn_implementation']}"
    extras = [", Liger kernels" if uses_liger(spec) else "", ", 4-bit NF4 base" if spec.method == "QLoRA" else ""]
    return (f"training on CUDA ({torch.cuda.get_device_name()}) in {dtype}, attention "
            f"{kwargs['attn_implementation']}{''.join(extras)}")


def model_kwargs(spec: Options) -> dict:
    """from_pretrained kwargs: dtype, attention kernel, 4-bit quantisation for QLoRA."""
    import torch

    cuda = device_is_cuda(spec)
    kwargs: dict = {"dtype": torch.bfloat16 if uses_bf16(spec) else torch.float32}
    if spec.hyperparameters.use_fast_attention:
        kwargs["attn_implementation"] = _fast_attention(spec) if cuda else "sdpa"
    else:
        # On CUDA, PyTorch's fused kernel (transformers' own default): the eager matmul-softmax-matmul only costs
        # memory and time there (a default job trained with it on an H200, scripts/gpu-check.sh, #37). On the CPU the
        # eager path stays (the tests' losses and tokens are pinned to it).
        kwargs["attn_implementation"] = "sdpa" if cuda else "eager"
    if spec.method == "QLoRA":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=kwargs["dtype"])
        if "LOCAL_RANK" in os.environ:  # one process per GPU (torchrun): the quantised weights go to this rank's GPU
            kwargs["device_map"] = {"": int(os.environ["LOCAL_RANK"])}
    return kwargs


def uses_bf16(spec: Options) -> bool:
    import torch

    return device_is_cuda(spec) and torch.cuda.is_bf16_supported()


def _fast_attention(spec: Options) -> str:
    """On CUDA: FlashAttention 2 where the flash_attn package is installed (varlen: each packed document attends to
    itself only). Else, for SFT rows packed into one (padding_free or packing), transformers' flex attention, whose
    compiled block-sparse kernel skips the blocks between documents: sdpa would compute the whole (sum of lengths)²
    score matrix under a mask, 4× slower end to end at 16 rows of up to 2048 tokens (bench/train/README.md). Else
    sdpa (cuDNN or flash kernels)."""
    hp = spec.hyperparameters
    if _has_flash_attn():
        return "flash_attention_2"
    if spec.trainer_type == "sft" and spec.modality == "text" and (hp.padding_free or hp.packing):
        return "flex_attention" if flex_attention_lowers(*_head_shape(spec.base_model)) else "sdpa"
    return "sdpa"


def _head_shape(model_dir: str) -> tuple[int, int, int]:
    """(attention heads, key/value heads, head dimension) of a text model's config."""
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(model_dir)
    heads = config.num_attention_heads
    head_dim = getattr(config, "head_dim", None) or config.hidden_size // heads
    return heads, getattr(config, "num_key_value_heads", None) or heads, head_dim


@functools.cache
def flex_attention_lowers(heads: int, kv_heads: int, head_dim: int) -> bool:
    """Whether transformers' compiled flex attention builds forward and backward kernels for this head shape on this
    GPU in bf16, tried as training calls it: transformers' own mask for packed documents (a document-id tensor
    captured by the mask function) and its own attention forward, at two lengths, so that the second call recompiles
    with dynamic lengths as the second step of a padding-free run does. The lengths are whole blocks, as training's
    rows are (trainer_config pads them: packed_on_flex). Where inductor has no kernel configuration for a shape, the
    model trains on sdpa, said in its log, instead of failing."""
    import torch
    from transformers.integrations.flex_attention import flex_attention_forward
    from transformers.masking_utils import (and_masks, causal_mask_function, flex_attention_mask,
                                            packed_sequence_mask_function)

    from .. import events

    class Attention(torch.nn.Module):  # what flex_attention_forward reads of a model's attention layer
        pass

    layer = Attention().train()
    try:
        for length in (2 * FLEX_BLOCK, 3 * FLEX_BLOCK):
            documents = (torch.arange(length, device="cuda") >= length // 3 + 5).long().unsqueeze(0)
            mask = flex_attention_mask(1, torch.arange(length, device="cuda"), length, mask_function=and_masks(
                causal_mask_function, packed_sequence_mask_function(documents)))
            q, k, v = (torch.randn(1, n, length, head_dim, device="cuda", dtype=torch.bfloat16, requires_grad=True)
                       for n in (heads, kv_heads, kv_heads))
            out, _ = flex_attention_forward(layer, q, k, v, mask, scaling=head_dim ** -0.5)
            out.float().sum().backward()
        torch.cuda.synchronize()
        return True
    except Exception as e:  # noqa: BLE001 - any compile failure means: not this kernel
        first = next((line for line in str(e).splitlines() if "Error" in line), str(e).splitlines()[0])
        events.emit(events.Log(level="warning", message=f"flex attention does not compile for {heads}×{head_dim} "
                               f"heads ({kv_heads} key/value) on this GPU ({type(e).__name__}: {first[:200]}); "
                               "training on sdpa"))
        return False


# Flex attention's block of positions. A packed row shorter than one block goes to inductor's flex_decoding kernel,
# which builds no training kernel: on an H200 with torch 2.11 the tiny test model's first step (a row of 102 tokens)
# failed with NoValidChoicesError (name 'flex_decoding', no choices) for 16- and 64-wide heads alike, and so did the
# probe at 100 tokens, where it built forward and backward at 200 and 330 (scripts/gpu-check.sh, #37). So packed rows
# on flex are padded to whole
# blocks (TRL's pad_to_multiple_of: the padding has label -100 and, at position 0, attends to itself only), which
# also bounds the lengths the kernel is compiled for.
FLEX_BLOCK = 128


def packed_on_flex(spec: Options) -> bool:
    """Whether an SFT job's packed rows go through flex attention (on CUDA, without FlashAttention 2)."""
    return (device_is_cuda(spec) and spec.hyperparameters.use_fast_attention
            and _fast_attention(spec) == "flex_attention")


def _has_flash_attn() -> bool:
    import importlib.util

    return importlib.util.find_spec("flash_attn") is not None


def uses_liger(spec: Options) -> bool:
    """Liger's Triton kernels (fused linear cross-entropy, RMSNorm, RoPE, SwiGLU) for text SFT on CUDA: the fused
    loss never materialises the (tokens × vocabulary) logits, the largest activation of a small model with a big
    vocabulary. Not on CPU (Triton needs a GPU) nor for vision (the image-text models are patched differently)."""
    import importlib.util

    return (device_is_cuda(spec) and spec.trainer_type == "sft" and spec.modality == "text"
            and importlib.util.find_spec("liger_kernel") is not None)


@contextmanager
def liger_undone_after(spec: Options):
    """Training with Liger, then transformers as it was. The Trainer applies Liger to the one model it trains, but
    Liger patches the model's modeling module for the whole process (its RoPE function, its RMSNorm and MLP classes,
    the causal-LM forward), so a model loaded on CPU later in the same process ran Triton kernels on CPU tensors.
    The model's modeling module is imported first, so that what it had before is known."""
    if not uses_liger(spec):
        yield
        return
    import importlib

    from transformers import AutoConfig

    model_type = AutoConfig.from_pretrained(spec.base_model).model_type
    importlib.import_module(f"transformers.models.{model_type}.modeling_{model_type}")
    with modeling_patches_undone():
        yield


@contextmanager
def modeling_patches_undone():
    """What is patched inside, put back after: the names of every transformers modeling module loaded on entry, the
    forward of each class they define, and torch's cross_entropy (Liger's cross_entropy option replaces it)."""
    import sys

    import torch.nn.functional

    modules = [m for name, m in list(sys.modules.items())
               if name.startswith("transformers.models.") and ".modeling_" in name and m is not None]
    names = [(m, dict(vars(m))) for m in modules]
    forwards = [(c, c.__dict__["forward"]) for m in modules for c in list(vars(m).values())
                if isinstance(c, type) and c.__module__ == m.__name__ and "forward" in c.__dict__]
    cross_entropy = torch.nn.functional.cross_entropy
    try:
        yield
    finally:
        for module, before in names:
            for name, value in before.items():
                if vars(module).get(name) is not value:
                    setattr(module, name, value)
        for cls, forward in forwards:
            if cls.__dict__.get("forward") is not forward:
                cls.forward = forward
        torch.nn.functional.cross_entropy = cross_entropy
