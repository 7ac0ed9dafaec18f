// The `sweep` lane: the worker that holds a sweep asks its Optuna study for trials (the core's `ftcore sweep`, each
// call a process of its own that opens the study, does one thing and exits), submits each as an ordinary training job
// of the sweep's owner, reports every evaluation of a trial to the pruner (a trial it would stop is pruned: its job
// ends training at the next step and completes there), tells the study how each trial ended, and ends the sweep with
// its best completed trial. Everything told is recorded in sweep_trials as well, before or as it is told, so the
// worker that takes the sweep after this one died goes on from there: a trial the study proposed that never became a
// job is told failed, and the rest are followed as they were.
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId, UnprocessableEntity, type JobSecretValues, type Platform, type SweepRow, type SweepTrialRow, type TrainingJobRow } from '@ftp/platform';
import { cancelTrials, submitTrainingJob, trialRequest, type StoredSweepRequest } from '@ftp/jobs/training';
import { sweepQueue } from '@ftp/jobs/queues';
import { describeCoreFailure, runCore } from '@ftp/core-client';
import { SHUTDOWN } from '../training/job-context.ts';

export interface SweepContext {
  platform: Platform;
  workerId: string;
  /** Aborted when the worker stops (SHUTDOWN: the sweep goes back to the queue) or the sweep is no longer this
   *  worker's (TAKEN). */
  signal: AbortSignal;
}

/** How often the holder looks at its trials. */
const POLL_MS = 1_000;

interface Proposal { trial: number | null; params: Record<string, unknown> | null }
interface StudyTrial { trial: number; state: string }

/** The sweep's Optuna study through the core: embedded, a journal file under DATA_DIR; scaled out, the deployment's
 *  PostgreSQL (FTCORE_SWEEP_STORAGE, never in a spec file: the URL holds a password). */
class Study {
  private readonly dir: string;
  private calls = 0;

  constructor(private readonly platform: Platform, private readonly sweep: SweepRow, private readonly request: StoredSweepRequest, private readonly signal: AbortSignal) {
    this.dir = path.join(platform.config.dataDir, 'work', 'sweeps', sweep.sweep_id);
  }

  ask(): Promise<Proposal> {
    return this.call('ask', {});
  }

  async report(trial: number, step: number, value: number): Promise<boolean> {
    return (await this.call<{ prune: boolean }>('report', { trial, step, value })).prune;
  }

  async tell(trial: number, state: 'complete' | 'pruned' | 'failed', value?: number): Promise<void> {
    await this.call('tell', { trial, state, ...(value === undefined ? {} : { value }) });
  }

  async trials(): Promise<StudyTrial[]> {
    return (await this.call<{ trials: StudyTrial[] }>('trials', {})).trials;
  }

  /** Not stopped by the sweep's signal: once the sweep's row says it ended, the worker's heartbeat takes the sweep for
   *  gone from it and aborts that signal, which stopped this delete and left the study in PostgreSQL. */
  async delete(): Promise<void> {
    await this.call('delete', {}, false);
    await fs.rm(this.dir, { recursive: true, force: true });
  }

  private async call<T>(op: string, extra: Record<string, unknown>, stoppable = true): Promise<T> {
    const { platform, request } = this;
    await fs.mkdir(this.dir, { recursive: true });
    const n = ++this.calls;
    const output = path.join(this.dir, `${op}-${n}.out.json`);
    const embedded = !platform.config.DATABASE_URL;
    const spec = {
      op, study: this.sweep.sweep_id, output_file: output,
      ...(embedded ? { journal_file: path.join(platform.config.dataDir, 'sweeps', `${this.sweep.sweep_id}.journal`) } : {}),
      space: request.space, direction: request.objective.direction, sampler: request.sampler, pruner: request.pruner,
      startup_trials: request.startup_trials, seed: request.seed, ...extra,
    };
    const result = await runCore({
      command: 'sweep', spec, specFile: path.join(this.dir, `${op}-${n}.json`), python: platform.config.CORE_PYTHON,
      env: embedded ? {} : { FTCORE_SWEEP_STORAGE: platform.config.DATABASE_URL },
      onStderr: (line) => platform.logger.debug({ sweepId: this.sweep.sweep_id, core: line }),
      ...(stoppable ? { signal: this.signal } : {}),
    });
    if (result.cancelled) throw new Error(`the study's ${op} was stopped`);
    if (!result.done || result.exitCode !== 0) throw new Error(`the study's ${op} failed: ${describeCoreFailure(result)}`);
    const answer = JSON.parse(await fs.readFile(output, 'utf8')) as T;
    await fs.rm(output, { force: true });
    return answer;
  }
}

