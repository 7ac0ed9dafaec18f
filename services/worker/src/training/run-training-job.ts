// One training job on this worker: claim it (queued → preparing), prepare its inputs, run the core (its events
// become the job's progress, metrics, event log and stored checkpoints), store the trained model, complete.
// It ends failed with a sentence a person can act on; or, when the worker stops (SIGTERM), handed back to the
// queue to continue from its last checkpoint on whichever worker takes it next.
import fs from 'node:fs/promises';
import { describeCoreFailure, runCore } from '@ftp/core-client';
import { AppError, UnprocessableEntity, type TrainingJobRow } from '@ftp/platform';
import { overheadSeconds, queueExport, throughputKey, trainerOf } from '@ftp/jobs/training';
import { trainingQueue } from '@ftp/jobs/queues';
import { jobConfig } from '@ftp/schema';
import { withJudgeRelay } from '../inference/judge-relay.ts';
import { secretsEnvironment, trackerEnvironment } from './core-spec.ts';
import { recordTraining, type TrainingRecord } from './core-events.ts';
import { CoreKilled, coreKilled, diedThereBefore, MEMORY_FIX, oomKills, type CoreKillRecord } from './core-killed.ts';
import { JobFailure, prepareTraining, type TrainingInputs } from './prepare.ts';
import { storeTrainedModel, type StoredModel } from './store-model.ts';
import { PAUSED, SHUTDOWN, stopReason, TAKEN, type JobContext } from './job-context.ts';
import { stopFile } from './stop-early.ts';

const RUNNING = ['preparing', 'training'] as const;

export async function runTrainingJob(ctx: JobContext, jobId: string): Promise<void> {
  const job = await claim(ctx, jobId);
  if (!job) return; // cancelled or deleted while queued, or already taken by another worker
  const trainer = trainerOf(job);
  if (job.started_at) ctx.platform.metrics.jobPhaseDuration.observe({ phase: 'queued', trainer }, Math.max(0, job.started_at.getTime() - job.created_at.getTime()) / 1000);
  let record: TrainingRecord | undefined;
  try {
    const inputs = await prepareTraining(ctx, job);
    await noteResume(ctx, job, inputs);
    record = recordTraining(ctx, job);
    await train(ctx, job, inputs, record);
    await complete(ctx, job, await storeTrainedModel(ctx, job, inputs.baseModel, record.produced), record, inputs.resumeStep === undefined);
  } catch (err) {
    await stopped(ctx, job, err);
  }
  observePhases(ctx, job, record, trainer);
}

/** The phases this worker saw the job through (preparing, training, saving: each from its start to the next's, the
 *  last to now), and how it ended when it ended here. */
function observePhases(ctx: JobContext, job: TrainingJobRow, record: TrainingRecord | undefined, trainer: string): void {
  const { metrics } = ctx.platform;
  const now = Date.now();
  const { trainingAt, savingAt } = record?.phases() ?? { trainingAt: null, savingAt: null };
  const seconds = (from: number, to: number | null) => Math.max(0, (to ?? now) - from) / 1000;
  if (job.started_at) metrics.jobPhaseDuration.observe({ phase: 'preparing', trainer }, seconds(job.started_at.getTime(), trainingAt ?? savingAt));
  if (trainingAt !== null) metrics.jobPhaseDuration.observe({ phase: 'training', trainer }, seconds(trainingAt, savingAt));
  if (savingAt !== null) metrics.jobPhaseDuration.observe({ phase: 'saving', trainer }, seconds(savingAt, null));
}

/** queued → preparing on this worker; undefined when the job is no longer queued. A claim whose answer was lost in
 *  a database restart (it went through, then was retried) finds the job already this worker's. */
async function claim(ctx: JobContext, jobId: string): Promise<TrainingJobRow | undefined> {
  const { jobs } = ctx.platform;
  const claimed = await jobs.update(jobId, { status: 'preparing', worker_id: ctx.workerId, started_at: new Date() }, ['queued']);
  if (claimed) return claimed;
  const job = await jobs.getForWorker(jobId);
  return job?.status === 'preparing' && job.worker_id === ctx.workerId ? job : undefined;
}

/** A job that continues from a checkpoint says so in its history before its progress starts again from there. */
async function noteResume(ctx: JobContext, job: TrainingJobRow, inputs: TrainingInputs): Promise<void> {
  if (inputs.resumeStep === undefined) return;
  await ctx.platform.jobs.appendEvent(job.job_id, 'log', { level: 'info', message: `resumed from step ${inputs.resumeStep} on ${ctx.workerId}` });
}

