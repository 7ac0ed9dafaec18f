"""OpenAI's graders in the core: templates, string_check and text_similarity over them, multi's formula (parsed, never
run as code), the python grader in its sandbox (each limit tried), and GRPO rewarded by graders."""
import os
import socket

import pytest
from helpers import captured_events

from ftcore.evaluation import sandbox
from ftcore.errors import SpecError
from ftcore.evaluation.graders import Formula, check_grader, grade_batch, make_sample, render_template, variables

ITEM = {"answer": "Paris", "meta": {"country": "France"}, "n": 3}


def test_templates_read_the_item_and_the_sample():
    sample = make_sample('{"city": "Paris", "rank": 1}')
    assert render_template("{{ item.answer }} in {{item.meta.country}} ({{item.n}})", sample, ITEM) == "Paris in France (3)"
    assert render_template("{{sample.output_json.city}}/{{sample.output_json.rank}}", sample, ITEM) == "Paris/1"
    assert make_sample("not json")["output_json"] is None


@pytest.mark.parametrize("operation,output,expected", [("eq", "Paris", 1.0), ("eq", "paris", 0.0), ("ne", "Rome", 1.0),
                                                       ("like", "It is Paris.", 1.0), ("ilike", "it is PARIS", 1.0)])
def test_string_check_compares_the_rendered_templates(operation, output, expected):
    grader = {"type": "string_check", "name": "s", "input": "{{sample.output_text}}", "reference": "{{item.answer}}",
              "operation": operation}
    check_grader(grader)
    assert grade_batch(grader, [make_sample(output)], [ITEM])[0].reward == expected


def test_a_variable_the_item_lacks_scores_zero_and_says_so():
    grader = {"type": "string_check", "name": "s", "input": "{{sample.output_text}}", "reference": "{{item.city}}",
              "operation": "eq"}
    (graded,) = grade_batch(grader, [make_sample("Paris")], [ITEM])
    assert (graded.reward, graded.error_kind) == (0.0, "invalid_variable_error")
    assert "item has no 'city'" in graded.error


def test_text_similarity_reads_json_answers():
    grader = {"type": "text_similarity", "name": "t", "input": "{{sample.output_json.city}}",
              "reference": "{{item.answer}}", "evaluation_metric": "fuzzy_match"}
    graded = grade_batch(grader, [make_sample('{"city": "Paris"}'), make_sample('{"city": "Pari"}')], [ITEM, ITEM])
    assert graded[0].reward == 1.0 and 0.8 < graded[1].reward < 1.0


def test_multi_combines_its_graders_by_the_formula():
    grader = {"type": "multi", "name": "m", "calculate_output": "0.5 * exact + 0.5 * max(close, 0.2) - abs(-0)",
              "graders": {
                  "exact": {"type": "string_check", "name": "exact", "input": "{{sample.output_text}}",
                            "reference": "{{item.answer}}", "operation": "eq"},
                  "close": {"type": "text_similarity", "name": "close", "input": "{{sample.output_text}}",
                            "reference": "{{item.answer}}", "evaluation_metric": "fuzzy_match"}}}
    check_grader(grader)
    assert variables(grader) == ["answer"]
    exact, wrong = grade_batch(grader, [make_sample("Paris"), make_sample("xyz")], [ITEM, ITEM])
    assert exact.reward == 1.0 and exact.sub_rewards == {"exact": 1.0, "close": 1.0}
    assert wrong.reward == pytest.approx(0.1)


@pytest.mark.parametrize("formula,message", [
    ("__import__('os').system('true')", "is not allowed"), ("a.real", "is not allowed"), ("a + b", "'b' names no grader"),
    ("a ** 2", "is not allowed"), ("[a][0]", "is not allowed"), ("a +", "is not a formula"), ("", "must be a formula"),
])
def test_a_formula_is_arithmetic_over_grader_names_only(formula, message):
    with pytest.raises(SpecError, match=message):
        Formula(formula, {"a"}, "calculate_output")


@pytest.mark.parametrize("grader,message", [
    ({"type": "exec"}, "type is 'exec'"),
    ({"type": "string_check", "input": "{{sample.output_text}}", "reference": "x", "operation": "is"}, "operation is 'is'"),
    ({"type": "string_check", "input": "{{ os.environ }}", "reference": "x", "operation": "eq"}, "is not a variable"),
    ({"type": "text_similarity", "input": "a", "reference": "b", "evaluation_metric": "bleurt"}, "evaluation_metric"),
    ({"type": "python", "source": "def grade(sample, item)\n  return 1"}, "line 1"),
    ({"type": "multi", "calculate_output": "a", "graders": {"a": {"type": "multi"}}}, "cannot be multi"),
])
def test_check_grader_names_what_cannot_run(grader, message):
    with pytest.raises(SpecError, match=message):
        check_grader(grader)



