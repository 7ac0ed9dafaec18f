"""Assistant messages with `weight: 0` (OpenAI's fine-tuning format) stay in the context but carry no loss: in the
trainer's own batches, in the pre-flight report's loss tokens and samples, and in the final evaluation's labels."""
import pytest
from helpers import QA, captured_events, sft_spec, write_jsonl

from ftcore.chat import trained_token_mask, without_weights
from ftcore.data import read_jsonl
from ftcore.errors import SpecError
from ftcore.train.preflight import command as preflight
from ftcore.train.metrics import assistant_labels
from ftcore.train.setup import setup

END = "<|im_end|>"
# the first answer is context only, the second is learned
TWO_TURNS = [{"role": "user", "content": QA[0][0]}, {"role": "assistant", "content": QA[0][1], "weight": 0},
             {"role": "user", "content": QA[1][0]}, {"role": "assistant", "content": QA[1][1], "weight": 1}]


@pytest.fixture()
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def turn_spans(tokenizer, messages) -> list[range]:
    """The token positions of each assistant turn, from the template's own mask with every turn trained."""
    mask = tokenizer.apply_chat_template(without_weights(messages), tokenize=True, return_dict=True,
                                         return_assistant_tokens_mask=True)["assistant_masks"]
    spans, start = [], None
    for i, on in enumerate([*mask, 0]):
        if on and start is None:
            start = i
        elif not on and start is not None:
            spans.append(range(start, i))
            start = None
    return spans


def test_the_trainers_labels_leave_out_the_weight_0_turn(tiny_model, tokenizer, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", [{"messages": TWO_TURNS}] * 8)
    spec = sft_spec(tiny_model, train, None, tmp_path / "run")
    with captured_events():
        trainer, _, _ = setup(spec, read_jsonl(train, "train"), None, "language_modeling")
    first, second = turn_spans(tokenizer, TWO_TURNS)
    batch = next(iter(trainer.get_train_dataloader()))
    for ids, labels in zip(batch["input_ids"], batch["labels"]):
        assert (labels[first.start:first.stop] == -100).all()
        assert (labels[second.start:second.stop] == ids[second.start:second.stop]).all()
        assert int((labels != -100).sum()) == len(second)
        assert tokenizer.decode(ids[labels != -100]) == QA[1][1] + END
        assert QA[0][1] in tokenizer.decode(ids)  # still in the context

    report = preflight.report(spec, read_jsonl(train, "train"), None, "language_modeling", tokenizer)
    learned = int((batch["labels"] != -100).sum()) // len(batch["labels"])  # per row, every row is the same
    assert round(report["loss_token_share"] * report["tokens"]["total"]) == learned * 8
    (sample, _) = report["samples"]
    assert [s["text"] for s in sample["segments"] if s["trained"]] == [QA[1][1] + END]
    assert QA[0][1] + END in "".join(s["text"] for s in sample["segments"] if not s["trained"])


def test_the_final_evaluation_scores_only_the_trained_turns(tokenizer):
    ids, labels = assistant_labels(tokenizer, TWO_TURNS, 128)
    assert tokenizer.decode([t for t in labels if t != -100]) == QA[1][1] + END
    _, unweighted = assistant_labels(tokenizer, without_weights(TWO_TURNS), 128)
    assert tokenizer.decode([t for t in unweighted if t != -100]) == QA[0][1] + END + QA[1][1] + END


def test_the_weight_never_changes_the_rendered_conversation(tokenizer):
    plain = without_weights(TWO_TURNS)
    assert tokenizer.apply_chat_template(TWO_TURNS, tokenize=False) == tokenizer.apply_chat_template(
        plain, tokenize=False)
    ids, mask = trained_token_mask(tokenizer, TWO_TURNS)
    assert ids == tokenizer.apply_chat_template(plain, tokenize=True)
    assert sum(mask) == len(turn_spans(tokenizer, TWO_TURNS)[1])


def test_a_template_whose_spans_cannot_be_matched_to_the_turns_is_refused(tokenizer):
    # {% generation %} around every turn's content, the user's too: four spans for two assistant turns
    tokenizer.chat_template = ("{%- for message in messages %}{{- '<|im_start|>' + message['role'] + '\\n' }}"
                               "{%- generation %}{{- message['content'] + '<|im_end|>' }}{%- endgeneration %}"
                               "{{- '\\n' }}{%- endfor %}")
    with pytest.raises(SpecError, match="marks 4 assistant spans in a conversation of 2 assistant messages"):
        trained_token_mask(tokenizer, TWO_TURNS)
    # every turn trained: nothing to tell apart, the template's mask as it is
    _, mask = trained_token_mask(tokenizer, without_weights(TWO_TURNS))
    assert mask == tokenizer.apply_chat_template(TWO_TURNS, tokenize=True, return_dict=True,
                                                 return_assistant_tokens_mask=True)["assistant_masks"]
