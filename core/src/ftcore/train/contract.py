"""The training contract, as the API validates it: contract.json beside this file is written by `pnpm openapi` from the
training request's zod schema (packages/schema/src/training/request.ts) and a test keeps it equal to the OpenAPI
document. The hyperparameter and evaluation dataclasses are built from it (fields, types, defaults, bounds and the
descriptions their --flags show), and each trainer's dataset mode, its losses and the settings it reads are read here:
nothing of the contract is restated in Python, so a new hyperparameter is one edit to the schema plus its use.
"""
from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Literal

CONTRACT = json.loads(Path(__file__).with_name("contract.json").read_text())

_TYPES = {"integer": int, "number": float, "boolean": bool, "string": str, "array": list}
# JSON Schema keywords of a field that specs.from_dict enforces (from the field's metadata).
BOUNDS = ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "pattern")


def _field(name: str, schema: dict, defaults: dict):
    """One dataclass field of a property: its type (an enum is a Literal; an array a list, its items as JSON), its default (a property without one is
    optional: None, unless `defaults` names what the API fills in), its description and bounds as metadata."""
    kind = Literal[tuple(schema["enum"])] if "enum" in schema else _TYPES[schema["type"]]
    if "default" in schema:
        default = schema["default"]
    elif name in defaults:
        default = defaults[name]
    else:
        kind, default = kind | None, None
    metadata = {"help": schema.get("description", ""), **{key: schema[key] for key in BOUNDS if key in schema}}
    return name, kind, dataclasses.field(default=default, metadata=metadata)


def dataclass_of(name: str, properties: dict, doc: str, defaults: dict | None = None) -> type:
    cls = dataclasses.make_dataclass(name, [_field(n, s, defaults or {}) for n, s in properties.items()])
    cls.__doc__, cls.__module__ = doc, "ftcore.train.spec"
    return cls


def dataset_mode(trainer: str) -> str:
    """The processing_mode of the datasets a trainer trains on."""
    return CONTRACT["dataset_modes"][trainer]


def settings_read_by(trainer: str) -> tuple[str, ...]:
    """The hyperparameters that only some trainers read (`x-trainers`) and this one does."""
    return tuple(name for name, schema in CONTRACT["hyperparameters"].items()
                 if trainer in schema.get("x-trainers", ()))


def lora_only() -> tuple[str, ...]:
    """The hyperparameters only the LoRA methods read (`x-methods`)."""
    return tuple(name for name, schema in CONTRACT["hyperparameters"].items() if "x-methods" in schema)


def loss_types(trainer: str) -> tuple[str, ...]:
    """loss_type's values for a trainer (none: the trainer takes no loss_type)."""
    return tuple(CONTRACT["hyperparameters"]["loss_type"]["x-loss-types"].get(trainer, ()))
