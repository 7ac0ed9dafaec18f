"""The packaged Gemma 3 270M (optional `gemma` extra) imports into a model that reads text as Gemma does and answers.

The import takes 1-2 minutes, so the folder is cached under ~/.cache/ftcore (FTCORE_CACHE overrides), keyed by the
package version and the importer's source: a new package or a changed importer imports afresh.
"""
from __future__ import annotations

import hashlib
import os
import shutil
from importlib import metadata
from pathlib import Path

import pytest
from helpers import captured_events

from ftcore.models import import_model

pytestmark = pytest.mark.slow


@pytest.fixture(scope="session")
def gemma_folder() -> str:
    try:
        version = metadata.version(import_model.GEMMA_PACKAGE)
    except metadata.PackageNotFoundError:
        pytest.skip(f"the {import_model.GEMMA_PACKAGE} package is not installed (cd core && uv sync --extra gemma)")
    importer = hashlib.sha256(Path(import_model.__file__).read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("FTCORE_CACHE", Path.home() / ".cache" / "ftcore"))
    folder = cache / f"gemma3-270m-{version}-{importer}"
    if not (folder / "config.json").is_file():
        for stale in cache.glob("gemma3-270m-*"):  # 1 GB each: keep only the current import
            shutil.rmtree(stale, ignore_errors=True)
        partial = cache / f"partial-{folder.name}"
        with captured_events():
            import_model.run(import_model.Options(source="gemma3-270m", output_dir=str(partial)))
        partial.rename(folder)
    return str(folder)


def test_the_imported_tokenizer_splits_text_into_gemmas_own_pieces(gemma_folder):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(gemma_folder)
    ids = tokenizer("What is the capital of France?").input_ids
    assert tokenizer.convert_ids_to_tokens(ids) == ["<bos>", "What", "▁is", "▁the", "▁capital", "▁of", "▁France", "?"]
    text = "Tabs\tand  spaces,\n\nnewlines, ünïcødé 😀 and <start_of_turn> markers"
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids) == text
    assert tokenizer.eos_token == "<end_of_turn>" and tokenizer.chat_template


def test_the_imported_model_answers_through_the_chat_template(gemma_folder):
    from ftcore.inference.generate import generate_texts
    from ftcore.models.loading import load_for_inference

    # The GGUF holds the pretrained (not instruction-tuned) model, whose turn-marker embeddings are untrained: one
    # example turn shows it the format, then it must know the answer.
    conversation = [{"role": "user", "content": "What is the capital of Italy?"},
                    {"role": "assistant", "content": "Rome."},
                    {"role": "user", "content": "What is the capital of France?"}]
    model, tokenizer = load_for_inference(gemma_folder, device="cpu")
    (answer,) = generate_texts(model, tokenizer, [conversation], max_new_tokens=4)
    assert "Paris" in answer
