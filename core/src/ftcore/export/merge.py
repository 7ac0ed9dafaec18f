"""merge: folds a LoRA adapter into its base model and saves an ordinary HF folder (with the tokenizer)."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .. import events
from ..errors import SpecError


@dataclass
class Options:
    """Merge a LoRA adapter into its base model; writes an HF model folder with tokenizer and chat template."""

    base_model: str = field(metadata={"help": "the base model folder the adapter was trained on"})
    adapter: str = field(metadata={"help": "the adapter folder written by train (output_dir/adapter)"})
    output_dir: str = field(metadata={"help": "folder for the merged model (created)"})


def run(options: Options) -> None:
    events.stage("merging", "merging the adapter into the base model")
    for name in ("base_model", "adapter"):
        if not Path(getattr(options, name)).is_dir():
            raise SpecError(f"{name} {getattr(options, name)} is not a folder")
    if not (Path(options.adapter) / "adapter_config.json").is_file():
        raise SpecError(f"adapter {options.adapter} has no adapter_config.json; pass the adapter folder train wrote "
                        "(a Full run writes a whole model, which needs no merge)")
    from ..models.loading import load_for_inference, untie_adapted_output_layer
    from ..models.vision import save_processor

    model, tokenizer = load_for_inference(options.base_model, options.adapter, device="cpu")
    # Merging would add the output layer's delta to the embeddings it shares (see untie_adapted_output_layer).
    untie_adapted_output_layer(model)
    merged = model.merge_and_unload()
    out = Path(options.output_dir)
    merged.save_pretrained(out)
    tokenizer.save_pretrained(out)
    save_processor([options.adapter, options.base_model], out)  # a vision model's image processor comes along
    events.emit(events.Artifact(kind="merged", path=str(out)))
