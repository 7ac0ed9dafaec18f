// One export, start to end: the job's model as local files (JobModels builds what training did not keep; or a
// Tinker run's sampler weights, TinkerModels), then cloud (a raw folder and one downloadable file under the job's blob prefix, so deleting the job deletes
// them) and/or a hub repository (one commit); the export row and the job's artifacts record the result.
// Any failure ends the row `failed` with a sentence a person can act on; the hub token (sealed in the database
// until the export ends) appears nowhere. A worker that stops hands the export back to the queue.
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { create as createTar } from 'tar';
import { AppError, type ArtifactGroupsRow, type ExportArtifactRow, type ExportRow, type OnnxExtraVariant, type OnnxVariantParity, type Platform, type TrainingJobRow } from '@ftp/platform';
import { exportQueue, HUB_TOKEN_LOST } from '@ftp/jobs/queues';
import { ggufFileName, onnxFolderName, type JobPrefixes } from '@ftp/jobs/models';
import { ONNX_EXTRA_VARIANTS, type GgufQuantization } from '@ftp/schema';
import { JobModels } from '../models/job-models.ts';
import { TinkerModels } from '../models/tinker-models.ts';
import type { AdapterModels } from '../models/adapter-models.ts';
import { timedStage, type StageProgress } from '../models/build-progress.ts';
import { ModelBuildError, type ModelBuildOptions } from '../models/base-models.ts';
import { listFolderFiles, uploadFolder } from '../models/blob-folders.ts';
import { SHUTDOWN, type JobContext } from '../training/job-context.ts';
import { HubPublishError, publishToHub, type HubFile } from './hub-publish.ts';
import { measureOnnxParityApart } from './onnx-verify.ts';

class ExportFailure extends Error {}

/** Runs one stage of an export, said on its record while it runs. */
type Stage = <T>(what: string, run: () => Promise<T>) => Promise<T>;

/** What one export type is made of: its local files and where its cloud copies go. */
interface ExportPlan {
  /** Every local file to publish, with its path inside the repository. */
  hubFiles(): Promise<HubFile[]>;
  /** Stores the cloud copies (raw folder and/or downloadable file), each upload a stage; returns their artifacts. */
  storeInCloud(stage: Stage): Promise<ExportArtifactRow[]>;
  /** How the cloud copy reads in the export's message. */
  cloudDescription: string;
  /** What the export measured of its files before they are stored (ONNX: each variant against transformers). */
  verify?(stage: Stage): Promise<OnnxVariantParity[]>;
}

class ParityFailure extends ExportFailure {
  constructor(message: string, readonly parity: OnnxVariantParity[]) {
    super(message);
  }
}

