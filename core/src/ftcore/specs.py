"""A command's spec: plain JSON data → its options dataclass (nested dataclasses, lists, literals checked), and back.
The CLI fills a command's Options from the spec file and flags; serve fills them from each request."""
from __future__ import annotations

import dataclasses
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
    names = {f.name for f in dataclasses.fields(cls)}
    unknown = sorted(set(data) - names)
    if unknown:
        raise SpecError(f"{where}: unknown field(s) {unknown}; known fields: {sorted(names)}")
    kwargs = {}
    for name, value in data.items():
        kwargs[name] = _convert(hints[name], value, f"{where}.{name}")
    try:
        return cls(**kwargs)
    except TypeError as e:
        raise SpecError(f"{where}: {e}") from e


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
