"""The pre-flight report on the tiny model: token counts, truncation and loss share checked against the tokenizer,
the trained spans of the samples, the trainer's step count, the model facts, each warning, a DPO and a GRPO report,
the preflight command, the throughput probe, and the report as the first event of a training run."""
import json
import math
import shutil
import statistics
from pathlib import Path

import pytest
from helpers import QA, captured_events, conversation, run_cli, said, stdout_events, write_jsonl

from ftcore.data import read_jsonl
from ftcore.errors import SpecError
from ftcore.train.preflight import command as preflight
from ftcore.train.preflight.memory import model_facts
from ftcore.train.setup import load_processing_class
from ftcore.train.spec import Hyperparameters, Options, RewardItem
from ftcore.train.throughput import measure_throughput

END = "<|im_end|>"


def spec_for(model, train, out, test=None, trainer_type="sft", **hp) -> Options:
    hyper = dict(batch_size=2, gradient_accumulation_steps=2, epochs=3, max_length=128, max_prompt_length=64,
                 lora_rank=8, save_strategy="no", logging_steps=1)
    hyper.update(hp)
    rewards = [RewardItem(type="string_check", reference_field="answer", operation="eq")] * (trainer_type == "grpo")
    return Options(base_model=model, train_file=train, test_file=test, output_dir=str(out), method="LoRA",
                   trainer_type=trainer_type, device="cpu", hyperparameters=Hyperparameters(**hyper),
                   reward_config=rewards)


def make_report(spec: Options) -> dict:
    from ftcore.train.validate import validate

    train, test, mode = validate(spec)
    return preflight.report(spec, train, test, mode, load_processing_class(spec))


def rendered(tokenizer, messages) -> list[int]:
    """The conversation's tokens: the template rendered as text, then tokenized (not the mask's code path)."""
    text = tokenizer.apply_chat_template(messages, tokenize=False)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def assistant_mask(tokenizer, messages) -> list[int]:
    return tokenizer.apply_chat_template(messages, tokenize=True, return_dict=True,
                                         return_assistant_tokens_mask=True)["assistant_masks"]


@pytest.fixture()
def rows() -> list[dict]:
    """Four conversations of different lengths, one with a system turn and two exchanges."""
    return [conversation(q, a) for q, a in QA[:3]] + [
        {"messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": QA[3][0]},
                      {"role": "assistant", "content": QA[3][1]}, {"role": "user", "content": QA[0][0]},
                      {"role": "assistant", "content": QA[0][1]}]}]


@pytest.fixture()
def tokenizer(tiny_model):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(tiny_model)