/** What a trial's job has reported of the objective so far: at each evaluation, and at its final one. */
interface Objective { afterSeq: number; steps: Array<[number, number]>; final?: number }

/** The objective's new values from the job's event log, read from where the last look stopped (the holder looks every
 *  second; a job's log grows by a progress event every PROGRESS_INTERVAL_S). */
async function readObjective(platform: Platform, jobId: string, metric: string, seen: Objective): Promise<Objective> {
  for (const event of await platform.jobs.events(jobId, seen.afterSeq)) {
    seen.afterSeq = event.seq;
    if (event.kind !== 'metrics') continue;
    const value = event.data[metric];
    if (typeof value !== 'number' || !Number.isFinite(value)) continue;
    if (event.data.final === true) seen.final = value;
    else if (typeof event.data.step === 'number') seen.steps.push([event.data.step, value]);
  }
  return seen;
}

/** Holds the sweep until it ends, the worker stops or the sweep is taken from it. */
export async function runSweep(ctx: SweepContext, sweepId: string): Promise<void> {
  const { platform, workerId, signal } = ctx;
  const sweep = await platform.sweeps.claim(sweepId, workerId);
  if (!sweep) return; // cancelled, or taken by another worker
  const log = platform.logger.child({ sweepId });
  const request = sweep.request as unknown as StoredSweepRequest;
  const study = new Study(platform, sweep, request, signal);
  const secrets = await platform.secrets.open(sweepId);
  const better = (a: number, b: number) => (request.objective.direction === 'minimize' ? a < b : a > b);
  // A grid with no point left proposes nothing more: asked once, not at every look.
  let exhausted = false;
  const objectives = new Map<string, Objective>();
  try {
    await settleUnsubmitted(platform, study, sweepId);
    for (;;) {
      const row = await platform.sweeps.getForWorker(sweepId);
      if (!row || row.status !== 'running' || row.worker_id !== workerId) return;
      const trials = await platform.sweeps.trials(sweepId);
      const jobs = new Map((await platform.jobs.listOfSweep(sweepId)).map((j) => [j.job_id, j]));
      if (row.cancel_requested) {
        await cancelTrials(platform, row.user_id, trials.filter((t) => t.state === 'running').flatMap((t) => jobs.get(t.job_id ?? '') ?? []));
        for (const t of trials.filter((x) => x.state === 'running')) await platform.sweeps.updateTrial(sweepId, t.trial, { state: 'failed', error: 'cancelled with its sweep' });
        await end(platform, study, sweepId, workerId, { status: 'cancelled' });
        return;
      }
      for (const trial of trials.filter((t) => t.state === 'running')) await follow(platform, study, request, trial, jobs.get(trial.job_id ?? ''), objectives);
      const now = await platform.sweeps.trials(sweepId);
      let running = now.filter((t) => t.state === 'running').length;
      let asked = now.length;
      while (running < request.budget.parallel && asked < request.budget.trials && !exhausted) {
        const proposal = await study.ask();
        if (proposal.trial === null || proposal.params === null) {
          exhausted = true;
          break;
        }
        await submitTrial(platform, study, row, request, { trial: proposal.trial, params: proposal.params }, secrets);
        running++;
        asked++;
      }
      if (running === 0 && (exhausted || asked >= request.budget.trials)) {
        // Nothing was submitted since `now` was read (none runs, and none more may be asked).
        const done = now.filter((t) => t.state === 'completed' && t.value !== null);
        const best = done.reduce<SweepTrialRow | undefined>((b, t) => (!b || better(t.value!, b.value!) ? t : b), undefined);
        await end(platform, study, sweepId, workerId, best
          ? { status: 'completed', best_job_id: best.job_id, best_value: best.value }
          : { status: 'failed', error: `no trial completed with ${request.objective.metric}: each trial's error says why` });
        log.info({ best: best?.job_id }, 'sweep ended');
        return;
      }
      await sleep(POLL_MS, undefined, { signal });
    }
  } catch (err) {
    if (signal.aborted) {
      if (signal.reason === SHUTDOWN && (await platform.sweeps.update(sweepId, { status: 'queued', worker_id: null }, workerId))) {
        await platform.queue.add(sweepQueue, { sweepId });
        log.info('worker stopping: sweep handed back to the queue; its next holder goes on from its recorded trials');
      }
      return;
    }
    log.error({ err }, 'sweep failed');
    await end(platform, study, sweepId, workerId, { status: 'failed', error: `the sweep's worker failed: ${(err as Error).message}` }).catch(() => undefined);
  }
}

