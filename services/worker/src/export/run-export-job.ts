// One export, start to end: the job's model as local files (JobModels builds what training did not keep),
// then cloud (a raw folder and one downloadable file under the job's blob prefix, so deleting the job deletes
// them) and/or a hub repository (one commit); the export row and the job's artifacts record the result.
// Any failure ends the row `failed` with a sentence a person can act on; the hub token appears nowhere.
import path from 'node:path';
import { create as createTar } from 'tar';
import {
  AppError,
  exportQueue,
  type ArtifactGroupsRow,
  type ExportArtifactRow,
  type ExportRow,
  type JobSecretValues,
  type Platform,
  type TrainingJobRow,
} from '@ftp/platform';
import type { GgufQuantization } from '@ftp/schema';
import { ggufFileName, JobModels, ModelBuildError } from '../models/job-models.ts';
import { listFolderFiles, uploadFolder } from '../models/blob-folders.ts';
import { SHUTDOWN } from '../training/run-training-job.ts';
import { HubPublishError, publishToHub, type HubFile } from './hub-publish.ts';

export const HUB_TOKEN_LOST =
  'the hub token of this export is kept in memory only and was lost with the process that held it; start the export again with hub_token';

export interface ExportContext {
  platform: Platform;
  workerId: string;
  secrets?: JobSecretValues;
  /** Aborted with SHUTDOWN when the worker stops; the row then stays running for the next start to recover. */
  signal: AbortSignal;
}

class ExportFailure extends Error {}

/** What one export type is made of: its local files and where its cloud copies go. */
interface ExportPlan {
  /** Every local file to publish, with its path inside the repository. */
  hubFiles(): Promise<HubFile[]>;
  /** Stores the cloud copies (raw folder and/or downloadable file); returns their artifacts. */
  storeInCloud(): Promise<ExportArtifactRow[]>;
  /** How the cloud copy reads in the export's message. */
  cloudDescription: string;
}

export async function runExportJob(ctx: ExportContext, exportId: string): Promise<void> {
  const { platform } = ctx;
  const row = await platform.exports.update(exportId, { worker_id: ctx.workerId, message: 'exporting' });
  if (!row) return; // finished or gone meanwhile
  const log = platform.logger.child({ exportId, jobId: row.job_id });
  const produced: ExportArtifactRow[] = [];
  try {
    const job = await platform.jobs.getForWorker(row.job_id);
    if (!job || job.status !== 'completed') {
      throw new ExportFailure(`training job ${row.job_id} ${job ? `is ${job.status}` : 'no longer exists'}; only a completed job can be exported`);
    }
    const hubToken = ctx.secrets?.hubToken;
    if (row.destination.includes('hub') && !hubToken) throw new ExportFailure(HUB_TOKEN_LOST);
    const models = new JobModels(platform, job, { ...(hubToken ? { secrets: { hubToken } } : {}), signal: ctx.signal });
    const plan = exportPlan(platform, job, models, row);
    const done: string[] = [];
    if (row.destination.includes('cloud')) {
      produced.push(...(await plan.storeInCloud()));
      done.push(`cloud storage (${plan.cloudDescription})`);
    }
    if (row.destination.includes('hub')) {
      const target = { endpoint: platform.config.HF_ENDPOINT, token: hubToken!, repoId: row.hub_repo_id!, timeoutMs: platform.config.HUB_TIMEOUT_MS, signal: ctx.signal };
      const url = await publishToHub(target, await plan.hubFiles(), `Upload ${row.type} of training job ${job.job_name} (${job.job_id})`);
      produced.push({ type: row.type, variant: 'hub', path: url });
      done.push(url);
    }
    await recordOnJob(platform, job.job_id, produced);
    await platform.exports.update(exportId, { status: 'completed', message: `${row.type} exported to ${done.join(' and ')}`, artifacts: produced, finished_at: new Date() });
    log.info({ artifacts: produced.length }, 'export completed');
  } catch (err) {
    if (ctx.signal.aborted && ctx.signal.reason === SHUTDOWN) {
      log.warn('export interrupted by the worker stopping; the next start recovers it');
      return;
    }
    const known = err instanceof ExportFailure || err instanceof HubPublishError || err instanceof ModelBuildError || err instanceof AppError;
    if (!known) log.error({ err }, 'export failed');
    let message = known ? err.message : `the export worker failed: ${(err as Error).message}`;
    if (produced.length > 0) message = `stored in cloud storage, but ${message}`;
    await recordOnJob(platform, row.job_id, produced).catch((e: unknown) => log.warn({ err: e }, 'could not record the partial export'));
    await platform.exports.update(exportId, { status: 'failed', message, artifacts: produced, finished_at: new Date() });
  }
}

