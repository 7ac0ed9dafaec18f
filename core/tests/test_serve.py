"""serve: one long-lived process answers generate/evaluate requests by id, keeps models loaded, survives bad requests."""
import json
import os
import shutil
import subprocess
import sys
import time

import pytest

from ftcore import events
from ftcore.evaluation import metrics
from ftcore.serve import ModelCache

from helpers import CORE, QA, conversation, write_jsonl

PROMPTS = [[{"role": "user", "content": q}] for q, _ in QA[:3]]


@pytest.fixture(scope="module")
def adapter(tiny_model, tmp_path_factory) -> str:
    """A LoRA adapter with random (non-zero) B, so its answers differ from the base's; saved with the tokenizer
    as training saves it."""
    import torch
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(0)
    folder = tmp_path_factory.mktemp("adapter") / "adapter"
    model = AutoModelForCausalLM.from_pretrained(tiny_model)
    config = LoraConfig(r=4, lora_alpha=8, init_lora_weights=False, target_modules=["q_proj", "v_proj"])
    get_peft_model(model, config).save_pretrained(folder)
    AutoTokenizer.from_pretrained(tiny_model).save_pretrained(folder)
    return str(folder)


class ServeProcess:
    """`python -m ftcore serve` with a line-oriented request/answer helper."""

    def __init__(self, *flags: str, env: dict | None = None):
        self.logs: list[str] = []
        env = {**os.environ, "PYTHONUNBUFFERED": "1", "FTCORE_EXIT_WITH_PARENT": "1", **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "ftcore", "serve", "--device", "cpu", *flags], cwd=CORE,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                     text=True)
        assert self.next_event().event == "ready"

    def send(self, *requests) -> None:
        for request in requests:
            self.proc.stdin.write((request if isinstance(request, str) else json.dumps(request)) + "\n")
        self.proc.stdin.flush()

    def next_event(self):
        """The next answer; log events (a model loaded, say) are kept in self.logs."""
        while True:
            line = self.proc.stdout.readline()
            assert line, "serve exited"
            event = events.parse_event_line(line)
            if event.event != "log":
                return event
            self.logs.append(event.message)

    def ask(self, request):
        self.send(request)
        return self.next_event()

    def close(self) -> int:
        self.proc.stdin.close()
        code = self.proc.wait(timeout=60)
        self.tail = self.proc.stdout.read()
        return code


@pytest.fixture(scope="module")
def server():
    process = ServeProcess()
    yield process
    if process.proc.poll() is None:
        process.proc.kill()


def in_process(model: str, adapter: str | None, max_new_tokens: int) -> list[list[int]]:
    from ftcore.inference.generate import generate_token_ids
    from ftcore.models.loading import load_for_inference

    model, tokenizer = load_for_inference(model, adapter, "cpu")
    return generate_token_ids(model, tokenizer, PROMPTS, max_new_tokens)


def test_generate_matches_in_process_generation_and_the_second_call_is_warm(server, tiny_model, adapter):
    first = server.ask({"id": "b1", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 12})
    assert first.event == "generated" and first.id == "b1"
    assert first.token_ids == in_process(tiny_model, None, 12)
    assert len(first.texts) == 3 and first.load_seconds > 0
    second = server.ask({"id": "b2", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 12})
    assert second.token_ids == first.token_ids and second.load_seconds == 0  # still loaded

    tuned = server.ask({"id": "a1", "op": "generate", "model": tiny_model, "adapter": adapter,
                        "conversations": PROMPTS, "max_new_tokens": 12})
    assert tuned.event == "generated" and tuned.load_seconds > 0
    assert tuned.token_ids == in_process(tiny_model, adapter, 12)
    assert tuned.token_ids != first.token_ids  # base + adapter is its own cache entry, not the base
    again = server.ask({"id": "b3", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 12})
    assert again.load_seconds == 0 and again.token_ids == first.token_ids
    # Each load is logged with where the weights went (on a CUDA worker: cuda, bfloat16).
    assert [m.split(" in ")[0] for m in server.logs if m.startswith("loaded")][:2] == ["loaded model on cpu (float32)",
                                                            "loaded model + adapter adapter on cpu (float32)"]