/** Submits one proposed trial as a training job of the sweep's owner (its id chosen and recorded first). */
async function submitTrial(platform: Platform, study: Study, row: SweepRow, request: StoredSweepRequest, proposal: { trial: number; params: Record<string, unknown> }, secrets: JobSecretValues | undefined): Promise<void> {
  const jobId = newId('job');
  await platform.sweeps.insertTrial({ sweep_id: row.sweep_id, trial: proposal.trial, job_id: jobId, params: proposal.params });
  const trainRequest = trialRequest(request.training_request, proposal.params, `${row.name} · trial ${proposal.trial}`);
  if (secrets?.hubToken) trainRequest.hub_token = secrets.hubToken;
  if (secrets?.trackerApiKey && trainRequest.training_config.tracker_config) trainRequest.training_config.tracker_config.api_key = secrets.trackerApiKey;
  try {
    await submitTrainingJob(platform, row.user_id, trainRequest, { job_id: jobId, sweep_id: row.sweep_id });
  } catch (err) {
    const why = err instanceof UnprocessableEntity ? err.issues.map((i) => `${i.loc.slice(1).join('.')}: ${i.msg}`).join('; ') : (err as Error).message;
    await study.tell(proposal.trial, 'failed');
    await platform.sweeps.updateTrial(row.sweep_id, proposal.trial, { state: 'failed', error: `its job could not be submitted: ${why}` });
  }
}

/** One running trial: its new evaluations reported to the pruner (pruning its job when the pruner says so), and its
 *  end told to the study. */
async function follow(platform: Platform, study: Study, request: StoredSweepRequest, trial: SweepTrialRow, job: TrainingJobRow | undefined, objectives: Map<string, Objective>): Promise<void> {
  const { sweep_id: sweepId } = trial;
  if (!job) {
    await study.tell(trial.trial, 'failed');
    await platform.sweeps.updateTrial(sweepId, trial.trial, { state: 'failed', error: 'its job was deleted' });
    return;
  }
  const metric = request.objective.metric;
  const seen = await readObjective(platform, job.job_id, metric, objectives.get(job.job_id) ?? { afterSeq: 0, steps: [] });
  objectives.set(job.job_id, seen);
  const reported = Math.max(0, ...Object.keys(trial.steps).map(Number));
  const steps = { ...trial.steps };
  for (const [step, value] of seen.steps.filter(([s]) => s > reported)) {
    const prune = await study.report(trial.trial, step, value);
    steps[String(step)] = value;
    await platform.sweeps.updateTrial(sweepId, trial.trial, { steps });
    if (prune && job.status !== 'completed' && job.status !== 'failed') {
      const why = `trial ${trial.trial} of sweep ${sweepId}: its ${metric} ${value.toPrecision(4)} at step ${step} is behind the other trials' at that step (${request.pruner} pruner)`;
      await platform.jobs.requestPrune(job.job_id, why);
    }
  }
  if (job.status === 'completed') {
    const last = seen.steps.at(-1)?.[1];
    if (job.prune_reason) {
      await study.tell(trial.trial, 'pruned');
      await platform.sweeps.updateTrial(sweepId, trial.trial, { state: 'pruned', value: seen.final ?? last ?? null, error: job.prune_reason });
    } else if (seen.final !== undefined) {
      await study.tell(trial.trial, 'complete', seen.final);
      await platform.sweeps.updateTrial(sweepId, trial.trial, { state: 'completed', value: seen.final });
    } else {
      await study.tell(trial.trial, 'failed');
      await platform.sweeps.updateTrial(sweepId, trial.trial, { state: 'failed', error: `its final evaluation reported no ${metric}; pick an objective its evaluations report (eval_loss, accuracy, perplexity, valid_score)` });
    }
  } else if (job.status === 'failed') {
    await study.tell(trial.trial, 'failed');
    await platform.sweeps.updateTrial(sweepId, trial.trial, { state: 'failed', error: job.error ?? 'its job failed' });
  }
}

