"""Evaluation metrics against hand-computed values on small fixed pairs, and the `evaluate` command end to end."""
import json
import math

import pytest

from ftcore.evaluation import metrics
from ftcore.errors import SpecError

from helpers import run_cli, said, stdout_events, write_jsonl

# Two pairs used by ROUGE and BLEU: one word ("the") missing from the first prediction, the second identical.
PREDICTIONS = ["the cat sat on mat", "hello world foo bar"]
REFERENCES = ["the cat sat on the mat", "hello world foo bar"]


def test_rouge_is_the_mean_f_measure_over_pairs():
    scores = metrics.rouge(["the cat sat on mat", "hello there"], ["the cat sat on the mat", "goodbye"])
    # pair 1: unigram overlap 5 (the, cat, sat, on, mat); P = 5/5, R = 5/6, F = 2·1·(5/6)/(1+5/6) = 10/11.
    #         bigrams: prediction 4, reference 5, shared 3 (the cat, cat sat, sat on): P = 3/4, R = 3/5, F = 2/3.
    #         LCS "the cat sat on mat" = 5 tokens: same as unigrams, F = 10/11.
    # pair 2: nothing shared, every F = 0.  Means: rouge1 = rougeL = 5/11, rouge2 = 1/3.
    assert scores["rouge1"] == pytest.approx(5 / 11)
    assert scores["rouge2"] == pytest.approx(1 / 3)
    assert scores["rougeL"] == pytest.approx(5 / 11)


def test_bleu_is_corpus_bleu_on_a_0_to_100_scale():
    # Pair 1 alone: n-gram precisions 5/5, 3/4 (on mat ∉ ref), 2/3, 1/2 → geometric mean (1/4)^(1/4);
    # brevity penalty exp(1 - 6/5).  100 · 0.70711 · 0.81873 = 57.893.
    assert metrics.bleu(PREDICTIONS[:1], REFERENCES[:1]) == pytest.approx(100 * 0.25 ** 0.25 * math.exp(-0.2))
    # Corpus: counts are summed before dividing (pair 2 adds 4/4, 3/3, 2/2, 1/1): 9/9, 6/7, 4/5, 2/3 →
    # (48/105)^(1/4) = 0.82228; lengths c = 9, r = 10 → BP = exp(1 - 10/9) = 0.89484.  BLEU = 73.580.
    assert metrics.bleu(PREDICTIONS, REFERENCES) == pytest.approx(100 * (48 / 105) ** 0.25 * math.exp(1 - 10 / 9))

    # Short answers ("Paris ." and "Blue" after 13a tokenizing): no 3- or 4-grams in the corpus. Plain corpus BLEU
    # gave exact answers 0; over the orders present (unigrams 3/3, bigrams 1/1, BP 1) they score 100.
    assert metrics.bleu(["Paris.", "Blue"], ["Paris.", "Blue"]) == pytest.approx(100)
    # "Rome ." for "Paris .": unigrams 2/3; the one bigram misses, exp smoothing counts it 1/2 → 100 · (1/3)^(1/2).
    assert metrics.bleu(["Rome.", "Blue"], ["Paris.", "Blue"]) == pytest.approx(100 * (2 / 3 * 1 / 2) ** 0.5)


def test_meteor_matches_exact_words_and_stems():
    # nltk's METEOR (alpha 0.9, beta 3, gamma 0.5).  "a cat on big mat" vs "a cat sat on mat": m = 4 (a, cat, on,
    # mat); P = R = 4/5 → Fmean = PR / (0.9 P + 0.1 R) = 4/5.  Chunks: (a cat) (on) (mat) = 3 →
    # penalty 0.5 · (3/4)^3 = 0.2109375.  Score 0.8 · (1 - 0.2109375) = 0.63125.
    assert metrics.meteor_sentence("a cat on big mat", "a cat sat on mat") == pytest.approx(0.63125)
    # Stem stage: "cats" ~ "cat" (Porter), "sitting" (sit) ≠ "sat".  m = 1, P = 1/2, R = 1/3 →
    # Fmean = (1/6) / (0.45 + 1/30) = 0.344828; one chunk → penalty 0.5 · 1^3 → 0.172414.
    assert metrics.meteor_sentence("cats sitting", "the cat sat") == pytest.approx((1 / 6) / (0.45 + 1 / 30) * 0.5)
    # Corpus METEOR is the mean of the two.
    assert metrics.meteor(["a cat on big mat", "cats sitting"], ["a cat sat on mat", "the cat sat"]) == pytest.approx(
        (0.63125 + (1 / 6) / (0.45 + 1 / 30) * 0.5) / 2)


QA_PREDICTIONS = ["The Eiffel Tower!", "in Paris, France", "London"]
QA_REFERENCES = ["eiffel tower", "Paris", "Paris"]


def test_exact_match_and_token_f1_are_squad_style():
    # Normalised: "eiffel tower" = "eiffel tower" (case, "The", "!" dropped); "in paris france" ≠ "paris";
    # "london" ≠ "paris".  EM = 1/3.
    assert metrics.exact_match(QA_PREDICTIONS, QA_REFERENCES) == pytest.approx(1 / 3)
    # Token F1: 1; [in, paris, france] vs [paris]: shared 1, P = 1/3, R = 1 → 2·(1/3)/(4/3) = 1/2; 0.
    # Mean (1 + 1/2 + 0) / 3 = 1/2.
    assert metrics.token_f1(QA_PREDICTIONS, QA_REFERENCES) == pytest.approx(0.5)
    assert metrics.token_f1_pair("", "") == 1.0 and metrics.token_f1_pair("the", "Paris") == 0.0