export async function runExportJob(ctx: JobContext, exportId: string): Promise<void> {
  const { platform } = ctx;
  const row = await platform.exports.claim(exportId, ctx.workerId);
  if (!row) return; // finished, gone, or taken by another worker meanwhile
  const secrets = await platform.secrets.open(exportId);
  const log = platform.logger.child({ exportId, jobId: row.job_id });
  const produced: ExportArtifactRow[] = [];
  try {
    const hubToken = secrets?.hubToken;
    if (row.destination.includes('hub') && !hubToken) throw new ExportFailure(HUB_TOKEN_LOST);
    // What each stage does, and for how long, on the export's record while it runs (#39): a GGUF conversion is minutes.
    const say = (message: string, progress: StageProgress | null) => void platform.exports.update(exportId, { message, progress }, ctx.workerId).catch(() => undefined);
    const options = { ...(hubToken ? { secrets: { hubToken } } : {}), signal: ctx.signal, progress: say };
    const source = row.checkpoint_name === null ? await jobSource(platform, row, options) : await tinkerSource(platform, row, options);
    const plan = exportPlan(platform, source, row);
    const stage = <T>(what: string, run: () => Promise<T>) => timedStage({ what, heartbeatMs: platform.config.PROGRESS_INTERVAL_S * 1000 }, say, run);
    const parity = plan.verify ? await plan.verify(stage) : null;
    const done: string[] = [];
    if (row.destination.includes('cloud')) {
      produced.push(...(await plan.storeInCloud(stage)));
      done.push(`cloud storage (${plan.cloudDescription})`);
    }
    if (row.destination.includes('hub')) {
      const target = { endpoint: platform.config.HF_ENDPOINT, token: hubToken!, repoId: row.hub_repo_id!, timeoutMs: platform.config.HUB_TIMEOUT_MS, signal: ctx.signal };
      const files = await plan.hubFiles();
      const url = await stage(`publishing the ${row.type} to ${row.hub_repo_id}`, () => publishToHub(target, files, `Upload ${row.type} of ${source.title}`));
      produced.push({ type: row.type, variant: 'hub', path: url });
      done.push(url);
    }
    // The job's artifact groups name its final model; a checkpoint's exports are in their export record only.
    if (source.final) await recordOnJob(platform, row.job_id, produced);
    await platform.exports.update(exportId, { status: 'completed', message: `${row.type} exported to ${done.join(' and ')}${parityNote(parity)}`, progress: null, artifacts: produced, parity, finished_at: new Date() }, ctx.workerId);
    await platform.secrets.drop(exportId);
    log.info({ artifacts: produced.length }, 'export completed');
  } catch (err) {
    if (ctx.signal.aborted && ctx.signal.reason === SHUTDOWN) {
      // It writes the same keys again from the start, on whichever worker takes it.
      if (await platform.exports.update(exportId, { worker_id: null, message: 'queued again: its worker stopped' }, ctx.workerId)) {
        await platform.queue.add(exportQueue, { exportId });
      }
      log.warn('export handed back to the queue: the worker is stopping');
      return;
    }
    const known = err instanceof ExportFailure || err instanceof HubPublishError || err instanceof ModelBuildError || err instanceof AppError;
    if (!known) log.error({ err }, 'export failed');
    let message = known ? err.message : `the export worker failed: ${(err as Error).message}`;
    if (produced.length > 0) message = `stored in cloud storage, but ${message}`;
    if (row.checkpoint_step === null && row.checkpoint_name === null) await recordOnJob(platform, row.job_id, produced).catch((e: unknown) => log.warn({ err: e }, 'could not record the partial export'));
    const parity = err instanceof ParityFailure ? err.parity : null;
    await platform.exports.update(exportId, { status: 'failed', message, progress: null, artifacts: produced, parity, finished_at: new Date() }, ctx.workerId);
    await platform.secrets.drop(exportId);
  }
}

/** What an export exports: a job's final model (`final`: what training stored serves as it is, and the job's artifact
 *  groups record the export) or one of its checkpoints, or a Tinker run's sampler weights. */
interface ExportSource {
  models: AdapterModels;
  /** Where its cloud copies go (no trailing slash). */
  exportsPrefix: string;
  /** The hub commit's "Upload merged of …". */
  title: string;
  final?: { job: TrainingJobRow; prefixes: JobPrefixes };
}

async function jobSource(platform: Platform, row: ExportRow, options: ModelBuildOptions): Promise<ExportSource> {
  const job = await platform.jobs.getForWorker(row.job_id);
  const step = row.checkpoint_step ?? undefined;
  if (!job || (step === undefined && job.status !== 'completed')) {
    throw new ExportFailure(`training job ${row.job_id} ${job ? `is ${job.status}` : 'no longer exists'}; only a completed job can be exported`);
  }
  const models = new JobModels(platform, job, options, step);
  // A checkpoint's exports go beside the final model's, in a folder of their own.
  const exportsPrefix = `${models.prefixes.exports}${step === undefined ? '' : `checkpoint-${step}/`}`.slice(0, -1);
  return { models, exportsPrefix, title: `training job ${job.job_name} (${job.job_id})`, ...(step === undefined ? { final: { job, prefixes: models.prefixes } } : {}) };
}

async function tinkerSource(platform: Platform, row: ExportRow, options: ModelBuildOptions): Promise<ExportSource> {
  const run = await platform.tinker.getRunForWorker(row.job_id);
  const saved = run && (await platform.tinker.getCheckpoint(run.user_id, run.run_id, 'sampler_weights', row.checkpoint_name!));
  if (!run || !saved) throw new ExportFailure(`the sampler weights ${row.checkpoint_name} of training run ${row.job_id} no longer exist`);
  const models = new TinkerModels(platform, run, saved, options);
  return { models, exportsPrefix: models.exportsPrefix.slice(0, -1), title: `the sampler weights ${saved.name} of training run ${run.run_id}` };
}

