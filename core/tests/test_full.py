"""Full fine-tuning: every weight is trainable, weights change, and the saved folder reloads with its template."""
from pathlib import Path

import pytest
import torch
from helpers import captured_events

from ftcore.train.run import run
from ftcore.train.spec import Hyperparameters, Options


@pytest.mark.slow
def test_full_training_changes_weights_and_the_saved_model_reloads(tiny_model, sft_files, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    train, test = sft_files
    hp = Hyperparameters(learning_rate=1e-3, batch_size=4, gradient_accumulation_steps=1, max_steps=6,
                         logging_steps=2, max_length=96, save_strategy="no", warmup_ratio=0.0, max_grad_norm=1.0)
    spec = Options(base_model=tiny_model, train_file=train, test_file=test, output_dir=str(tmp_path / "run"),
                   method="Full", hyperparameters=hp)
    with captured_events() as cap:
        run(spec)
    saved = Path(spec.output_dir) / "model"
    assert [(a.kind, a.path) for a in cap.of("artifact")] == [("model", str(saved))]
    before = AutoModelForCausalLM.from_pretrained(tiny_model)
    after = AutoModelForCausalLM.from_pretrained(saved)
    changed = [name for (name, a), b in zip(before.named_parameters(), after.parameters()) if not torch.equal(a, b)]
    assert "model.layers.0.mlp.down_proj.weight" in changed and "model.embed_tokens.weight" in changed
    tokenizer = AutoTokenizer.from_pretrained(saved)
    assert tokenizer.chat_template == AutoTokenizer.from_pretrained(tiny_model).chat_template
    progress = cap.of("progress")
    assert progress[-1].loss < progress[0].loss
