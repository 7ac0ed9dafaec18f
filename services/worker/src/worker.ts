// A worker: registers itself (host, devices, queues served), consumes each queue it serves as its own lane
// (training WORKER_CONCURRENCY at a time, exports one at a time, inference, evaluation and batches on warm engines,
// datasets augmented by a language model two at a time, evaluations with benchmarks one at a time), beats
// its heartbeat, stops the training jobs and evaluations whose users cancelled them, and on stop hands its unfinished
// jobs, exports, evaluations and datasets back to the queue within WORKER_STOP_GRACE_S. Its processors wait out a database or storage outage
// (OUTAGE_RETRY_S), and the jobs at work when one ends say so in their history. It imports packages only.
import os from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { newId, RUNNING_STATUSES, withOutageRetries, type JobHandler, type Consumer, type Outage, type Platform, type QueueDefinition, type WorkContext } from '@ftp/platform';
import { augmentQueue, batchQueue, benchmarkQueue, evaluateQueue, exportQueue, inferQueue, preflightQueue, sessionQueue, sweepQueue, trainingQueue, type QueueName } from '@ftp/jobs/queues';
import { trainingDevice } from '@ftp/jobs/training';
import { watchIntervalMs } from '@ftp/jobs/runtime';
import { detectDevices, registerGpuMetrics } from './devices.ts';
import { sweepWorkDirs } from './work-dirs.ts';
import { noteStalledWork } from './stalled-work.ts';
import { InferenceEngines, type InferenceEnginesOptions } from './inference/engines.ts';
import { runEvaluation } from './inference/run-evaluation.ts';
import { runComparison } from './inference/run-comparison.ts';
import { runInference } from './inference/run-inference.ts';
import { runBatch } from './inference/run-batch.ts';
import { runExportJob } from './export/run-export-job.ts';
import { runTrainingJob } from './training/run-training-job.ts';
import { runPreflight } from './training/preflight.ts';
import { runProcessingJob } from './datasets/run-processing.ts';
import { runBenchmarkEvaluation } from './evaluations/run-benchmark-evaluation.ts';
import { runTinkerSession } from './tinker/run-session.ts';
import { deleteLeftStudies, runSweep } from './sweeps/run-sweep.ts';
import { stopEarly } from './training/stop-early.ts';
import { BackgroundPreparation } from './inference/prepare-after-training.ts';
import { PAUSED, SHUTDOWN, TAKEN, type JobContext } from './training/job-context.ts';

export interface WorkerHandle {
  workerId: string;
  /** Prepares completed jobs' models for chat in the background, one at a time (a worker serving infer, unless
   *  PREPARE_GGUF_AFTER_TRAINING is false). */
  preparation?: BackgroundPreparation;
  /** Hands back unfinished training jobs and exports (their cores checkpoint first), lets requests finish, stops. */
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** The queues to serve (default WORKER_QUEUES). */
  queues?: readonly QueueName[];
  /** Training jobs at once (default WORKER_CONCURRENCY). */
  concurrency?: number;
  /** The warm engines' settings (tests give the core a broken encoder, say). */
  engines?: InferenceEnginesOptions;
}

interface AtWork {
  queue: QueueName;
  controller: AbortController;
}