@pytest.mark.parametrize("grader,field", [
    ({"type": "exec"}, "grader.type"),
    ({"type": "python", "source": "def grade(sample, item)\n  return 1"}, "grader.source"),
    ({"type": "score_model", "model": "m", "input": [{"role": "user", "content": "{{ os }}"}]}, "grader.input[0].content"),
    ({"type": "multi", "calculate_output": "a +", "graders": {"a": {"type": "python", "source": "x = ("}}}, "grader.graders.a.source"),
    ({"type": "multi", "calculate_output": "a + b", "graders": {"a": {"type": "string_check", "input": "x", "reference": "y", "operation": "eq"}}}, "grader.calculate_output"),
])
def test_a_refused_grader_names_its_field_apart_from_the_words(grader, field):
    """The field at fault travels as `field` on the error event (#58): callers name it from there, not from the text."""
    with pytest.raises(SpecError) as refused:
        check_grader(grader)
    assert refused.value.field == field

def python_grader(body: str) -> dict:
    return {"type": "python", "name": "p", "source": "import os, socket\n\ndef grade(sample, item):\n" + body}


@pytest.mark.sandbox
def test_a_python_grader_scores_and_a_sample_that_raises_scores_zero_with_its_line(monkeypatch):
    grader = python_grader("    if item['n'] < 0:\n        raise ValueError('negative')\n"
                           "    return float(sample['output_text'] == item['answer'])\n")
    graded = grade_batch(grader, [make_sample("Paris"), make_sample("Paris"), make_sample("Rome")],
                         [ITEM, {**ITEM, "n": -1}, ITEM])
    assert [g.reward for g in graded] == [1.0, 0.0, 0.0]
    assert graded[1].error == "line 5: ValueError: negative" and graded[1].error_kind == "python_grader_runtime_error"
    assert graded[2].error is None


@pytest.mark.sandbox
def test_a_python_grader_sees_no_data_folder_no_network_and_no_environment(tmp_path, monkeypatch):
    data = tmp_path / "data"
    data.mkdir()
    (data / "secret.txt").write_text("s3cr3t")
    monkeypatch.setenv("SECRETS_KEY", "a-key-the-grader-must-not-see")
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen()
    port = server.getsockname()[1]
    grader = python_grader(
        "    what = item['try']\n"
        "    if what == 'file':\n        return float(os.path.exists(item['path']))\n"
        "    if what == 'env':\n        return float('SECRETS_KEY' in os.environ or any('a-key' in v for v in os.environ.values()))\n"
        "    socket.create_connection(('127.0.0.1', item['port']), timeout=2)\n    return 1.0\n")
    file, env, net = grade_batch(grader, [make_sample("")] * 3, [
        {"try": "file", "path": str(data / "secret.txt")}, {"try": "env"}, {"try": "net", "port": port}])
    server.close()
    assert os.path.exists(data / "secret.txt")  # there for this process, not for the grader
    assert (file.reward, file.error) == (0.0, None)
    assert (env.reward, env.error) == (0.0, None)
    assert net.reward == 0.0 and "ConnectionRefusedError" in net.error


@pytest.mark.sandbox
def test_a_python_grader_that_loops_or_allocates_too_much_costs_only_its_sample(monkeypatch):
    monkeypatch.setattr(sandbox, "CPU_SECONDS", 1.0)
    grader = python_grader(
        "    import signal\n"
        "    if item['try'] == 'loop':\n        while True:\n            pass\n"
        "    if item['try'] == 'stubborn':\n        signal.signal(signal.SIGPROF, signal.SIG_IGN)\n        while True:\n            pass\n"
        "    if item['try'] == 'allocate':\n        return float(len(bytearray(4 * 1024 ** 3)))\n"
        "    return 1.0\n")
    kinds = ["ok", "loop", "ok", "stubborn", "allocate", "ok"]
    graded = grade_batch(grader, [make_sample("")] * len(kinds), [{"try": k} for k in kinds])
    assert [g.reward for g in graded] == [1.0, 0.0, 1.0, 0.0, 0.0, 1.0]
    assert "used more than 1 s of CPU time" in graded[1].error
    assert "ran past its 1 s limit" in graded[3].error
    assert "MemoryError" in graded[4].error or "memory" in graded[4].error


def test_python_graders_are_refused_where_there_is_no_sandbox(monkeypatch):
    monkeypatch.setattr(sandbox.shutil, "which", lambda name: None)
    sandbox.unavailable.cache_clear()
    try:
        with pytest.raises(SpecError, match="need bubblewrap"):
            sandbox.run_python_grader("def grade(s, i):\n    return 1.0\n", [({}, {})])
    finally:
        sandbox.unavailable.cache_clear()