@pytest.mark.slow
def test_a_cold_model_is_said_while_it_loads_at_every_interval(tiny_model):
    """#39: the first request for a model waits for its load (tens of seconds for a real one) and hears why: held 3.5 s
    in the load (the test hook), the interval 1 s, three or more growing heartbeats, then the load, then the answer."""
    cold = ServeProcess(env={"FTCORE_TEST_HOLD": "load=3.5", "FTCORE_PROGRESS_INTERVAL": "1"})
    try:
        answer = cold.ask({"op": "generate", "id": "cold", "model": tiny_model, "conversations": PROMPTS[:1],
                           "max_new_tokens": 4})
        assert answer.event == "generated", answer
        beats = [m for m in cold.logs if m.startswith("loading model: ") and m.endswith(" s so far")]
        assert len(beats) >= 3, cold.logs
        seconds = [int(m.removeprefix("loading model: ").removesuffix(" s so far")) for m in beats]
        assert seconds == sorted(seconds) and seconds[-1] > seconds[0]
        assert cold.logs.index(beats[-1]) < next(i for i, m in enumerate(cold.logs) if m.startswith("loaded model"))
    finally:
        cold.close()


def test_generate_says_how_each_answer_ended_and_its_prompt_tokens(server, tiny_model, tmp_path):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(tiny_model)
    plain = server.ask({"id": "r1", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 6})
    assert plain.prompt_tokens == [len(tokenizer.apply_chat_template(p, add_generation_prompt=True)) for p in PROMPTS]
    assert plain.finish_reasons == ["length"] * 3 and all(len(ids) == 6 for ids in plain.token_ids)

    # The random model never picks its end-of-turn token; a copy whose generation config also ends at the third token
    # it picks for the first prompt ends there.
    ending = tmp_path / "ending"
    shutil.copytree(tiny_model, ending)
    config = json.loads((ending / "generation_config.json").read_text())
    first = plain.token_ids[0]
    config["eos_token_id"] = [tokenizer.eos_token_id, first[2]]
    (ending / "generation_config.json").write_text(json.dumps(config))
    ended = server.ask({"id": "r2", "op": "generate", "model": str(ending), "conversations": PROMPTS[:1],
                        "max_new_tokens": 6})
    assert ended.token_ids == [first[:first.index(first[2])]] and ended.finish_reasons == ["stop"]


