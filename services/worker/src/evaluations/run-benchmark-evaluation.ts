// The benchmark queue's processor (POST /evaluations): claim the evaluation (queued → running), make its model local
// (and with with_base its base), run `ftcore benchmark` on each (their log lines become the evaluation's events) and
// score its dataset on the evaluate lane, store the numbers, complete. It ends failed with a sentence a person can act on (the benchmark
// refusing the request is said as the request's fault); cancelled, its core is stopped and nothing more is written;
// when the worker stops (SIGTERM), it goes back to the queue to start over on whichever worker takes it.
import fs from 'node:fs/promises';
import path from 'node:path';
import { describeCoreFailure, runCore, type CoreEvent, type CoreResult } from '@ftp/core-client';
import { AppError, type EvaluationRunRow, type JobSecretValues, type Platform } from '@ftp/platform';
import { evaluationRequestOf } from '@ftp/jobs/evaluations';
import { benchmarkQueue, type TimeLimit } from '@ftp/jobs/queues';
import { evaluateOnWorker } from '@ftp/jobs/training';
import { BenchmarkResults, type BenchmarkSettings, type StoredEvaluationRequest } from '@ftp/schema';
import { resolveModel } from '../inference/model-files.ts';
import { coreKilled, CoreKilled, oomKills } from '../training/core-killed.ts';
import { SHUTDOWN, TAKEN } from '../training/job-context.ts';

/** A cancelled benchmark has nothing to save: it gets this long to exit before it is killed. */
const CANCEL_GRACE_MS = 10_000;
/** An evaluation runs as long as it needs (its cancel stops it): the dataset's scoring has no limit of its own but
 *  the longest timer Node has (24.8 days). */
const UNLIMITED: TimeLimit = { ms: 2 ** 31 - 1, setting: 'the longest timer', fix: 'cancel the evaluation instead' };

export interface BenchmarkContext {
  platform: Platform;
  workerId: string;
  /** Aborted when the user cancels ('cancelled'), the worker stops (SHUTDOWN) or the evaluation was taken from this
   *  worker (TAKEN). */
  signal: AbortSignal;
}

/** Which model a run benchmarks: the one asked for, or (with_base) its base. */
type Which = 'model' | 'base';

interface LocalModel {
  model: string;
  adapter?: string;
}

/** The benchmark refused the request (an unknown task, data it cannot read, HumanEval without a sandbox). */
class BenchmarkRefused extends Error {}
class BenchmarkFailed extends Error {}

export async function runBenchmarkEvaluation(ctx: BenchmarkContext, evaluationId: string): Promise<void> {
  const { platform } = ctx;
  const row = await platform.evaluationRuns.claim(evaluationId, ctx.workerId);
  if (!row) return; // cancelled or deleted while queued, or taken by another worker meanwhile
  const secrets = await platform.secrets.open(evaluationId);
  const dir = path.join(platform.config.dataDir, 'work', evaluationId);
  try {
    const request = evaluationRequestOf(row);
    const results = await evaluate(ctx, row, request, 'model', dir, secrets);
    const baseResults = request.with_base ? await evaluate(ctx, row, request, 'base', dir, secrets) : null;
    const done = await platform.evaluationRuns.update(evaluationId, { status: 'completed', results, base_results: baseResults, finished_at: new Date() }, ctx.workerId);
    if (done) platform.logger.info({ evaluationId }, 'evaluation completed');
    await platform.secrets.drop(evaluationId);
  } catch (err) {
    await stopped(ctx, row, err);
  } finally {
    await fs.rm(dir, { recursive: true, force: true });
  }
}

/** One model's numbers: its benchmarks (`ftcore benchmark` on its local folders), then its scores on the dataset (the
 *  work of POST /evaluation, on the evaluate lane of any worker, without that endpoint's time limit). */
