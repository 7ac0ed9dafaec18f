"""Tool conversations with the families' published templates (Qwen2.5's, Llama 3's): rendered with the tools, the
loss on the assistant's calls and answers but never on the tool results, a template without tool support refused
before anything loads, and the pre-flight report showing the trained spans."""
import json
import shutil

import pytest
from helpers import WEATHER_TOOL, captured_events, weather_conversation, write_jsonl
from test_preflight import make_report, spec_for

from ftcore.chat import render, supports_tools, trained_token_mask
from ftcore.errors import SpecError
from ftcore.train.validate import validate

CALLS = {"qwen2.5": '<tool_call>\n{"name": "get_weather", "arguments": {"city": "Paris"}}\n</tool_call><|im_end|>',
         "llama3": '{"name": "get_weather", "parameters": {"city": "Paris"}}<|eot_id|>'}
ENDS = {"qwen2.5": "<|im_end|>", "llama3": "<|eot_id|>"}


def tokenizer_of(folder: str):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(folder)


def trained_runs(tokenizer, ids: list[int], mask: list[int]) -> list[str]:
    runs, current = [], []
    for token, on in zip([*ids, None], [*mask, 0]):
        if on:
            current.append(token)
        elif current:
            runs.append(tokenizer.decode(current))
            current = []
    return runs


@pytest.mark.parametrize("family", ["qwen2.5", "llama3"])
def test_the_published_template_writes_the_tools_and_the_calls(tool_model_of, family):
    from helpers import TOOL_FAMILIES

    tokenizer = tokenizer_of(tool_model_of(family))
    assert tokenizer.chat_template == open(TOOL_FAMILIES[family]["chat_template_file"]).read()
    assert tokenizer.eos_token == ENDS[family] and supports_tools(tokenizer)
    record = weather_conversation("Paris", "sunny")
    text = render(tokenizer, record["messages"], record["tools"])
    assert '"description": "The weather in a city"' in text  # the definition
    assert CALLS[family] in text
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    assert tokenizer.decode(ids) == text and ids.count(tokenizer.eos_token_id) >= 4


@pytest.mark.parametrize("family", ["qwen2.5", "llama3"])
def test_the_loss_covers_the_call_and_the_answer_not_the_tool_result(tool_model_of, family):
    tokenizer = tokenizer_of(tool_model_of(family))
    record = weather_conversation("Paris", "sunny")
    ids, mask = trained_token_mask(tokenizer, record["messages"], tools=record["tools"])
    assert trained_runs(tokenizer, ids, mask) == [CALLS[family], f"It is sunny in Paris.{ENDS[family]}"]
    record["messages"][1]["weight"] = 0  # OpenAI's weight 0: the call stays in the context, untrained
    ids, mask = trained_token_mask(tokenizer, record["messages"], tools=record["tools"])
    assert trained_runs(tokenizer, ids, mask) == [f"It is sunny in Paris.{ENDS[family]}"]


def test_a_template_without_markers_is_masked_as_its_generation_blocks_would(tiny_model, tmp_path):
    """The ChatML template with and without {% generation %} blocks: the turns found by rendering prefixes are the
    ones the blocks mark."""
    tokenizer = tokenizer_of(tiny_model)
    plain = tokenizer.chat_template.replace("{%- generation %}", "").replace("{%- endgeneration %}", "")
    messages = [{"role": "user", "content": "Hi."}, {"role": "assistant", "content": "Hello!"},
                {"role": "user", "content": "Bye."}, {"role": "assistant", "content": "Bye!", "weight": 1}]
    assert trained_token_mask(tokenizer, messages, chat_template=plain) == trained_token_mask(tokenizer, messages)


@pytest.mark.parametrize("architecture", ["llama", "gemma3"])
def test_tools_on_a_template_without_tool_support_are_refused_naming_the_model(tiny_model_of, tmp_path,
                                                                              architecture):
    model = tiny_model_of(architecture)
    assert not supports_tools(tokenizer_of(model))
    train = write_jsonl(tmp_path / "train.jsonl", [weather_conversation("Paris", "sunny")] * 4)
    with pytest.raises(SpecError, match=f"the chat template of {model} has no tool support .*train_file record 1 "
                                        "and 3 more use tools"):
        validate(spec_for(model, train, tmp_path / "run"))


def test_arguments_that_are_not_json_are_refused_with_the_record(tool_model_of, tmp_path):
    bad = weather_conversation("Rome", "rainy")
    bad["messages"][1]["tool_calls"][0]["function"]["arguments"] = "{city: Rome"
    train = write_jsonl(tmp_path / "train.jsonl", [weather_conversation("Paris", "sunny"), bad])
    with pytest.raises(SpecError, match="train_file record 2 message 2: a tool call's arguments are not JSON"):
        validate(spec_for(tool_model_of("qwen2.5"), train, tmp_path / "run"))


def test_the_preflight_report_marks_the_trained_spans_of_a_tool_conversation(tool_model_of, tmp_path):
    records = [weather_conversation(city, "sunny") for city in ("Paris", "Rome", "Oslo", "Lima")]
    train = write_jsonl(tmp_path / "train.jsonl", records)
    report = make_report(spec_for(tool_model_of("qwen2.5"), train, tmp_path / "run", max_length=1024))
    segments = report["samples"][0]["segments"]
    assert "".join(s["text"] for s in segments if s["trained"]) == CALLS["qwen2.5"] + "It is sunny in Paris.<|im_end|>"
    assert any("<tool_response>\nsunny\n</tool_response>" in s["text"] for s in segments if not s["trained"])
    assert report["truncated"]["examples"] == 0


@pytest.mark.slow
def test_training_on_tool_conversations_learns_the_call(tool_model_of, tmp_path):
    """A short real run on the Qwen2.5-format model: the loss falls and, asked again, the model writes a call in the
    family's own format (<tool_call> … </tool_call>) to the tool, with a city (which one, a model this small need not
    get right; the /v1 test checks that with a larger one)."""
    from helpers import sft_spec

    from ftcore.models.loading import load_for_inference
    from ftcore.train.run import run

    model = tool_model_of("qwen2.5")
    records = [weather_conversation(city, weather) for city, weather in
               [("Paris", "sunny"), ("Rome", "rainy"), ("Oslo", "snowy"), ("Lima", "cloudy")]]
    train = write_jsonl(tmp_path / "train.jsonl", records * 4)
    spec = sft_spec(model, train, None, tmp_path / "run", max_length=1024, max_steps=60)
    with captured_events() as cap:
        run(spec)
    progress = cap.of("progress")
    assert progress[-1].loss < progress[0].loss * 0.5
    trained, tokenizer = load_for_inference(model, str(tmp_path / "run" / "adapter"), device="cpu")
    prompt = render(tokenizer, records[1]["messages"][:1], records[1]["tools"], add_generation_prompt=True)
    ids = tokenizer(prompt, return_tensors="pt", add_special_tokens=False)["input_ids"]
    out = trained.generate(ids, max_new_tokens=40, do_sample=False)[0, ids.shape[1]:]
    text = tokenizer.decode(out, skip_special_tokens=True)
    assert text.startswith("<tool_call>\n") and text.endswith("\n</tool_call>"), text
    call = json.loads(text.removeprefix("<tool_call>\n").removesuffix("\n</tool_call>"))
    assert call["name"] == "get_weather" and call["arguments"]["city"] in ("Paris", "Rome", "Oslo", "Lima")
