"""OpenAI's graders over a sampled answer and its dataset item: string_check, text_similarity, python (run in the
sandbox), score_model and label_model (a judge model's score, or its label among the grader's, asked through the
worker's judge relay, an OpenAI-compatible endpoint that runs this stack's models with the job owner's rights, or
passes the call on to LLM_API_BASE) and multi (sub-graders
combined by a formula that is parsed, never evaluated as code). Templates read
`{{item.<field>}}` (the training line's fields, dotted for nested ones), `{{sample.output_text}}` and
`{{sample.output_json.<field>}}` (the answer read as JSON). The GRPO rewards, the graders endpoints and evaluation all
grade through `grade_batch`; a sample that cannot be graded scores 0 and says why, it never stops the batch.

One module of ~400 lines on purpose: the checks (check_grader), the templates and the grading of every grader kind
read the same grader object, and apart they would each restate its shape."""
from __future__ import annotations

import ast
import json
import math
import operator
import re
from dataclasses import dataclass, field

from ..errors import SpecError

GRADER_TYPES = ("string_check", "text_similarity", "python", "score_model", "label_model", "multi")
JUDGES = ("score_model", "label_model")
JUDGE_ROLES = ("system", "developer", "user", "assistant")
JUDGE_THREADS = 4
SIMILARITY_METRICS = ("cosine", "fuzzy_match", "bleu", "gleu", "meteor", "rouge_1", "rouge_2", "rouge_3", "rouge_4",
                      "rouge_5", "rouge_l")
_TEMPLATE = re.compile(r"\{\{\s*(.*?)\s*\}\}")
_VARIABLE = re.compile(r"(item|sample)((?:\.[A-Za-z_][\w-]*)+)")
_SAMPLE_FIELDS = ("output_text", "output_json")


@dataclass
class GradeResult:
    """One sample's grade: the reward, each sub-grader's (multi), and why it is 0 when it could not be graded."""
    reward: float
    sub_rewards: dict[str, float] = field(default_factory=dict)
    error: str | None = None
    error_kind: str | None = None  # OpenAI's metadata.errors flag: invalid_variable_error, python_grader_runtime_error …


def make_sample(output_text: str) -> dict:
    """The `sample` namespace of a sampled answer: its text and, when it is JSON, its value."""
    try:
        output_json = json.loads(output_text)
    except ValueError:
        output_json = None
    return {"output_text": output_text, "output_json": output_json}


class _VariableError(Exception):
    pass


def render_template(template: str, sample: dict, item: dict) -> str:
    """The template with each {{ namespace.path }} replaced by its value (strings as they are, anything else as JSON)."""
    def value(match: re.Match) -> str:
        found = _VARIABLE.fullmatch(match.group(1))
        if not found:
            raise _VariableError(f"{match.group(0)} is not a variable of item or sample")
        current = item if found.group(1) == "item" else sample
        for key in found.group(2)[1:].split("."):
            if not isinstance(current, dict) or key not in current:
                raise _VariableError(f"{match.group(0)}: {found.group(1)} has no {key!r}")
            current = current[key]
        return current if isinstance(current, str) else json.dumps(current, ensure_ascii=False)
    return _TEMPLATE.sub(value, template)


