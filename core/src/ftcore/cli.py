"""The command line, generated from each command's options dataclass (field `help` metadata → --flags).

`python -m ftcore <command> --spec FILE [--field value ...]`: the spec file fills the dataclass,
flags override it; nested dataclasses get dotted flags (--hyperparameters.learning_rate 1e-4).
"""
from __future__ import annotations

import argparse
import dataclasses
import importlib
import json
import logging
import os
import sys
import time
import typing
from typing import Any, Literal

from . import events, held
from .errors import Cancelled, SpecError, TrainingDiverged
from .specs import unwrap_optional, from_dict

# command → module that defines `Options` (the dataclass) and `run(options)`.
COMMANDS = {
    "make-tiny-model": "ftcore.models.tiny_model",
    "import-model": "ftcore.models.import_model",
    "train": "ftcore.train.run",
    "preflight": "ftcore.train.preflight.command",
    "merge": "ftcore.export.merge",
    "generate": "ftcore.inference.generate",
    "gguf": "ftcore.export.gguf",
    "onnx": "ftcore.export.onnx",
    "evaluate": "ftcore.evaluation.evaluate",
    "benchmark": "ftcore.evaluation.benchmarks",
    "serve": "ftcore.serve",
    "tinker-session": "ftcore.tinker.process",
    "sweep": "ftcore.sweeps.study",
}


def help_of(f: dataclasses.Field) -> str:
    return f.metadata.get("help", "")



def _flag_parser(hint):
    """A string → value converter for one flag."""
    hint = unwrap_optional(hint)
    if hint is bool:
        return lambda s: {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}[s.lower()]
    if hint in (int, float, str):
        return hint
    if typing.get_origin(hint) is Literal and all(isinstance(a, str) for a in typing.get_args(hint)):
        return str
    return json.loads  # lists, unions, nested values: JSON on the command line


def _add_flags(parser: argparse.ArgumentParser, cls, prefix: str = "") -> None:
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        hint = unwrap_optional(hints[f.name])
        if dataclasses.is_dataclass(hint):
            _add_flags(parser, hint, f"{prefix}{f.name}.")
            continue
        choices = typing.get_args(hint) if typing.get_origin(hint) is Literal else None
        parser.add_argument(f"--{prefix}{f.name}", dest=f"{prefix}{f.name}", type=_flag_parser(hint),
                            choices=choices, default=argparse.SUPPRESS, help=help_of(f).replace("%", "%%"))


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser for every command, or for `only` (so one command does not import the others)."""
    parser = argparse.ArgumentParser(prog="python -m ftcore", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for name, module in COMMANDS.items():
        if only in COMMANDS and name != only:
            continue
        options_cls = importlib.import_module(module).Options
        doc = (options_cls.__doc__ or "").strip()
        p = sub.add_parser(name, help=doc.splitlines()[0], description=doc)
        p.add_argument("--spec", help="JSON file with the options (flags override it)")
        _add_flags(p, options_cls)
    return parser


def parse_options(argv: list[str]):
    """argv → (command name, options dataclass instance)."""
    args = vars(build_parser(argv[0] if argv else None).parse_args(argv))
    command = args.pop("command")
    spec_path = args.pop("spec", None)
    data: dict[str, Any] = {}
    if spec_path:
        with open(spec_path) as fh:
            data = json.load(fh)
    for dotted, value in args.items():
        node = data
        *parents, leaf = dotted.split(".")
        for p in parents:
            node = node.setdefault(p, {})
        node[leaf] = value
    options_cls = importlib.import_module(COMMANDS[command]).Options
    return command, from_dict(options_cls, data)


def main(argv: list[str] | None = None) -> int:
    # stdout belongs to the protocol: events go to a copy of its descriptor, and descriptor 1 itself becomes stderr,
    # so that what a library prints goes there, from Python or from C++ (gloo's "[Gloo] Rank … is connected" lines).
    # Launched by torchrun, only rank 0 speaks (the others' stdout is the same pipe; their events would repeat).
    from .train import distributed

    sys.stdout.flush()
    protocol = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    events.set_output(protocol if distributed.is_main() else open(os.devnull, "w"))
    sys.stdout = sys.stderr
    logging.basicConfig(stream=sys.stderr, level=os.environ.get("FTCORE_LOG_LEVEL", "WARNING"))
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")
    started = time.monotonic()
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv else "?"
    events.start_heartbeat()
    if command != "serve":  # serve says its waits per request (a cold model's load)
        events.stage("loading_libraries", "loading the ML libraries")
    try:
        command, options = parse_options(argv)
        held.for_a_test(command)
        try:
            importlib.import_module(COMMANDS[command]).run(options)
        finally:
            events.end_stage()  # nothing more to say once the command has ended, however it ended
    except SpecError as e:
        events.emit(events.Error(code="validation", message=str(e), field=e.field))
        return 2
    except Cancelled as e:
        events.emit(events.Error(code="cancelled", message=str(e) or "cancelled"))
        return 130
    except TrainingDiverged as e:
        events.emit(events.Error(code="runtime", message=str(e)))
        return 1
    except SystemExit as e:  # argparse: usage errors already went to stderr
        if e.code:
            events.emit(events.Error(code="validation", message=f"bad command line for {command!r} (see stderr)"))
        return int(e.code or 0)
    except Exception as e:  # noqa: BLE001 - every failure must reach the worker as an event
        logging.getLogger("ftcore").exception("command failed")
        events.emit(events.Error(code="runtime", message=f"{type(e).__name__}: {e}"))
        return 1
    events.emit(events.Done(command=command, elapsed_seconds=round(time.monotonic() - started, 3)))
    return 0