def test_token_counts_and_loss_share_come_from_the_chat_template_and_its_mask(tiny_model, rows, tokenizer, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    report = make_report(spec_for(tiny_model, train, tmp_path / "run"))
    lengths = [len(rendered(tokenizer, r["messages"])) for r in rows]
    # Interpolated figures are given to one decimal, as a person reads them (not 36.50000000000001).
    assert report["tokens"] == {"min": min(lengths), "median": float(statistics.median(lengths)),
                                "p95": round(sorted(lengths)[2] + 0.85 * (max(lengths) - sorted(lengths)[2]), 1),
                                "max": max(lengths), "total": sum(lengths)}
    assert report["examples"] == {"train": 4, "test": None}
    assert report["truncated"] == {"examples": 0, "loss_tokens_lost": 0}
    trained = sum(sum(assistant_mask(tokenizer, r["messages"])) for r in rows)
    assert 0 < report["loss_token_share"] < 1
    assert report["loss_token_share"] == pytest.approx(trained / sum(lengths), abs=1e-6)
    json.dumps(report, allow_nan=False)  # the event and the file carry it as strict JSON


def test_an_interpolated_percentile_carries_no_float_error():
    """The console and ftune print the figure as it comes: 29.0, not 28.999999999999986."""
    from ftcore.train.preflight.command import _percentile

    assert repr(_percentile([10] * 20 + [30, 31], 95)) == "29.0"


def test_truncation_counts_the_rows_cut_and_the_assistant_tokens_they_lose(tiny_model, rows, tokenizer, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", rows)
    lengths = [len(rendered(tokenizer, r["messages"])) for r in rows]
    limit = sorted(lengths)[1]  # the two longest rows are cut (their lengths differ from it)
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", max_length=limit))
    masks = [assistant_mask(tokenizer, r["messages"]) for r in rows]
    lost = sum(sum(mask[limit:]) for mask in masks)
    assert lost > 0
    assert report["truncated"] == {"examples": sum(n > limit for n in lengths), "loss_tokens_lost": lost}
    kept = sum(min(n, limit) for n in lengths)
    assert report["loss_token_share"] == pytest.approx(sum(sum(m[:limit]) for m in masks) / kept, abs=1e-6)
    (warning,) = [w for w in report["warnings"] if w["code"] == "truncated"]
    assert f"longer than max_length {limit}" in warning["message"]
    assert f"losing {lost} trained tokens" in warning["message"] and f"{max(lengths)} (fits all)" in warning["message"]


def test_samples_mark_exactly_the_assistant_turns_and_their_end_of_turn(tiny_model, rows, tokenizer, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", [rows[3], rows[0]])
    report = make_report(spec_for(tiny_model, train, tmp_path / "run"))
    first, second = report["samples"]
    assert "".join(s["text"] for s in first["segments"] if s["trained"]) == QA[3][1] + END + QA[0][1] + END
    assert [s["text"] for s in second["segments"] if s["trained"]] == [QA[0][1] + END]
    assert "".join(s["text"] for s in second["segments"]) == tokenizer.apply_chat_template(rows[0]["messages"],
                                                                                          tokenize=False)
    assert not second["segments"][0]["trained"] and QA[0][0] in second["segments"][0]["text"]


def test_steps_are_the_trainers_count_and_max_steps_overrides_epochs(tiny_model, tokenizer, tmp_path):
    records = [conversation(q, a) for q, a in QA] * 2 + [conversation(*QA[0])] * 2  # 10 rows
    train = write_jsonl(tmp_path / "train.jsonl", records)
    kept = sum(len(rendered(tokenizer, r["messages"])) for r in records)
    report = make_report(spec_for(tiny_model, train, tmp_path / "run"))
    assert report["steps"] == {"per_epoch": 3, "total": 9, "effective_batch_size": 4}  # ceil(ceil(10 / 2) / 2)
    assert report["training_tokens"] == kept * 3
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", max_steps=5))
    assert report["steps"] == {"per_epoch": 3, "total": 5, "effective_batch_size": 4}
    # 5 steps: one whole epoch (3 steps, the last of one micro-batch) and 2 full steps of 4 of the next epoch's 10 rows
    assert report["training_tokens"] == round(kept * (1 + 8 / 10))


def test_packed_steps_count_the_packed_sequences(tiny_model, tokenizer, tmp_path):
    records = [conversation(*QA[0])] * 10
    length = len(rendered(tokenizer, records[0]["messages"]))
    train = write_jsonl(tmp_path / "train.jsonl", records)
    # two rows fit a sequence: 5 sequences → 3 batches of 2 → 2 optimizer steps per epoch; the tokens stay the same
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", packing=True, max_length=2 * length + 1))
    assert report["steps"] == {"per_epoch": 2, "total": 6, "effective_batch_size": 4}
    assert report["training_tokens"] == 10 * length * 3


def test_model_facts_and_memory_without_loading_the_weights(tiny_model, sft_files, tmp_path):
    from transformers import AutoConfig, AutoModelForCausalLM

    train, _ = sft_files
    report = make_report(spec_for(tiny_model, train, tmp_path / "run"))
    config = AutoConfig.from_pretrained(tiny_model)
    h, kv = config.hidden_size, config.num_key_value_heads * config.head_dim
    per_layer = (h + h) * 2 + (h + kv) * 2 + (h + config.intermediate_size) * 3  # q, o; k, v; gate, up, down
    real = sum(p.numel() for p in AutoModelForCausalLM.from_pretrained(tiny_model).parameters())
    assert report["model"] == {"parameters": real, "trainable_parameters": 8 * per_layer * config.num_hidden_layers,
                               "dtype": "float32", "hidden_size": h, "num_layers": config.num_hidden_layers,
                               "vocab_size": config.vocab_size}
    memory = report["memory"]
    assert memory["weights_bytes"] == real * 4
    assert memory["training_state_bytes"] == report["model"]["trainable_parameters"] * 16
    parts = memory["weights_bytes"] + memory["training_state_bytes"] + memory["activations_bytes"]
    assert memory["estimated_peak_bytes"] == pytest.approx(parts * 1.1, abs=2)
    fast = make_report(spec_for(tiny_model, train, tmp_path / "run", use_fast_attention=True))["memory"]
    assert 0 < fast["activations_bytes"] < memory["activations_bytes"]  # eager attention keeps the score matrices

    # kept per token and layer: every linear layer's input and output, the gated MLP's activation and product, four
    # norm/residual tensors, and with LoRA dropout each adapted layer's dropped input (all seven are adapted)
    i = config.intermediate_size
    linears = 2 * (h + h) + 2 * (h + kv) + 2 * (h + i) + (i + h)
    spec = spec_for(tiny_model, train, tmp_path / "run")
    assert model_facts(spec).layer_activations == linears + 2 * i + 4 * h + (6 * h + i)
    spec.hyperparameters.lora_dropout = 0.0
    assert model_facts(spec).layer_activations == linears + 2 * i + 4 * h


def _with_template(model: str, folder: Path, old: str, new: str) -> str:
    shutil.copytree(model, folder)
    template = folder / "chat_template.jinja"
    assert old in template.read_text()
    template.write_text(template.read_text().replace(old, new))
    return str(folder)


def test_a_clean_run_has_no_warnings(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] * 4)
    test = write_jsonl(tmp_path / "test.jsonl", [conversation("Name a fruit.", "Apple.")])
    assert make_report(spec_for(tiny_model, train, tmp_path / "run", test=test, batch_size=2,
                                gradient_accumulation_steps=1))["warnings"] == []


def test_end_of_turn_outside_the_generation_block_is_reported(tiny_model, sft_files, tmp_path):
    model = _with_template(tiny_model, tmp_path / "model", "{{- message['content'] + '<|im_end|>' }}"
                           "{%- endgeneration %}", "{{- message['content'] }}{%- endgeneration %}{{- '<|im_end|>' }}")
    report = make_report(spec_for(model, sft_files[0], tmp_path / "run", gradient_accumulation_steps=1))
    assert [w["code"] for w in report["warnings"]] == ["no_end_of_turn"]
    message = report["warnings"][0]["message"]
    assert "'<|im_end|>'" in message and "inside the {% generation %} block" in message
    assert "".join(s["text"] for s in report["samples"][0]["segments"] if s["trained"]) == QA[0][1]


def test_a_template_without_generation_markers_trains_the_assistant_turns(tiny_model, sft_files, tmp_path):
    """The families' published templates have no {% generation %} blocks: their turns are found by rendering."""
    model = _with_template(tiny_model, tmp_path / "model", "{%- generation %}{{- message['content'] + '<|im_end|>' }}"
                           "{%- endgeneration %}", "{{- message['content'] + '<|im_end|>' }}")
    report = make_report(spec_for(model, sft_files[0], tmp_path / "run", gradient_accumulation_steps=1))
    assert report["warnings"] == []
    assert "".join(s["text"] for s in report["samples"][0]["segments"] if s["trained"]) == QA[0][1] + END


def test_a_template_that_writes_no_assistant_content_leaves_rows_with_no_assistant_turn(tiny_model, sft_files,
                                                                                         tmp_path):
    model = _with_template(tiny_model, tmp_path / "model", "{%- generation %}{{- message['content'] + '<|im_end|>' }}"
                           "{%- endgeneration %}", "")
    report = make_report(spec_for(model, sft_files[0], tmp_path / "run", gradient_accumulation_steps=1))
    warning = report["warnings"][0]
    assert warning["code"] == "no_assistant_turn"
    assert warning["message"].startswith("16 of 16 train rows (rows 1, 2, 3, 4, 5, …) have no token")
    assert "check that the chat template writes the assistant's content" in warning["message"]
    assert report["loss_token_share"] == 0


def test_duplicates_between_train_and_test_and_few_steps_are_reported(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA])
    test = write_jsonl(tmp_path / "test.jsonl", [conversation("Name a fruit.", "Apple."), conversation(*QA[2])])
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", test=test))
    assert report["examples"] == {"train": 4, "test": 2}
    duplicates, few = report["warnings"]
    assert duplicates == {"code": "train_test_duplicates", "message": "1 of 2 test rows (row 2) are also in the train "
                          "split, so the test metrics reward memorising them: remove them from test_file or split "
                          "the dataset again"}
    assert few["code"] == "few_steps" and few["message"].startswith("the run makes only 3 optimizer steps")


def preference_records():
    wrong = {a: QA[(i + 1) % len(QA)][1] for i, (_, a) in enumerate(QA)}
    return [{"prompt": [{"role": "user", "content": q}], "chosen": [{"role": "assistant", "content": a}],
             "rejected": [{"role": "assistant", "content": wrong[a]}]} for q, a in QA]


def test_dpo_report_counts_prompt_and_chosen_as_trl_tokenizes_them(tiny_model, tokenizer, tmp_path):
    records = preference_records()
    train = write_jsonl(tmp_path / "train.jsonl", records)
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", trainer_type="dpo", batch_size=1))

    def lengths(record, answer):  # the prompt templated with the generation prompt; the rest of prompt + answer; eos
        prompt = tokenizer.apply_chat_template(record["prompt"], tokenize=False, add_generation_prompt=True)
        whole = tokenizer.apply_chat_template(record["prompt"] + record[answer], tokenize=False)
        tokens = [tokenizer(text, add_special_tokens=False)["input_ids"] for text in (prompt, whole[len(prompt):])]
        return len(tokens[0]), len(tokens[1]) + 1

    pairs = [lengths(r, "chosen") for r in records]
    totals = [p + c for p, c in pairs]
    assert report["trainer_type"] == "dpo"
    assert (report["tokens"]["min"], report["tokens"]["max"], report["tokens"]["total"]) == (
        min(totals), max(totals), sum(totals))
    assert report["loss_token_share"] == pytest.approx(sum(c for _, c in pairs) / sum(totals), abs=1e-6)
    assert report["steps"] == {"per_epoch": 2, "total": 6, "effective_batch_size": 2}
    rejected = [lengths(r, "rejected")[1] for r in records]
    assert report["training_tokens"] == 3 * sum(p + c + r for (p, c), r in zip(pairs, rejected))
    trained = [s["text"] for s in report["samples"][0]["segments"] if s["trained"]]
    assert trained == [QA[0][1] + END + "\n" + END]  # TRL appends eos to the templated answer
    assert "no_end_of_turn" not in [w["code"] for w in report["warnings"]]

    # a prompt limit below every prompt: all rows cut at the prompt's start, no answer token lost
    short = make_report(spec_for(tiny_model, train, tmp_path / "run", trainer_type="dpo", max_prompt_length=4))
    assert short["truncated"] == {"examples": 4, "loss_tokens_lost": 0}
    (warning,) = [w for w in short["warnings"] if w["code"] == "truncated"]
    assert f"raise max_prompt_length to {max(p for p, _ in pairs)}" in warning["message"]


def test_grpo_report_counts_prompts_and_completions_per_step(tiny_model, tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", [{"prompt": [{"role": "user", "content": q}], "answer": a}
                                                   for q, a in QA + QA[:2]])
    report = make_report(spec_for(tiny_model, train, tmp_path / "run", trainer_type="grpo", num_generations=2,
                                  max_completion_length=8, epochs=1))
    assert report["loss_token_share"] is None
    assert report["steps"] == {"per_epoch": 3, "total": 3, "effective_batch_size": 4}  # 6 prompts × 2 / 4
    assert report["training_tokens"] == 3 * 4 * 8
    assert not any(s["trained"] for sample in report["samples"] for s in sample["segments"])


