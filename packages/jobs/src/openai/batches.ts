// The Batch API's domain (/v1/batches): an input file read into its lines (a file that is not a batch file fails the
// batch, with each fault and its line, as OpenAI's does), each line prepared as its endpoint's request is (chat
// completions or responses: the same checks, the same model names), and each line's outcome written as OpenAI's
// output-file object: the response with status 200, or the error the endpoint would have answered. A line that fails
// is an error line, never a failed batch. Lines asking for the same model with the same settings run together.
import { Conflict, newId, NotFound, openAiErrorOf, UnprocessableEntity, type BatchError, type BatchResultRow } from '@ftp/platform';
import { BATCH_MAX_LINES, BatchInputLine, ChatCompletionRequest, CreateResponseRequest, validationDetail } from '@ftp/schema';
import type { Platform } from '@ftp/platform';
import { chatUsage, prepareChat, readAnswers, type ChatAnswer, type ChatRun } from './chat-requests.ts';
import { refuseUnsupported, toChatRequest } from './responses-input.ts';
import { finished, outputItems, responseFrame } from './responses-output.ts';
import type { GenerationDetail } from '../queues/index.ts';

/** Asks the caller's batch to stop (POST /v1/batches/{id}/cancel, or deleting its input file with cancel_jobs): it is
 *  `cancelling` until its worker writes what was answered. Already cancelling is fine; an ended batch is a 409. */
export async function cancelBatch(platform: Platform, userId: string, batchId: string): Promise<void> {
  const row = await platform.batches.get(userId, batchId);
  if (!row) throw new NotFound('batch', batchId);
  if (row.status !== 'cancelling' && !(await platform.batches.requestCancel(userId, batchId))) {
    throw new Conflict(`batch ${batchId} is ${(await platform.batches.get(userId, batchId))?.status ?? 'deleted'}; only a batch validating or in progress can be cancelled`);
  }
}

/** The endpoints a batch's lines may call. */
export const BATCH_ENDPOINTS = ['/v1/chat/completions', '/v1/responses'] as const;
export type BatchEndpoint = (typeof BATCH_ENDPOINTS)[number];
/** At most this many file-level faults are listed (the rest are like them). */
const MAX_LISTED_ERRORS = 20;

export interface BatchLine {
  /** 1-based, as an editor numbers it. */
  line: number;
  custom_id: string;
  body: Record<string, unknown>;
}

/** The lines of a batch input file, or why it is not one (each fault with its line). */
export function readBatchInput(text: string, endpoint: string): { lines: BatchLine[] } | { errors: BatchError[] } {
  const errors: BatchError[] = [];
  const lines: BatchLine[] = [];
  const seen = new Map<string, number>();
  const fault = (line: number, code: string, message: string, param: string | null = null) => {
    if (errors.length < MAX_LISTED_ERRORS) errors.push({ code, message, param, line });
  };
  text.split('\n').forEach((raw, index) => {
    const line = index + 1;
    if (raw.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch {
      return fault(line, 'invalid_json_line', `line ${line} is not JSON; each line is one request {"custom_id", "method": "POST", "url", "body"}`);
    }
    const parsed = BatchInputLine.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      const param = issue.path.join('.') || null;
      return fault(line, 'invalid_request', `line ${line}: ${param ?? 'the line'}: ${issue.message}; each line is {"custom_id", "method": "POST", "url", "body"}`, param);
    }
    const { custom_id, url, body } = parsed.data;
    if (url !== endpoint) return fault(line, 'mismatched_endpoint', `line ${line} calls ${JSON.stringify(url)}, but the batch's endpoint is ${endpoint}; one batch calls one endpoint`, 'url');
    const first = seen.get(custom_id);
    if (first !== undefined) return fault(line, 'duplicate_custom_id', `line ${line} repeats the custom_id ${JSON.stringify(custom_id)} of line ${first}; each line needs its own`, 'custom_id');
    seen.set(custom_id, line);
    lines.push({ line, custom_id, body });
  });
  if (errors.length === 0 && lines.length === 0) fault(1, 'empty_file', 'the input file has no request lines');
  if (errors.length === 0 && lines.length > BATCH_MAX_LINES) fault(BATCH_MAX_LINES + 1, 'too_many_lines', `the input file has ${lines.length} lines; a batch takes at most ${BATCH_MAX_LINES}: split it`);
  return errors.length > 0 ? { errors } : { lines };
}