def test_classification_scores_are_macro_over_the_union_of_labels():
    scores = metrics.classification_scores(["pos", "neg", " neg", "other"], ["pos", "pos", "neg", "neu"])
    # Right: 0 and 2 → accuracy 2/4.  Labels {neg, neu, other, pos} (union; "other" only predicted):
    #   pos:   TP 1, FP 0, FN 1 → P 1,   R 1/2, F 2/3
    #   neg:   TP 1, FP 1, FN 0 → P 1/2, R 1,   F 2/3
    #   neu:   TP 0, FP 0, FN 1 → P 0 (never predicted), R 0, F 0
    #   other: TP 0, FP 1, FN 0 → P 0, R 0 (never true), F 0
    # Macro: P = 1.5/4 = 0.375, R = 1.5/4 = 0.375, F1 = (4/3)/4 = 1/3 (mean of per-label F1s).
    assert scores == pytest.approx({"accuracy": 0.5, "precision": 0.375, "recall": 0.375, "f1": 1 / 3})


def test_f1_follows_the_task():
    qa = metrics.evaluate(QA_PREDICTIONS, QA_REFERENCES, task_type="qa")
    assert qa["scores"] == pytest.approx({"exact_match": 1 / 3, "f1": 0.5}) and not qa["warnings"]
    # As labels, every pair differs: accuracy 0; each label's F1 is 0 → macro F1 0 (not the token F1 of 1/2).
    classification = metrics.evaluate(QA_PREDICTIONS, QA_REFERENCES, task_type="classification")
    assert classification["scores"]["f1"] == 0.0 and classification["scores"]["accuracy"] == 0.0
    # An explicit list with precision/recall is a classification too.
    assert metrics.evaluate(QA_PREDICTIONS, QA_REFERENCES, metrics=["precision", "f1"])["scores"]["f1"] == 0.0


def test_greedy_matching_is_bertscore():
    # Candidate: one token (2, 0); reference: (3, 0) and (0, 5).  Cosines: 1 and 0.
    # P = mean over candidate tokens of the best cosine = 1; R = mean over reference tokens = (1 + 0)/2 = 1/2;
    # F1 = 2 · 1 · (1/2) / (3/2) = 2/3.
    assert metrics.greedy_match([[2.0, 0.0]], [[3.0, 0.0], [0.0, 5.0]]) == pytest.approx((1.0, 0.5, 2 / 3))


def test_bertscore_with_the_packaged_encoder():
    result = metrics.evaluate(["the cat sat on the mat", "the cat sat on the mat"],
                              ["the cat sat on the mat", "quarterly revenue grew by four percent"],
                              task_type="conversation", device="cpu")
    assert not result["warnings"]
    assert {"rouge1", "rouge2", "rougeL", "bertscore_precision", "bertscore_recall", "bertscore_f1"} == set(
        result["scores"])
    assert any("all-MiniLM-L6-v2" in n["note"] for n in result["notes"] if n["metric"] == "bertscore")
    identical, _ = metrics.bertscore(["the cat sat on the mat"], ["the cat sat on the mat"], device="cpu")
    assert identical["bertscore_f1"] == pytest.approx(1.0, abs=1e-5)  # each token is its own best match
    # The mean includes an unrelated pair, so it is clearly below 1.
    assert 0.0 < result["scores"]["bertscore_f1"] < 0.95


def test_a_failing_metric_is_a_warning_never_zero(tmp_path):
    result = metrics.evaluate(["a"], ["a"], metrics=["bertscore", "exact_match"], encoder=str(tmp_path / "missing"))
    assert "bertscore_f1" not in result["scores"] and result["scores"] == {"exact_match": 1.0}
    assert result["warnings"][0]["metric"] == "bertscore" and "missing" in result["warnings"][0]["error"]


def test_bad_metric_requests_are_spec_errors():
    with pytest.raises(SpecError, match="not both"):
        metrics.evaluate(["a"], ["a"], metrics=["bleu"], task_type="qa")
    with pytest.raises(SpecError, match="valid metrics: rouge, bleu, meteor, bertscore, exact_match"):
        metrics.evaluate(["a"], ["a"], metrics=["bleurt"])
    with pytest.raises(SpecError, match="must pair up"):
        metrics.evaluate(["a", "b"], ["a"])
    assert metrics.resolve_metrics(None, None) == ["rouge", "bleu"]  # neither → general


@pytest.mark.slow
def test_the_evaluate_command_emits_metrics_then_done(tmp_path):
    pairs = write_jsonl(tmp_path / "pairs.jsonl", [{"prediction": p, "reference": r}
                                                   for p, r in zip(QA_PREDICTIONS, QA_REFERENCES)])
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps({"pairs_file": pairs, "metrics": ["exact_match", "bertscore"]}))
    done = run_cli(["evaluate", "--spec", str(spec), "--bertscore_encoder", str(tmp_path / "missing")], timeout=120)
    assert done.returncode == 0, done.stderr
    events = said(stdout_events(done.stdout))
    assert [e.event for e in events] == ["log", "metrics", "done"]
    assert events[0].level == "warning" and "bertscore could not be computed" in events[0].message
    assert events[1].extra == pytest.approx({"exact_match": 1 / 3})

    refused = run_cli(["evaluate", "--pairs_file", pairs, "--task_type", "qa", "--metrics", '["bleu"]'], timeout=120)
    assert refused.returncode == 2 and stdout_events(refused.stdout)[-1].code == "validation"