/** Runs the core's train command; throws JobFailure when it was stopped or failed. */
async function train(ctx: JobContext, job: TrainingJobRow, inputs: TrainingInputs, record: TrainingRecord): Promise<void> {
  const { platform } = ctx;
  const config = jobConfig(job);
  if (ctx.trainProcesses > 1) platform.logger.info({ jobId: job.job_id, processes: ctx.trainProcesses }, 'training on several processes (torchrun)');
  const oomBefore = await oomKills();
  // A stop asked of an earlier run of this job is not this run's, unless the job was pruned meanwhile.
  if (!job.prune_reason) await fs.rm(stopFile(platform, job.job_id), { force: true });
  // A score_model reward or evaluation grader asks its judge through a relay that runs it with the job owner's rights.
  const result = await withJudgeRelay(platform, job.user_id, [...(config.reward_config ?? []), ...(config.eval_config.graders ?? [])], (relay) =>
    runCore({
      command: 'train',
      spec: inputs.spec,
      specFile: inputs.specFile,
      python: platform.config.CORE_PYTHON,
      env: {
        ...trackerEnvironment(config, platform.config.MLFLOW_TRACKING_URI, job.job_name),
        ...secretsEnvironment(ctx.secrets, config),
        FTCORE_SHARDING: platform.config.TRAIN_SHARDING,
        FTCORE_PROGRESS_INTERVAL: String(platform.config.PROGRESS_INTERVAL_S),
        FTCORE_STOP_FILE: stopFile(platform, job.job_id),
        ...(relay ? { FTCORE_JUDGE_URL: relay.url, FTCORE_JUDGE_TOKEN: relay.token } : {}),
      },
      onEvent: record.onEvent,
      onStderr: (line) => platform.logger.debug({ jobId: job.job_id, core: line }),
      signal: ctx.signal,
      // Stopped, the core saves a checkpoint at its next step; the worker's grace period bounds the wait.
      cancelGraceMs: platform.config.WORKER_STOP_GRACE_S * 1000,
      processes: ctx.trainProcesses,
    }),
  );
  if (result.cancelled) throw new JobFailure(stopReason(ctx.signal, ctx.workerId));
  const killed = coreKilled(result, oomBefore, await oomKills());
  if (killed) throw killed;
  if (!result.done || result.exitCode !== 0) throw new JobFailure(describeCoreFailure(result));
}

/** The model is stored: completed, this host's speed recorded (with what the job spent around its steps, when it ran
 *  whole here), hub exports queued, secrets dropped. */
async function complete(ctx: JobContext, job: TrainingJobRow, stored: StoredModel, record: TrainingRecord, ranWhole: boolean): Promise<void> {
  const { platform } = ctx;
  const config = jobConfig(job);
  const metrics = record.finalMetrics();
  const done = await platform.jobs.update(
    job.job_id,
    { status: 'completed', artifacts: stored.artifacts, adapter_path: stored.adapterPath, gguf_path: stored.ggufPath, finished_at: new Date(), ...(metrics ? { metrics } : {}) },
    RUNNING,
    ctx.workerId,
  );
  if (!done) return;
  platform.logger.info({ jobId: job.job_id }, 'training job completed');
  const trainer = trainerOf(job);
  platform.metrics.jobsFinished.inc({ status: 'completed', trainer });
  if (metrics?.trained_tokens) platform.metrics.trainedTokens.inc({ trainer }, metrics.trained_tokens);
  const tokensPerSecond = record.tokensPerSecond();
  if (tokensPerSecond) platform.metrics.trainingTokensPerSecond.set({ trainer }, tokensPerSecond);
  if (tokensPerSecond) {
    // this host's speed for the model, method and trainer, and what the job spent around its steps: what dry runs
    // estimate the time from start to completed from
    const planned = record.plannedTokens();
    const overhead = ranWhole && planned !== null && job.started_at ? overheadSeconds(job.started_at, new Date(), planned, tokensPerSecond) : null;
    await platform.workers.recordThroughput({ ...ctx.machine, ...throughputKey(config), tokens_per_second: tokensPerSecond, measured_by: 'job', overhead_seconds: overhead });
  }
  // destination hub: the trained model (and its GGUF) go to the repo as exports, followed in latest_export.
  const { export_config: exportConfig } = config;
  if (exportConfig.destination === 'hub') {
    const hub = { jobId: job.job_id, userId: job.user_id, destination: ['hub' as const], hubRepoId: exportConfig.hub_repo_id, hubToken: ctx.secrets?.hubToken };
    await queueExport(platform, { ...hub, type: stored.adapter && exportConfig.format === 'adapter' ? 'adapter' : 'merged' });
    if (exportConfig.include_gguf) await queueExport(platform, { ...hub, type: 'gguf', ggufQuantization: exportConfig.gguf_quantization });
  }
  await platform.secrets.drop(job.job_id);
}