@pytest.mark.slow
def test_preflight_command_writes_the_report_and_emits_it(tiny_model, sft_files, tmp_path):
    train, test = sft_files
    out = tmp_path / "reports" / "preflight.json"
    result = run_cli(["preflight", "--base_model", tiny_model, "--train_file", train, "--test_file", test,
                      "--output_dir", str(tmp_path / "run"), "--method", "LoRA", "--device", "cpu",
                      "--hyperparameters.max_length", "128", "--output_file", str(out)])
    assert result.returncode == 0, result.stderr
    emitted = said(stdout_events(result.stdout))
    assert [e.event for e in emitted] == ["preflight", "done"]
    written = json.loads(out.read_text())
    assert written == emitted[0].report
    assert written["examples"] == {"train": 16, "test": 4} and written["throughput"] is None
    assert not (tmp_path / "run").exists()


def test_the_preflight_command_of_grpo_warns_when_the_base_models_answers_all_score_alike(tiny_model, tmp_path):
    """The first dry run on a host is this one-shot command (the warm core answers the others): the same check as
    the warm core's (test_serve.py), on the weights it loads for it."""
    train = write_jsonl(tmp_path / "train.jsonl", [{"prompt": [{"role": "user", "content": q}], "answer": a}
                                                   for q, a in QA])
    spec = spec_for(tiny_model, train, tmp_path / "run", trainer_type="grpo", num_generations=2,
                    max_completion_length=8)
    spec.reward_config = [RewardItem(type="built_in", function_name="format_reward")]
    options = preflight.Options(**{f: getattr(spec, f) for f in spec.__dataclass_fields__},
                                output_file=str(tmp_path / "report.json"))
    with captured_events():
        preflight.run(options)
    written = json.loads((tmp_path / "report.json").read_text())
    assert "equal_rewards" in [w["code"] for w in written["warnings"]]