def check_grader(grader: dict, where: str = "grader", nested: bool = False) -> None:
    """Raises SpecError naming the field when `grader` cannot run: an unknown type or metric, a missing field, a
    template variable outside item and sample, python that does not compile, a formula naming no grader."""
    if not isinstance(grader, dict):
        raise SpecError.at(where, f"{where} must be a grader object")
    kind = grader.get("type")
    allowed = GRADER_TYPES[:-1] if nested else GRADER_TYPES
    if kind not in allowed:
        raise SpecError.at(f"{where}.type", f"{where}.type is {kind!r}; graders here: {', '.join(allowed)}"
                        + (" (a multi grader's graders cannot be multi)" if nested and kind == "multi" else ""))
    if kind in ("string_check", "text_similarity"):
        for name in ("input", "reference"):
            if not isinstance(grader.get(name), str):
                raise SpecError.at(f"{where}.{name}", f"{where}.{name} must be a string (a template such as {{{{sample.output_text}}}})")
            for match in _TEMPLATE.finditer(grader[name]):
                found = _VARIABLE.fullmatch(match.group(1))
                if not found or (found.group(1) == "sample" and found.group(2)[1:].split(".")[0] not in _SAMPLE_FIELDS):
                    raise SpecError.at(f"{where}.{name}", f"{where}.{name}: {match.group(0)} is not a variable; use {{{{item.<field>}}}}, "
                                    "{{sample.output_text}} or {{sample.output_json.<field>}}")
    if kind == "string_check" and grader.get("operation") not in ("eq", "ne", "like", "ilike"):
        raise SpecError.at(f"{where}.operation", f"{where}.operation is {grader.get('operation')!r}; use eq, ne, like or ilike")
    if kind == "text_similarity" and grader.get("evaluation_metric") not in SIMILARITY_METRICS:
        raise SpecError.at(f"{where}.evaluation_metric", f"{where}.evaluation_metric is {grader.get('evaluation_metric')!r}; use one of "
                        f"{', '.join(SIMILARITY_METRICS)}")
    if kind == "python":
        source = grader.get("source")
        if not isinstance(source, str):
            raise SpecError.at(f"{where}.source", f"{where}.source must be the grader's Python source, defining grade(sample, item)")
        try:
            compile(source, "<grader>", "exec")  # compiles only: nothing of it runs here
        except SyntaxError as error:
            raise SpecError.at(f"{where}.source", f"{where}.source: line {error.lineno}: {error.msg}") from error
    if kind in JUDGES:
        if not isinstance(grader.get("model"), str) or not grader["model"]:
            raise SpecError.at(f"{where}.model", f"{where}.model must name the judge model")
        messages = grader.get("input")
        if not isinstance(messages, list) or not messages:
            raise SpecError.at(f"{where}.input", f"{where}.input must be the judge's messages, templates in their content")
        for i, message in enumerate(messages):
            if not isinstance(message, dict) or message.get("role") not in JUDGE_ROLES:
                raise SpecError.at(f"{where}.input[{i}]", f"{where}.input[{i}] must be a message with a role of {', '.join(JUDGE_ROLES)}")
            for match in _TEMPLATE.finditer(_text_of(message.get("content"))):
                if not _VARIABLE.fullmatch(match.group(1)):
                    raise SpecError.at(f"{where}.input[{i}].content", f"{where}.input[{i}].content: {match.group(0)} is not a variable; use "
                                    "{{item.<field>}}, {{sample.output_text}} or {{sample.output_json.<field>}}")
    if kind == "score_model":
        low, high = _score_range(grader)
        if not low < high:
            raise SpecError.at(f"{where}.range", f"{where}.range must be [lowest, highest] with lowest below highest")
    if kind == "label_model":
        labels, passing = grader.get("labels"), grader.get("passing_labels")
        if not isinstance(labels, list) or len(set(map(str, labels))) < 2:
            raise SpecError.at(f"{where}.labels", f"{where}.labels must be two or more different labels the judge chooses from")
        if not isinstance(passing, list) or not passing or any(label not in labels for label in passing):
            raise SpecError.at(f"{where}.passing_labels", f"{where}.passing_labels must be one or more of labels ({', '.join(map(str, labels))}): "
                            "the labels that earn the reward")
    if kind == "multi":
        graders = grader.get("graders")
        if not isinstance(graders, dict) or not graders:
            raise SpecError.at(f"{where}.graders", f"{where}.graders must map names to graders")
        for name, sub in graders.items():
            check_grader(sub, f"{where}.graders.{name}", nested=True)
        Formula(grader.get("calculate_output"), set(graders), f"{where}.calculate_output")