async function evaluate(ctx: BenchmarkContext, row: EvaluationRunRow, request: StoredEvaluationRequest, which: Which, dir: string, secrets: JobSecretValues | undefined): Promise<BenchmarkResults> {
  const benchmarks = request.benchmarks ? await benchmark(ctx, row, request.benchmarks, await localModel(ctx, row, which, secrets), which, dir, secrets) : {};
  if (!request.dataset) return benchmarks;
  await note(ctx.platform, row.evaluation_id, { level: 'info', message: `scoring processed dataset ${request.dataset.dataset_id}`, model: which });
  const dataset = await evaluateOnWorker(ctx.platform, { userId: row.user_id, request: { ...modelChoice(row, which), ...request.dataset } }, secrets?.hubToken, ctx.signal, UNLIMITED);
  return { ...benchmarks, dataset };
}

/** The model an evaluation runs, or (with_base) its base, on transformers. */
function modelChoice(row: EvaluationRunRow, which: Which) {
  return which === 'base'
    ? { model_source: 'base' as const, base_model_id: row.base_model_id, use_fast_engine: false }
    : { model_source: row.model_source, job_id: row.job_id ?? undefined, checkpoint_step: row.checkpoint_step ?? undefined, checkpoint_name: row.checkpoint_name ?? undefined, base_model_id: row.base_model_id, use_fast_engine: false };
}

/** The model's local folders (built as inference builds them: downloaded, merged, cached), or its base's. */
async function localModel(ctx: BenchmarkContext, row: EvaluationRunRow, which: Which, secrets: JobSecretValues | undefined): Promise<LocalModel> {
  const { platform } = ctx;
  const say = (message: string) => void note(platform, row.evaluation_id, { level: 'info', message, model: which });
  const { files } = await resolveModel(platform, row.user_id, modelChoice(row, which), secrets, ctx.signal, say);
  if (files.engine !== 'transformers') throw new Error(`the ${which} resolved to ${files.engine} files, not a transformers folder`);
  return { model: files.model, ...(files.adapter ? { adapter: files.adapter } : {}) };
}

/** Runs `ftcore benchmark` on one model and returns its numbers. */
async function benchmark(ctx: BenchmarkContext, row: EvaluationRunRow, settings: BenchmarkSettings, model: LocalModel, which: Which, dir: string, secrets: JobSecretValues | undefined): Promise<BenchmarkResults> {
  const { platform } = ctx;
  const { tasks, humaneval, num_fewshot: numFewshot, limit, apply_chat_template: applyChatTemplate } = settings;
  const spec = {
    model: model.model,
    ...(model.adapter ? { adapter: model.adapter } : {}),
    output_file: path.join(dir, `${which}-results.json`),
    tasks: tasks ?? [],
    task_dirs: platform.config.LM_EVAL_TASK_DIRS,
    ...(numFewshot !== undefined ? { num_fewshot: numFewshot } : {}),
    ...(limit !== undefined ? { limit } : {}),
    apply_chat_template: applyChatTemplate,
    humaneval: humaneval !== undefined,
    ...(humaneval
      ? {
          ...(humaneval.limit !== undefined ? { humaneval_limit: humaneval.limit } : {}),
          humaneval_samples: humaneval.samples,
          humaneval_k: humaneval.k,
          humaneval_timeout: humaneval.timeout,
          temperature: humaneval.temperature,
          max_new_tokens: humaneval.max_new_tokens,
        }
      : {}),
  };
  let resultsFile: string | undefined;
  const onEvent = async (event: CoreEvent) => {
    if (event.event === 'log' && event.level !== 'debug') await note(platform, row.evaluation_id, { level: event.level, message: event.message, model: which });
    if (event.event === 'artifact' && event.kind === 'benchmark') resultsFile = event.path;
  };
  const oomBefore = await oomKills();
  const result = await runCore({
    command: 'benchmark',
    spec,
    specFile: path.join(dir, `${which}-spec.json`),
    python: platform.config.CORE_PYTHON,
    env: {
      ...(secrets?.hubToken ? { HF_TOKEN: secrets.hubToken } : {}),
      HF_ENDPOINT: platform.config.HF_ENDPOINT,
      FTCORE_PROGRESS_INTERVAL: String(platform.config.PROGRESS_INTERVAL_S),
    },
    onEvent,
    onStderr: (line) => platform.logger.debug({ evaluationId: row.evaluation_id, core: line }),
    signal: ctx.signal,
    cancelGraceMs: CANCEL_GRACE_MS,
  });
  if (result.cancelled) throw ctx.signal.reason;
  throwIfFailed(result, coreKilled(result, oomBefore, await oomKills()), which);
  if (!resultsFile) throw new BenchmarkFailed(`the benchmark of the ${which} ended without writing its results`);
  return readResults(resultsFile);
}