def test_preflight_validates_the_spec_as_train_does(tiny_model, sft_files, tmp_path):
    train, _ = sft_files
    options = preflight.Options(base_model=tiny_model, train_file=train, output_dir=str(tmp_path / "run"),
                                method="QLoRA", device="cpu", output_file=str(tmp_path / "report.json"))
    with pytest.raises(SpecError, match="^QLoRA needs a CUDA GPU; use LoRA$"):
        preflight.run(options)
    assert not (tmp_path / "report.json").exists()


@pytest.mark.slow
def test_throughput_is_measured_on_real_steps_silently_and_leaves_nothing_behind(tiny_model, sft_files, tmp_path):
    train, test = sft_files
    spec = spec_for(tiny_model, train, tmp_path / "run", test=test, save_strategy="steps", save_steps=1)
    spec.eval_config.eval_strategy = "steps"
    with captured_events() as cap:
        throughput = measure_throughput(spec, read_jsonl(train, "train"), read_jsonl(test, "test"),
                                        "language_modeling")
    assert cap.events == []
    assert throughput["tokens_per_second"] > 0 and math.isfinite(throughput["tokens_per_second"])
    assert (throughput["device"], throughput["steps"]) == ("cpu", 3)
    assert throughput["steps_seconds"] > 0  # all 4 steps at the timed speed: more than the 3 timed, never the setup
    assert not (tmp_path / "run").exists()
    assert spec.hyperparameters.save_strategy == "steps" and spec.eval_config.eval_strategy == "steps"  # a copy ran


