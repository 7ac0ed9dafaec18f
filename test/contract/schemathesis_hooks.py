"""Hooks for schemathesis (test/contract/schemathesis.test.ts): real ids mixed into what it generates, and the refusals
the OpenAPI documents cannot state.

Real ids: the stack holds a completed job of the tiny model, its checkpoints and exports. Their ids (FTP_SCHEMATHESIS_IDS,
JSON: parameter name -> values) are drawn beside the generated values wherever a path, query or body field of that name
is sent, so the paths behind an existing resource (a checkpoint's download, a fine-tuned model's chat, checkpoint_step
at the edges of its range) are exercised too, not only the 404 of a random id; and a plain conversation beside the
generated chat messages. Deletes never reach the seeded job
(before_call): it must outlive every document's run.

positive_data_acceptance (ST202) sends requests the documents call valid and expects them accepted. The server refuses a
few for reasons no JSON Schema can express (cross-field rules); each is listed here with its reason, and a failure is dropped only when the
response states exactly that reason (any other refusal of the same request still fails the run). Every other check and
every other status stays as schemathesis decides.
"""

import json
import os
import re

import schemathesis
from hypothesis import strategies as st

KNOWN = {name: values for name, values in json.loads(os.environ.get("FTP_SCHEMATHESIS_IDS") or "{}").items() if values}


def _with_known(context, values, known=KNOWN):
    """The generated mapping, or the same with some of its known-named fields set to real values."""
    if not isinstance(values, dict):
        return st.just(values)
    names = [name for name in values if name in known]
    if not names:
        return st.just(values)
    return st.fixed_dictionaries(
        {name: st.one_of(st.just(values[name]), st.sampled_from(known[name])) if name in names else st.just(value)
         for name, value in values.items()}
    )


SEEDED_JOB = (KNOWN.get("job_id") or [None])[0]
# Names no job: a delete meant for the seeded job gets this instead, and its 404.
STAND_IN_JOB = "job_" + "0" * 24


@schemathesis.hook
def before_call(context, case, kwargs):
    """Deletes never reach the seeded job (DELETE /jobs/{id}, DELETE /v1/models/ft:…:<id>), whichever phase chose the
    id: the stateful phase takes ids from what GET /jobs and GET /v1/models list, and the other documents' runs need
    the job after this one."""
    if SEEDED_JOB is None or case.operation.method.upper() != "DELETE" or not case.path_parameters:
        return
    for name, value in list(case.path_parameters.items()):
        if isinstance(value, str) and SEEDED_JOB in value:
            case.path_parameters[name] = value.replace(SEEDED_JOB, STAND_IN_JOB)


# Only where such a field is taken: a hook changes how an operation's examples are drawn, even where it changes nothing.
@schemathesis.hook.apply_to(path_regex=r"\{(job_id|fine_tuning_job_id|model)\}")
def flatmap_path_parameters(context, path_parameters):
    return _with_known(context, path_parameters)


@schemathesis.hook.apply_to(path_regex=r"^/exports/\{job_id\}/download$")
def flatmap_query(context, query):
    return _with_known(context, query)


@schemathesis.hook.apply_to(path_regex=r"^/(exports|inference/batch|evaluation|train)$")
def flatmap_body(context, body):
    return _with_known(context, body)


# Since messages may hold tool calls and tool results, most generated conversations are refused for what they say of
# each other (a tool result answering no call): a plain one is drawn beside them, or few chats reach the seeded models.
CHAT_KNOWN = {**KNOWN, "messages": [[{"role": "user", "content": "hi"}]]}


@schemathesis.hook("flatmap_body").apply_to(path_regex=r"^/v1/chat/completions$")
def flatmap_chat_body(context, body):
    return _with_known(context, body, CHAT_KNOWN)


# The same for responses: a plain input beside the generated items (most of which say something of one another or ask
# for what is not served).
RESPONSES_KNOWN = {**KNOWN, "input": ["hi"]}


@schemathesis.hook("flatmap_body").apply_to(path_regex=r"^/v1/responses$")
def flatmap_responses_body(context, body):
    return _with_known(context, body, RESPONSES_KNOWN)


def _body(response):
    try:
        return response.json()
    except Exception:
        return None


def _detail_entries(body):
    detail = body.get("detail") if isinstance(body, dict) else None
    return detail if isinstance(detail, list) and detail else None


def _all_entries(body, predicate):
    entries = _detail_entries(body)
    return entries is not None and all(predicate(entry) for entry in entries)


def _reward_rule(entry):
    """POST /train: reward names are unique and passing_labels are among labels; JSON Schema cannot compare items."""
    loc = entry.get("loc", [])
    return "reward_config" in loc and ("passing_labels" in loc or "used twice" in entry.get("msg", ""))


