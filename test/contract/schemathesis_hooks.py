"""Refusals the OpenAPI documents cannot state, for schemathesis (test/contract/schemathesis.test.ts).

positive_data_acceptance (ST202) sends requests the documents call valid and expects them accepted. The server refuses a
few for reasons no JSON Schema can express; each is listed here with its reason, and a failure is dropped only when the
response states exactly that reason (any other refusal of the same request still fails the run). Every other check and
every other status stays as schemathesis decides.
"""

import schemathesis


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


def _unknown_model(entry):
    """A base model that is nowhere is a 422 at base_model_id (decisions.md); this stack has no model at all, on purpose."""
    return entry.get("type") == "unknown_model"


def _explained(method, path, status, body):
    if status == 422 and _all_entries(body, lambda e: _reward_rule(e) or _unknown_model(e)):
        return True
    # POST /datasets/upload: a file whose content is no CSV, TSV, JSON, JSONL or Parquet with a row is a 400
    # (decisions.md) that names the accepted formats; the document can only say "binary".
    if (method, path, status) == ("POST", "/datasets/upload", 400):
        return isinstance(body, dict) and "CSV, TSV, JSON, JSONL or Parquet" in str(body.get("detail", ""))
    # POST /v1/fine_tuning/jobs: a training or validation file id that names no file of the caller is OpenAI's 400
    # invalid_request_error with the field in param, which the SDKs expect.
    if (method, path, status) == ("POST", "/v1/fine_tuning/jobs", 400):
        error = body.get("error") if isinstance(body, dict) else None
        return isinstance(error, dict) and error.get("code") == "not_found" and error.get("param") in ("training_file", "validation_file")
    return False


@schemathesis.hook
def filter_failure(context, failure, case, response):
    if failure.code != "ST202":
        return True
    return not _explained(case.operation.method.upper(), case.operation.path, response.status_code, _body(response))