def variables(grader: dict) -> list[str]:
    """The item fields a grader's templates read (first names of {{item.<field>…}}), sub-graders' included."""
    if grader.get("type") == "multi":
        return sorted({name for sub in grader["graders"].values() for name in variables(sub)})
    texts = [grader.get("reference")]
    if isinstance(grader.get("input"), list):
        texts += [_text_of(m.get("content")) for m in grader["input"] if isinstance(m, dict)]
    else:
        texts.append(grader.get("input"))
    found = set()
    for text in texts:
        for match in _TEMPLATE.finditer(text or ""):
            variable = _VARIABLE.fullmatch(match.group(1))
            if variable and variable.group(1) == "item":
                found.add(variable.group(2)[1:].split(".")[0])
    return sorted(found)


def grade_batch(grader: dict, samples: list[dict], items: list[dict], judge: Judge | None = None) -> list[GradeResult]:
    """Each (sample, item) graded by `grader` (checked with check_grader first); `judge` answers score_model graders
    (default: the relay the worker named in the environment)."""
    kind = grader["type"]
    if kind == "multi":
        return _grade_multi(grader, samples, items, judge)
    if kind in JUDGES:
        return _grade_by_judge(grader, samples, items, judge or Judge.from_environment())
    if kind == "python":
        from .sandbox import run_python_grader

        return [GradeResult(g.score, error=g.error, error_kind="python_grader_runtime_error" if g.error else None)
                for g in run_python_grader(grader["source"], list(zip(samples, items)))]
    results: list[GradeResult | None] = [None] * len(samples)
    pairs: list[tuple[int, str, str]] = []
    for i, (sample, item) in enumerate(zip(samples, items)):
        try:
            pairs.append((i, render_template(grader["input"], sample, item), render_template(grader["reference"], sample, item)))
        except _VariableError as error:
            results[i] = GradeResult(0.0, error=str(error), error_kind="invalid_variable_error")
    if kind == "string_check":
        scores = [string_check(grader["operation"], text, reference) for _, text, reference in pairs]
    else:
        scores = text_similarity(grader["evaluation_metric"], [t for _, t, _ in pairs], [r for _, _, r in pairs])
    for (i, _, _), score in zip(pairs, scores):
        results[i] = GradeResult(score)
    return results  # type: ignore[return-value]


def _grade_multi(grader: dict, samples: list[dict], items: list[dict], judge: Judge | None) -> list[GradeResult]:
    formula = Formula(grader["calculate_output"], set(grader["graders"]), "calculate_output")
    by_name = {name: grade_batch(sub, samples, items, judge) for name, sub in grader["graders"].items()}
    results = []
    for i in range(len(samples)):
        subs = {name: graded[i].reward for name, graded in by_name.items()}
        failed = next((graded[i] for graded in by_name.values() if graded[i].error), None)
        try:
            reward = formula(subs)
        except (ArithmeticError, ValueError) as error:
            results.append(GradeResult(0.0, subs, f"calculate_output: {error}", "formula_parse_error"))
            continue
        results.append(GradeResult(reward, subs, failed.error if failed else None, failed.error_kind if failed else None))
    return results


def _text_of(content) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content or [] if isinstance(part, dict))


def _score_range(grader: dict) -> tuple[float, float]:
    low, high = grader.get("range") or (0.0, 1.0)
    return float(low), float(high)


