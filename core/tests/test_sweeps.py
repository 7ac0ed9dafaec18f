"""`ftcore sweep` (#63): one step of a sweep's search on an Optuna study kept in storage. The same seed and history
propose the same trials whichever process asks; a grid ends; the median pruner stops a trial behind the others at the
same step; the study survives its process (every call opens it anew), in a journal file or a database named by
FTCORE_SWEEP_STORAGE."""
import json
import subprocess
import sys

import pytest

from ftcore.errors import SpecError
from ftcore.sweeps.study import STORAGE_ENV, Options, run

SPACE = {"learning_rate": {"type": "float", "low": 1e-5, "high": 1e-2, "log": True},
         "num_epochs": {"type": "int", "low": 1, "high": 4},
         "lora_rank": {"type": "choice", "choices": [8, 16, 32]}}


def step(tmp_path, study="sweep_1", journal="study.log", **options) -> dict:
    out = tmp_path / "answer.json"
    run(Options(study=study, output_file=str(out), journal_file=str(tmp_path / journal) if journal else None,
                space=options.pop("space", SPACE), **options))
    return json.loads(out.read_text())


def test_the_same_seed_proposes_the_same_trials_and_another_seed_others(tmp_path):
    def proposals(journal, seed, sampler):
        return [step(tmp_path, journal=journal, op="ask", seed=seed, sampler=sampler)["params"] for _ in range(3)]

    for sampler in ("tpe", "random"):
        first = proposals(f"{sampler}-a.log", 7, sampler)
        assert proposals(f"{sampler}-b.log", 7, sampler) == first
        assert proposals(f"{sampler}-c.log", 8, sampler) != first
        assert len({json.dumps(p, sort_keys=True) for p in first}) == 3, "each ask proposes another trial"
        for params in first:
            assert 1e-5 <= params["learning_rate"] <= 1e-2 and params["num_epochs"] in range(1, 5)
            assert params["lora_rank"] in (8, 16, 32)


def test_a_grid_proposes_each_point_once_then_none(tmp_path):
    space = {"num_epochs": {"type": "int", "low": 1, "high": 2}, "lora_rank": {"type": "choice", "choices": [8, 16]}}
    asked = [step(tmp_path, op="ask", sampler="grid", space=space) for _ in range(5)]
    points = {(a["params"]["num_epochs"], a["params"]["lora_rank"]) for a in asked[:4]}
    assert points == {(1, 8), (1, 16), (2, 8), (2, 16)}
    assert asked[4] == {"trial": None, "params": None}
    with pytest.raises(SpecError, match="space.learning_rate: a grid needs choices"):
        step(tmp_path, journal="other.log", op="ask", sampler="grid")


def test_the_median_pruner_stops_a_trial_behind_the_completed_ones_at_the_same_step(tmp_path):
    settings = dict(pruner="median", startup_trials=2)
    for trial, losses in ((0, [1.0, 0.8]), (1, [1.2, 0.9])):
        assert step(tmp_path, op="ask", **settings)["trial"] == trial
        for at, loss in enumerate(losses, start=1):
            assert step(tmp_path, op="report", trial=trial, step=at, value=loss, **settings) == {"prune": False}
        step(tmp_path, op="tell", trial=trial, value=losses[-1], **settings)
    step(tmp_path, op="ask", **settings)
    step(tmp_path, op="ask", **settings)
    assert step(tmp_path, op="report", trial=2, step=1, value=3.0, **settings) == {"prune": True}  # median 1.1
    assert step(tmp_path, op="report", trial=3, step=1, value=0.5, **settings) == {"prune": False}
    told = step(tmp_path, op="tell", trial=2, state="pruned", **settings)
    assert [(t["trial"], t["state"]) for t in told["trials"]] == [(0, "complete"), (1, "complete"), (2, "pruned"),
                                                                  (3, "running")]
    assert told["trials"][2]["steps"] == {"1": 3.0}
    assert told["best"]["trial"] == 0 and told["best"]["value"] == 0.8
    maximised = step(tmp_path, op="trials", direction="maximize", **settings)
    assert maximised["best"]["trial"] == 1


def test_refusals_name_what_to_change(tmp_path):
    with pytest.raises(SpecError, match="space.learning_rate: a float range needs low ≤ high and low > 0 on a log"):
        step(tmp_path, op="ask", space={"learning_rate": {"type": "float", "low": 0, "high": 1, "log": True}})
    with pytest.raises(SpecError, match="type must be float, int or choice"):
        step(tmp_path, op="ask", space={"x": {"type": "uniform"}})
    with pytest.raises(SpecError, match="has no trial 5"):
        step(tmp_path, op="tell", trial=5, value=1.0)
    with pytest.raises(SpecError, match="needs a finite value"):
        step(tmp_path, op="ask") and step(tmp_path, op="tell", trial=0, value=float("nan"))
    with pytest.raises(SpecError, match=f"no journal_file and no {STORAGE_ENV}"):
        step(tmp_path, journal=None, op="ask")


@pytest.mark.slow
def test_the_command_keeps_the_study_in_the_database_the_environment_names(tmp_path):
    """What a worker runs: `python -m ftcore sweep --spec …` with the storage URL in the environment, not the spec;
    each call a process of its own, the study carried from one to the next."""
    def call(**spec):
        out = tmp_path / "answer.json"
        (tmp_path / "spec.json").write_text(json.dumps({"study": "sweep_db", "output_file": str(out), "space": SPACE,
                                                        "seed": 3, **spec}))
        done = subprocess.run([sys.executable, "-m", "ftcore", "sweep", "--spec", str(tmp_path / "spec.json")],
                              capture_output=True, text=True, env={STORAGE_ENV: f"sqlite:///{tmp_path / 'optuna.db'}",
                                                                   "PATH": "/usr/bin:/bin"})
        assert done.returncode == 0, done.stdout + done.stderr
        assert '"event": "artifact"' in done.stdout
        return json.loads(out.read_text())

    first = call(op="ask")
    call(op="tell", trial=first["trial"], value=0.5)
    assert call(op="ask")["trial"] == 1
    assert call(op="trials")["best"] == {"trial": 0, "state": "complete", "params": first["params"], "value": 0.5,
                                         "steps": {}}
    assert step(tmp_path, journal="fresh.log", op="ask", seed=3)["params"] == first["params"]


def test_delete_removes_the_study_and_a_later_ask_starts_a_new_one(tmp_path):
    first = step(tmp_path, op="ask", seed=3)
    step(tmp_path, op="tell", trial=first["trial"], value=0.5)
    assert step(tmp_path, op="delete") == {"deleted": True}
    assert not (tmp_path / "study.log").exists()
    assert step(tmp_path, op="delete") == {"deleted": False}
    assert step(tmp_path, op="ask", seed=3) == first
