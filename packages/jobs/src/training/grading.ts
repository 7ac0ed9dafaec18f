// Graders run on a worker, on the evaluate lane (what evaluation does too): the API process that serves
// /v1/fine_tuning/alpha/graders asks and waits. An answer that the grader could not grade is a reward of 0 with the
// reason; a grader the core refuses (a python grader on a worker without a sandbox, python that does not compile) is
// the caller's 400 naming the grader.
import { ModelNotFound, type Platform } from '@ftp/platform';
import { EvaluationResult, JUDGE_GRADERS } from '@ftp/schema';
import { evaluateQueue, GradeResult, requestFromWorker, type EvaluatePayload, type GradePayload } from '../queues/index.ts';
import { parseModelName, resolveModelName } from '../models/index.ts';

/** Each output graded against its item on a worker. */
export async function gradeOnWorker(platform: Platform, userId: string, work: GradePayload): Promise<GradeResult> {
  return GradeResult.parse(await requestFromWorker(platform, evaluateQueue, { userId, grade: work }, undefined, 'the grader'));
}

/** POST /evaluation's work, answered by a worker; cancelled there when `lifetime` (the HTTP request's) aborts. */
export async function evaluateOnWorker(platform: Platform, payload: EvaluatePayload, hubToken: string | undefined, lifetime?: AbortSignal): Promise<EvaluationResult> {
  return EvaluationResult.parse(await requestFromWorker(platform, evaluateQueue, payload, hubToken, 'the evaluation', lifetime ? { signal: lifetime } : {}));
}


/** The judge models score_model and label_model graders name (a multi grader's included). */
export function judgeModels(grader: unknown): string[] {
  if (!grader || typeof grader !== 'object') return [];
  const { type, model, graders } = grader as { type?: unknown; model?: unknown; graders?: unknown };
  if (typeof type === 'string' && JUDGE_GRADERS.includes(type) && typeof model === 'string') return [model];
  return graders !== null && typeof graders === 'object' ? Object.values(graders).flatMap(judgeModels) : [];
}

/** Each judge the graders name is one `userId` may use: one of this stack's models that is theirs (or a base model),
 *  or, with LLM_API_BASE set, a model of no ft: name (asked there). Otherwise OpenAI's 404 model_not_found. */
export async function checkJudges(platform: Platform, userId: string, graders: unknown[]): Promise<void> {
  for (const model of new Set(graders.flatMap(judgeModels))) {
    await resolveModelName(platform, userId, model).catch((err: unknown) => {
      // A fine-tuned model of nobody, or of another user, is never asked elsewhere.
      if (err instanceof ModelNotFound && platform.config.LLM_API_BASE && 'base' in parseModelName(model)) return undefined;
      throw err;
    });
  }
}