@pytest.mark.slow
def test_train_emits_the_report_before_its_first_progress_event(tiny_model, sft_files, tmp_path):
    from ftcore.train.run import run

    train, _ = sft_files
    spec = spec_for(tiny_model, train, tmp_path / "run", max_steps=2, gradient_accumulation_steps=1)
    with captured_events() as cap:
        run(spec)
    kinds = [e.event for e in cap.events]
    assert kinds.count("preflight") == 1 and kinds.index("preflight") < kinds.index("progress")
    (event,) = cap.of("preflight")
    assert event.report == make_report(spec)
    assert event.report["steps"]["total"] == max(e.step for e in cap.of("progress")) == 2


@pytest.mark.slow
def test_a_report_that_cannot_be_made_is_logged_and_training_goes_on(tiny_model, sft_files, tmp_path, monkeypatch):
    from ftcore.train.run import run

    def broken(*args):
        raise ValueError("unknown architecture")

    monkeypatch.setattr(preflight, "report", broken)
    spec = spec_for(tiny_model, sft_files[0], tmp_path / "run", max_steps=1, gradient_accumulation_steps=1)
    with captured_events() as cap:
        run(spec)
    assert not cap.of("preflight") and cap.of("artifact")
    assert [e.message for e in cap.of("log") if e.level == "warning"] == [
        "no pre-flight report: ValueError: unknown architecture"]