def test_generate_ends_before_the_first_stop_string(server, tiny_model):
    plain = server.ask({"id": "s1", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 12})
    text = plain.texts[0]
    stop = text[len(text) // 2:len(text) // 2 + 3]  # from the middle: several tokens come before it
    cut = text.find(stop)
    stopped = server.ask({"id": "s2", "op": "generate", "model": tiny_model, "conversations": PROMPTS[:1],
                          "max_new_tokens": 12, "stop": [stop, "never in the text"]})
    assert stopped.texts == [text[:cut]] and stopped.finish_reasons == ["stop"]
    ids = stopped.token_ids[0]
    assert 0 < len(ids) < len(plain.token_ids[0]) and ids == plain.token_ids[0][:len(ids)]  # ended at the stop string
    refused = server.ask({"id": "s3", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "stop": [""]})
    assert (refused.event, refused.code) == ("error", "validation")


def test_generate_stops_at_the_end_of_the_context_and_refuses_a_prompt_that_fills_it(server, tiny_model):
    # The tiny model's context is 512 tokens: a max_new_tokens of 2^31 - 1 (valid in the API) is answered, ending at the
    # context as llama.cpp ends, instead of generating for as long as it says.
    huge = server.ask({"id": "c1", "op": "generate", "model": tiny_model, "conversations": PROMPTS[:1],
                       "max_new_tokens": 2**31 - 1})
    assert huge.event == "generated" and huge.finish_reasons == ["length"]
    assert huge.prompt_tokens[0] + len(huge.token_ids[0]) == 512
    long = [{"role": "user", "content": " ".join(["word"] * 600)}]
    refused = server.ask({"id": "c2", "op": "generate", "model": tiny_model, "conversations": [long], "max_new_tokens": 4})
    assert (refused.event, refused.code) == ("error", "validation")
    assert "model's context is 512 tokens" in refused.message


def test_generate_samples_the_same_answers_for_the_same_seed(server, tiny_model):
    request = {"op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 8, "temperature": 1.0}
    first = server.ask({**request, "id": "d1", "seed": 1})
    again = server.ask({**request, "id": "d2", "seed": 1})
    other = server.ask({**request, "id": "d3", "seed": 2})
    assert first.token_ids == again.token_ids
    assert other.token_ids != first.token_ids


def test_text_parts_are_the_message_text(server, tiny_model):
    plain = server.ask({"id": "p1", "op": "generate", "model": tiny_model, "conversations": PROMPTS[:1], "max_new_tokens": 6})
    parts = [[{"role": "user", "content": [{"type": "text", "text": QA[0][0][:10]}, {"type": "text", "text": QA[0][0][10:]}]}]]
    split = server.ask({"id": "p2", "op": "generate", "model": tiny_model, "conversations": parts, "max_new_tokens": 6})
    assert split.token_ids == plain.token_ids


def test_a_bad_request_is_answered_with_its_error_and_the_server_goes_on(server, tiny_model, tmp_path):
    missing = server.ask({"id": "m1", "op": "generate", "model": str(tmp_path / "nope"), "conversations": PROMPTS})
    assert (missing.event, missing.code, missing.id) == ("error", "validation", "m1")
    assert "no config.json" in missing.message
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / "config.json").write_text("{}")
    unloadable = server.ask({"id": "m2", "op": "generate", "model": str(broken), "conversations": PROMPTS})
    assert (unloadable.event, unloadable.code, unloadable.id) == ("error", "runtime", "m2")
    not_json = server.ask("{oops")
    assert (not_json.event, not_json.code, not_json.id) == ("error", "validation", None)
    unknown = server.ask({"id": "u1", "op": "train"})
    assert unknown.event == "error" and unknown.id == "u1" and "valid: generate, evaluate, preflight" in unknown.message
    extra = server.ask({"id": "x1", "op": "evaluate", "predictions": ["a"], "references": ["a"], "bogus": 1})
    assert extra.event == "error" and "unknown field" in extra.message
    fine = server.ask({"id": "ok", "op": "generate", "model": tiny_model, "conversations": PROMPTS[:1], "max_new_tokens": 2})
    assert fine.event == "generated" and fine.id == "ok"


def test_preflight_answers_the_report_the_preflight_command_writes_and_refuses_what_train_refuses(server, tiny_model,
                                                                                               tmp_path):
    from ftcore.specs import from_dict
    from ftcore.train.preflight.command import report
    from ftcore.train.setup import load_processing_class
    from ftcore.train.spec import Options as TrainOptions
    from ftcore.train.validate import validate

    spec = {"base_model": tiny_model, "train_file": write_jsonl(tmp_path / "train.jsonl", [conversation(q, a) for q, a in QA]),
            "output_dir": str(tmp_path / "run"), "method": "LoRA", "device": "cpu",
            "hyperparameters": {"max_length": 24, "batch_size": 2, "gradient_accumulation_steps": 1, "epochs": 1}}
    answer = server.ask({"id": "f1", "op": "preflight", "spec": spec})
    assert (answer.event, answer.id) == ("preflight", "f1")
    options = from_dict(TrainOptions, spec)
    train, test, mode = validate(options)
    assert answer.report == json.loads(json.dumps(report(options, train, test, mode, load_processing_class(options))))
    assert answer.report["throughput"] is None  # the warm core never trains
    too_long = server.ask({"id": "f2", "op": "preflight", "spec": {**spec, "hyperparameters": {"max_length": 100000}}})
    assert (too_long.event, too_long.code, too_long.id) == ("error", "validation", "f2")
    assert "max_length 100000" in too_long.message


def test_preflight_of_dpo_from_a_model_that_does_not_end_its_turn_warns_with_the_fixes(server, tiny_model, tmp_path):
    from test_preference import preference_records

    spec = {"base_model": tiny_model, "train_file": write_jsonl(tmp_path / "pairs.jsonl", preference_records()),
            "output_dir": str(tmp_path / "run"), "method": "LoRA", "device": "cpu", "trainer_type": "dpo",
            "hyperparameters": {"max_length": 96, "max_prompt_length": 48, "batch_size": 2}}
    answer = server.ask({"id": "d1", "op": "preflight", "spec": spec})
    assert [w["code"] for w in answer.report["warnings"]].count("dpo_no_end_of_turn") == 1
    with_rpo = server.ask({"id": "d2", "op": "preflight",
                           "spec": {**spec, "hyperparameters": {**spec["hyperparameters"], "rpo_alpha": 1.0}}})
    assert "dpo_no_end_of_turn" not in [w["code"] for w in with_rpo.report["warnings"]]


def test_preflight_of_grpo_scores_answers_of_the_base_model_and_warns_when_each_prompts_score_alike(server, tiny_model,
                                                                                                    tmp_path):
    """#39: an all-or-nothing grader the base model never passes gives GRPO nothing to learn from; the dry run samples
    a few answers, scores them with the job's graders and says so before anything is spent. A grader with partial
    credit scores them apart: no warning."""
    records = [{"prompt": [{"role": "user", "content": q}], "answer": a} for q, a in QA]
    spec = {"base_model": tiny_model, "train_file": write_jsonl(tmp_path / "prompts.jsonl", records),
            "output_dir": str(tmp_path / "run"), "method": "LoRA", "device": "cpu", "trainer_type": "grpo",
            "hyperparameters": {"max_length": 64, "max_prompt_length": 32, "max_completion_length": 8,
                                "num_generations": 4, "batch_size": 4},
            "reward_config": [{"type": "built_in", "function_name": "format_reward"}]}
    answer = server.ask({"id": "r1", "op": "preflight", "spec": spec})
    (warning,) = [w for w in answer.report["warnings"] if w["code"] == "equal_rewards"]
    assert warning["message"].startswith(f"the 4 answers {tiny_model} sampled to each of the first 2 train prompts all "
                                         "got the same reward")
    assert "learns nothing (reward 0)" in warning["message"] and "partial credit" in warning["message"]
    fuzzy = {"type": "text_similarity", "reference_field": "answer", "evaluation_metric": "fuzzy_match"}
    partial = server.ask({"id": "r2", "op": "preflight", "spec": {**spec, "reward_config": [fuzzy]}})
    assert "equal_rewards" not in [w["code"] for w in partial.report["warnings"]]


@pytest.mark.sandbox
def test_grade_answers_each_output_with_its_reward_and_why_a_zero_is_a_zero(server):
    grader = {"type": "multi", "name": "m", "calculate_output": "exact + 0 * boom", "graders": {
        "exact": {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                  "reference": "{{item.answer}}", "operation": "eq"},
        "boom": {"type": "python", "name": "boom",
                 "source": "def grade(sample, item):\n    if item['answer'] == 'Rome':\n        raise KeyError('no')\n    return 1\n"}}}
    graded = server.ask({"id": "g1", "op": "grade", "grader": grader, "outputs": ["Paris", "Paris"],
                         "items": [{"answer": "Paris"}, {"answer": "Rome"}]})
    assert (graded.event, graded.id, graded.rewards) == ("graded", "g1", [1.0, 0.0])
    assert graded.sub_rewards == [{"exact": 1.0, "boom": 1.0}, {"exact": 0.0, "boom": 0.0}]
    assert graded.errors[0] is None and graded.errors[1] == "line 3: KeyError: 'no'"
    assert graded.error_kinds == [None, "python_grader_runtime_error"]
    refused = server.ask({"id": "g2", "op": "grade", "grader": {"type": "python", "name": "p", "source": "def grade(:"},
                          "outputs": [], "items": []})
    assert (refused.event, refused.code, refused.id, refused.field) == ("error", "validation", "g2", "grader.source")
    assert refused.message.startswith("grader.source: line 1")


def test_pipelined_requests_are_answered_in_order_and_cancel_drops_one(server, tiny_model):
    request = {"op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 400}
    server.send({**request, "id": "c1"}, {"op": "cancel", "id": "c1"}, {**request, "id": "c2", "max_new_tokens": 3})
    cancelled, answered = server.next_event(), server.next_event()
    assert (cancelled.event, cancelled.code, cancelled.id) == ("error", "cancelled", "c1")
    assert (answered.event, answered.id) == ("generated", "c2")
    assert all(len(ids) <= 3 for ids in answered.token_ids)


def test_a_cancelled_generation_says_how_many_tokens_it_had_generated(tiny_model):
    # What serve's cancelled error reports (generated_tokens): the worker counts what a client that went away cost.
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from ftcore.errors import Cancelled
    from ftcore.inference.generate import generate_answers

    model, tokenizer = AutoModelForCausalLM.from_pretrained(tiny_model), AutoTokenizer.from_pretrained(tiny_model)
    polls = []

    def cancel_at_the_sixth_poll() -> bool:  # polled once a token (and once after the batch)
        polls.append(1)
        return len(polls) >= 6

    with pytest.raises(Cancelled) as cancelled:
        generate_answers(model, tokenizer, PROMPTS, max_new_tokens=400, batch_size=len(PROMPTS),
                         should_stop=cancel_at_the_sixth_poll)
    assert len(PROMPTS) <= cancelled.value.generated_tokens <= len(PROMPTS) * 6


def test_evaluate_gives_the_metrics_functions_scores_and_keeps_the_encoder_loaded(server):
    predictions, references = ["The Eiffel Tower!", "in Paris, France", "London"], ["eiffel tower", "Paris", "Paris"]
    qa = server.ask({"id": "e1", "op": "evaluate", "predictions": predictions, "references": references, "task_type": "qa"})
    assert qa.event == "scored" and qa.id == "e1" and qa.warnings == [] and qa.metrics == ["exact_match", "f1"]
    assert qa.scores == pytest.approx({"exact_match": 1 / 3, "f1": 0.5})  # the hand-computed values of test_metrics
    listed = {"id": "e2", "op": "evaluate", "predictions": predictions, "references": references,
              "metrics": ["bertscore", "rouge"]}
    first = server.ask(listed)
    assert first.event == "scored" and first.warnings == []
    assert set(first.scores) == {"bertscore_precision", "bertscore_recall", "bertscore_f1", "rouge1", "rouge2", "rougeL"}
    assert first.scores["rouge1"] == pytest.approx(metrics.rouge(predictions, references)["rouge1"])
    assert first.notes[0]["metric"] == "bertscore" and "all-MiniLM-L6-v2" in first.notes[0]["note"]
    second = server.ask({**listed, "id": "e3"})
    assert second.scores == pytest.approx(first.scores)
    assert second.elapsed_seconds < first.elapsed_seconds  # the encoder was loaded once
    both = server.ask({"id": "e4", "op": "evaluate", "predictions": ["a"], "references": ["a"], "metrics": ["bleu"],
                       "task_type": "qa"})
    assert both.event == "error" and both.code == "validation" and "either metrics or task_type" in both.message


@pytest.mark.slow
def test_a_metric_that_fails_is_a_warning_not_a_zero(tmp_path):
    process = ServeProcess("--bertscore_encoder", str(tmp_path / "no-encoder"))
    try:
        scored = process.ask({"id": "w", "op": "evaluate", "predictions": ["a b"], "references": ["a b"],
                              "metrics": ["bertscore", "exact_match"]})
        assert scored.scores == {"exact_match": 1.0}
        assert scored.warnings[0]["metric"] == "bertscore" and "no config.json" in scored.warnings[0]["error"]
    finally:
        assert process.close() == 0


@pytest.mark.slow
def test_stdin_closing_ends_the_server_cleanly(tiny_model):
    process = ServeProcess()
    process.send({"id": "g", "op": "generate", "model": tiny_model, "conversations": PROMPTS, "max_new_tokens": 400})
    started = time.monotonic()
    assert process.close() == 0  # the running generation is cancelled, not finished
    assert time.monotonic() - started < 30
    kinds = [events.parse_event_line(line).event for line in process.tail.splitlines()]
    assert kinds[-1] == "done"


def test_model_cache_unloads_the_least_recently_used_above_the_budget(tiny_model, adapter):
    roomy = ModelCache(2**30, "cpu")
    base, _, loaded = roomy.get(tiny_model, None)
    one_model = roomy.total_bytes
    assert loaded > 0 and roomy.get(tiny_model, None)[0] is base and roomy.get(tiny_model, None)[2] == 0
    roomy.get(tiny_model, adapter)
    assert [key[2] for key in roomy.entries] == [None, adapter]

    tight = ModelCache(int(one_model * 1.5), "cpu")  # room for one
    tight.get(tiny_model, None)
    tight.get(tiny_model, adapter)
    assert [key[2] for key in tight.entries] == [adapter]
    assert tight.get(tiny_model, None)[2] > 0  # evicted, so loaded again

    none = ModelCache(1, "cpu")  # nothing fits: kept while in use, unloaded after
    none.get(tiny_model, None)
    assert len(none.entries) == 1
    none.release_oversized()
    assert len(none.entries) == 0