@dataclass
class Judge:
    """Where score_model graders ask their judge: an OpenAI-compatible chat completions endpoint (the worker's relay)."""
    url: str
    token: str

    @classmethod
    def from_environment(cls) -> Judge | None:
        import os

        url, token = os.environ.get("FTCORE_JUDGE_URL"), os.environ.get("FTCORE_JUDGE_TOKEN")
        return cls(url, token) if url and token else None

    def score(self, grader: dict, messages: list[dict]) -> float:
        """The judge's score of one answer: JSON {"result": number} (asked for by schema), or else the first number
        in its text; one outside the grader's range is an error, as is an answer with no number."""
        text = self._ask(grader, messages, {"type": "number"})
        try:
            value = json.loads(text)["result"]
        except (ValueError, KeyError, TypeError):
            found = re.search(r"-?\d+(?:\.\d+)?(?:[eE][-+]?\d+)?", text)
            value = float(found.group(0)) if found else None
        if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value):
            raise _JudgeError(f"the judge {grader['model']} gave no score: {text[:200]!r}", "model_grader_parse_error")
        low, high = _score_range(grader)
        if not low <= value <= high:
            raise _JudgeError(f"the judge {grader['model']} scored {value}, outside the range [{low:g}, {high:g}]",
                              "model_grader_parse_error")
        return float(value)

    def label(self, grader: dict, messages: list[dict]) -> float:
        """A label_model judge's label for one answer, JSON {"result": one of labels} (asked for by schema; else the
        text, trimmed, when it is a label): 1 when it is one of passing_labels, else 0; no label is an error."""
        labels = [str(label) for label in grader["labels"]]
        text = self._ask(grader, messages, {"type": "string", "enum": labels})
        try:
            value = json.loads(text)["result"]
        except (ValueError, KeyError, TypeError):
            value = text.strip().strip('"')
        if value not in labels:
            raise _JudgeError(f"the judge {grader['model']} gave no label of {labels}: {text[:200]!r}",
                              "model_grader_parse_error")
        return float(value in [str(label) for label in grader["passing_labels"]])

    def _ask(self, grader: dict, messages: list[dict], result: dict) -> str:
        """The judge's answer text, its result asked for as JSON {"result": <result schema>}."""
        import urllib.error
        import urllib.request

        sampling = grader.get("sampling_params") or {}
        body = {"model": grader["model"], "messages": messages,
                "temperature": sampling.get("temperature", 0), "seed": sampling.get("seed", 0),
                "max_tokens": sampling.get("max_completions_tokens") or sampling.get("max_tokens") or 64,
                "response_format": {"type": "json_schema", "json_schema": {"name": "result", "schema": {
                    "type": "object", "properties": {"result": result}, "required": ["result"]}}}}
        if sampling.get("top_p") is not None:
            body["top_p"] = sampling["top_p"]
        request = urllib.request.Request(f"{self.url}/chat/completions", data=json.dumps(body).encode(), method="POST",
                                         headers={"content-type": "application/json",
                                                  "authorization": f"Bearer {self.token}"})
        try:
            with urllib.request.urlopen(request, timeout=600) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as error:
            detail = error.read().decode(errors="replace")[:300]
            raise _JudgeError(f"the judge {grader['model']} answered {error.code}: {detail}", "model_grader_server_error")
        except (urllib.error.URLError, OSError) as error:
            raise _JudgeError(f"the judge {grader['model']} could not be reached: {error}", "model_grader_server_error")
        return (answer.get("choices") or [{}])[0].get("message", {}).get("content") or ""


class _JudgeError(Exception):
    def __init__(self, message: str, kind: str):
        super().__init__(message)
        self.kind = kind


def _grade_by_judge(grader: dict, samples: list[dict], items: list[dict], judge: Judge | None) -> list[GradeResult]:
    """Each answer scored by the judge, a few at once; a judge that cannot answer scores 0 with the reason."""
    from concurrent.futures import ThreadPoolExecutor

    def one(pair: tuple[dict, dict]) -> GradeResult:
        sample, item = pair
        if judge is None:
            return GradeResult(0.0, error=f"{grader['type']} graders are answered through a worker's judge relay, "
                                          "and none was given", error_kind="model_grader_server_error")
        try:
            messages = [{"role": m["role"], "content": render_template(_text_of(m.get("content")), sample, item)}
                        for m in grader["input"]]
            ask = judge.label if grader["type"] == "label_model" else judge.score
            return GradeResult(ask(grader, messages))
        except _VariableError as error:
            return GradeResult(0.0, error=str(error), error_kind="invalid_variable_error")
        except _JudgeError as error:
            return GradeResult(0.0, error=str(error), error_kind=error.kind)

    with ThreadPoolExecutor(JUDGE_THREADS) as pool:
        return list(pool.map(one, zip(samples, items)))