/** A trial the study proposed that never became a trial row (its holder died between the two) is told failed, so the
 *  study does not wait for it. */
async function settleUnsubmitted(platform: Platform, study: Study, sweepId: string): Promise<void> {
  const recorded = new Set((await platform.sweeps.trials(sweepId)).map((t) => t.trial));
  for (const t of await study.trials()) {
    if (t.state === 'running' && !recorded.has(t.trial)) await study.tell(t.trial, 'failed');
  }
}

/** The sweep ends: its row (while this worker holds it), then its study and sealed secrets, which it no longer needs. */
async function end(platform: Platform, study: Study, sweepId: string, workerId: string, update: { status: 'completed' | 'failed' | 'cancelled'; best_job_id?: string | null; best_value?: number | null; error?: string }): Promise<void> {
  if (!(await platform.sweeps.update(sweepId, { ...update, finished_at: new Date() }, workerId))) return;
  await deleteStudy(platform, study, sweepId);
  await platform.secrets.drop(sweepId);
}

async function deleteStudy(platform: Platform, study: Study, sweepId: string): Promise<boolean> {
  try {
    await study.delete();
    await platform.sweeps.studyDeleted(sweepId);
    return true;
  } catch (err) {
    platform.logger.warn({ err, sweepId }, 'could not delete the ended sweep\'s study');
    return false;
  }
}

/** How long after a sweep ended its study may stay before another worker deletes it: its holder deletes it at once. */
const LEFT_STUDY_GRACE_S = 60;
/** After a failed delete, how long before it is tried again. */
const LEFT_STUDY_RETRY_MS = 5 * 60_000;
const leftStudyRetry = new Map<string, number>();

/** Deletes the studies ended sweeps left (a holder killed between ending the row and deleting the study; a sweep that
 *  ended while queued again after its holder died): called on the heartbeat of a worker serving the sweep lane. A
 *  Python process only when there is one to delete. */
export async function deleteLeftStudies(platform: Platform): Promise<string[]> {
  const deleted: string[] = [];
  for (const row of await platform.sweeps.listStudiesLeft(LEFT_STUDY_GRACE_S)) {
    if ((leftStudyRetry.get(row.sweep_id) ?? 0) > Date.now()) continue;
    const study = new Study(platform, row, row.request as unknown as StoredSweepRequest, new AbortController().signal);
    if (await deleteStudy(platform, study, row.sweep_id)) {
      leftStudyRetry.delete(row.sweep_id);
      deleted.push(row.sweep_id);
      platform.logger.info({ sweepId: row.sweep_id }, 'deleted the study an ended sweep left behind');
    } else {
      leftStudyRetry.set(row.sweep_id, Date.now() + LEFT_STUDY_RETRY_MS);
    }
  }
  return deleted;
}