/** The run ended early: handed back (the worker stops), left alone (another worker took it), or failed. */
async function stopped(ctx: JobContext, job: TrainingJobRow, err: unknown): Promise<void> {
  const { platform } = ctx;
  const log = platform.logger.child({ jobId: job.job_id });
  if (ctx.signal.aborted && ctx.signal.reason === TAKEN) {
    log.warn('job taken from this worker (its heartbeat was lost); stopped without touching it');
    return;
  }
  if (ctx.signal.aborted && ctx.signal.reason === SHUTDOWN) {
    // The checkpoint the core saved on its way out was stored with its event, before this.
    const checkpoint = await platform.jobs.lastCheckpointStep(job.job_id);
    const from = checkpoint === undefined ? 'no checkpoint stored: it starts over' : `last checkpoint step ${checkpoint}`;
    if (await handBack(ctx, job, { level: 'info', message: `re-queued after worker ${ctx.workerId} stopped (SIGTERM; ${from})` })) {
      log.info({ checkpoint }, 'worker stopping: job handed back to the queue, to continue from its last checkpoint');
    }
    return;
  }
  if (ctx.signal.aborted && ctx.signal.reason === PAUSED && !(await platform.jobs.getForWorker(job.job_id))?.cancel_requested) {
    // As a stopping worker hands a job back, but to no queue: the checkpoint the core saved on its way out is stored.
    const checkpoint = await platform.jobs.lastCheckpointStep(job.job_id);
    if (await platform.jobs.update(job.job_id, { status: 'paused', worker_id: null, pause_requested: false }, RUNNING, ctx.workerId)) {
      const at = checkpoint === undefined ? 'before its first checkpoint: a resume starts it over' : `at checkpoint step ${checkpoint}: a resume continues from there`;
      await platform.jobs.appendEvent(job.job_id, 'log', { level: 'info', message: `paused by the user ${at}` });
      log.info({ checkpoint }, 'job paused');
    }
    return;
  }
  let killedFailure: string | undefined;
  if (err instanceof CoreKilled && !ctx.signal.aborted) {
    killedFailure = await requeueAfterCoreKill(ctx, job, err);
    if (killedFailure === undefined) return;
  }
  // Known failures carry a sentence for the user; anything else is the worker's own fault, logged in full.
  const message =
    killedFailure !== undefined ? killedFailure
    : err instanceof UnprocessableEntity ? err.issues.map((i) => i.msg).join('; ')
    : err instanceof JobFailure || err instanceof AppError ? err.message
    : `the worker failed: ${(err as Error).message}`;
  if (!(err instanceof JobFailure || err instanceof AppError || err instanceof CoreKilled)) log.error({ err }, 'training job failed');
  const now = new Date();
  const cancelled = ctx.signal.aborted && ctx.signal.reason !== SHUTDOWN && ctx.signal.reason !== TAKEN; // the user's cancel (also one during a pause)
  const failed = await platform.jobs.update(job.job_id, { status: 'failed', error: message, finished_at: now, ...(cancelled ? { cancelled_at: now } : {}) }, RUNNING, ctx.workerId);
  if (failed) platform.metrics.jobsFinished.inc({ status: cancelled ? 'cancelled' : 'failed', trainer: trainerOf(job) });
  await platform.secrets.drop(job.job_id);
}

/** The core died of SIGKILL under this living worker: with resume_on_restart the job goes back to the queue from its
 *  last stored checkpoint (undefined is returned), unless it died the same way from the same checkpoint before; else
 *  the sentence it fails with. */
async function requeueAfterCoreKill(ctx: JobContext, job: TrainingJobRow, killed: CoreKilled): Promise<string | undefined> {
  const { platform } = ctx;
  const atStep = (await platform.jobs.getForWorker(job.job_id))?.progress?.step ?? 0;
  const fix = killed.reason === 'oom_kill' ? `; ${MEMORY_FIX}` : '';
  if (!jobConfig(job).resume_on_restart) return `${killed.message} at step ${atStep}${fix}; with resume_on_restart a job resumes from its last checkpoint`;
  const checkpoint = await platform.jobs.lastCheckpointStep(job.job_id);
  const record: CoreKillRecord = { reason: killed.reason, from_step: checkpoint ?? 0, at_step: atStep };
  const from = checkpoint === undefined ? 'the start (no checkpoint stored)' : `checkpoint step ${checkpoint}`; // or a newer one this machine kept whole
  if (diedThereBefore(await platform.jobs.events(job.job_id), record)) return `${killed.message} twice at the same point, resuming from ${from}; not resumed again${fix}`;
  const message = `${killed.message} at step ${atStep}; re-queued to resume from ${from}`;
  if (await handBack(ctx, job, { level: 'warning', message, core_killed: record })) platform.logger.warn({ jobId: job.job_id, ...record }, message);
  return undefined;
}

/** The job, still this worker's and running, back to the queue for whichever worker takes it next (it resumes from
 *  its last checkpoint), `event` in its history; false when it was no longer this worker's to hand back. */
async function handBack(ctx: JobContext, job: TrainingJobRow, event: Record<string, unknown>): Promise<boolean> {
  const { platform } = ctx;
  if (!(await platform.jobs.update(job.job_id, { status: 'queued', worker_id: null }, RUNNING, ctx.workerId))) return false;
  await platform.jobs.appendEvent(job.job_id, 'log', event);
  await platform.queue.add(trainingQueue, { jobId: job.job_id });
  return true;
}
