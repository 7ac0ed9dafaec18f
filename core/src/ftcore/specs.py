"""A command's spec: plain JSON data → its options dataclass (nested dataclasses, lists, literals checked), and back.
The CLI fills a command's Options from the spec file and flags; serve fills them from each request."""
from __future__ import annotations

import dataclasses
import re
import types
import typing
from typing import Any, Literal

from .errors import SpecError


def unwrap_optional(hint):
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return hint


def from_dict(cls, data: dict[str, Any], where: str = "spec"):
    """Builds dataclass `cls` from plain JSON data, recursing into nested dataclasses and lists of them."""
    if not isinstance(data, dict):
        raise SpecError(f"{where} must be a JSON object")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - set(fields))
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {unknown}; known fields: {sorted(fields)}")
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(hints[name], value, f"{where}.{name}")
        _check_bounds(fields[name].metadata, kwargs[name], f"{where}.{name}")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise SpecError(f"{where}: {e}") from e


_LIMITS = {"minimum": (lambda v, b: v >= b, "≥"), "maximum": (lambda v, b: v <= b, "≤"),
           "exclusiveMinimum": (lambda v, b: v > b, ">"), "exclusiveMaximum": (lambda v, b: v < b, "<")}


def _check_bounds(metadata, value, where: str) -> None:
    """A field's JSON Schema bounds and pattern, where its metadata states them (train/contract.py)."""
    if value is None:
        return
    for key, (holds, sign) in _LIMITS.items():
        if key in metadata and isinstance(value, (int, float)) and not holds(value, metadata[key]):
            raise SpecError(f"{where} is {value}; it must be {sign} {metadata[key]}")
    if "pattern" in metadata and isinstance(value, str) and not re.search(metadata["pattern"], value):
        raise SpecError(f"{where} is {value!r}; it must match {metadata['pattern']}")


def _convert(hint, value, where: str):
    hint = unwrap_optional(hint)
    if value is None:
        return None
    if dataclasses.is_dataclass(hint):
        return from_dict(hint, value, where)
    origin = typing.get_origin(hint)
    if origin is list:
        (item,) = typing.get_args(hint)
        if not isinstance(value, list):
            raise SpecError(f"{where} must be a list")
        return [_convert(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict:
        _, item = typing.get_args(hint)
        if not isinstance(value, dict):
            raise SpecError(f"{where} must be an object")
        return {k: _convert(item, v, f"{where}.{k}") for k, v in value.items()}
    if origin is Literal:
        allowed = typing.get_args(hint)
        if value not in allowed:
            raise SpecError(f"{where} is {value!r}; allowed: {', '.join(map(str, allowed))}")
        return value
    if hint is float and isinstance(value, int) and not isinstance(value, bool):
        return float(value)
    return value


def to_dict(obj) -> dict[str, Any]:
    return dataclasses.asdict(obj)