/** A line ready to run: what to generate, and how its answers read as the endpoint's response body. */
export interface PreparedLine {
  line: BatchLine;
  run: ChatRun;
  /** Lines with equal keys run in one generation (same model, same settings; a line's own seed keeps it alone). */
  key: string;
  present(answers: ChatAnswer[], details: GenerationDetail[]): Record<string, unknown>;
}

/** Prepares a line as its endpoint prepares a request; throws what the endpoint would have answered (an error line). */
export async function prepareBatchLine(platform: Platform, userId: string, endpoint: string, line: BatchLine): Promise<PreparedLine> {
  if (line.body.stream === true) throw new UnprocessableEntity({ loc: ['body', 'stream'], msg: 'a batch line is answered whole; leave stream out', type: 'value_error' });
  let run: ChatRun;
  let present: PreparedLine['present'];
  if (endpoint === '/v1/responses') {
    const body = parseBody(CreateResponseRequest, line.body);
    refuseUnsupported(body);
    run = await prepareChat(platform, userId, toChatRequest(body), 'input');
    present = (answers, details) => finished(responseFrame(body), outputItems(answers[0]!), answers[0]!.finish_reason, details[0]);
  } else {
    const body = parseBody(ChatCompletionRequest, line.body);
    run = await prepareChat(platform, userId, body);
    present = (answers, details) => chatCompletionObject(newId('chatcmpl'), body.model, answers, details);
  }
  const { seed, ...settings } = run.payload.generation;
  const key = JSON.stringify([run.payload.model, settings, line.body.seed === undefined ? null : [line.line, seed]]);
  return { line, run, key, present };
}

function parseBody<T>(schema: { safeParse(value: unknown): { success: true; data: T } | { success: false; error: { issues: Parameters<typeof validationDetail>[1] } } }, body: unknown): T {
  const parsed = schema.safeParse(body);
  if (!parsed.success) throw new UnprocessableEntity(validationDetail('body', parsed.error.issues, body));
  return parsed.data;
}

/** OpenAI's chat.completion for answers generated whole. */
export function chatCompletionObject(id: string, model: string, answers: ChatAnswer[], details: GenerationDetail[]) {
  return {
    id,
    object: 'chat.completion' as const,
    created: Math.floor(Date.now() / 1000),
    model,
    system_fingerprint: null,
    choices: answers.map(({ content, calls, finish_reason }, index) => ({
      index,
      message: { role: 'assistant' as const, content, refusal: null, ...(calls.length > 0 ? { tool_calls: calls } : {}) },
      finish_reason,
      logprobs: null,
    })),
    usage: chatUsage(details),
  };
}

/** A line answered: its entry in the output file. */
export function answeredLine(prepared: PreparedLine, results: string[], details: GenerationDetail[]): BatchResultRow {
  const body = prepared.present(readAnswers(prepared.run, results, details), details);
  return resultRow(prepared.line, true, { status_code: 200, request_id: newId('req'), body }, null);
}

/** A line that failed as its request would have (status and OpenAI's error body): its entry in the error file. */
export function failedLine(line: Pick<BatchLine, 'line' | 'custom_id'>, err: unknown): BatchResultRow {
  const { status, body } = openAiErrorOf(err);
  return resultRow(line, false, { status_code: status, request_id: newId('req'), body }, null);
}

/** A line the batch never ran (its time ran out): an error entry with no response. */
export function unansweredLine(line: Pick<BatchLine, 'line' | 'custom_id'>, code: string, message: string): BatchResultRow {
  return resultRow(line, false, null, { code, message });
}

function resultRow(line: Pick<BatchLine, 'line' | 'custom_id'>, ok: boolean, response: Record<string, unknown> | null, error: Record<string, unknown> | null): BatchResultRow {
  return { line: line.line, custom_id: line.custom_id, ok, result: { id: newId('batch_req'), custom_id: line.custom_id, response, error } };
}

/** Lines in input order, grouped by key (each group keeps the order of its lines). */
export function groupLines(prepared: readonly PreparedLine[]): PreparedLine[][] {
  const groups = new Map<string, PreparedLine[]>();
  for (const p of prepared) {
    const group = groups.get(p.key);
    if (group) group.push(p);
    else groups.set(p.key, [p]);
  }
  return [...groups.values()];
}