function exportPlan(platform: Platform, source: ExportSource, row: ExportRow): ExportPlan {
  const { models, exportsPrefix, final } = source;
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
      async storeInCloud(stage) {
        // The GGUF training wrote (include_gguf) serves as it is; otherwise it goes beside the other exports.
        let key = final ? `${final.prefixes.gguf}${name}` : undefined;
        if (!key || !(await platform.blobs.stat(key))) {
          const prefix = `${exportsPrefix}/gguf-${quantization}`;
          const folder = path.dirname(await models.gguf(quantization));
          await stage(`storing ${name} in cloud storage`, () => uploadFolder(platform, folder, prefix));
          key = `${prefix}/${name}`;
        }
        return [{ type: 'gguf', variant: 'file', path: platform.blobs.uri(key) }];
      },
    };
  }

  const kind = row.type;
  const onnxVariants = row.onnx_variants ?? ONNX_EXTRA_VARIANTS;
  const localFolder = async () => (kind === 'adapter' ? models.adapter() : kind === 'onnx' ? (await models.onnx(onnxVariants)).model : models.merged());
  return {
    cloudDescription: `folder and ${kind}.tar.gz`,
    hubFiles: async () => folderFiles(await localFolder()),
    ...(kind === 'onnx' ? { verify: (stage: Stage) => verifyOnnx(models, onnxVariants, stage) } : {}),
    async storeInCloud(stage) {
      const folder = await localFolder();
      // The raw folder: training stored the adapter (and a merged model when asked); a merge made now is stored
      // where training would have put it, so the next JobModels downloads it instead of merging again. An ONNX
      // export's folder goes beside the other exports.
      const raw = !final || kind === 'onnx'
        ? await uploadFolder(platform, folder, `${exportsPrefix}/${kind === 'onnx' ? onnxFolderName(onnxVariants) : kind}`)
        : (final.job.artifacts.raw[kind] ?? (await uploadFolder(platform, folder, final.prefixes.merged.replace(/\/$/, ''))));
      const archiveKey = `${exportsPrefix}/${kind}.tar.gz`;
      // Written to a local file first, so an upload cut by a storage outage can be sent again.
      const archive = path.join(platform.config.dataDir, 'tmp', `${row.export_id}-${kind}.tar.gz`);
      await fs.mkdir(path.dirname(archive), { recursive: true });
      try {
        // ONNX weights hardly compress: SmolLM2-135M's folder (fp32, fp16, q4, q4f16: 1.14 GB) is 852 MB at gzip level 1
        // after 46 s of a CPU, 1.14 GB at level 0 (stored, still a .tar.gz) after 1 s. The export is waited for; the
        // bytes are cheap, and a single model file is downloaded without the archive (`variant`): level 0 for them.
        const gzip = kind === 'onnx' ? { level: 0 } : true;
        await stage(`packing ${kind}.tar.gz`, async () => pipeline(createTar({ gzip, portable: true, cwd: folder, prefix: `${row.job_id}-${kind}` }, await listFolderFiles(folder)), createWriteStream(archive)));
        await stage(`storing ${kind}.tar.gz in cloud storage`, () => platform.blobs.put(archiveKey, createReadStream(archive)));
      } finally {
        await fs.rm(archive, { force: true });
      }
      return [
        { type: kind, variant: 'raw', path: raw },
        { type: kind, variant: 'file', path: platform.blobs.uri(archiveKey) },
      ];
    },
  };
}

/** Runs every ONNX variant in onnxruntime-node (in a process of its own) against transformers' tokens; fp32 must give
 *  all of them. */
async function verifyOnnx(models: AdapterModels, variants: readonly OnnxExtraVariant[], stage: Stage): Promise<OnnxVariantParity[]> {
  const { model, reference } = await models.onnx(variants);
  const parity = await stage('checking each ONNX model in onnxruntime-node against transformers (greedy, 4 prompts × 32 tokens)', async () =>
    measureOnnxParityApart(model, reference));
  const fp32 = parity.find((p) => p.variant === 'fp32');
  if (!fp32 || fp32.first_divergence) {
    const where = fp32?.first_divergence ? `at prompt ${fp32.first_divergence.prompt + 1}, token ${fp32.first_divergence.token + 1}` : 'at all (no model.onnx)';
    throw new ParityFailure(`the fp32 ONNX model does not give transformers' greedy tokens (it diverges ${where}), so the export is not stored; this is a defect of the exporter for this model: export merged or gguf meanwhile`, parity);
  }
  return parity;
}

/** The export's message beside an ONNX export's figures: "; agreement with transformers: fp32 100%, q4 62% …". */
function parityNote(parity: OnnxVariantParity[] | null): string {
  if (!parity) return '';
  return `; greedy agreement with transformers: ${parity.map((p) => `${p.variant} ${Math.round(p.agreement * 100)}%${p.usable ? '' : ' (not usable)'}`).join(', ')}`;
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
  await platform.jobs.recordExported(jobId, { artifacts, ...(ggufPath ? { gguf_path: ggufPath } : {}) });
}