@pytest.mark.slow
@pytest.mark.sandbox
def test_grpo_runs_on_python_and_multi_graders_and_evaluates_their_rewards(tiny_model, tmp_path):
    from test_grpo import grpo_spec

    from ftcore.train.run import run
    from ftcore.train.spec import RewardItem

    raising = RewardItem(type="python", name="has_e", source=(
        "def grade(sample, item):\n    return float('e' in sample['output_text'])\n"))
    multi = RewardItem(type="multi", name="combined", calculate_output="0.5 * has_e + 0.5 * same", graders={
        "has_e": RewardItem(type="string_check", name="has_e", input="{{sample.output_text}}", reference="e",
                            operation="like"),
        "same": RewardItem(type="string_check", name="same", reference_field="answer", operation="ilike")})
    spec = grpo_spec(tiny_model, tmp_path, raising, steps=2, lr=1e-3)
    spec.reward_config.append(multi)
    spec.test_file = spec.train_file
    spec.eval_config.eval_strategy, spec.eval_config.eval_steps = "steps", 1
    with captured_events() as cap:
        run(spec)
    progress = cap.of("progress")
    assert all("rewards/has_e/mean" in p.extra and "rewards/combined/mean" in p.extra for p in progress)
    # Each evaluation during training reports the rewards on the test split, per grader too.
    evaluations = [m for m in cap.of("metrics") if not m.final]
    assert evaluations and all("eval_reward" in m.extra and "eval_rewards/combined/mean" in m.extra for m in evaluations)



@pytest.fixture
def judge_endpoint():
    """An OpenAI-compatible endpoint standing in for the worker's judge relay (the relay itself is tested with the
    real infer queue, test/openai-rft.test.ts): it scores an answer by what the judge's rendered prompt holds, and
    records each request."""
    import http.server
    import json
    import threading

    seen = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802 - http.server's name
            body = json.loads(self.rfile.read(int(self.headers["content-length"])))
            seen.append({"auth": self.headers.get("authorization"), **body})
            prompt = body["messages"][-1]["content"]
            if "unreachable" in prompt:
                self.send_response(503)
                self.end_headers()
                self.wfile.write(b'{"error": {"message": "no worker"}}')
                return
            result = body["response_format"]["json_schema"]["schema"]["properties"]["result"]
            if "enum" in result:  # a label_model judge: polite when asked please, else rude; a mumble is no label
                content = ("maybe" if "mumble" in prompt
                           else json.dumps({"result": "polite" if "please" in prompt else "rude"}))
            else:
                content = ("7" if "far" in prompt else "no idea" if "vague" in prompt
                           else json.dumps({"result": 0.8 if "Answer: It is Paris" in prompt else 0.1}))
            answer = json.dumps({"choices": [{"message": {"role": "assistant", "content": content}}]}).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/v1", seen
    server.shutdown()


def test_a_score_model_grader_asks_its_judge_and_checks_the_score_against_its_range(judge_endpoint):
    from ftcore.evaluation.graders import Judge

    url, seen = judge_endpoint
    grader = {"type": "score_model", "name": "judge", "model": "ft:tiny:custom:job_1", "range": [0, 1],
              "sampling_params": {"temperature": 0.5, "seed": 3},
              "input": [{"role": "system", "content": "Score the answer."},
                        {"role": "user", "content": "Answer: {{sample.output_text}} (expected {{item.answer}})"}]}
    check_grader(grader)
    assert variables(grader) == ["answer"]
    answers = ["It is Paris.", "Rome", "far", "vague", "unreachable"]
    graded = grade_batch(grader, [make_sample(a) for a in answers], [ITEM] * len(answers), Judge(url, "t0k"))
    assert [g.reward for g in graded] == [0.8, 0.1, 0.0, 0.0, 0.0]
    assert [g.error_kind for g in graded] == [None, None, "model_grader_parse_error", "model_grader_parse_error",
                                              "model_grader_server_error"]
    assert "scored 7.0, outside the range [0, 1]" in graded[2].error and "answered 503" in graded[4].error
    first = next(r for r in seen if "It is Paris." in r["messages"][-1]["content"])
    assert first["auth"] == "Bearer t0k" and first["model"] == "ft:tiny:custom:job_1"
    assert first["messages"] == [{"role": "system", "content": "Score the answer."},
                                 {"role": "user", "content": "Answer: It is Paris. (expected Paris)"}]
    assert (first["temperature"], first["seed"], first["response_format"]["type"]) == (0.5, 3, "json_schema")


