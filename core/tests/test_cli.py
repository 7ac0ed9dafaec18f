"""The command line is generated from each command's options dataclass; stdout carries only events."""
import dataclasses
import json

import pytest

from ftcore import cli, specs
from ftcore.errors import SpecError
from ftcore.train.spec import Options as TrainOptions

from helpers import run_cli, stdout_events


def _all_fields(cls, prefix=""):
    for f in dataclasses.fields(cls):
        hint = cls.__dataclass_fields__[f.name].type
        yield prefix + f.name, f
        nested = getattr(cls, "__annotations__", {}).get(f.name)
        if f.default_factory is not dataclasses.MISSING and dataclasses.is_dataclass(f.default_factory):
            yield from _all_fields(f.default_factory, prefix + f.name + ".")


@pytest.mark.parametrize("command", sorted(cli.COMMANDS))
def test_every_option_has_help_and_a_flag(command):
    import importlib

    options = importlib.import_module(cli.COMMANDS[command]).Options
    parser = cli.build_parser(command)
    help_text = parser._subparsers._group_actions[0].choices[command].format_help()
    for name, f in _all_fields(options):
        assert f.metadata.get("help"), f"{command}: option {name} has no help"
        if not dataclasses.is_dataclass(f.default_factory if f.default_factory is not dataclasses.MISSING else None):
            assert f"--{name}" in help_text


def test_spec_file_fills_the_dataclass_and_flags_override_it(tmp_path):
    spec = {"base_model": "m", "train_file": "t.jsonl", "output_dir": "o", "method": "LoRA",
            "hyperparameters": {"learning_rate": 0.001, "batch_size": 3}}
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(spec))
    command, options = cli.parse_options(["train", "--spec", str(path), "--hyperparameters.batch_size", "5",
                                          "--trainer_type", "dpo"])
    assert command == "train" and isinstance(options, TrainOptions)
    assert options.hyperparameters.learning_rate == 0.001
    assert options.hyperparameters.batch_size == 5
    assert options.trainer_type == "dpo" and options.method == "LoRA"


def test_unknown_and_badly_valued_spec_fields_fail_with_the_allowed_values():
    with pytest.raises(SpecError, match="unknown field"):
        specs.from_dict(TrainOptions, {"base_model": "m", "train_file": "t", "output_dir": "o", "hub_token": "x"})
    with pytest.raises(SpecError, match="allowed: LoRA, QLoRA, Full"):
        specs.from_dict(TrainOptions, {"base_model": "m", "train_file": "t", "output_dir": "o", "method": "lora"})


@pytest.mark.slow
def test_qlora_on_cpu_fails_validation_with_one_error_event_and_nonzero_exit(tmp_path, tiny_model, sft_files):
    train, _ = sft_files
    result = run_cli(["train", "--base_model", tiny_model, "--train_file", train, "--output_dir", str(tmp_path / "o"),
                      "--method", "QLoRA", "--device", "cpu"])
    assert result.returncode == 2
    (event,) = [e for e in stdout_events(result.stdout) if e.event != "log"]  # the stages it said beside
    assert event.event == "error" and event.code == "validation"
    assert event.message == "QLoRA needs a CUDA GPU; use LoRA"


def test_every_reward_field_the_api_takes_is_one_the_core_holds():
    """The worker hands a job's reward_config to the core whole (services/worker/src/training/core-spec.ts): every
    field of each RewardConfig kind in the training API's document must be a RewardItem field, or the core would
    refuse the spec of a job the API accepted."""
    import pathlib

    from ftcore.train.spec import RewardItem

    document = json.loads((pathlib.Path(__file__).parents[2] / "openapi" / "training.json").read_text())
    kinds = document["components"]["schemas"]["RewardConfig"]["oneOf"]
    held = {f.name for f in dataclasses.fields(RewardItem)}
    assert len(kinds) == 7
    for kind in kinds:
        assert set(kind["properties"]) <= held, (kind["properties"]["type"]["const"], set(kind["properties"]) - held)


@pytest.mark.slow
def test_a_slow_stage_is_said_with_its_time_so_far_at_every_interval(tmp_path):
    """#39: no wait over 10 s without a word. A command held 3.5 s in its first stage (the test hook), the interval
    1 s: at least three heartbeats, each the stage and a growing time, before the command goes on."""
    import json as _json

    done = run_cli(["make-tiny-model", "--output_dir", str(tmp_path / "m")],
                   env={"FTCORE_TEST_HOLD": "make-tiny-model=3.5", "FTCORE_PROGRESS_INTERVAL": "1"})
    assert done.returncode == 0, done.stderr[-2000:]
    found = [_json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]
    beats = [e["message"] for e in found if e["event"] == "log" and e["message"].startswith("loading the ML libraries: ")]
    assert len(beats) >= 3, found
    seconds = [int(m.split(": ")[1].split(" s so far")[0]) for m in beats]
    assert seconds == sorted(seconds) and seconds[-1] > seconds[0]
    assert [e["event"] for e in found][-2:] == ["artifact", "done"]
