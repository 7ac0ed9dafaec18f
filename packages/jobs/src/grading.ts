// Graders run on a worker, on the evaluate lane (what evaluation does too): the API process that serves
// /v1/fine_tuning/alpha/graders asks and waits. An answer that the grader could not grade is a reward of 0 with the
// reason; a grader the core refuses (a python grader on a worker without a sandbox, python that does not compile) is
// the caller's 400 naming the grader.
import type { Platform } from '@ftp/platform';
import { EvaluationResult } from '@ftp/schema';
import { evaluateQueue, GradeResult, type EvaluatePayload, type GradePayload } from './queues.ts';
import { requestFromWorker } from './request-work.ts';

/** Each output graded against its item on a worker. */
export async function gradeOnWorker(platform: Platform, userId: string, work: GradePayload): Promise<GradeResult> {
  return GradeResult.parse(await requestFromWorker(platform, evaluateQueue, { userId, grade: work }, undefined, 'the grader'));
}

/** POST /evaluation's work, answered by a worker. */
export async function evaluateOnWorker(platform: Platform, payload: EvaluatePayload, hubToken: string | undefined): Promise<EvaluationResult> {
  return EvaluationResult.parse(await requestFromWorker(platform, evaluateQueue, payload, hubToken, 'the evaluation'));
}

