// The preflight queue's processor (POST /train with dry_run, and a submit's check): the base model and the dataset's
// splits as a training job would have them, the core's pre-flight report (it checks the spec as `train` does, renders
// and counts the data and estimates memory; when this host has no speed figure yet for this model, method and
// trainer, a one-shot core also times a few real steps and the figure is recorded, else the warm core answers; a
// submit's check always asks the warm core), and the fleet's estimates added. Nothing of the request is stored here.
import fs from 'node:fs/promises';
import path from 'node:path';
import { CoreServerError, describeCoreFailure, runCore, type CoreServer } from '@ftp/core-client';
import { invalidField, newId, type Platform } from '@ftp/platform';
import { estimateOnFleet, throughputKey, type CoreReport } from '@ftp/jobs/training';
import { locateBaseModel } from '@ftp/jobs/models';
import type { PreflightPayload } from '@ftp/jobs/queues';
import { storedTrainingConfig, type PreflightReport } from '@ftp/schema';
import { baseModelFolder } from '../models/base-models.ts';
import { trainSpec } from './core-spec.ts';
import { downloadSplits, JobFailure } from './prepare.ts';

/** Where this worker trains: its host and training device (as throughput rows name them). */
export interface Machine {
  host: string;
  device: string;
}

/** The core's refusal of the spec as the API's 422, at training_config. */
const refused = (message: string) => invalidField(['body', 'training_config'], message);

/** This host was measured for the model, method and trainer, or a submit's check: the warm core (libraries
 *  imported, about a second; `sampled` false: without the warnings that load the model). */
async function warmReport(core: CoreServer, spec: Record<string, unknown>, signal: AbortSignal, sampled: boolean): Promise<CoreReport> {
  try {
    return (await core.preflight(spec, { signal, sampled })).report as unknown as CoreReport;
  } catch (err) {
    if (err instanceof CoreServerError && err.code === 'validation') throw refused(err.message);
    throw err;
  }
}

/** The first dry run for this host, model, method and trainer: a one-shot core that also times a few real steps
 *  (it trains, so it does not hold up the warm core's generation requests). */
async function probedReport(platform: Platform, spec: Record<string, unknown> & { output_file: string }, work: string, signal: AbortSignal): Promise<CoreReport> {
  const result = await runCore({
    command: 'preflight',
    spec,
    specFile: path.join(work, 'spec.json'),
    python: platform.config.CORE_PYTHON,
    env: { FTCORE_PROGRESS_INTERVAL: String(platform.config.PROGRESS_INTERVAL_S) },
    // What the probe does while the dry run's caller waits (its stages and their time so far, #39): the worker's log.
    onEvent: (event) => {
      if (event.event === 'log') platform.logger.info({ preflight: true }, `pre-flight probe: ${event.message}`);
    },
    onStderr: (line) => platform.logger.debug({ preflight: line }),
    signal,
  });
  if (result.error?.code === 'validation') throw refused(result.error.message);
  if (!result.done || result.exitCode !== 0) throw new JobFailure(describeCoreFailure(result));
  return JSON.parse(await fs.readFile(spec.output_file, 'utf8')) as CoreReport;
}

export async function runPreflight(platform: Platform, machine: Machine, payload: PreflightPayload, signal: AbortSignal, warmCore: () => CoreServer): Promise<PreflightReport> {
  const config = storedTrainingConfig(payload.training_config, 'the dry run');
  const dataset = await platform.datasets.getProcessed(payload.userId, payload.processed_dataset_id);
  if (!dataset) throw invalidField(['body', 'processed_dataset_id'], `processed dataset ${payload.processed_dataset_id} no longer exists`);
  const secrets = payload.secretsId ? await platform.secrets.open(payload.secretsId) : undefined;
  const key = throughputKey(config);
  // A first dry run for this host, model, method and trainer times a few real steps; a submit's check never does (a
  // probe trains, and a submit does not wait for that): it asks the warm core, without the sampled warnings.
  const probe = !payload.check && !(await platform.workers.throughput(key)).some((m) => m.host === machine.host && m.device === machine.device);

  const work = path.join(platform.config.dataDir, 'work', 'preflight', newId('req'));
  try {
    const location = await locateBaseModel(platform, config.provider, config.base_model_id, { hubToken: secrets?.hubToken });
    const baseModel = await baseModelFolder(platform, location, { ...(secrets ? { secrets } : {}), signal });
    const { trainFile, testFile } = await downloadSplits(platform, dataset, path.join(work, 'data'));
    const outputFile = path.join(work, 'report.json');
    const spec = {
      ...trainSpec(config, { baseModel, trainFile, ...(testFile ? { testFile } : {}), outputDir: path.join(work, 'run') }, { resume: false }),
      // the probe's few steps are no run of the user's: no tracker
      tracker_config: { provider: 'none', project: '', log_model: 'false' },
    };
    if (probe) {
      // The one slow dry run (half a minute on a laptop): say why it waits, in the log a person watches.
      platform.logger.info({ model: config.base_model_id, host: machine.host }, `dry run: measuring this host's training speed for ${config.base_model_id} (${config.method} ${config.trainer_type}) with a few real steps; once per host, model, method and trainer`);
    }
    const probeStarted = performance.now();
    const report = probe ? await probedReport(platform, { ...spec, output_file: outputFile, measure_throughput: true }, work, signal) : await warmReport(warmCore(), spec, signal, !payload.check);
    if (report.throughput) {
      // Until a job has run here, what the probe spent around its steps (a core starting, the model loaded, the data
      // prepared) stands for a job's time around its steps: the first estimate is then the user's time too.
      const { steps_seconds } = report.throughput;
      const overhead = steps_seconds === undefined ? null : Math.max(0, (performance.now() - probeStarted) / 1000 - steps_seconds);
      await platform.workers.recordThroughput({ ...machine, ...key, tokens_per_second: report.throughput.tokens_per_second, measured_by: 'probe', overhead_seconds: overhead });
    }
    return await estimateOnFleet(platform, report, key);
  } finally {
    await fs.rm(work, { recursive: true, force: true });
  }
}