def _variant_rule(entry):
    """GET /exports/{job_id}/download: variant picks one file of an onnx export (#43); a query's parameters cannot
    depend on one another in the document, which says so in variant's description."""
    return entry.get("loc") == ["query", "variant"] and "variant picks one model file of an onnx export" in entry.get("msg", "")


def _benchmark_rule(entry):
    """POST /evaluations: pass@k needs k ≤ samples, and limit is a whole count or a fraction below 1; JSON Schema cannot
    compare an array's items with another field, and the document says both in the fields' descriptions."""
    loc, msg = entry.get("loc", []), entry.get("msg", "")
    return "benchmarks" in loc and ("needs samples ≥" in msg or "limit is a count (an integer ≥ 1) or a fraction below 1" in msg)


def _same_models(entry):
    """POST /comparisons: model_b must not be model_a again; JSON Schema cannot compare two objects of one body, and the
    operation says it compares two different models."""
    return entry.get("loc") == ["body", "model_b"] and "model_b is model_a again" in entry.get("msg", "")


def _unknown_model(entry):
    """A base model that is nowhere is a 422 at base_model_id (decisions.md); this stack has no model at all, on purpose."""
    return entry.get("type") == "unknown_model"


def _other_base(entry):
    """A base_model_id beside a job_id must be that job's base (decisions.md): the seeded job's is the tiny model, which
    no document can say of a job it does not know."""
    return entry.get("type") == "mismatch" and entry.get("loc") == ["body", "base_model_id"]


# What graders say of themselves that no JSON Schema can state (packages/schema/src/graders.ts, the core's evaluation/graders.py):
# a template names only variables of item and sample, a multi grader's formula is arithmetic over its graders' names,
# string_check and text_similarity take their reference from a column or a template, a python grader's source is Python,
# a judge's range runs from lowest to highest.
_GRADER_RULE = re.compile(
    r"is not a variable; use \{\{item|names no grader|is not allowed|is not a formula|expected \S+ at|ends too soon|"
    r"the formula is empty|needs reference_field \(a dataset column\) or reference|^line \d+: |"
    r"range is \[lowest, highest\]|needs input \(the judge’s messages\) or prompt"
)


def _grader_rule(entry):
    """POST /train and POST /evaluation: a grader (reward_config's, graders') that cannot run, for one of
    _GRADER_RULE's reasons."""
    loc = entry.get("loc", [])
    return any(key in loc for key in ("reward_config", "graders", "grader")) and bool(_GRADER_RULE.search(entry.get("msg", "")))


def _openai_grader_rule(error):
    """/v1: a grader (a reinforcement job's, or the graders endpoints') refused for one of _GRADER_RULE's reasons."""
    param = str(error.get("param"))
    if not (param.startswith("grader") or param.startswith("method.reinforcement.grader")):
        return False
    message = str(error.get("message")).split(": ", 1)[-1]
    return bool(_GRADER_RULE.search(message))


def _tinker_rule(path, entry):
    """/api/v1 (the Tinker-compatible service): its bodies take fields they do not name (the SDK sends some, a newer one
    may send more), where a NUL character is refused as in every request string; a base model must be a model name; a
    sampler needs model_path or base_model. Each is said in the document's descriptions."""
    if not path.startswith("/api/v1/"):
        return False
    msg, loc = entry.get("msg", ""), entry.get("loc", [])
    return ("NUL character" in msg or ("is not a model name" in msg and loc[-1:] == ["base_model"])
            or "needs model_path (sampler weights) or base_model" in msg)