function exportPlan(platform: Platform, job: TrainingJobRow, models: JobModels, row: ExportRow): ExportPlan {
  const exportsPrefix = `${job.blob_prefix}exports`;
  const folderFiles = async (folder: string): Promise<HubFile[]> =>
    (await listFolderFiles(folder)).map((rel) => ({ path: rel, file: path.join(folder, rel) }));

  if (row.type === 'gguf') {
    const quantization = (row.gguf_quantization ?? 'q8_0') as GgufQuantization;
    const name = ggufFileName(quantization);
    const ggufFiles = async (): Promise<HubFile[]> => {
      const file = await models.gguf(quantization);
      return [{ path: name, file }, { path: 'Modelfile', file: path.join(path.dirname(file), 'Modelfile') }];
    };
    return {
      cloudDescription: `${name} with its Ollama Modelfile`,
      hubFiles: ggufFiles,
      async storeInCloud() {
        // The GGUF training wrote (include_gguf) serves as it is; otherwise it goes beside the other exports.
        let key = `${models.prefixes.gguf}${name}`;
        if (!(await platform.blobs.stat(key))) {
          const prefix = `${exportsPrefix}/gguf-${quantization}`;
          await uploadFolder(platform, path.dirname(await models.gguf(quantization)), prefix);
          key = `${prefix}/${name}`;
        }
        return [{ type: 'gguf', variant: 'file', path: platform.blobs.uri(key) }];
      },
    };
  }

  const kind = row.type;
  const localFolder = () => (kind === 'adapter' ? models.adapter() : models.merged());
  return {
    cloudDescription: `folder and ${kind}.tar.gz`,
    hubFiles: async () => folderFiles(await localFolder()),
    async storeInCloud() {
      const folder = await localFolder();
      // The raw folder: training stored the adapter (and a merged model when asked); a merge made now is stored
      // where training would have put it, so the next JobModels downloads it instead of merging again.
      const raw = job.artifacts.raw[kind] ?? (await uploadFolder(platform, folder, models.prefixes.merged.replace(/\/$/, '')));
      const archiveKey = `${exportsPrefix}/${kind}.tar.gz`;
      const files = await listFolderFiles(folder);
      await platform.blobs.put(archiveKey, createTar({ gzip: true, portable: true, cwd: folder, prefix: `${job.job_id}-${kind}` }, files));
      return [
        { type: kind, variant: 'raw', path: raw },
        { type: kind, variant: 'file', path: platform.blobs.uri(archiveKey) },
      ];
    },
  };
}

/** Merges the export's artifacts into the job's groups (and gguf_path), so GET /jobs and /exports show them. */
async function recordOnJob(platform: Platform, jobId: string, produced: ExportArtifactRow[]): Promise<void> {
  if (produced.length === 0) return;
  const job = await platform.jobs.getForWorker(jobId);
  if (!job) return;
  const artifacts: ArtifactGroupsRow = { file: { ...job.artifacts.file }, raw: { ...job.artifacts.raw }, hub: { ...job.artifacts.hub } };
  let ggufPath: string | undefined;
  for (const a of produced) {
    if (a.variant === 'raw') {
      if (a.type !== 'gguf') artifacts.raw[a.type] = a.path;
    } else {
      artifacts[a.variant][a.type] = a.path;
    }
    if (a.variant === 'file' && a.type === 'gguf') ggufPath = a.path;
  }
  await platform.jobs.update(jobId, { artifacts, ...(ggufPath ? { gguf_path: ggufPath } : {}) }, ['completed']);
}

/**
 * Exports whose worker went away: every running one for a sole worker at start (the in-process queue lost
 * them), else those of workers gone silent. Cloud-only exports are queued again (they write the same keys);
 * hub exports fail, since their token lived only in the memory of the process that stopped.
 */
export async function recoverExports(platform: Platform, workerId: string, sole: boolean, staleWorkers: ReadonlySet<string>): Promise<void> {
  for (const row of await platform.exports.listRunning()) {
    if (row.worker_id === workerId) continue;
    if (!(sole || (row.worker_id !== null && staleWorkers.has(row.worker_id)))) continue;
    if (row.destination.includes('hub')) {
      const message = 'the worker stopped before this export finished, and the hub token (kept in memory only) was lost with it; start the export again with hub_token';
      await platform.exports.update(row.export_id, { status: 'failed', message, finished_at: new Date() });
      platform.logger.warn({ exportId: row.export_id }, 'export failed: its worker stopped');
    } else if (await platform.exports.update(row.export_id, { worker_id: null, message: 'queued again: the worker stopped before this export finished' })) {
      await platform.queue.add(exportQueue, { exportId: row.export_id });
      platform.logger.warn({ exportId: row.export_id }, 'export queued again: its worker stopped');
    }
  }
}
