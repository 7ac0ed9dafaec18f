"""Reads processed dataset splits (JSONL, one record per line, shapes from decisions.md) and tells their mode."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Literal

from .errors import SpecError

Mode = Literal["language_modeling", "prompt_only", "preference"]
MODE_FIELDS: dict[str, str] = {
    "language_modeling": '{"messages": [...]}',
    "prompt_only": '{"prompt": [...], <source columns>}',
    "preference": '{"prompt": [...], "chosen": [...], "rejected": [...]}',
}
MESSAGE_KEYS: dict[str, tuple[str, ...]] = {"language_modeling": ("messages",), "prompt_only": ("prompt",),
                                            "preference": ("prompt", "chosen", "rejected")}


def read_jsonl(path: str, what: str) -> list[dict]:
    p = Path(path)
    if not p.is_file():
        raise SpecError(f"{what} {path} does not exist; pass the path of a processed split (JSONL)")
    records = []
    for n, line in enumerate(p.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError as e:
            raise SpecError(f"{what} {path} line {n} is not JSON ({e}); every line must be one JSON object") from e
        if not isinstance(record, dict):
            raise SpecError(f"{what} {path} line {n} is not a JSON object")
        records.append(record)
    if not records:
        raise SpecError(f"{what} {path} has no records")
    return records


def mode_of(record: dict) -> Mode | None:
    if "chosen" in record and "rejected" in record and "prompt" in record:
        return "preference"
    if "messages" in record:
        return "language_modeling"
    if "prompt" in record:
        return "prompt_only"
    return None


def detect_mode(records: list[dict], what: str) -> Mode:
    """The split's processing mode; every record must have the same shape."""
    first = mode_of(records[0])
    for n, record in enumerate(records, start=1):
        mode = mode_of(record)
        if mode is None:
            shapes = "; ".join(f"{m}: {s}" for m, s in MODE_FIELDS.items())
            raise SpecError(f"{what} record {n} has columns {sorted(record)}, none of the processed shapes ({shapes})")
        if mode != first:
            raise SpecError(f"{what} mixes record shapes: record 1 is {first}, record {n} is {mode}; "
                            "process the dataset again with one processing_mode")
        _check_messages(record, mode, f"{what} record {n}")
    return first


def _check_messages(record: dict, mode: Mode, where: str) -> None:
    for key in MESSAGE_KEYS[mode]:
        messages = record[key]
        if not isinstance(messages, list) or not messages or not all(
                isinstance(m, dict) and "role" in m and "content" in m for m in messages):
            raise SpecError(f"{where}: {key!r} must be a non-empty list of {{role, content}} messages")
        _check_weights(messages, f"{where}: {key!r}", pair_answer=key in ("chosen", "rejected"))
    if mode == "language_modeling" and record["messages"][-1]["role"] != "assistant":
        raise SpecError(f"{where}: the last message must be the assistant's (it is what SFT learns)")
    if mode == "language_modeling" and all(m.get("weight", 1) == 0 for m in record["messages"]
                                           if m["role"] == "assistant"):
        raise SpecError(f"{where}: every assistant message has weight 0, so the row teaches nothing; give the turn "
                        "to learn weight 1, or remove the row")


def _check_weights(messages: list[dict], where: str, pair_answer: bool) -> None:
    """OpenAI's fine-tuning format: an assistant message may carry weight 0 (context only, no loss) or 1 (trained)."""
    for n, message in enumerate(messages, start=1):
        if "weight" not in message:
            continue
        weight = message["weight"]
        if message["role"] != "assistant":
            raise SpecError(f"{where} message {n}: weight applies to assistant messages only, not to "
                            f"{message['role']!r}; remove it")
        if type(weight) is not int or weight not in (0, 1):
            raise SpecError(f"{where} message {n}: weight must be 0 (not trained on) or 1 (trained on), "
                            f"got {weight!r}")
        if weight == 0 and pair_answer:
            raise SpecError(f"{where} message {n}: the answers of a preference pair are always trained on; remove "
                            "weight 0")


def reference_conversations(records: list[dict], mode: Mode) -> list[list[dict]] | None:
    """Conversations whose assistant turns are the reference answers (for eval loss/accuracy)."""
    if mode == "language_modeling":
        return [r["messages"] for r in records]
    if mode == "preference":
        return [r["prompt"] + r["chosen"] for r in records]
    return None