def test_evaluation_every_more_steps_than_the_run_makes_is_reported(tiny_model, sft_files, tmp_path):
    """#39: the console's "Quick check" (30 steps) with eval_strategy steps and eval_steps at its default of 50 never
    evaluated, and nothing said so."""
    from ftcore.train.spec import EvalConfig

    train, test = sft_files
    spec = spec_for(tiny_model, train, tmp_path / "run", test=test, max_steps=30)
    spec.eval_config = EvalConfig(eval_strategy="steps", eval_steps=50)
    (warning,) = [w for w in make_report(spec)["warnings"] if w["code"] == "no_evaluation"]
    assert warning["message"] == ("eval_strategy steps evaluates every 50 steps (eval_steps) but the run makes only 30, "
                                  "so no evaluation runs during training: lower eval_steps to at most 30 (e.g. 10), "
                                  "or set eval_strategy epoch")
    spec.eval_config = EvalConfig(eval_strategy="steps", eval_steps=30)  # evaluates at the last step
    assert "no_evaluation" not in [w["code"] for w in make_report(spec)["warnings"]]


def test_an_effective_batch_larger_than_the_train_split_is_reported(tiny_model, tmp_path, monkeypatch):
    """#54: a 6-row dataset with batch_size 4 and gradient_accumulation_steps 4 (an effective batch of 16)."""
    train = write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA] + [conversation(*QA[0])] * 2)
    spec = spec_for(tiny_model, train, tmp_path / "run", batch_size=4, gradient_accumulation_steps=4, epochs=20)
    warnings = {w["code"]: w["message"] for w in make_report(spec)["warnings"]}
    assert warnings["batch_larger_than_split"] == (
        "the effective batch (batch_size 4 × gradient_accumulation_steps 4 = 16) is larger than the train split "
        "(6 rows), so each epoch is a single optimizer step that never fills it: lower gradient_accumulation_steps "
        "to 1 or batch_size to 1, or add rows")
    monkeypatch.setenv("WORLD_SIZE", "2")  # a real job under torchrun on two devices
    spec = spec_for(tiny_model, train, tmp_path / "run", batch_size=1, gradient_accumulation_steps=4, epochs=20)
    message = next(w["message"] for w in make_report(spec)["warnings"] if w["code"] == "batch_larger_than_split")
    assert message.startswith("the effective batch (batch_size 1 × gradient_accumulation_steps 4 × 2 devices = 8)")
    assert "lower gradient_accumulation_steps to 3, or add rows" in message
    monkeypatch.delenv("WORLD_SIZE")
    spec = spec_for(tiny_model, train, tmp_path / "run", batch_size=2, gradient_accumulation_steps=3, epochs=20)
    assert "batch_larger_than_split" not in {w["code"] for w in make_report(spec)["warnings"]}
