// Evaluations with benchmarks (POST /evaluations and the rest of the resource), for the API and the worker alike: the
// model checked as every request that runs one is (checkModelChoice), the row and its queue entry, the hub token sealed
// under the evaluation's id until its worker ends; cancel, delete; and how a stored evaluation reads.
import { Conflict, newId, NotFound, ServiceUnavailable, UNFINISHED_EVALUATION, type EvaluationRunRow, type Platform } from '@ftp/platform';
import { BenchmarkResults, StoredEvaluationRequest, type Evaluation, type EvaluationCreateRequest } from '@ftp/schema';
import { checkModelChoice } from '../models/index.ts';
import { benchmarkQueue } from '../queues/index.ts';

/** The stored request, parsed: what the worker runs and the API shows (a row that no longer parses is a defect). */
export function evaluationRequestOf(row: Pick<EvaluationRunRow, 'request'>): StoredEvaluationRequest {
  return StoredEvaluationRequest.parse(row.request);
}

/** Checks the model (the caller's or shared with them, completed, with the files asked for), writes the row and
 *  queues it. */
export async function createEvaluation(platform: Platform, userId: string, request: EvaluationCreateRequest): Promise<EvaluationRunRow> {
  const { hub_token: hubToken, ...stored } = request;
  const checked = await checkModelChoice(platform, userId, { ...stored, use_fast_engine: false }, hubToken);
  const evaluationId = newId('evalrun');
  const row = await platform.evaluationRuns.insert({
    evaluation_id: evaluationId,
    user_id: userId,
    job_id: checked.job?.job_id ?? checked.tinker?.run.run_id ?? null,
    model_source: stored.model_source,
    checkpoint_step: stored.checkpoint_step ?? null,
    checkpoint_name: stored.checkpoint_name ?? null,
    base_model_id: checked.baseModelId,
    request: stored,
  });
  if (hubToken) await platform.secrets.put(evaluationId, { hubToken });
  try {
    await platform.queue.add(benchmarkQueue, { evaluationId });
  } catch (err) {
    // Told 503, the client creates it again: this row must not run later as well (the reconciler queues rows that wait).
    await platform.secrets.drop(evaluationId);
    await platform.evaluationRuns.failQueued(evaluationId, 'the job queue was not available when the evaluation was created; create it again');
    throw new ServiceUnavailable('queue', `the job queue is not available (${(err as Error).message}); try again later`);
  }
  return row;
}

async function ownEvaluation(platform: Platform, userId: string, evaluationId: string): Promise<EvaluationRunRow> {
  const row = await platform.evaluationRuns.get(userId, evaluationId);
  if (!row) throw new NotFound('evaluation', evaluationId);
  return row;
}

/** A queued evaluation never runs; a running one is cancelled now and its worker stops the benchmark when its heartbeat
 *  reads the row. */
export async function cancelEvaluation(platform: Platform, userId: string, evaluationId: string): Promise<EvaluationRunRow> {
  const row = await ownEvaluation(platform, userId, evaluationId);
  const cancelled = UNFINISHED_EVALUATION.includes(row.status) ? await platform.evaluationRuns.cancel(userId, evaluationId) : undefined;
  if (!cancelled) {
    const now = await ownEvaluation(platform, userId, evaluationId);
    throw new Conflict(`evaluation ${evaluationId} is already ${now.status}; only a queued or running evaluation can be cancelled`);
  }
  await platform.secrets.drop(evaluationId);
  return cancelled;
}

/** Deletes a finished evaluation, its results and its log. */
export async function deleteEvaluation(platform: Platform, userId: string, evaluationId: string): Promise<void> {
  const row = await ownEvaluation(platform, userId, evaluationId);
  if (UNFINISHED_EVALUATION.includes(row.status)) {
    throw new Conflict(`evaluation ${evaluationId} is ${row.status}; cancel it first (POST /evaluations/${evaluationId}/cancel)`);
  }
  if (!(await platform.evaluationRuns.delete(userId, evaluationId))) throw new NotFound('evaluation', evaluationId);
}

const iso = (date: Date | null) => (date ? new Date(date).toISOString() : null);
const resultsOf = (value: Record<string, unknown> | null) => (value ? BenchmarkResults.parse(value) : null);

/** An evaluation as the API shows it. */
export function presentEvaluation(row: EvaluationRunRow): Evaluation {
  return {
    id: row.evaluation_id,
    status: row.status,
    model_source: row.model_source,
    job_id: row.job_id,
    checkpoint_step: row.checkpoint_step,
    base_model_id: row.base_model_id,
    request: evaluationRequestOf(row),
    results: resultsOf(row.results),
    base_results: resultsOf(row.base_results),
    error: row.error,
    created_at: new Date(row.created_at).toISOString(),
    started_at: iso(row.started_at),
    finished_at: iso(row.finished_at),
    checkpoint_name: row.checkpoint_name,
  };
}
