// Graders run on a worker, on the evaluate lane (what evaluation does too): the API process that serves
// /v1/fine_tuning/alpha/graders asks and waits. An answer that the grader could not grade is a reward of 0 with the
// reason; a grader the core refuses (a python grader on a worker without a sandbox, python that does not compile) is
// the caller's 400 naming the grader.
import { invalidField, ModelNotFound, ServiceUnavailable, type Platform } from '@ftp/platform';
import { EvaluationResult, JUDGE_GRADERS, type PlainMessage } from '@ftp/schema';
import { evaluateQueue, GradeResult, inferQueue, requestFromWorker, type EvaluatePayload, type GradePayload, type ModelChoice, type TimeLimit } from '../queues/index.ts';
import { parseModelName, resolveModelName } from '../models/index.ts';
import { readyDataset } from './datasets.ts';

/** Each output graded against its item on a worker. */
export async function gradeOnWorker(platform: Platform, userId: string, work: GradePayload): Promise<GradeResult> {
  return GradeResult.parse(await requestFromWorker(platform, evaluateQueue, { userId, grade: work }, undefined, 'the grader'));
}

/** POST /evaluation's work, answered by a worker; cancelled there when `lifetime` (the HTTP request's) aborts. */
export async function evaluateOnWorker(platform: Platform, payload: EvaluatePayload, hubToken: string | undefined, lifetime?: AbortSignal, limit?: TimeLimit): Promise<EvaluationResult> {
  const options = { ...(lifetime ? { signal: lifetime } : {}), ...(limit ? { limit } : {}) };
  return EvaluationResult.parse(await requestFromWorker(platform, evaluateQueue, payload, hubToken, 'the evaluation', options));
}


/** What scoring a processed dataset asks before a worker is (POST /evaluation, an evaluation's `dataset`, a
 *  comparison): max_samples within MAX_EVAL_SAMPLES (a 422), the dataset the caller's and ready. `loc` is where the
 *  request holds dataset_id and max_samples. */
export async function checkScoredDataset(platform: Platform, userId: string, scoring: { dataset_id: string; max_samples?: number | undefined }, loc: string[]): Promise<void> {
  const { MAX_EVAL_SAMPLES } = platform.config;
  if (scoring.max_samples !== undefined && scoring.max_samples > MAX_EVAL_SAMPLES) {
    throw invalidField([...loc, 'max_samples'], `max_samples ${scoring.max_samples} is more than MAX_EVAL_SAMPLES (${MAX_EVAL_SAMPLES})`, 'too_big');
  }
  await readyDataset(platform, userId, scoring.dataset_id, [...loc, 'dataset_id']);
}

/** The judge models score_model and label_model graders name (a multi grader's included). */
export function judgeModels(grader: unknown): string[] {
  if (!grader || typeof grader !== 'object') return [];
  const { type, model, graders } = grader as { type?: unknown; model?: unknown; graders?: unknown };
  if (typeof type === 'string' && JUDGE_GRADERS.includes(type) && typeof model === 'string') return [model];
  return graders !== null && typeof graders === 'object' ? Object.values(graders).flatMap(judgeModels) : [];
}

/** Where the judge named `model` runs for `userId`: one of this stack's models that is theirs (or a base model), on the
 *  infer queue with their rights, or, with LLM_API_BASE set, there for a model of no ft: name. Otherwise OpenAI's 404
 *  model_not_found (ModelNotFound). */
export type JudgeRoute = { choice: ModelChoice } | { forward: string };

export async function routeJudge(platform: Platform, userId: string, model: string): Promise<JudgeRoute> {
  try {
    return { choice: (await resolveModelName(platform, userId, model)).choice };
  } catch (err) {
    // A fine-tuned model of nobody, or of another user, is never asked elsewhere.
    const base = platform.config.LLM_API_BASE;
    if (err instanceof ModelNotFound && base && 'base' in parseModelName(model)) return { forward: base };
    throw err;
  }
}

/** Each judge the graders name is one `userId` may use (routeJudge). */
export async function checkJudges(platform: Platform, userId: string, graders: unknown[]): Promise<void> {
  for (const model of new Set(graders.flatMap(judgeModels))) await routeJudge(platform, userId, model);
}

/** A chat completions request as a judge is asked (OpenAI's shape: what a core's grader sends the judge relay). */
export interface JudgeRequest {
  model?: unknown;
  messages?: unknown;
  temperature?: number;
  top_p?: number;
  seed?: number;
  max_tokens?: number;
  response_format?: { type?: string; json_schema?: { schema?: Record<string, unknown> } };
}

/** The request as it is, to the OpenAI-compatible API at `base` (LLM_API_BASE): its status and JSON body. */
export async function forwardToJudge(base: string, request: JudgeRequest, signal?: AbortSignal): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${base.replace(/\/$/, '')}/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(request),
    ...(signal ? { signal } : {}),
  });
  return { status: res.status, body: await res.json().catch(() => ({ error: { message: `LLM_API_BASE answered ${res.status}` } })) };
}

/** The judge's reply to each chat, greedy, at most `maxTokens` each: one infer request (a batch) for a judge of this
 *  stack; each chat to LLM_API_BASE, four at a time, for another (a refusal there is a 503 naming its answer). */
export async function askJudge(platform: Platform, userId: string, model: string, chats: PlainMessage[][], maxTokens: number, signal?: AbortSignal): Promise<string[]> {
  const route = await routeJudge(platform, userId, model);
  if ('choice' in route) {
    const generation = { max_new_tokens: maxTokens, temperature: 0 };
    const answer = await requestFromWorker(platform, inferQueue, { userId, model: route.choice, conversations: chats, generation }, undefined, 'the judge', signal ? { signal } : {});
    return answer.results;
  }
  const replies: string[] = new Array<string>(chats.length);
  let next = 0;
  const askNext = async (): Promise<void> => {
    while (next < chats.length) {
      const i = next++;
      const { status, body } = await forwardToJudge(route.forward, { model, messages: chats[i], temperature: 0, max_tokens: maxTokens }, signal);
      const reply = (body as { choices?: Array<{ message?: { content?: unknown } }> }).choices?.[0]?.message?.content;
      if (status !== 200 || typeof reply !== 'string') {
        throw new ServiceUnavailable('judge', `the judge ${model} at LLM_API_BASE answered ${status}: ${JSON.stringify(body).slice(0, 300)}`);
      }
      replies[i] = reply;
    }
  };
  await Promise.all(Array.from({ length: Math.min(4, chats.length) }, askNext));
  return replies;
}