def string_check(operation: str, output: str, reference: str) -> float:
    """eq / ne: exact comparison (surrounding whitespace ignored); like / ilike: the reference occurs in the
    output (ilike: case-insensitive) — the OpenAI string_check grader's meaning."""
    out, ref = output.strip(), str(reference).strip()
    if operation == "eq":
        return float(out == ref)
    if operation == "ne":
        return float(out != ref)
    if operation == "like":
        return float(ref in out)
    return float(ref.lower() in out.lower())


def text_similarity(metric: str, outputs: list[str], references: list[str]) -> list[float]:
    """A score in [0, 1] for each pair."""
    if metric == "cosine":
        from .metrics import sentence_cosine

        return sentence_cosine(outputs, references)
    return [_similarity(metric, o, str(r)) for o, r in zip(outputs, references)]


def _similarity(metric: str, output: str, reference: str) -> float:
    if metric == "bleu":
        import sacrebleu

        return sacrebleu.sentence_bleu(output, [reference]).score / 100.0
    if metric == "gleu":
        from nltk.translate.gleu_score import sentence_gleu

        return float(sentence_gleu([reference.split()], output.split()))
    if metric == "meteor":
        from .metrics import meteor_sentence

        return meteor_sentence(output, reference)
    if metric.startswith("rouge_"):
        from rouge_score import rouge_scorer

        key = "rougeL" if metric == "rouge_l" else f"rouge{metric[-1]}"
        return rouge_scorer.RougeScorer([key], use_stemmer=True).score(reference, output)[key].fmeasure
    from rapidfuzz import fuzz

    return fuzz.ratio(output, reference) / 100.0


class Formula:
    """A multi grader's calculate_output: numbers, the graders' names, + - * /, parentheses, and min, max, abs;
    parsed with Python's own parser and walked here, never evaluated as code."""

    _OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}
    _FUNCTIONS = {"min": min, "max": max, "abs": abs}

    def __init__(self, text, names: set[str], where: str):
        if not isinstance(text, str) or not text.strip():
            raise SpecError.at(where, f"{where} must be a formula over the graders' names, e.g. \"0.5 * a + 0.5 * b\"")
        try:
            self.tree = ast.parse(text.strip(), mode="eval").body
        except SyntaxError as error:
            raise SpecError.at(where, f"{where}: {text!r} is not a formula ({error.msg})") from error
        self.names, self.where = names, where
        self._check(self.tree)

    def _check(self, node) -> None:
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
            return
        if isinstance(node, ast.Name):
            if node.id not in self.names:
                raise SpecError.at(self.where, f"{self.where}: {node.id!r} names no grader; graders: {', '.join(sorted(self.names))}")
            return
        if isinstance(node, ast.BinOp) and type(node.op) in self._OPERATORS:
            self._check(node.left)
            self._check(node.right)
            return
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            self._check(node.operand)
            return
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in self._FUNCTIONS
                and node.args and not node.keywords):
            for arg in node.args:
                self._check(arg)
            return
        raise SpecError.at(self.where, f"{self.where}: {ast.unparse(node)!r} is not allowed; a formula has numbers, grader names, "
                        "+ - * /, parentheses, min, max and abs")

    def __call__(self, values: dict[str, float]) -> float:
        result = float(self._value(self.tree, values))
        if not math.isfinite(result):
            raise ValueError(f"the formula gave {result}")
        return result

    def _value(self, node, values: dict[str, float]) -> float:
        if isinstance(node, ast.Constant):
            return node.value
        if isinstance(node, ast.Name):
            return values[node.id]
        if isinstance(node, ast.BinOp):
            return self._OPERATORS[type(node.op)](self._value(node.left, values), self._value(node.right, values))
        if isinstance(node, ast.UnaryOp):
            operand = self._value(node.operand, values)
            return -operand if isinstance(node.op, ast.USub) else operand
        return self._FUNCTIONS[node.func.id](*(self._value(a, values) for a in node.args))