/** The results file as BenchmarkResults (the worker's local paths in it, model and adapter, left out). */
async function readResults(file: string): Promise<BenchmarkResults> {
  let data: unknown;
  try {
    data = JSON.parse(await fs.readFile(file, 'utf8'));
  } catch (err) {
    throw new BenchmarkFailed(`the benchmark's results file cannot be read as JSON: ${(err as Error).message}`);
  }
  const parsed = BenchmarkResults.safeParse(data);
  if (!parsed.success) throw new BenchmarkFailed(`the benchmark's results file is not what this version reads: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}`);
  return parsed.data;
}

function throwIfFailed(result: CoreResult, killed: CoreKilled | undefined, which: Which): void {
  if (killed) throw new BenchmarkFailed(`${killed.message} while it benchmarked the ${which}${killed.reason === 'oom_kill' ? '; lower benchmarks.limit or batch work, or run it on a worker with more memory' : ''}`);
  if (result.done && result.exitCode === 0) return;
  // The core's validation errors are the request's fault: what was asked cannot run (said in the core's words).
  if (result.error?.code === 'validation') throw new BenchmarkRefused(result.error.message);
  throw new BenchmarkFailed(`the benchmark of the ${which} failed: ${describeCoreFailure(result)}`);
}

/** The run ended early: handed back (the worker stops), left alone (cancelled, or another worker took it), or failed. */
async function stopped(ctx: BenchmarkContext, row: EvaluationRunRow, err: unknown): Promise<void> {
  const { platform, signal, workerId } = ctx;
  const id = row.evaluation_id;
  const log = platform.logger.child({ evaluationId: id });
  if (signal.aborted && signal.reason === TAKEN) {
    log.warn('evaluation taken from this worker (its heartbeat was lost); stopped without touching it');
    return;
  }
  if (signal.aborted && signal.reason === SHUTDOWN) {
    // It starts over on whichever worker takes it; its sealed hub token stays for that one.
    if (await platform.evaluationRuns.update(id, { status: 'queued', worker_id: null }, workerId)) {
      await note(platform, id, { level: 'info', message: `queued again: worker ${workerId} stopped (SIGTERM) while it ran; it starts over` });
      await platform.queue.add(benchmarkQueue, { evaluationId: id });
    }
    log.warn('evaluation handed back to the queue: the worker is stopping');
    return;
  }
  await platform.secrets.drop(id);
  if (signal.aborted) {
    log.info('evaluation cancelled: its benchmark was stopped');
    return; // cancelled (the row says so already) or deleted
  }
  const known = err instanceof BenchmarkRefused || err instanceof BenchmarkFailed || err instanceof AppError;
  if (!known) log.error({ err }, 'evaluation failed');
  const error =
    err instanceof BenchmarkRefused ? `the benchmarks cannot run as asked: ${err.message}`
    : known ? err.message
    : `the worker failed: ${(err as Error).message}`;
  await platform.evaluationRuns.update(id, { status: 'failed', error, finished_at: new Date() }, workerId);
}

/** A line in the evaluation's log; a write that fails (the evaluation deleted meanwhile) is only logged. */
async function note(platform: Platform, evaluationId: string, data: Record<string, unknown>): Promise<void> {
  await platform.evaluationRuns.appendEvent(evaluationId, 'log', data).catch((err: unknown) => platform.logger.debug({ err, evaluationId }, 'could not add to the evaluation log'));
}