def _explained(method, path, status, body):
    if status == 422 and _all_entries(body, lambda e: _tinker_rule(path, e)):
        return True
    # POST /api/v1/forward_backward: its body is the SDK's protobuf, which no JSON Schema describes.
    if (method, path, status) == ("POST", "/api/v1/forward_backward", 400):
        return isinstance(body, dict) and "is not a ForwardBackwardRequest" in str(body.get("detail", ""))
    if status == 422 and _all_entries(body, lambda e: _reward_rule(e) or _grader_rule(e) or _unknown_model(e) or _other_base(e)
                                      or _variant_rule(e) or _benchmark_rule(e) or _same_models(e)):
        return True
    error = body.get("error") if isinstance(body, dict) else None
    if status == 400 and path.startswith("/v1/fine_tuning") and isinstance(error, dict) and _openai_grader_rule(error):
        return True
    # POST /datasets/upload: a file whose content is no CSV, TSV, JSON, JSONL or Parquet with a row is a 400
    # (decisions.md) that names the accepted formats; the document can only say "binary".
    if (method, path, status) == ("POST", "/datasets/upload", 400):
        return isinstance(body, dict) and "CSV, TSV, JSON, JSONL or Parquet" in str(body.get("detail", ""))
    # POST /v1/chat/completions: what a conversation with tools says of itself, which no JSON Schema can compare: a tool
    # message answers a call an earlier assistant turn made, tool_choice names one of tools (or comes with tools), and
    # tools reach only a model whose chat template writes them. OpenAI's 400 invalid_request_error, param the field.
    if (method, path, status) == ("POST", "/v1/chat/completions", 400):
        return _field_rule(error, _CHAT_TOOL_RULES)
    # POST /v1/responses: the same of its input items and tools, and what a stateless service without built-in tools,
    # reasoning models or image input refuses (the document describes each refusal; its schema takes the shape).
    if (method, path, status) == ("POST", "/v1/responses", 400):
        return _field_rule(error, _RESPONSES_RULES)
    # POST /v1/uploads: the deployment's MAX_UPLOAD_BYTES (a setting, so not in the document) and expires_after, which the
    # document describes as refused (files are kept until deleted).
    if (method, path, status) == ("POST", "/v1/uploads", 400):
        return _field_rule(error, _UPLOAD_RULES)
    # POST /v1/uploads/{upload_id}/complete (the stateful phase links it to an upload just created): the parts named
    # must be that upload's, each once, adding up to its bytes, and the md5 the joined file's (its description says so).
    if (method, path, status) == ("POST", "/v1/uploads/{upload_id}/complete", 400):
        return _field_rule(error, _COMPLETE_RULES)
    # A multipart body whose file property came as a plain field (schemathesis' stateful phase sends one so) beside ten
    # others: eleven properties, as maxProperties allows with the file a file part, but eleven fields, over the ten the
    # 413 that every multipart route documents ("more than 10 fields").
    if status == 413 and isinstance(error, dict) and "the multipart request has more than 10 fields" in str(error.get("message")):
        return True
    # POST /v1/batches: an endpoint the schema lists (OpenAI's) but that is not served, output_expires_after (described as
    # refused), more metadata pairs than OpenAI takes, and an input file uploaded for another purpose.
    if (method, path, status) == ("POST", "/v1/batches", 400):
        return _field_rule(error, _BATCH_RULES)
    # POST /v1/webhook_endpoints (and its update, and test): a URL events may not go to, as the operation's 400 says:
    # not https, or a private, loopback or link-local address, unless the operator set WEBHOOK_ALLOW_PRIVATE (a setting,
    # so not in the document). The URL is checked before the endpoint is looked up.
    if method == "POST" and path.startswith("/v1/webhook_endpoints") and status == 400:
        return _field_rule(error, _WEBHOOK_RULES)
    return False


def _field_rule(error, rules):
    """An OpenAI error body whose param matches one of `rules`' patterns and whose message holds that rule's reason."""
    return isinstance(error, dict) and any(re.fullmatch(param, str(error.get("param"))) and reason in str(error.get("message"))
                                           for param, reason in rules)


_UPLOAD_RULES = (
    (r"bytes", "is more than this deployment takes (MAX_UPLOAD_BYTES"),
    (r"expires_after", "expires_after is not supported"),
)

_BATCH_RULES = (
    (r"endpoint", "is not served here; a batch calls"),
    (r"output_expires_after", "output files are kept until deleted"),
    (r"metadata", "metadata holds at most"),
    (r"input_file_id", "upload the batch's input with purpose"),
)

_WEBHOOK_RULES = (
    (r"url", "events go to https URLs only"),
    (r"url", "is a private, loopback or link-local address"),
    (r"url", "is not a URL"),
)

_COMPLETE_RULES = (
    (r"part_ids\.\d+", "is not a part of the upload"),
    (r"part_ids\.\d+", "is named twice"),
    (r"part_ids", "the parts named add up to"),
    (r"md5", "is not the joined file's"),
)

_RESPONSES_RULES = (
    (r"store", "store true is not supported"),
    (r"previous_response_id", "previous_response_id is not supported"),
    (r"conversation", "conversation is not supported"),
    (r"background", "background mode is not supported"),
    (r"reasoning", "reasoning settings are not supported"),
    (r"tools\.\d+\.type", "is not supported: only function tools"),
    (r"input\.\d+\.type", "are not supported: only messages, function_call and function_call_output items"),
    (r"input\.\d+\.(content|output)\.\d+\.type", "parts are not supported"),
    (r"input\.\d+\.call_id", "no earlier function_call item has that call_id"),
    (r"tool_choice", "tool_choice needs tools"),
    (r"tool_choice\.name", "which is not in tools"),
    (r"tools|input", "has no tool support"),
)

_CHAT_TOOL_RULES = (
    (r"messages\.\d+\.tool_call_id", "but no earlier assistant message made a call with that id"),
    (r"tool_choice", "tool_choice needs tools"),
    (r"tool_choice\.function\.name", "which is not in tools"),
    (r"tools|messages", "has no tool support"),
)


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if failure.code != "ST202":
        return True
    return not _explained(case.operation.method.upper(), case.operation.path, response.status_code, _body(response))