export async function startWorker(platform: Platform, options: WorkerOptions = {}): Promise<WorkerHandle> {
  const workerId = newId('wrk');
  const queues = [...(options.queues ?? platform.config.WORKER_QUEUES)];
  const devices = await detectDevices();
  registerGpuMetrics(platform.metrics);
  const registration = { worker_id: workerId, host: os.hostname(), pid: process.pid, devices, queues };
  await platform.workers.register(registration);
  const log = platform.logger.child({ workerId });
  const machine = { host: registration.host, device: trainingDevice(devices).device };
  const trainProcesses = platform.config.TRAIN_PROCESSES ?? Math.max(1, devices.filter((d) => d.kind === 'cuda').length);

  const atWork = new Map<string, AtWork>();
  const consumers: Consumer[] = [];
  // The processors' stores wait out outages; the heartbeat does not (a beat that fails is tried at the next tick).
  const work = withOutageRetries(platform);
  work.outages!.onRecovered((outage) => void noteOutage(work, workerId, outage, [...atWork].filter(([, w]) => w.queue === 'train').map(([id]) => id)));
  platform.queue.onStalled((queue, payload) => void noteStalledWork(platform, queue, payload).catch((err: unknown) => log.warn({ err, queue }, 'could not look up dropped work')));
  let engines: InferenceEngines | undefined;
  const warmEngines = () => (engines ??= new InferenceEngines(work, options.engines));

  /** Consumes `queue`, tracking each piece of work (by `idOf`) with its own abort controller. */
  const serve = <P, R>(
    name: QueueName,
    queue: QueueDefinition<P, R>,
    idOf: (payload: P, id: string) => string,
    run: (payload: P, signal: AbortSignal, report: WorkContext['report']) => Promise<R>,
    concurrency?: number,
  ) => {
    if (!queues.includes(name)) return;
    const handler: JobHandler<P, R> = async (payload, context) => {
      const id = idOf(payload, context.id);
      const controller = new AbortController();
      const forward = () => controller.abort(context.signal.reason);
      context.signal.addEventListener('abort', forward, { once: true });
      const entry = { queue: name, controller };
      atWork.set(id, entry);
      try {
        return await run(payload, controller.signal, context.report);
      } finally {
        context.signal.removeEventListener('abort', forward);
        // A Tinker run let go may be taken again here before this handler has closed its core: the newer entry stays.
        if (atWork.get(id) === entry) atWork.delete(id);
      }
    };
    consumers.push(platform.queue.process(queue, handler, concurrency === undefined ? {} : { concurrency }));
  };

  const preparation = platform.config.PREPARE_GGUF_AFTER_TRAINING && queues.includes('infer') ? new BackgroundPreparation(work, machine) : undefined;
  const jobContext = async (id: string, signal: AbortSignal): Promise<JobContext> => {
    const secrets = await work.secrets.open(id);
    return { platform: work, workerId, machine, trainProcesses, signal, ...(secrets ? { secrets } : {}) };
  };
  serve('train', trainingQueue, (p) => p.jobId, async (p, signal) => {
    await runTrainingJob(await jobContext(p.jobId, signal), p.jobId);
    preparation?.afterTraining(p.jobId);
  }, options.concurrency ?? platform.config.WORKER_CONCURRENCY);
  serve('export', exportQueue, (p) => p.exportId, async (p, signal) => runExportJob({ platform: work, workerId, machine, trainProcesses, signal }, p.exportId));
  serve('infer', inferQueue, (_p, id) => id, (p, signal, report) => runInference(work, warmEngines(), p, signal, report));
  // The evaluate lane also grades answers (the /v1 graders endpoints) and compares two models (POST /comparisons).
  serve('evaluate', evaluateQueue, (_p, id) => id, (p, signal) =>
    'grade' in p ? warmEngines().grade(p.grade, p.userId, signal) : 'compare' in p ? runComparison(work, warmEngines(), p, signal) : runEvaluation(work, warmEngines(), p, signal));
  serve('preflight', preflightQueue, (_p, id) => id, (p, signal) => runPreflight(work, machine, p, signal, () => warmEngines().core));
  serve('augment', augmentQueue, (p) => p.processedDatasetId, (p, signal) => runProcessingJob({ platform: work, workerId, signal }, p.processedDatasetId));
  serve('batch', batchQueue, (p) => p.batchId, (p, signal) => runBatch({ platform: work, workerId, signal }, warmEngines(), p.batchId));
  serve('benchmark', benchmarkQueue, (p) => p.evaluationId, (p, signal) => runBenchmarkEvaluation({ platform: work, workerId, signal }, p.evaluationId));
  serve('session', sessionQueue, (p) => p.runId, (p, signal) => runTinkerSession({ platform: work, workerId, device: machine.device.startsWith('cuda') ? 'cuda' : 'cpu', signal }, p.runId));
  serve('sweep', sweepQueue, (p) => p.sweepId, (p, signal) => runSweep({ platform: work, workerId, signal }, p.sweepId));

  // Heartbeat; cancel requests and jobs taken from this worker (flags on the rows, so any process can set them).
  let beating: Promise<void> | undefined;
  const beat = async () => {
    if (!(await platform.workers.heartbeat(workerId, [...atWork.keys()], preparation?.state() ?? null))) {
      log.warn('this worker was taken for dead (its heartbeat was late); registering again');
      await platform.workers.register(registration, [...atWork.keys()]);
    }
    for (const [id, work] of atWork) {
      if (work.queue === 'benchmark') {
        await checkEvaluation(platform, workerId, id, work.controller);
        continue;
      }
      if (work.queue === 'session') {
        // A Tinker run cancelled (or failed by a watchdog while this worker was silent) is no longer this worker's.
        const run = await platform.tinker.getRunForWorker(id);
        // (Queued is the moment before this worker claims it.)
        if (!run || (run.status !== 'queued' && (run.status !== 'running' || run.worker_id !== workerId))) work.controller.abort(TAKEN);
        continue;
      }
      if (work.queue === 'sweep') {
        // Handed back or failed by a watchdog while this worker was silent: no longer this worker's to hold.
        const sweep = await platform.sweeps.getForWorker(id);
        if (!sweep || (sweep.status !== 'queued' && (sweep.status !== 'running' || sweep.worker_id !== workerId))) work.controller.abort(TAKEN);
        continue;
      }
      if (work.queue !== 'train') continue;
      const job = await platform.jobs.getForWorker(id);
      if (!job || job.cancel_requested) work.controller.abort('cancelled');
      // A job past its last step (saving, evaluating, storing its model) completes: pausing it would only delay that.
      else if (job.pause_requested && !(job.progress?.total_steps != null && job.progress.step >= job.progress.total_steps)) work.controller.abort(PAUSED);
      // Failed or re-queued by a watchdog while this worker was silent, or running elsewhere now. (Queued is the
      // moment before this worker claims it.)
      else if (job.status !== 'queued' && (job.worker_id !== workerId || !RUNNING_STATUSES.includes(job.status))) work.controller.abort(TAKEN);
      // A sweep's pruner stopped it: training ends at its next step and the job completes there.
      else if (job.prune_reason) await stopEarly(platform, id, job.prune_reason);
    }
    await sweepWorkDirs(platform, workerId, new Set(atWork.keys()));
    if (queues.includes('sweep')) await deleteLeftStudies(platform);
  };
  const timer = setInterval(() => {
    beating ??= beat()
      .catch((err: unknown) => log.warn({ err }, 'worker heartbeat failed'))
      .finally(() => (beating = undefined));
  }, Math.min(2_000, watchIntervalMs(platform)));
  timer.unref();

  log.info({ devices, queues }, 'worker started');
  return {
    workerId,
    ...(preparation ? { preparation } : {}),
    async stop() {
      // Long work is stopped and handed back (a training job's core checkpoints first, and the checkpoint is stored);
      // requests (seconds) are left to finish. The heartbeat goes on meanwhile, or the watchdog would take this
      // worker for dead and fail its jobs while they are being handed back. Past the grace period the worker goes
      // without them: the watchdog recovers what is left once the worker's row is gone.
      for (const at of atWork.values()) if (at.queue === 'train' || at.queue === 'export' || at.queue === 'augment' || at.queue === 'batch' || at.queue === 'benchmark' || at.queue === 'session' || at.queue === 'sweep') at.controller.abort(SHUTDOWN);
      const graceMs = platform.config.WORKER_STOP_GRACE_S * 1000;
      const grace = new AbortController();
      const finished = await Promise.race([Promise.all(consumers.map((c) => c.close())).then(() => true), sleep(graceMs, false, { signal: grace.signal }).catch(() => false)]);
      grace.abort();
      clearInterval(timer);
      await beating;
      if (!finished) log.warn({ graceS: platform.config.WORKER_STOP_GRACE_S, work: [...atWork.keys()] }, 'work still running at the end of the grace period; stopping without it');
      await preparation?.stop();
      await engines?.close();
      await platform.workers.remove(workerId);
      log.info('worker stopped');
    },
  };
}

/** Stops an evaluation this worker runs when its row says so: cancelled by its user (or deleted with its job), or no
 *  longer this worker's (failed or queued again by a watchdog while this worker was silent). */
async function checkEvaluation(platform: Platform, workerId: string, evaluationId: string, controller: AbortController): Promise<void> {
  const row = await platform.evaluationRuns.getForWorker(evaluationId);
  if (!row || row.status === 'cancelled') controller.abort('cancelled');
  // (Queued is the moment before this worker claims it.)
  else if (row.status !== 'queued' && (row.status !== 'running' || row.worker_id !== workerId)) controller.abort(TAKEN);
}

/** An outage the worker's writes waited out, in the history of each training job it was running. */
async function noteOutage(platform: Platform, workerId: string, outage: Outage, jobIds: readonly string[]): Promise<void> {
  const message = `${outage.store} unreachable, retrying: worker ${workerId} could not reach it for ${outage.seconds} s (${outage.attempts} failed attempts: ${outage.reason}); its writes went through once it answered`;
  for (const jobId of jobIds) {
    await platform.jobs.appendEvent(jobId, 'log', { level: 'warning', message }).catch((err: unknown) => platform.logger.warn({ err, jobId }, 'could not note the outage in the job history'));
  }
}