def test_a_label_model_grader_rewards_the_passing_labels_its_judge_chooses(judge_endpoint):
    from ftcore.evaluation.graders import Judge

    url, seen = judge_endpoint
    grader = {"type": "label_model", "name": "tone", "model": "tiny", "labels": ["polite", "rude"],
              "passing_labels": ["polite"], "input": [{"role": "user", "content": "Label the tone: {{sample.output_text}}"}]}
    check_grader(grader)
    answers = ["Yes please", "No", "mumble"]
    graded = grade_batch(grader, [make_sample(a) for a in answers], [ITEM] * len(answers), Judge(url, "t0k"))
    assert [g.reward for g in graded] == [1.0, 0.0, 0.0]
    assert graded[2].error_kind == "model_grader_parse_error" and "no label of ['polite', 'rude']" in graded[2].error
    asked = seen[-1]["response_format"]["json_schema"]["schema"]["properties"]["result"]
    assert asked == {"type": "string", "enum": ["polite", "rude"]}
    with pytest.raises(SpecError, match=r"passing_labels must be one or more of labels \(polite, rude\)"):
        check_grader({**grader, "passing_labels": ["kind"]})


def test_a_score_model_grader_without_a_judge_relay_scores_zero_and_says_so():
    grader = {"type": "score_model", "name": "judge", "model": "m", "input": [{"role": "user", "content": "x"}]}
    (graded,) = grade_batch(grader, [make_sample("a")], [{}])
    assert graded.reward == 0.0 and "judge relay" in graded.error


@pytest.mark.slow
def test_grpo_runs_on_a_score_model_reward_asking_the_judge_the_worker_names(tiny_model, tmp_path, judge_endpoint,
                                                                             monkeypatch):
    """Training asks the judge the worker's relay serves (FTCORE_JUDGE_URL and its token in the environment)."""
    from test_grpo import grpo_spec

    from ftcore.train.run import run
    from ftcore.train.spec import RewardItem

    url, seen = judge_endpoint
    monkeypatch.setenv("FTCORE_JUDGE_URL", url)
    monkeypatch.setenv("FTCORE_JUDGE_TOKEN", "job-token")
    judge = RewardItem(type="score_model", name="judge", model="tiny", prompt="Answer: {completion} for {answer}")
    with captured_events() as cap:
        run(grpo_spec(tiny_model, tmp_path, judge, steps=2, lr=1e-3))
    assert all("rewards/judge/mean" in p.extra for p in cap.of("progress"))
    assert seen and all(r["auth"] == "Bearer job-token" and r["model"] == "tiny" for r in seen)
    assert seen[0]["messages"][0]["content"].endswith(" for e")  # {answer} → {{item.answer}}, the row's
    # A native label_model reward the same way: its labels reach the judge, and a label the judge gives is graded.
    seen.clear()
    (tmp_path / "label").mkdir()
    tone = RewardItem(type="label_model", name="tone", model="tiny", prompt="Tone of {completion}?",
                      labels=["polite", "rude"], passing_labels=["polite"])
    with captured_events() as cap:
        run(grpo_spec(tiny_model, tmp_path / "label", tone, steps=1, lr=1e-3))
    assert all("rewards/tone/mean" in p.extra for p in cap.of("progress"))
    assert not [e for e in cap.of("log") if "could not be graded" in e.message]
    assert seen and seen[0]["response_format"]["json_schema"]["schema"]["properties"]["result"]["enum"] == ["polite", "rude"]


@pytest.mark.slow
def test_grpo_samples_completions_that_follow_a_response_schema_and_graders_read_them_as_json(tiny_model, tmp_path):
    """OpenAI's RFT response_format: every sampled answer is JSON of the schema (constrained decoding), so a grader
    reads {{sample.output_json.<field>}}; rewarding one of the allowed values makes it the rule."""
    from test_grpo import grpo_spec

    from ftcore.train.run import run
    from ftcore.train.spec import RewardItem

    pick = RewardItem(type="string_check", name="pick", input="{{sample.output_json.answer}}",
                      reference="{{item.answer}}", operation="eq")
    spec = grpo_spec(tiny_model, tmp_path, pick, steps=12, lr=1e-2)
    # A free string too: the tiny model's byte tokens (a part of a character each) and control characters must stay
    # out of it for every answer to parse.
    spec.response_schema = {"type": "object", "properties": {"answer": {"type": "string", "enum": ["e", "x"]},
                                                             "why": {"type": "string", "maxLength": 6}},
                            "required": ["answer", "why"], "additionalProperties": False}
    spec.hyperparameters.max_completion_length = 32
    with captured_events() as cap:
        run(spec)
    rewards = [p.extra["rewards/pick/mean"] for p in cap.of("progress")]
    # Every answer was JSON with an allowed value (an unparsable one would score 0 every time, never near 1) …
    assert not [e for e in cap.of("log") if "could not be graded" in e.message]
    # … and "e" became the rule.
    assert sum(rewards[-3:]) / 3 >= 0.8, rewards
